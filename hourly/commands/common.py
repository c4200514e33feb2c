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

from hourly.metric import DEFAULT_METRIC_REGEX
from hourly.model import ExecutorKind
from hourly.nightly.plan import DEFAULT_BENCH_CMD, DEFAULT_IMAGE
from hourly.render.console import console as make_console

# text from outside is printed verbatim, tables never cut a cell: see hourly/render/console.py
console = make_console()
err_console = make_console(stderr=True)

Opt = typer.Option

# -- options every command may take ----------------------------------------------------------------
Workdir = Opt(None, "--workdir", help="Results store, logs and wheel cache [default: ./hourly-work]")
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

WINDOW: OptionSet = {
    "from_": (Optional[str], Opt(None, "--from", help='Start of the window, e.g. "Aug 24 2023" or ISO 8601 [required, here or in hourly.toml].')),
    "to": (Optional[str], Opt(None, "--to", help="End of the window; a date alone means the end of that day [required, here or in hourly.toml].")),
    "tz": (Optional[str], Opt(None, "--tz", help="Zone of times given without one [default: UTC].")),
    "step": (Optional[str], Opt(None, "--step", help="Spacing of instants, e.g. 1h, 30m, 6h [default: 1h].")),
}
REPOSITORIES: OptionSet = {
    "xla_repo": (Optional[str], Opt(None, "--xla-repo", help="XLA checkout [default: /opt/xla-source or /opt/xla; after a scan: the scan's]")),
    "jax_repo": (Optional[str], Opt(None, "--jax-repo", help="JAX checkout [default: /opt/jax-source or /opt/jax; after a scan: the scan's]")),
    "ref": (Optional[str], Opt(None, "--ref", help="Ref whose history is walked [default: origin/main].")),
    "first_parent": (Optional[bool], Opt(None, "--first-parent/--no-first-parent",
                                         help="Walk merged history only [default: on].")),
    "only": (Optional[str], Opt(None, "--only", help="Hunt one repository: jax (jaxlib stays what --python has "
                                "installed; no --xla-repo needed) or xla (JAX stays at --jax-ref) [default: both].")),
    "xla_ref": (Optional[str], Opt(None, "--xla-ref", help="XLA's own ref whose history is walked [default: --ref].")),
    "jax_ref": (Optional[str], Opt(None, "--jax-ref", help="JAX's own ref whose history is walked, e.g. a feature "
                                   "branch; with --only xla the JAX commit kept [default: --ref; with --only xla: the JAX checkout's HEAD].")),
}
BUILD: OptionSet = {
    "build_cmd": (Optional[str], Opt(None, "--build-cmd", help="Build command, run in the JAX tree [default: build-jax.sh; with --only jax: --jax-build-cmd; none: nothing to build].")),
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
    "metric_regex": (Optional[str], Opt(None, "--metric-regex", help="Regex with a (?P<value>...) group [default: MLUPS].")),
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
