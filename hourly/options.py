"""Every option of hourly's command line, each declared once, and the one encoder of settings back
into a command line (standard library only).

An :class:`Option` is one flag: its parameter name (also its key in ``hourly.toml`` and, for the
scan-shaped settings, the :class:`hourly.measure.settings.Settings` field it sets), its help, type,
default, help panel, the values it refuses, and how a command reads it differently where one does
(``per``: ``--from`` is a time to ``scan``, a date to ``nightly``, a version to ``releases``).
:data:`TAKES` says which options each command takes, in the order its ``--help`` lists them; the
command layer (``hourly.commands.common``) makes them typer options, and the settings file is
read against them (``hourly.measure.settings.load_config``), as nox's ``_option_set`` does.

:func:`argv` turns values back into the arguments of a command, exactly (``hourly hunt`` runs its
inner scans and bisections with them); :func:`command_line` into one line to print (resume lines,
next commands, reports, error messages), secret-looking values redacted (hourly.text.privacy).
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

from hourly.errors import UserError
from hourly.metric import DEFAULT_METRIC_REGEX
from hourly.model import (
    BISECT_MIN_CHANGE,
    DEFAULT_BENCH_CMD,
    DEFAULT_IMAGE,
    DEFAULT_MAX_REPEATS,
    ExecutorKind,
    InstallerKind,
    Mode,
)
from hourly.text.privacy import redact_argv, redact_word
from hourly.text.timeparse import get_zone, step_problem

#: the help panels, in the order --help shows them after "Options" (the command's own, and -h)
OPTIONS_PANEL = "Options"
PANELS = ("Window", "Repositories", "Build", "Benchmark", "Statistics", "Executor", "Output")

#: a plan of more instants than this is warned about (each distinct pair among them is built)
WARN_INSTANTS = 500

#: what is wrong with a value, or None; ``fix`` names a value that is right
Check = Callable[[Any], Optional[str]]


@dataclass(frozen=True)
class Rule:
    """The values an option takes, beyond its type: ``test`` says what is wrong with one (None:
    nothing), ``example`` is a value that is right (the fix names it)."""

    test: Check
    example: str
    #: the range as --help shows it (click's way: x>=1, 0<=x<=3), or ""
    bounds: str = ""
    #: the words it takes (one_of), which --help lists in place of an enum's every member
    words: tuple[str, ...] = ()


def at_least(n: int) -> Rule:
    return Rule(lambda v: None if v >= n else f"must be {n} or more", str(max(n, 1)), f"x>={n}")


def between(lo: int, hi: int) -> Rule:
    return Rule(lambda v: None if lo <= v <= hi else f"must be {lo} to {hi}", str(lo), f"{lo}<=x<={hi}")


#: seconds of a harness's --timeout: 1 or more
AT_LEAST_A_SECOND = Rule(lambda v: None if v >= 1 else "must be 1 or more seconds", "600", "x>=1")
POSITIVE = Rule(lambda v: None if v > 0 and math.isfinite(v) else "must be a positive number of seconds", "3600")
#: a bisection's (and a hunt's) --min-change: a fraction of the level strictly between 0 and 1
FRACTION = Rule(lambda v: None if 0 < v < 1 else "must lie between 0 and 1 (a fraction of the level)", "0.02")
#: detection's --min-change: 0 keeps every significant step; 1 or more is a percentage typed as a fraction
RELATIVE = Rule(lambda v: None if 0 <= v < 1 else "must lie from 0 up to 1 (a fraction of the level: 0.05 for 5 %)",
                "0.02")


def a_place(example: str) -> Rule:
    """A path: never empty (``--workdir ""``, an unset shell variable, would be the current directory)."""
    return Rule(lambda v: None if str(v).strip() else "must not be empty (it would be the current directory)", example)


def _zone_problem(name: str) -> str | None:
    try:
        get_zone(name)
    except UserError:
        return "must be an IANA time zone name (or UTC)"
    return None


#: a step of time: 1h, 30m, 6h (hourly.text.timeparse.parse_step)
STEP = Rule(step_problem, "1h")
#: a zone (hourly.text.timeparse.get_zone)
ZONE = Rule(_zone_problem, "America/Los_Angeles")
#: ``--env KEY=VALUE`` (hourly.adapters.proc.parse_env reads it)
#: --env: KEY=VALUE, or a variable's name alone (its value taken from hourly's environment: a secret)
KEY_VALUE = Rule(lambda v: None if ("=" in v and not v.startswith("=")) or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v)
                 else "must be KEY=VALUE or a variable's NAME", "KEY=VALUE")


def one_of(*words: str) -> Rule:
    shown = " or ".join(words)
    return Rule(lambda v: None if str(getattr(v, "value", v)) in words else f"must be {shown}", words[0],
                words=words)


@dataclass(frozen=True)
class Option:
    """One flag of hourly's command line (see the module's text)."""

    flag: str
    name: str
    help: str
    #: the value's type: bool is a flag, list[str] is repeatable, an enum lists its choices
    type: Any = str
    #: what a command gets when the flag is not given (None: "not given", the settings' default)
    default: Any = None
    panel: str = OPTIONS_PANEL
    #: the flag that says no, for a boolean (--no-sync, --lower-is-better)
    off: str | None = None
    #: settable in hourly.toml (its key: ``name`` without a trailing underscore)
    toml: bool = True
    rule: Rule | None = None
    #: how commands read it differently: "cmd other": {"help": ..., "default": ..., "type": ..., "rule": ...}
    per: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """Its key in hourly.toml."""
        return self.name.rstrip("_")

    @property
    def repeatable(self) -> bool:
        return self.type is list

    @property
    def is_flag(self) -> bool:
        return self.type is bool

    def of(self, command: str) -> Option:
        """This option as ``command`` reads it."""
        for commands, changes in self.per.items():
            if command in commands.split():
                return replace(self, **changes, per={})
        return self

    def problem(self, value: Any) -> str | None:
        """What is wrong with ``value`` for this option (its rule; a number of its kind, for a
        numeric option with a rule), or None."""
        if value is None or self.rule is None:
            return None
        if isinstance(value, (list, tuple)):  # a repeatable option's values (hourly.toml's array): each
            return next((p for p in map(self.problem, value) if p), None)
        if self.type in (int, float) and (isinstance(value, bool) or not isinstance(value, (int, float))
                                          or (self.type is int and not isinstance(value, int))):
            return "must be a whole number" if self.type is int else "must be a number"
        try:
            return self.rule.test(value)
        except TypeError:
            return None  # a value of the wrong type is the type check's to report

    def refusal(self, value: Any) -> tuple[str, str] | None:
        """The error of a value this option refuses, as one line and its fix (``--repeats must be 1
        or more, not 0``, ``pass e.g. --repeats 1``), or None: the same words wherever the value
        came from (a flag, a stored scan, a caller). Each of a list's values is checked."""
        for v in value if isinstance(value, (list, tuple)) else [value]:
            problem = self.problem(v)
            if problem:
                shown = redact_word(str(getattr(v, "value", v)))
                shown = shown if shown.strip() else repr(shown)  # an empty value shown as '', not blank
                return (f"{self.flag} {problem}, not {shown}",
                        f"pass e.g. {self.flag} {self.rule.example if self.rule else '...'}")
        return None


def _o(flag: str, name: str, help: str, **kw: Any) -> Option:
    return Option(flag, name, help, **kw)


W, R, B, M, S, E, O = PANELS  # noqa: E741 — the panels' initials, for the table below
_CHECKOUT = "after a scan: the scan's"

#: every option, once; the order is the order of the source, not of any --help (see TAKES)
OPTIONS: tuple[Option, ...] = (
    # -- every command ----------------------------------------------------------------------
    _o("--workdir", "workdir", "Results store and logs [default: ./hourly-work]; the builds are cached apart, in "
       "--cache-dir (~/.cache/hourly), shared by all workdirs.", panel=O, rule=a_place("./hourly-work"),
       per={"explain": {"help": "A bisected workdir [default: ./hourly-work]"}}),
    _o("--config", "config", "Settings file [default: ./hourly.toml when present]", toml=False),
    _o("--json", "json_out", "Print one JSON object instead of tables.", type=bool, default=False, panel=O, toml=False,
       per={"detect": {"help": "Print one JSON object instead of a table."}}),
    _o("--higher-is-better", "higher_is_better", "Direction of the metric: higher (rates, MLUPS) or lower (times) "
       "[default: the stored results' direction, else hourly.toml's higher_is_better, else higher].",
       type=bool, off="--lower-is-better", panel=S),
    # -- the window -------------------------------------------------------------------------
    _o("--from", "from_", 'Start of the window, e.g. "Aug 24 2023" or ISO 8601 [required, here or in hourly.toml].',
       panel=W, per={
           "releases": {"help": "First jax version, e.g. 0.4.13 (included) [required unless --show]."},
           "nightly": {"help": "First date, e.g. 2023-07-06 (included) [required unless --show]."},
           "hunt": {"help": "First date of the daily level, e.g. 2023-07-06 (included) [required unless --good-date]."}}),
    _o("--to", "to", "End of the window; a date alone means the end of that day [required, here or in hourly.toml].",
       panel=W, per={
           "releases": {"help": "Last jax version (included) [required unless --show]."},
           "nightly": {"help": "Last date (included) [required unless --show]."},
           "hunt": {"help": "Last date (included) [required unless --bad-date]."}}),
    _o("--tz", "tz", "Zone of times given without one [default: UTC].", panel=W, rule=ZONE, per={
        "bisect": {"help": "Zone of --good/--bad times without one [default: UTC]."},
        "shell": {"help": "Zone of a time without one [default: UTC]."}}),
    _o("--step", "step", "Spacing of instants, e.g. 1h, 30m, 6h [default: 1h].", panel=W, rule=STEP, per={
        "watch": {"help": "commits: spacing of the instants looked at, e.g. 6h.", "default": "24h"},
        "explain": {"help": "Explain the Nth bisected culprit only [default: every one].", "type": int,
                    "rule": at_least(1)}}),
    _o("--max-instants", "max_instants", "Most instants a scan plans: more are refused (a --step too fine for the "
       f"window); more than {WARN_INSTANTS} are warned about.", type=int, default=10_000, panel=W, rule=at_least(1)),
    _o("--good", "good", 'Good end: a time as in the scan ("Aug 24 2023 13:00") or xla@<sha> / jax@<sha> / '
       "xla@<sha>,jax@<sha> [default: each regression detection finds in the store].", panel=W, per={
           "profile": {"help": "Good state: a time, or xla@<sha>,jax@<sha> [default: each stored regression]."}}),
    _o("--bad", "bad", "Bad end, in the same forms [default: each regression detection finds in the store].",
       panel=W, per={"profile": {"help": "Bad state: a time, or xla@<sha>,jax@<sha> [default: each stored regression]."}}),
    _o("--good-date", "good_date", "Enter at the commit level: a good day (with --bad-date; skips the daily search) "
       "[default: the daily level finds them].", panel=W),
    _o("--bad-date", "bad_date", "The bad day to bisect against --good-date [default: the daily level finds it].",
       panel=W),
    _o("--from-release", "from_release", "Enter at the release level: first jax release, e.g. 0.4.13 (with "
       "--to-release; the release level finds the days) [default: start at the daily level].", panel=W),
    _o("--to-release", "to_release", "Last jax release of the release level (included) [required with "
       "--from-release].", panel=W),
    _o("--date", "date", "Nightly date to pin, e.g. 2023-08-24 [required when the image has {date}].", panel=W),
    _o("--every", "every", "Measure every N days.", type=int, default=1, panel=W, rule=at_least(1)),
    _o("--dates", "dates", "all: measure every date; search: back-search from --to (1, 2, 4, … days) then bisect "
       "the dates — one boundary, fewer containers.", default="all", panel=W, rule=one_of("all", "search")),
    _o("--scan-step", "scan_step", "Scan each window every STEP (e.g. 1h) inside the container before bisecting, as "
       "the guide does by hand [default: bisect the window directly].", panel=W, rule=STEP),
    # -- the repositories -------------------------------------------------------------------
    _o("--xla-repo", "xla_repo", f"XLA checkout [default: /opt/xla-source or /opt/xla; {_CHECKOUT}]", panel=R,
       rule=a_place("~/src/xla"),
       per={"hunt": {"help": "XLA tree inside the container [default: /opt/xla-source or /opt/xla]."}}),
    _o("--jax-repo", "jax_repo", f"JAX checkout [default: /opt/jax-source or /opt/jax; {_CHECKOUT}]", panel=R,
       rule=a_place("~/src/jax"), per={
        "hunt": {"help": "JAX tree inside the container [default: /opt/jax-source or /opt/jax]."},
        "releases": {"help": "JAX checkout with tags: commits and XLA pins between releases [default: none, no "
                             "commit lists]."}}),
    _o("--ref", "ref", "Ref whose history is walked [default: origin/main].", panel=R,
       per={"hunt": {"help": "Ref whose history is bisected inside [default: origin/main]."}}),
    _o("--first-parent", "first_parent", "Walk merged history only [default: on].", type=bool, off="--no-first-parent",
       panel=R),
    _o("--only", "only", "Hunt one repository: jax (jaxlib stays what --python has installed; no --xla-repo needed) "
       "or xla (JAX stays at --jax-ref) [default: both].", panel=R, rule=one_of("jax", "xla", "both")),
    _o("--jaxlib-gate", "jaxlib_gate", "--only jax: a JAX commit whose own check refuses the installed jaxlib (too "
       "old or too new for it, read from the commit) is untestable; --no-jaxlib-gate runs it anyway, for an "
       "environment that patches or shims that check (recorded with every result) [default: on].", type=bool,
       off="--no-jaxlib-gate", panel=R),
    _o("--xla-ref", "xla_ref", "XLA's own ref whose history is walked [default: --ref].", panel=R,
       per={"hunt": {"help": "XLA's own ref inside [default: --ref]."}}),
    _o("--jax-ref", "jax_ref", "JAX's own ref whose history is walked, e.g. a feature branch; with --only xla the JAX "
       "commit kept [default: --ref; with --only xla: the JAX checkout's HEAD].", panel=R,
       per={"hunt": {"help": "JAX's own ref inside, e.g. a feature branch [default: --ref]."}}),
    _o("--sync", "sync", "`git remote update` both repos first [default: on].", type=bool, off="--no-sync", panel=R,
       per={"watch": {"help": "commits: `git remote update` both checkouts first [default: on]."}}),
    _o("--force", "force", "Run even with uncommitted changes (they are stashed and restored).", type=bool, panel=R,
       per={"watch": {"help": "commits: run even with uncommitted changes in the checkouts (stashed and "
                              "restored)."}}),
    _o("--bisect-in", "bisect_in", "Bisect in the bad day's image (its trees hold both ends) or the good day's "
       "(then `git fetch`).", default="bad", panel=R, rule=one_of("bad", "good")),
    _o("--pairing", "pairing", "time: the JAX and XLA commits that stood at one instant (a nightly container's way); "
       "pin: each JAX first-parent commit with the XLA commit its pin names (jaxlib wheels' and JAX CI's way) "
       f"[default: time; {_CHECKOUT}].", panel=R, rule=one_of("time", "pin")),
    _o("--llvm-repo", "llvm_repo", "LLVM checkout: a bisected XLA culprit that moves LLVM's pin is bisected on inside "
       "LLVM (HOURLY_LLVM_PATH) [default: no descent into LLVM].", panel=R),
    _o("--triton-repo", "triton_repo", "Triton checkout: the same for an XLA culprit that moves Triton's pin "
       "(HOURLY_TRITON_PATH) [default: no descent into Triton].", panel=R),
    # -- the build --------------------------------------------------------------------------
    _o("--build-cmd", "build_cmd", "Build command, run in the JAX tree; it builds jaxlib, so XLA moves [default: "
       "build-jax.sh; with --only jax: --jax-build-cmd, and none there means the JAX tree is installed editable, "
       "nothing to build].", panel=B,
       per={"hunt": {"help": "Build command inside the container [default: build-jax.sh]."}}),
    _o("--jax-build-cmd", "jax_build_cmd", "Builds the jax package alone, run in the JAX tree: pip-wheel (python -m "
       "pip wheel --no-deps --no-build-isolation), none (the tree is installed editable) or a command [default: "
       "pip-wheel].", panel=B),
    _o("--native-input", "native_inputs", "A native input of JAX: what a jaxlib build reads (dir/, a file name "
       "anywhere such as BUILD or *.bzl, or a path); repeatable, replaces the default list [default: "
       "docs/builds.md's list].", type=list, panel=B),
    _o("--build-timeout", "build_timeout", "Seconds before a build is stopped [default: no limit].", type=float,
       panel=B, rule=POSITIVE),
    _o("--wheel-dir", "wheel_dir", "Where the build leaves wheels [default: <jax-repo>/dist; with --only jax: "
       "<workdir>/jax-wheels].", panel=B, rule=a_place("/opt/jax-source/dist")),
    _o("--python", "python", "Python that gets the builds and runs the benchmark [default: the Python running "
       "hourly].", panel=B, rule=a_place(".venv/bin/python"),
       per={"releases": {"help": "Interpreter the environments are made from [default: hourly's]."},
            "watch": {"help": "wheels: the interpreter the environments are made from; commits: the Python that "
                              "gets the builds [default: hourly's]."},
            "bench": {"help": "Python that runs the harness: its JAX is measured; hourly need not be installed "
                              "there [default: the Python running hourly]."}}),
    _o("--cache-dir", "cache_dir", f"Build cache, shared by all workdirs [default: ~/.cache/hourly; {_CHECKOUT}].",
       panel=B, rule=a_place("~/.cache/hourly"), per={"releases": {"help": "Where the environments are kept [default: ~/.cache/hourly/releases]."}}),
    _o("--cache-size", "cache_size", "Bound of the build cache; least recently used builds go first [default: 50G; "
       "0: none].", panel=B),
    _o("--cherry-pick", "cherry_pick", "REPO@SHA (a later fix) applied on top of every state where it applies "
       f"cleanly (repeatable) [default: none; {_CHECKOUT}].", type=list, panel=B),
    _o("--retry-failed", "retry_failed", "Build again states whose build failed before (in a bisection, with --rerun "
       "for finished windows).", type=bool, panel=B),
    _o("--extra", "extra", "Install jax[EXTRA], e.g. cuda12 for the GPU plugins [default: none, CPU only].", panel=B,
       per={"hunt": {"help": "Release level: install jax[EXTRA], e.g. cuda12 [default: none, CPU only]."}}),
    _o("--with", "with_", "Another requirement for every environment, e.g. 'numpy<2' (repeatable) [default: none].",
       type=list, panel=B),
    _o("--release-with", "release_with", "Release level: another requirement for every environment, e.g. "
       "'numpy<2' (repeatable) [default: none].", type=list, panel=B),
    _o("--deps-today", "deps_today", "Install today's numpy, scipy, ... into every release's environment (old "
       "jaxlibs crash with them) [default: those of the day after each release, through uv].", type=bool,
       default=False, panel=B),
    _o("--deps-as-of-release", "deps_as_of_release", "The default (kept for old command lines): dependencies as of "
       "the day after each release.", type=bool, default=False, panel=B),
    _o("--index-url", "index_url", "Package index (PEP 691 JSON) [default: https://pypi.org/simple].", panel=B,
       per={"hunt": {"help": "Release level: package index (PEP 691 JSON) [default: https://pypi.org/simple]."}}),
    _o("--find-links", "find_links", "A local directory of wheels instead of an index (offline) [default: none, the "
       "index].", panel=B, per={"hunt": {"help": "Release level: a local directory of wheels instead of an index "
                                                  "[default: none, the index]."}}),
    _o("--pre", "pre", "Include dev/nightly versions.", type=bool, default=False, panel=B,
       per={"hunt": {"help": "Release level: include dev/nightly versions."}}),
    _o("--installer", "installer", "auto: uv when installed, else pip.", type=InstallerKind,
       default=InstallerKind.AUTO, panel=B),
    _o("--release-cache-dir", "release_cache_dir", "Release level: where the environments are kept [default: "
       "~/.cache/hourly/releases].", panel=B,
       per={"watch": {"help": "wheels: where the environments are kept [default: ~/.cache/hourly/releases]."}}),
    # -- the benchmark ----------------------------------------------------------------------
    _o("--bench-cmd", "bench_cmd", "Benchmark (or test) command, split like a shell would [required for a scan; "
       "later: the scan's].", panel=M, per={
           "releases": {"help": 'Benchmark run in each release\'s environment, e.g. "python bench.py" [required '
                                "to measure]."},
           "nightly hunt": {"help": "Benchmark run in each container (split like a shell would).",
                            "default": DEFAULT_BENCH_CMD},
           "watch": {"help": "The benchmark, split like a shell would [required for wheels and commits; "
                             "containers: /bin/bash /dir/test.sh]."}}),
    _o("--release-bench-cmd", "release_bench_cmd", "Benchmark in each release's environment on the host [default: "
       "--bench-cmd with mount targets replaced by their host folders, run in the /dir mount's folder].", panel=M),
    _o("--bench-cwd", "bench_cwd", "Directory the benchmark runs in [default: the current directory].", panel=M,
       rule=a_place("."),
       per={"releases": {"help": "Directory the benchmark runs in [default: the current one]."}}),
    _o("--env", "env", "KEY=VALUE for the benchmark, or KEY: its value in hourly's environment, for a secret "
       "(repeatable) [default: none].", type=list, panel=M, rule=KEY_VALUE,
       per={"nightly container hunt": {"help": "KEY=VALUE inside the container, or KEY: its value in hourly's "
                                               "environment (repeatable) [default: none]."},
            "bench": {"help": "KEY=VALUE for the harness's environment, or KEY: its value in hourly's "
                              "(repeatable) [default: none]."},
            "watch": {"help": "KEY=VALUE for the benchmark (containers: inside them), or KEY: its value in "
                              "hourly's environment, for a secret (repeatable) [default: none]."}}),
    _o("--repeats", "repeats", "Runs per pair (a bisection asks for more while unsure) [default: 1].", type=int,
       panel=M, rule=at_least(1), per={
           "releases": {"help": "Runs per release.", "default": 1},
           "watch": {"help": "Runs of each new build on arrival.", "default": 3},
           "nightly hunt": {"help": "Runs per date (hunt: and per pair of its bisections).", "default": 1},
           "explain": {"help": "Runs per setting in the sweep and the revert check [default: the workdir's "
                               "repeats, at least 3]."},
           "bench": {"help": "Samples of trace, lower, compile, compile_cached and first_call.", "default": 5}}),
    _o("--warmup-runs", "warmup_runs", "Runs of a freshly built or installed state that are recorded but not counted "
       "(its first run is slow); none when the state is installed already [default: 1].", type=int, panel=M,
       rule=at_least(0)),
    _o("--bench-timeout", "bench_timeout", "Seconds before a run counts as timed out [default: no limit].",
       type=float, panel=M, rule=POSITIVE),
    _o("--timeout", "timeout", "Seconds before a run counts as timed out [default: no limit].", type=float, panel=M,
       rule=POSITIVE, per={"bench": {"help": "Seconds before the harness is stopped [default: no limit].",
                                     "rule": AT_LEAST_A_SECOND}}),
    _o("--iters", "iters", "Samples of step, step_dispatch and dispatch.", type=int, default=50, panel=M,
       rule=at_least(1)),
    _o("--warmup", "warmup", "Untimed rounds before the samples of each kind.", type=int, default=3, panel=M,
       rule=at_least(0)),
    _o("--x64", "x64", "Turn jax_enable_x64 on (off: JAX's float32 default).", type=bool, default=False, panel=M),
    _o("--phases", "phases", "Comma-separated phases to measure, from trace, lower, compile, compile_cached, "
       "first_call, dispatch, step_dispatch, step, memory [default: all].", panel=M),
    _o("--metric-regex", "metric_regex", "Regex with a (?P<value>...) group; the last match is the metric [default: "
       f"{DEFAULT_METRIC_REGEX}].", panel=M, per={
           "releases nightly hunt": {"help": "Regex with a (?P<value>...) group.", "default": DEFAULT_METRIC_REGEX},
           "watch": {"help": "Regex with a (?P<value>...) group: the primary metric, named by the word it starts "
                             "with.", "default": DEFAULT_METRIC_REGEX},
           "detect": {"help": "Regex with a (?P<value>...) group, for grep output.", "default": DEFAULT_METRIC_REGEX}}),
    _o("--metric-samples", "metric_samples", "last: a run's value is the metric's last match; all: every match is a "
       "sample (a benchmark printing its metric once per iteration: many samples from one process, whose median is "
       "the run's value) [default: last].", panel=M, rule=one_of("last", "all")),
    _o("--samples", "samples", "Samples each benchmark process is asked for, in HOURLY_SAMPLES (a benchmark that "
       "prints many reads it) [default: chosen from each process's measured cost and noise, 12 at first].",
       type=int, panel=M, rule=at_least(1), per={
           "hunt": {"help": "Samples each benchmark process of the bisection inside the container is asked for, in "
                            "HOURLY_SAMPLES [default: the bisection chooses them]."},
           "bench": {"help": "Samples of every phase (--repeats and --iters both), and HOURLY_SAMPLES in the "
                             "harness's environment [default: --repeats and --iters]."},
           "watch releases nightly": {"help": "Samples each benchmark process is asked for, in HOURLY_SAMPLES (a "
                                               "benchmark that prints many reads it; the same as --env "
                                               "HOURLY_SAMPLES=N) [default: 12; this level does not choose it]."}}),
    _o("--warmup-samples", "warmup_samples", "The first K matches of each run (of each METRIC name with --metrics) "
       "are its warm-up, never counted [default: 0].", type=int, panel=M, rule=at_least(0)),
    _o("--metrics", "metrics", "Record every named `METRIC name: value` line (all) or those named "
       "(trace_ms,lower_ms), each line a sample, each metric's steps found apart [default: the --metric-regex's one "
       "metric; all when --bench-cmd runs hourly's per-phase harness].", panel=M),
    _o("--metric", "metric", "The named metric bisect, profile and explain follow (its unit gives its direction) "
       "[default: the one name of --metrics].", panel=M, per={
           "hunt": {"help": "The named metric the hunt's scans and bisections follow (its unit gives its direction) "
                            "[default: the one name of --metrics, else the metric whose regression the daily level "
                            "found]."},
           "watch": {"help": "The named metric listed first (its unit gives its direction); every named metric is a "
                             "series of its own, each alerted and hunted apart [default: the one name of --metrics, "
                             "else none]."}}),
    _o("--mode", "mode", "metric: parse the metric from each run; exit: each run passes or fails by its exit code, "
       "no metric expected (hunt a crash or a failing test) [default: metric].", type=Mode, panel=M,
       rule=one_of("metric", "exit"), per={
           "bisect": {"help": "metric: compare the metric with the ends; exit: 0 good, 125 skip, other bad; "
                              "printed: good when every run prints the metric, bad when one exits 0 without it (no line, or NaN) "
                              "[default: metric when the scan measured one, else exit].",
                      "rule": None}}),
    _o("--keep-going", "keep_going", "Scan on even when every run of the first measured pair fails (default: stop "
       "there).", type=bool, panel=M),
    _o("--image", "image", "Image template with {date}; newer tags look like ghcr.io/nvidia/jax:jax-{date}.",
       default=DEFAULT_IMAGE, panel=M, per={
           "container": {"help": f"Image, or template with {{date}} [default: {DEFAULT_IMAGE}].", "default": None},
           "watch": {"help": "containers: the image template with {date}."}}),
    _o("--mount", "mount", "SRC:DST bind mount (repeatable) [default: $PWD:/dir].", type=list, panel=M,
       per={"container": {"help": "Extra SRC:DST bind mount (repeatable) [default: none; $PWD is /dir]."}}),
    _o("--gpus", "gpus", "all, none, a count N, or device ids like 0,2.", default="all", panel=M),
    _o("--name", "name", "Container name [default: hourly-<tag>].", panel=M),
    # -- statistics -------------------------------------------------------------------------
    _o("--min-change", "min_change", "Smallest step worth pinning, a fraction of the level (0.02: 2 %); the rest of "
       "a window is searched for steps this large.", type=float, default=BISECT_MIN_CHANGE, panel=S, rule=FRACTION,
       per={"hunt": {"help": "Smallest step worth pinning, a fraction of the level [default: 0.02]; also what makes "
                             "a date good for --dates search.", "default": None},
            "watch": {"help": "Smallest step worth an alert, a fraction of the level (0.02: 2 %)."},
            "detect": {"help": "Ignore steps smaller than this relative change, e.g. 0.02 for 2%; 0 reports every "
                               "significant step [default: 0.01].", "default": None, "rule": RELATIVE},
            "report": {"help": "Ignore steps smaller than this relative change; 0 keeps every significant step "
                               "[default: 0.01].", "default": None, "rule": RELATIVE}}),
    _o("--max-repeats", "max_repeats", "Most samples of one state while its verdict is unsure; then it is "
       "untestable.", type=int, default=DEFAULT_MAX_REPEATS, panel=S, rule=at_least(1),
       per={"hunt": {"help": "Most samples of one state while its verdict is unsure [default: bisect's, 20].",
                     "default": None}}),
    _o("--flaky", "flaky", "Exit mode: judge each state by its failure rate over repeated runs (a sequential test "
       "against the ends' rates, up to --max-repeats runs) [default: on by itself once a state both passes and "
       "fails].", type=bool, default=False, panel=S),
    _o("--walk-skips", "walk_skips", "Exit mode: probe every untestable state (failed build, exit 125) between the "
       "last good and first bad state, as git bisect skip does, instead of jumping a run of them after two in a row "
       "(an answer that jumped one names the states it did not build) [default: jump].", type=bool, default=False,
       panel=S),
    _o("--confirm-edges", "confirm_edges", "Measure an edge step's lone pair and its neighbour again with more runs, "
       "to confirm it or call it an outlier [default: on].", type=bool, off="--no-confirm-edges", panel=S),
    # -- the executor -----------------------------------------------------------------------
    _o("--executor", "executor", "local: build and measure here, one pair at a time; slurm: each pair is a Slurm "
       "job, --workers at once (docs/slurm.md) [default: local].", type=ExecutorKind, panel=E,
       per={"watch": {"help": "Where a confirmed regression's hunt runs: local (here, waited for) or slurm (one "
                              "job; a later run reads its answer) [default: local]."}}),
    _o("--workers", "workers", "Jobs at once (--executor slurm): a scan's pairs, a bisection's states per round, a "
       "profile's captured states [default: 1].", type=int, panel=E, rule=at_least(1)),
    _o("--partition", "partition", "Slurm partition of the jobs [default: the cluster's].", panel=E,
       per={"watch": {"help": "Slurm partition of the hunt's job [default: the cluster's]."}}),
    _o("--time", "time", "Slurm time limit of each job, e.g. 2:00:00 [default: the partition's].", panel=E,
       per={"watch": {"help": "Slurm time limit of the hunt's job, e.g. 12:00:00 [default: the partition's]."}}),
    _o("--gres", "gres", "Slurm generic resources of each job, e.g. gpu:1 [default: none].", panel=E,
       per={"watch": {"help": "Slurm generic resources of the hunt's job, e.g. gpu:1 [default: none]."}}),
    _o("--slurm-arg", "slurm_arg", "An sbatch option passed through, e.g. --slurm-arg=--container-image=... or "
       "--slurm-arg=--account=X (repeatable) [default: none].", type=list, panel=E,
       per={"watch": {"help": "Another sbatch option for the hunt's job (repeatable) [default: none]."}}),
    _o("--parallel", "parallel", "Dates at once, each on its own GPU(s).", type=int, default=1, panel=E,
       rule=at_least(1)),
    _o("--pull", "pull", "Pull images that are not local.", type=bool, default=True, off="--no-pull", panel=E,
       per={"container": {"help": "Pull the image when it is not local."}}),
    # -- what a command does, and its output ------------------------------------------------
    _o("--rerun", "rerun", "Measure again pairs that are already stored.", type=bool, per={
        "releases": {"help": "Measure again releases already stored.", "default": False},
        "nightly": {"help": "Measure again dates already stored.", "default": False},
        "hunt": {"help": "Measure again dates and bisect again windows already stored.", "default": False},
        "bisect": {"help": "Bisect again windows already finished (measurements are reused).", "default": False}}),
    _o("--dry-run", "dry_run", "Print the plan; touch nothing.", type=bool, default=False, panel=O, toml=False,
       per={"releases": {"help": "List the releases, their jaxlib and what is missing; install nothing."}}),
    _o("--show", "show", "Print the stored nightly results; run nothing.", type=bool, default=False, panel=O,
       toml=False, per={"releases": {"help": "Print the stored release results; run nothing."},
                        "watch": {"help": "Print the stored watch and write its page; look for and measure "
                                          "nothing."}}),
    _o("--nightly", "nightly", "Show the daily results of `hourly nightly` instead.", type=bool, default=False,
       toml=False),
    _o("--log", "log", "Print a `git bisect` log of the culprit repository that `git bisect replay` accepts.",
       type=bool, default=False, panel=O),
    _o("--progress", "progress", "Progress lines on stderr even with --json or --log (as `hourly hunt` shows them).",
       type=bool, default=False, panel=O),
    _o("--find-fix", "find_fix", "Find what made it better: every improvement (metric) and every fix (exit status bad "
       "→ good) of the scan; with --good/--bad the good end is the later one.", type=bool, default=False),
    _o("--manual", "manual", "You give the verdicts: each probe is built and installed, the trees left at it, and "
       "hourly waits for good, bad, skip or unsure typed at its prompt or given with `hourly mark` from another "
       "shell; with --bench-cmd given here the benchmark runs first and you confirm or override its verdict "
       "(docs/manual.md).", type=bool, default=False, toml=False),
    _o("--explain", "explain", "After the culprit is named: run `hourly explain` on it (HLO diff of its parent state "
       "and itself, op times, repro; docs/explain.md) and add it to the answer.", type=bool, default=False,
       per={"hunt": {"help": "The bisection inside explains each culprit (`hourly bisect --explain`: HLO diff, op "
                             "times, repro; docs/explain.md)."}}),
    _o("--out", "out", "Folder for report.md and plot.png [default: <workdir>/report]", panel=O,
       per={"trace": {"help": "Folder for the trace and memory profiles [default: ./hourly-work/traces/<UTC time>]",
                      "toml": False},
            "bench": {"help": "File for the harness's full output [default: ./hourly-work/bench/<UTC time>.log].",
                      "toml": False}}),
    _o("--anonymous", "anonymous", "Leave out the host name.", type=bool, default=False, panel=O),
    _o("--command", "command", "Show the settings of this command instead: each option its table in hourly.toml may "
       "set, with its value and where it came from (a flag, its table, the shared settings, the default) [default: "
       "the shared settings every command reads].", panel=O, toml=False,
       rule=Rule(lambda v: None if v in commands_with_a_table() else
                 f"must be a command with a table in hourly.toml ({', '.join(commands_with_a_table())})", "bisect")),
    _o("--top", "top", "Rows per comparison table.", type=int, default=10, panel=O, rule=at_least(1),
       per={"compare-profiles": {"help": "Rows per table.", "default": 15, "toml": False}}),
    # -- hourly watch -----------------------------------------------------------------------
    _o("--source", "source", "containers: nightly images (--image with {date}); wheels: nightly wheels "
       "X.Y.Z.devYYYYMMDD on an index (--index-url/--find-links); commits: the first-parent history of JAX and XLA "
       "every --step [default: the workdir's watch, as its first run set it].", panel=W, toml=False,
       rule=one_of("containers", "wheels", "commits")),
    _o("--since", "since", "First date (or time) watched; the first run measures from there as history [default: "
       "the first run's, else 14 days back].", panel=W),
    _o("--until", "until", "Newest time looked at, to replay a past stretch night by night [default: now; a date "
       "alone: the end of that day].", panel=W, toml=False),
    _o("--list-tags", "list_tags", "containers: list the image's tags from the registry (v2 API) instead of trying "
       "each date's tag.", type=bool, default=False, panel=M),
    _o("--max-pairs", "max_pairs", "Most interleaved pairs a suspected step is measured again with; then it is "
       "unsure.", type=int, default=80, panel=S, rule=at_least(10)),
    _o("--hunt", "hunt", "Start the hunt of a confirmed regression (hourly hunt; hourly bisect for commits).",
       type=bool, default=True, off="--no-hunt", panel=E),
    _o("--hunt-arg", "hunt_arg", "An option passed to the hunt's command as it is, e.g. --hunt-arg=--scan-step=1h "
       "(repeatable) [default: none].", type=list, panel=E),
    _o("--hunt-image", "hunt_image", "wheels: the nightly images ({date}) a regression between two nightlies is "
       "hunted in [default: none: the alert says so].", panel=E),
    _o("--notify-cmd", "notify_cmd", "Run for each alert that is new or changed (hunted, recovered), with its JSON on "
       "stdin; a failure is said, exits 1, and the next run tries again [default: none].", panel=O),
    # -- explain ----------------------------------------------------------------------------
    _o("--sweep", "sweep", "Dump both states per pass, and measure the first-bad state with each pass whose effect "
       "differs disabled.", type=bool, default=False),
    _o("--try-flag", "try_flag", "An XLA flag to measure the first-bad state with (repeatable) [default: none].",
       type=list),
    _o("--revert-check", "revert_check", "Build the ref's tip with the culprit reverted and measure it against the "
       "tip.", type=bool, default=False),
    _o("--revert-ref", "revert_ref", "The ref whose tip --revert-check builds [default: the workdir's --ref]."),
    _o("--max-passes", "max_passes", "Passes the sweep measures, at most.", type=int, default=8, rule=at_least(1)),
    _o("--op-times", "op_times", "Run the dump runs under the JAX profiler and put each changed instruction's time in "
       "both states beside the diff.", type=bool, default=True, off="--no-op-times"),
    # -- the tracer (profile, trace) --------------------------------------------------------
    _o("--python-tracer-level", "python_tracer_level", "Python tracer: 0 off (small traces), 1 on.", type=int,
       default=0, rule=between(0, 1),
       per={"trace": {"help": "Python tracer: 0 off, 1 on [default: JAX's].", "default": None, "toml": False}}),
    _o("--host-tracer-level", "host_tracer_level", "Host tracer: 0 off, 1 user, 2 default, 3 verbose [default: JAX's, "
       "2].", type=int, rule=between(0, 3), per={
           "trace": {"help": "Host tracer: 0 off, 1 user TraceMe, 2 default, 3 verbose [default: JAX's, 2].",
                     "toml": False}}),
    _o("--device-tracer-level", "device_tracer_level", "Device tracer: 0 off, 1 on [default: JAX's]", type=int,
       rule=between(0, 1), toml=False),
    _o("--memprof-at", "memprof_at", "Save memory-<NAME>.prof at jaxbench.memory_checkpoint(NAME); repeat for "
       "several, * for all [default: none].", type=list, toml=False),
    # -- profile's front-end profile (hourly.profile.frontend) -------------------------------
    _o("--front-end", "front_end", "Profile tracing, lowering and dispatch in Python at both states and diff them: "
       "auto (when the step is in trace_ms, lower_ms, dispatch_us, step_dispatch_us or first_call_ms of the "
       "per-phase harness), off, or a make() target (bench.py[:make], package.module:make) to profile whatever "
       "the metric.", default="auto"),
    _o("--front-end-processes", "front_end_processes", "Processes per state in the front-end profile, "
       "interleaved good, bad, good, ... (the noise of a state is judged across its processes; fewer than 4 judges "
       "no change in time).", type=int, default=4, rule=at_least(1)),
    _o("--front-end-repeats", "front_end_repeats", "Profiled rounds in each front-end process (their median is the "
       "process's value).", type=int, default=7, rule=at_least(1)),
)

BY_NAME: dict[str, Option] = {o.name: o for o in OPTIONS}
BY_FLAG: dict[str, Option] = {o.flag: o for o in OPTIONS}

# -- which command takes which options, in the order its --help lists them ----------------------
WINDOW = ("from_", "to", "tz", "step", "max_instants")
REPOSITORIES = ("xla_repo", "jax_repo", "ref", "first_parent", "only", "jaxlib_gate", "xla_ref", "jax_ref")
#: how JAX and XLA are paired, and the checkouts a bisection descends into (docs/bisect.md, "Pairing")
PAIRING = ("pairing", "llvm_repo", "triton_repo")
BUILD = ("build_cmd", "jax_build_cmd", "native_inputs", "build_timeout", "wheel_dir", "python", "cache_dir",
         "cache_size", "cherry_pick")
#: scan and bisect skip states whose build failed before; profile always builds, so it has no use for it
RETRY = ("retry_failed",)
BENCHMARK = ("bench_cmd", "bench_cwd", "env", "repeats", "warmup_runs", "bench_timeout", "metric_regex",
             "metric_samples", "warmup_samples", "samples", "metrics", "metric")
STORE = ("workdir", "force")
#: the scan's own settings (stored with the scan: its direction is what show, detect, bisect, report read)
SCAN_ONLY = ("sync", "rerun", "higher_is_better", "mode", "keep_going", "confirm_edges")
#: where pairs are built and measured (hourly.execute.executors.make_executor reads these; not
#: Settings fields, so never stored: a later command picks its own)
EXECUTOR = ("executor", "workers", "partition", "time", "gres", "slurm_arg")
#: the daily level (hourly.nightly.plan.NightlySettings), shared by nightly and hunt
DAILY = ("image", "mount", "gpus", "env", "bench_cmd", "metric_regex", "metrics", "metric_samples", "warmup_samples",
         "repeats", "timeout", "every", "parallel", "pull", "higher_is_better")

TAKES: dict[str, tuple[str, ...]] = {
    "demo": ("json_out",),
    "releases": ("from_", "to", "bench_cmd", "bench_cwd", "env", "metric_regex", "repeats", "metrics",
                 "metric_samples", "warmup_samples", "samples", "bench_timeout",
                 "higher_is_better", "extra", "with_", "deps_today", "deps_as_of_release", "index_url", "find_links",
                 "pre", "python", "installer", "cache_dir", "jax_repo", "rerun", "dry_run", "show", "workdir",
                 "json_out", "config"),
    "nightly": ("from_", "to", *DAILY, "samples", "rerun", "show", "workdir", "json_out", "config"),
    "container": ("date", "image", "gpus", "env", "mount", "pull", "name", "workdir", "json_out", "config"),
    "hunt": ("from_", "to", "good_date", "bad_date", "from_release", "to_release", "release_bench_cmd", "extra",
             "index_url", "find_links", "pre", "release_with", "release_cache_dir", *DAILY, "metric", "dates", "scan_step",
             "bisect_in", "build_cmd", "xla_repo", "jax_repo", "ref", "xla_ref", "jax_ref", "max_repeats",
             "samples", "min_change", "rerun", "explain", "workdir", "json_out", "config"),
    "watch": ("source", "since", "until", "bench_cmd", "bench_cwd", "env", "metric_regex", "metrics", "metric_samples",
              "warmup_samples", "samples", "metric", "repeats", "timeout",
              "higher_is_better", "min_change", "max_pairs", "image", "mount", "gpus", "pull", "list_tags",
              "index_url", "find_links", "extra", "with_", "release_cache_dir", "xla_repo", "jax_repo", "ref", "step",
              "build_cmd", "python", "cache_dir", "warmup_runs", "sync", "force", "hunt", "hunt_arg", "hunt_image",
              "executor", "partition", "time", "gres", "slurm_arg", "notify_cmd", "show", "workdir", "json_out",
              "config"),
    "scan": (*WINDOW, *REPOSITORIES, *PAIRING, *BUILD, *RETRY, *BENCHMARK, *STORE, *SCAN_ONLY, *EXECUTOR,
             "dry_run", "json_out", "config"),
    "show": ("workdir", "json_out", "config", "nightly"),
    "detect": ("metric_regex", "higher_is_better", "min_change", "json_out", "config"),
    "bisect": ("good", "bad", "mode", "max_repeats", "min_change", "log", "rerun", "higher_is_better", "progress",
               "tz", "find_fix", "manual", "explain", "flaky", "walk_skips", *REPOSITORIES, *PAIRING, *BUILD, *RETRY, *BENCHMARK,
               *STORE, *EXECUTOR, "json_out", "config"),
    "mark": ("workdir", "json_out", "config"),
    "shell": ("tz", *REPOSITORIES, *BUILD, *STORE, "config"),
    "report": ("workdir", "out", "min_change", "anonymous", "config"),
    "profile": ("workdir", "good", "bad", "python_tracer_level", "host_tracer_level", "front_end",
                "front_end_processes", "front_end_repeats", "top", *BUILD, *EXECUTOR, "json_out", "config"),
    "explain": ("workdir", "step", "sweep", "try_flag", "revert_check", "revert_ref", "max_passes", "op_times",
                "repeats", *BUILD, "json_out", "config"),
    "bench": ("python", "repeats", "iters", "samples", "warmup", "x64", "phases", "env", "timeout", "out", "json_out"),
    "trace": ("out", "host_tracer_level", "python_tracer_level", "device_tracer_level", "memprof_at"),
    "compare-profiles": ("top",),
    "clean": ("json_out",),
    "config": (*WINDOW, *REPOSITORIES, *BUILD, *RETRY, *BENCHMARK, *STORE, *SCAN_ONLY, "command", "config", "json_out"),
    "version": (),
}

#: ``hourly watch``: the options that make the settings of the level measuring one build, by
#: ``--source`` (option name -> the setting it gives: a field of hourly.nightly.plan.NightlySettings,
#: hourly.releases.plan.ReleaseSettings or the scan's hourly.measure.settings.Settings); what the
#: watch settles itself (the direction, --env with --samples, the workdir) is given under the same names
_WATCH_READING = {"bench_cmd": "bench_cmd", "env": "env", "metric_regex": "metric_regex", "repeats": "repeats",
                  "higher_is_better": "higher_is_better", "workdir": "workdir"}
WATCH_LEVELS: dict[str, dict[str, str]] = {
    "containers": {**_WATCH_READING, "image": "image", "mount": "mounts", "gpus": "gpus", "timeout": "timeout",
                   "pull": "pull"},
    "wheels": {**_WATCH_READING, "bench_cwd": "bench_cwd", "timeout": "timeout", "extra": "extra", "with_": "with_",
               "index_url": "index_url", "find_links": "find_links", "python": "python",
               "release_cache_dir": "cache_dir"},
    "commits": {**_WATCH_READING, "bench_cwd": "bench_cwd", "timeout": "bench_timeout", "xla_repo": "xla_repo",
                "jax_repo": "jax_repo", "ref": "ref", "build_cmd": "build_cmd", "python": "python",
                "cache_dir": "cache_dir", "sync": "sync", "force": "force", "warmup_runs": "warmup_runs",
                "metrics": "metrics", "metric_samples": "metric_samples", "warmup_samples": "warmup_samples",
                "metric": "metric"},
}


def watch_level(source: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of ``source``'s level that ``values`` (option name -> value) give, by
    :data:`WATCH_LEVELS`."""
    return {setting: values[name] for name, setting in WATCH_LEVELS[source].items()}


def commands_with_a_table() -> tuple[str, ...]:
    """The commands whose own options hourly.toml configures, each in a table of its name (every
    command that reads the file, but ``config`` itself)."""
    return tuple(c for c, names in TAKES.items() if "config" in names and c != "config")


#: the commands that read every scan-shaped setting they take from the shared settings (the file's
#: top level and [scan], under their own table and their flags); the others read only ``workdir``
#: and ``higher_is_better`` from there, and their other options from their table, else the default
SHARED_READERS = ("scan", "bisect", "shell", "profile", "explain", "config")
#: options such a command reads as its own although a scan setting has their name (bisect's --mode
#: and --rerun are the bisection's, explain's --repeats and --step explain's)
OWN_READING = {"bisect": ("mode", "rerun"), "explain": ("repeats", "step")}


def options_of(command: str) -> list[Option]:
    """The options ``command`` takes, as it reads them, in its --help's order."""
    return [BY_NAME[name].of(command) for name in TAKES[command]]


def option(command: str, name: str) -> Option:
    """The option ``name`` as ``command`` reads it (a KeyError when the command does not take it)."""
    if name not in TAKES[command]:
        raise KeyError(f"hourly {command} takes no option {name!r}")
    return BY_NAME[name].of(command)


def refuse(command: str, values: Mapping[str, Any], error: type[UserError] = UserError) -> None:
    """Each of ``values`` (option name -> value, as ``command`` reads it) checked by its option's
    rule: the first refused is ``error`` in the words the command line's check uses
    (:meth:`Option.refusal`). A level's settings check their ruled values so (a stored watch, a
    caller), never with a copy of the rule."""
    for name, value in values.items():
        refused = option(command, name).refusal(value)
        if refused:
            raise error(*refused)


# -- the encoder ------------------------------------------------------------------------------

def _text(value: Any) -> str:
    """One value as the command line writes it: a word enum as its word, a whole float without
    its ``.0`` (3600.0 seconds: 3600)."""
    value = getattr(value, "value", value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value)


def argv(command: str, values: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> list[str]:
    """``hourly COMMAND`` with ``values`` (option name -> value, in order) as its arguments, exactly:
    None is left out, a boolean is its flag (False: its ``off`` flag, or nothing), a list repeats
    its flag. A name the command does not take is a programming error (KeyError)."""
    out = ["hourly", command]
    for name, value in (values.items() if isinstance(values, Mapping) else values):
        opt = option(command, name)
        if value is None:
            continue
        if opt.is_flag:
            flag = opt.flag if value else opt.off
            if flag:
                out.append(flag)
        elif isinstance(value, (list, tuple)):
            for item in value:
                out += [opt.flag, _text(item)]
        else:
            out += [opt.flag, _text(value)]
    return out


def command_line(command: str, values: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> str:
    """:func:`argv` as one line to print: quoted as a shell reads it, secret-looking values redacted
    (``--env API_TOKEN=<redacted>``; hourly.text.privacy)."""
    return join(argv(command, values))


def join(words: Sequence[str]) -> str:
    """Any command's words as one line to print, secret-looking values redacted."""
    return shlex.join(redact_argv(list(words)))
