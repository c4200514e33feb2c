"""What every command shares: the option declarations (each declared once, here), the option sets
of the scan-shaped settings, and the consoles.

A command takes an option set with :func:`with_options`: its parameters are added to the command's
signature (in place of its ``flags`` parameter) and their values reach the command as one dict,
``flags``, which :func:`hourly.measure.settings.effective` layers over defaults, the settings file and a
stored scan's settings, remembering where each value came from.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, List, Optional

import typer
from typer.core import TyperCommand

from hourly.errors import UsageError
from hourly.metric import DEFAULT_METRIC_REGEX
from hourly.model import ExecutorKind
from hourly.nightly.plan import DEFAULT_BENCH_CMD, DEFAULT_IMAGE
from hourly.render.console import console as make_console

# text from outside is printed verbatim, tables never cut a cell: see hourly/render/console.py
console = make_console()
err_console = make_console(stderr=True)

Opt = typer.Option

# -- options every command may take ----------------------------------------------------------------
Workdir = Opt(None, "--workdir", help="Results store and logs [default: ./hourly-work]; the builds are cached "
             "apart, in --cache-dir (~/.cache/hourly), shared by all workdirs.")
ConfigOpt = Opt(None, "--config", help="Settings file [default: ./hourly.toml when present]")
JsonOpt = Opt(False, "--json", help="Print one JSON object instead of tables.")
#: the metric's direction; a command that finds nothing given reads it from its store or hourly.toml
Direction = Opt(None, "--higher-is-better/--lower-is-better",
                help="Direction of the metric: higher (rates, MLUPS) or lower (times) [default: the stored "
                     "results' direction, else hourly.toml's higher_is_better, else higher].")

# -- options of the commands that run one container per date (nightly, hunt) -----------------------
Gpus = Opt("all", "--gpus", help="all, none, a count N, or device ids like 0,2.")
ContainerEnv = Opt(None, "--env", help="KEY=VALUE inside the container (repeatable) [default: none].")
Mount = Opt(None, "--mount", help="SRC:DST bind mount (repeatable) [default: $PWD:/dir].")
ContainerTimeout = Opt(None, "--timeout", help="Seconds before a run counts as timed out [default: no limit].")
Every = Opt(1, "--every", help="Measure every N days.")
Parallel = Opt(1, "--parallel", help="Dates at once, each on its own GPU(s).")
Pull = Opt(True, "--pull/--no-pull", help="Pull images that are not local.")

# -- option sets of the scan-shaped settings (hourly.measure.settings.Settings), by stage --------------------
#: name -> (annotation, typer option); the name is the Settings field it sets.
OptionSet = dict[str, tuple[Any, Any]]

#: the daily level (hourly.nightly.plan.NightlySettings), shared by nightly and hunt: see daily_settings
DAILY: OptionSet = {
    "image": (str, Opt(DEFAULT_IMAGE, "--image", help="Image template with {date}; newer tags look like ghcr.io/nvidia/jax:jax-{date}.")),
    "mount": (Optional[List[str]], Mount),
    "gpus": (str, Gpus),
    "env": (Optional[List[str]], ContainerEnv),
    "bench_cmd": (str, Opt(DEFAULT_BENCH_CMD, "--bench-cmd", help="Benchmark run in each container (split like a shell would).")),
    "metric_regex": (str, Opt(DEFAULT_METRIC_REGEX, "--metric-regex", help="Regex with a (?P<value>...) group.")),
    "repeats": (int, Opt(1, "--repeats", help="Runs per date (hunt: and per pair of its bisections).")),
    "timeout": (Optional[float], ContainerTimeout),
    "every": (int, Every),
    "parallel": (int, Parallel),
    "pull": (bool, Pull),
    "higher_is_better": (Optional[bool], Direction),
}


def daily_settings(flags: dict, from_: str, to: str, workdir: str, rerun: bool, config: Optional[str]):
    """The daily level's settings from DAILY's ``flags``; the direction, when not given, from the
    settings file (hourly.toml), else higher is better."""
    from hourly.measure.settings import effective
    from hourly.nightly.plan import NightlySettings
    f = dict(flags)
    direction = f.pop("higher_is_better")
    return NightlySettings(from_=from_, to=to, workdir=workdir, rerun=rerun,
                           mounts=list(f.pop("mount") or []), env=list(f.pop("env") or []),
                           higher_is_better=(effective({}, config)[0].higher_is_better
                                             if direction is None else direction), **f)

#: a plan of more instants than this is warned about (each distinct pair among them is built)
WARN_INSTANTS = 500

WINDOW: OptionSet = {
    "from_": (Optional[str], Opt(None, "--from", help='Start of the window, e.g. "Aug 24 2023" or ISO 8601 [required, here or in hourly.toml].')),
    "to": (Optional[str], Opt(None, "--to", help="End of the window; a date alone means the end of that day [required, here or in hourly.toml].")),
    "tz": (Optional[str], Opt(None, "--tz", help="Zone of times given without one [default: UTC].")),
    "step": (Optional[str], Opt(None, "--step", help="Spacing of instants, e.g. 1h, 30m, 6h [default: 1h].")),
    "max_instants": (int, Opt(10_000, "--max-instants", help="Most instants a scan plans: more are refused "
                              f"(a --step too fine for the window); more than {WARN_INSTANTS} are warned about.")),
}


REPOSITORIES: OptionSet = {
    "xla_repo": (Optional[str], Opt(None, "--xla-repo", help="XLA checkout [default: /opt/xla-source or /opt/xla; after a scan: the scan's]")),
    "jax_repo": (Optional[str], Opt(None, "--jax-repo", help="JAX checkout [default: /opt/jax-source or /opt/jax; after a scan: the scan's]")),
    "ref": (Optional[str], Opt(None, "--ref", help="Ref whose history is walked [default: origin/main].")),
    "first_parent": (Optional[bool], Opt(None, "--first-parent/--no-first-parent",
                                         help="Walk merged history only [default: on].")),
    "only": (Optional[str], Opt(None, "--only", help="Hunt one repository: jax (jaxlib stays what --python has "
                                "installed; no --xla-repo needed) or xla (JAX stays at --jax-ref) [default: both].")),
    "jaxlib_gate": (Optional[bool], Opt(None, "--jaxlib-gate/--no-jaxlib-gate", help="--only jax: a JAX commit whose own "
                                        "check refuses the installed jaxlib (too old or too new for it, read from the "
                                        "commit) is untestable; --no-jaxlib-gate runs it anyway, for an environment that "
                                        "patches or shims that check (recorded with every result) [default: on].")),
    "xla_ref": (Optional[str], Opt(None, "--xla-ref", help="XLA's own ref whose history is walked [default: --ref].")),
    "jax_ref": (Optional[str], Opt(None, "--jax-ref", help="JAX's own ref whose history is walked, e.g. a feature "
                                   "branch; with --only xla the JAX commit kept [default: --ref; with --only xla: the JAX checkout's HEAD].")),
}
#: how JAX and XLA are paired, and the checkouts a bisection descends into (docs/bisect.md, "Pairing")
PAIRING: OptionSet = {
    "pairing": (Optional[str], Opt(None, "--pairing", help="time: the JAX and XLA commits that stood at one instant "
                                   "(a nightly container's way); pin: each JAX first-parent commit with the XLA commit "
                                   "its pin names (jaxlib wheels' and JAX CI's way) [default: time; after a scan: the scan's].")),
    "llvm_repo": (Optional[str], Opt(None, "--llvm-repo", help="LLVM checkout: a bisected XLA culprit that moves LLVM's "
                                     "pin is bisected on inside LLVM (HOURLY_LLVM_PATH) [default: no descent into LLVM].")),
    "triton_repo": (Optional[str], Opt(None, "--triton-repo", help="Triton checkout: the same for an XLA culprit "
                                       "that moves Triton's pin (HOURLY_TRITON_PATH) [default: no descent into Triton].")),
}
BUILD: OptionSet = {
    "build_cmd": (Optional[str], Opt(None, "--build-cmd", help="Build command, run in the JAX tree; it builds "
                                     "jaxlib, so XLA moves [default: build-jax.sh; with --only jax: --jax-build-cmd, and none "
                                     "there means the JAX tree is installed editable, nothing to build].")),
    "jax_build_cmd": (Optional[str], Opt(None, "--jax-build-cmd", help="Builds the jax package alone, run in the JAX tree: "
                                         "pip-wheel (python -m pip wheel --no-deps --no-build-isolation), none (the tree "
                                         "is installed editable) or a command [default: pip-wheel].")),
    "native_inputs": (Optional[List[str]], Opt(None, "--native-input", help="A native input of JAX: what a "
                                               "jaxlib build reads (dir/, a file name anywhere such as BUILD or *.bzl, or "
                                               "a path); repeatable, replaces the default list [default: docs/builds.md's list].")),
    "build_timeout": (Optional[float], Opt(None, "--build-timeout", help="Seconds before a build is stopped [default: no limit].")),
    "wheel_dir": (Optional[str], Opt(None, "--wheel-dir", help="Where the build leaves wheels [default: <jax-repo>/dist; with --only jax: <workdir>/jax-wheels].")),
    "python": (Optional[str], Opt(None, "--python", help="Python that gets the builds and runs the benchmark [default: the Python running hourly].")),
    "cache_dir": (Optional[str], Opt(None, "--cache-dir", help="Build cache, shared by all workdirs [default: ~/.cache/hourly; after a scan: the scan's].")),
    "cache_size": (Optional[str], Opt(None, "--cache-size", help="Bound of the build cache; least recently used builds go first [default: 50G; 0: none].")),
    "cherry_pick": (Optional[List[str]], Opt(None, "--cherry-pick", help="REPO@SHA (a later fix) applied on top of every state where it applies cleanly (repeatable) [default: none; after a scan: the scan's].")),
}
BENCHMARK: OptionSet = {
    "bench_cmd": (Optional[str], Opt(None, "--bench-cmd", help="Benchmark (or test) command, split like a shell would [required for a scan; later: the scan's].")),
    "bench_cwd": (Optional[str], Opt(None, "--bench-cwd", help="Directory the benchmark runs in [default: the current directory].")),
    "env": (Optional[List[str]], Opt(None, "--env", help="KEY=VALUE for the benchmark (repeatable) [default: none].")),
    "repeats": (Optional[int], Opt(None, "--repeats", help="Runs per pair (a bisection asks for more while unsure) [default: 1].")),
    "warmup_runs": (Optional[int], Opt(None, "--warmup-runs", help="Runs of a freshly built or installed state that are "
                                       "recorded but not counted (its first run is slow); none when the state is installed already [default: 1].")),
    "bench_timeout": (Optional[float], Opt(None, "--bench-timeout", help="Seconds before a run counts as timed out [default: no limit].")),
    "metric_regex": (Optional[str], Opt(None, "--metric-regex", help="Regex with a (?P<value>...) group; the last match is the "
                                               f"metric [default: {DEFAULT_METRIC_REGEX}].")),
}
#: scan and bisect skip states whose build failed before; profile always builds, so it has no use for it
RETRY: OptionSet = {
    "retry_failed": (Optional[bool], Opt(None, "--retry-failed", help="Build again states whose build failed before (in a bisection, with --rerun for finished windows).")),
}
STORE: OptionSet = {
    "workdir": (Optional[str], Workdir),
    "force": (Optional[bool], Opt(None, "--force", help="Run even with uncommitted changes (they are stashed and restored).")),
}

#: where pairs are built and measured (hourly.execute.executors.make_executor reads these; not Settings fields,
#: so never stored: a later command picks its own)
EXECUTOR: OptionSet = {
    "executor": (Optional[ExecutorKind], Opt(None, "--executor", help="local: build and measure here, one pair at a time; "
                                    "slurm: each pair is a Slurm job, --workers at once (docs/slurm.md) [default: local].")),
    "workers": (Optional[int], Opt(None, "--workers", help="Jobs at once (--executor slurm): a scan's pairs, a bisection's "
                                   "states per round, a profile's captured states [default: 1].")),
    "partition": (Optional[str], Opt(None, "--partition", help="Slurm partition of the jobs [default: the cluster's].")),
    "time": (Optional[str], Opt(None, "--time", help="Slurm time limit of each job, e.g. 2:00:00 [default: the partition's].")),
    "gres": (Optional[str], Opt(None, "--gres", help="Slurm generic resources of each job, e.g. gpu:1 [default: none].")),
    "slurm_arg": (Optional[List[str]], Opt(None, "--slurm-arg", help="An sbatch option passed through, e.g. "
                                           "--slurm-arg=--container-image=... or --slurm-arg=--account=X (repeatable) [default: none].")),
}


def check_plan_size(s: Any, max_instants: int) -> None:
    """Warn (one line on stderr) before a plan of more than WARN_INSTANTS instants; refuse one of
    more than ``max_instants``, before anything is touched. A window that does not parse is left to
    the scan's own checks."""
    if not s.from_ or not s.to:
        return
    from hourly.timeparse import instant_count, iso_utc, parse_step, window
    t0, t1 = window(s.from_, s.to, s.tz)
    n = instant_count(t0, t1, parse_step(s.step))  # the window's end is one, on the grid or not
    what = f"the window plans {n:,} instants (every {s.step} from {iso_utc(t0)} to {iso_utc(t1)})"
    if n > max_instants:
        raise UsageError(f"{what}, more than --max-instants {max_instants:,}",
                         f"pass a coarser --step such as 1h, a narrower window, or --max-instants {n} to plan them all")
    if n > WARN_INSTANTS:
        err_console.print(f"hourly: warning: {what}; each distinct (xla, jax) pair among them is built and measured",
                          soft_wrap=True)


# -- help panels ----------------------------------------------------------------------------------
#: each command's --help groups its options in these panels, in this order, after "Options" (the
#: command's own, and -h): a flag is placed by its name wherever it is declared, so that --bench-cmd
#: is under Benchmark in scan, bisect, nightly and releases alike
PANELS: dict[str, tuple[str, ...]] = {
    "Window": ("--from", "--to", "--tz", "--step", "--max-instants", "--good", "--bad", "--good-date",
               "--bad-date", "--from-release", "--to-release", "--date", "--every", "--dates", "--scan-step"),
    "Repositories": ("--xla-repo", "--jax-repo", "--ref", "--xla-ref", "--first-parent", "--only", "--jaxlib-gate", "--jax-ref", "--sync",
                     "--force", "--bisect-in", "--pairing", "--llvm-repo", "--triton-repo"),
    "Build": ("--build-cmd", "--jax-build-cmd", "--native-input", "--build-timeout", "--wheel-dir", "--python",
              "--cache-dir", "--cache-size", "--cherry-pick", "--retry-failed", "--extra", "--with",
              "--release-with", "--deps-today", "--deps-as-of-release", "--index-url", "--find-links", "--pre",
              "--installer", "--release-cache-dir"),
    "Benchmark": ("--bench-cmd", "--release-bench-cmd", "--bench-cwd", "--env", "--repeats", "--warmup-runs", "--bench-timeout",
                  "--timeout", "--metric-regex", "--mode", "--keep-going", "--image", "--mount", "--gpus", "--name"),
    "Statistics": ("--higher-is-better", "--min-change", "--max-repeats", "--flaky", "--confirm-edges"),
    "Executor": ("--executor", "--workers", "--partition", "--time", "--gres", "--slurm-arg", "--parallel", "--pull"),
    "Output": ("--workdir", "--json", "--log", "--progress", "--dry-run", "--show", "--out", "--anonymous", "--top"),
}
_PANEL_OF = {flag: panel for panel, flags in PANELS.items() for flag in flags}
OPTIONS_PANEL = "Options"


def panel_of(param: Any) -> str:
    """The help panel of a click parameter: its own ``rich_help_panel``, else by its first flag."""
    return getattr(param, "rich_help_panel", None) or _PANEL_OF.get(param.opts[0], OPTIONS_PANEL)


class PanelledCommand(TyperCommand):
    """A command whose plain-text help (``rich_markup_mode=None``: click's formatter, no markup read)
    lists its options in the panels of :data:`PANELS`, one titled section each, aligned alike.

    Typer draws ``rich_help_panel`` only in its rich help, which reads markup; this keeps the help
    plain and still grouped."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        refuse_both_sides(self.get_params(ctx), args)
        return super().parse_args(ctx, args)

    def format_options(self, ctx: Any, formatter: Any) -> None:
        arguments: list[tuple[str, str]] = []
        panels: dict[str, list[tuple[str, str]]] = {name: [] for name in (OPTIONS_PANEL, *PANELS)}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                arguments.append(record)
            else:
                panels.setdefault(panel_of(param), []).append(record)
        rows = arguments + [r for records in panels.values() for r in records]
        width = min(max((len(first) for first, _ in rows), default=0), 30)  # click's col_max
        for title, records in (("Arguments", arguments), *panels.items()):
            if records:
                with formatter.section(title):
                    _write_rows(formatter, records, width)


def refuse_both_sides(params: Any, args: list[str]) -> None:
    """A flag pair given both ways (``--higher-is-better --lower-is-better``) is a usage error; click
    would take the last one silently. Arguments after ``--`` are someone else's."""
    given = set(args[:args.index("--")] if "--" in args else args)
    for param in params:
        on: list[str] = list(getattr(param, "opts", ()))
        off: list[str] = list(getattr(param, "secondary_opts", ()))
        if off and given & set(on) and given & set(off):
            raise UsageError(f"{on[0]} and {off[0]} contradict each other", "pass one of them")


def refuse_together(*flags: tuple[str, Any], fix: str) -> None:
    """A usage error when every one of ``flags`` (name, value given or None/False) was given."""
    if all(value not in (None, False) for _, value in flags):
        raise UsageError(f"{' and '.join(name for name, _ in flags)} cannot go together", fix)


def _write_rows(formatter: Any, rows: list[tuple[str, str]], width: int) -> None:
    """click's definition list, but wrapped at spaces only: a flag (``--jax-build-cmd``) or a pattern
    (the metric's default) is never split at a hyphen or cut; a word wider than the column overflows."""
    import textwrap
    indent = " " * formatter.current_indent
    column = width + 2
    text_width = max(formatter.width - formatter.current_indent - column, 10)
    for first, text in rows:
        formatter.write(indent + first)
        lines = textwrap.wrap(text, text_width, break_long_words=False, break_on_hyphens=False)
        if not lines:
            formatter.write("\n")
            continue
        formatter.write(" " * (column - len(first)) if len(first) <= width else "\n" + indent + " " * column)
        formatter.write(lines[0] + "\n")
        for line in lines[1:]:
            formatter.write(indent + " " * column + line + "\n")


def with_options(*sets: OptionSet) -> Callable[[Callable], Callable]:
    """Give a command the options of ``sets``; it receives their values as ``flags``."""
    names = [name for s in sets for name in s]

    def wrap(fn: Callable) -> Callable:
        sig = inspect.signature(fn, eval_str=True)
        shared = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=opt, annotation=ann)
                  for s in sets for name, (ann, opt) in s.items()]
        params = []
        for p in sig.parameters.values():
            params += shared if p.name == "flags" else [p]

        @functools.wraps(fn)
        def command(**kw: Any) -> Any:
            flags = {name: kw.pop(name) for name in names}
            return fn(flags=flags, **kw)

        command.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
        return command

    return wrap
