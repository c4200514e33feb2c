"""The benchmark executor: run a command N times, read its metric (or metrics), classify each run.

The command is an argument list (split like a shell would by the caller, never run through a
shell string). Every run keeps its exit code, duration, log and parsed value.

A run is one process, and the unit of independent noise: whatever one process prints shares its
state (compiled code, caches, clocks, the machine's load while it ran). It may print its metric
once (its last match is its value: :data:`SAMPLES_LAST`, the default) or once per iteration
(``--metric-samples all``: every match is a sample, the first ``--warmup-samples`` of each process
dropped as its warm-up); then the run keeps its own samples, and its value is their median. A
benchmark that prints named ``METRIC name: value`` lines (``hourly.jaxbench``, the per-phase
harness) may have every name recorded (``--metrics``): each run then keeps the samples of each
name, and :meth:`BenchResult.for_metric` gives one name's runs as if it were the only metric.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from hourly.adapters import proc
from hourly.adapters.venvs import overlay_of
from hourly.errors import UserError
from hourly.measure.sample_cost import SAMPLES_VAR, Timing, asked_of, followed, timing
from hourly.metric import (
    DEFAULT_METRIC_REGEX,
    SAMPLE_PREFIX,
    MetricReading,
    Samples,
    compile_metric_regex,
    named_line_regex,
    parse_samples,
    read_metric,
    read_metric_samples,
    read_unavailable,
    unread_words,
)
from hourly.model import Status, median  # median: never an overflow near 1e308
from hourly.text.plurals import plural

#: how many of a metric's matches in one run's output count: the last one (one value per process)
#: or every one (many samples per process)
SAMPLES_LAST, SAMPLES_ALL = "last", "all"
#: ``--metrics all``: every name a run prints
ALL_METRICS = "all"


@dataclass
class Run:
    """One process: its class, its value, and (many samples, named metrics) what it printed."""

    status: Status
    value: float | None  # the process's value: its last match; with many samples, their median
    returncode: int | None
    duration: float
    log_path: str
    warmup: bool = False  # a warm-up run of a state just installed: recorded, never counted
    #: many samples: the counted samples this process printed (its warm-up ones dropped); None:
    #: one value per process (its last match), as every run recorded before many samples
    samples: list[float] | None = None
    matched: int | None = None  # matches of the metric in its output, warm-up and rejected ones included
    warmup_samples: int = 0     # of those, dropped as the process's warm-up
    rejected: list[str] = field(default_factory=list)  # counted matches that are no finite number
    unavailable: str | None = None  # named metrics: the reason of an ``UNAVAILABLE name: reason`` line
    #: named metrics: every name's samples in this process (not stored: each name's own runs carry theirs)
    metrics: dict[str, Samples] | None = None
    unavailable_all: dict[str, str] = field(default_factory=dict)
    #: one value per process: what the metric regex captured that is no finite number (``1e400``,
    #: ``inf``, a word): the run is ``no_metric`` and says so (hourly.metric.read_metric)
    captured: str | None = None
    #: a number the metric regex captured that hourly will not guess at (``1,234``: 1234 or 1.234),
    #: what was captured and what followed: the run is ``no_metric`` (hourly.metric.read_number)
    unread: str | None = None
    #: what the process cost: seconds to its first sample and per sample after it (None: its lines
    #: were not stamped, or it printed no sample)
    timing: Timing | None = None
    #: the samples hourly asked the process for (``HOURLY_SAMPLES``); None: none asked
    asked: int | None = None
    #: what hourly had to kill once the process exited (a child it left running, or holding its
    #: output open), in words (hourly.adapters.proc.Result.notes): said in the run's record and log
    stopped: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        d: dict[str, object] = {"status": self.status.value, "value": self.value, "returncode": self.returncode,
             "duration": round(self.duration, 3), "log": self.log_path}
        if self.warmup:
            d["warmup"] = True
        if self.samples is not None:  # the process's own samples: which samples came from which process
            d["samples"] = list(self.samples)
            d["matched"] = self.matched
            if self.warmup_samples:
                d["warmup_samples"] = self.warmup_samples
            if self.rejected:
                d["rejected"] = list(self.rejected)
        if self.unavailable:
            d["unavailable"] = self.unavailable
        if self.captured is not None:
            d["captured"] = self.captured
        if self.unread is not None:
            d["unread"] = self.unread
        if self.timing is not None:
            d.update(self.timing.as_dict())
        if self.asked is not None and self.samples is not None:  # many samples: was the count followed?
            d["asked"] = self.asked
            if not self.followed:
                d["followed"] = False
        if self.stopped:
            d["stopped"] = list(self.stopped)
        return d

    @property
    def followed(self) -> bool:
        """Whether the process printed the samples asked of it (``HOURLY_SAMPLES``); one value per
        process (``--metric-samples last``) always follows: its count is not the benchmark's to set."""
        if self.samples is None or self.status is not Status.OK:
            return True
        return followed(self.asked, self.matched or 0)

    @property
    def values(self) -> list[float]:
        """The counted samples of this process ([] unless it measured)."""
        if self.status is not Status.OK or self.value is None:
            return []
        return list(self.samples) if self.samples is not None else [self.value]

    def why_no_metric(self) -> str:
        """Why a run that exited 0 has no value, in words: never printed, printed but every match
        a warm-up sample, printed but no finite number, or the benchmark says it is unavailable."""
        if self.unavailable:
            return f"the benchmark says the metric is unavailable: {self.unavailable}"
        unread = self.unread or next((s.unread for s in (self.metrics or {}).values() if s.unread), None)
        if unread:
            return unread_words(unread)
        if self.samples is None and self.metrics is None:  # the regex's last match: what it captured, if anything
            return MetricReading(None, self.captured).why_none()
        n = self.matched or 0
        if n == 0:
            return "metric never printed"
        if n <= self.warmup_samples:
            return (f"metric printed {plural(n, 'time')}, every one a warm-up sample (--warmup-samples "
                    f"{self.warmup_samples} drops each run's first {self.warmup_samples})")
        shown = ", ".join(self.rejected[:3]) + (", ..." if len(self.rejected) > 3 else "")
        return (f"metric printed {plural(n - self.warmup_samples, 'time')} after the warm-up samples, "
                f"never a finite number ({shown})")


@dataclass
class BenchResult:
    #: the runs of the metric followed: the regex's, or a named primary's (:meth:`for_metric`); in
    #: named mode without a primary, the processes themselves (OK when they printed any named metric)
    runs: list[Run] = field(default_factory=list)
    #: named metrics: the processes, each with every name's samples (``runs`` is one name's view of them)
    processes: list[Run] | None = None
    sampling: str = SAMPLES_LAST
    #: named metrics that measured none of them: the names looked for, and what the runs printed
    #: of them (said by :meth:`detail`)
    looked_for: list[str] | None = None
    said: list[str] = field(default_factory=list)

    @property
    def counted(self) -> list[Run]:
        """The runs that count: every run but the warm-up ones."""
        return [r for r in self.runs if not r.warmup]

    @property
    def judged(self) -> list[Run]:
        """The runs a measurement's class comes from: those that count; a state whose warm-up run
        failed and that ran no more (a bisection's, run_benchmark's ``stop_after_failed_warmup``),
        its warm-up run."""
        return self.counted or [r for r in self.runs if r.status is not Status.OK]

    @property
    def samples(self) -> list[float]:
        """One value per counted run that measured: its value (the median of its samples when a run
        prints many). The process is the unit of independent noise, so statistics over states
        take these; :attr:`process_samples` keeps every sample, grouped by process."""
        return [r.value for r in self.counted if r.status is Status.OK and r.value is not None]

    @property
    def process_samples(self) -> list[list[float]]:
        """Every counted sample, grouped by the counted run (process) that printed it."""
        return [r.values for r in self.counted if r.values]

    @property
    def status(self) -> Status:
        """OK when any run measured (or, in exit mode, every run passed); otherwise the first
        failure's class."""
        if self.samples:
            return Status.OK
        bad = [r for r in self.judged if r.status is not Status.OK]
        if self.counted and not bad:
            return Status.OK
        return bad[0].status if bad else Status.NO_METRIC

    @property
    def value(self) -> float | None:
        return median(self.samples) if self.samples else None

    def unfollowed(self) -> str | None:
        """The count asked of each process (``HOURLY_SAMPLES``) not followed, in words (None: every
        counted run printed what was asked, or none was asked)."""
        off = [r for r in self.counted if not r.followed]
        if not off:
            return None
        printed = sorted({r.matched or 0 for r in off})
        return (f"asked each process for {plural(off[0].asked or 0, 'sample')} (HOURLY_SAMPLES), "
                f"{'a process' if len(off) == 1 else f'{len(off)} processes'} printed "
                f"{' or '.join(map(str, printed))}: the benchmark does not follow HOURLY_SAMPLES, "
                "and every sample it printed counts")

    def detail(self) -> str | None:
        bad = [r for r in self.judged if r.status is not Status.OK]
        if not bad:
            return None
        r = bad[0]
        no_metric = r.why_no_metric() if self.looked_for is None else (
            "no METRIC line" + (f" of {', '.join(self.looked_for)}" if self.looked_for else "") + " with a finite value printed"
            + "".join(f" ({x})" for x in self.said))
        what = {Status.CRASHED: f"exit code {r.returncode}", Status.TIMEOUT: "timed out",
                Status.NO_METRIC: no_metric}.get(r.status, r.status.value)
        return f"{what}; log {r.log_path}"

    def metric_names(self) -> list[str]:
        """Named metrics: every name any run printed (samples or an ``UNAVAILABLE`` line), in the order
        first printed."""
        names: dict[str, None] = {}
        for r in self.processes or []:
            names.update(dict.fromkeys(r.metrics or {}))
            names.update(dict.fromkeys(r.unavailable_all))
        return list(names)

    def for_metric(self, name: str) -> BenchResult:
        """The runs of one named metric, as if the benchmark printed it alone: a run that crashed or
        timed out is that for every metric; one that exited 0 is OK when it printed ``name``
        (its samples: its ``METRIC name:`` lines), else ``no_metric`` with why."""
        return BenchResult([_metric_run(r, name) for r in self.processes or []], self.processes, self.sampling)


def _metric_run(r: Run, name: str) -> Run:
    """One named metric's view of a process: every ``METRIC name:`` line it printed is a sample."""
    s = (r.metrics or {}).get(name)
    values = list(s.values) if s else []
    status = r.status if r.status in (Status.CRASHED, Status.TIMEOUT) else Status.OK if values else Status.NO_METRIC
    ok = status is Status.OK
    return Run(status, median(values) if ok else None, r.returncode, r.duration, r.log_path, r.warmup,
               samples=values if ok else [], matched=s.matched if s else 0, warmup_samples=s.warmup if s else 0,
               rejected=list(s.rejected) if s else [], unavailable=r.unavailable_all.get(name),
               unread=s.unread if s and status is Status.NO_METRIC else None, timing=r.timing, asked=r.asked,
               stopped=r.stopped)


@dataclass
class BenchSpec:
    cmd: list[str]
    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    metric_regex: str = DEFAULT_METRIC_REGEX
    timeout: float | None = None
    python: str | None = None  # its directory goes first on PATH, so `python3` means it
    expect_metric: bool = True  # False (--mode exit): a run passes or fails by its exit code alone
    #: the regex's metric: ``last``, a run's value is its last match; ``all``, every match is a
    #: sample (many per process). Named metrics take every line as a sample.
    samples: str = SAMPLES_LAST
    warmup_samples: int = 0  # the first K matches of each process are its warm-up, never counted
    #: named metrics: None reads the regex's one metric; ("all",) every ``METRIC name:`` line's name;
    #: names: those alone
    metrics: tuple[str, ...] | None = None
    primary: str | None = None  # named metrics: the one ``runs`` follows (None: the processes themselves)
    #: the samples asked of each process (``HOURLY_SAMPLES`` in its environment); None: none asked
    asked: int | None = None


#: JAX's persistent compilation cache, off for every benchmark run unless the user turned it on.
CACHE_SWITCH = "JAX_ENABLE_COMPILATION_CACHE"
CACHE_DIR = "JAX_COMPILATION_CACHE_DIR"


def cache_defaults(user_env: dict[str, str], inherited: dict[str, str] | None = None) -> tuple[dict[str, str], list[str]]:
    """What hourly sets and removes so that no run gets an executable compiled by another build.

    Source builds at different commits can share a version string, so JAX's persistent
    compilation cache could serve a probe an executable compiled by another XLA. Unless the user
    set ``JAX_ENABLE_COMPILATION_CACHE`` (in ``--env`` or the environment) or gave a cache
    directory in ``--env``, runs get ``JAX_ENABLE_COMPILATION_CACHE=false`` and lose an inherited
    ``JAX_COMPILATION_CACHE_DIR``. Returns (variables to set, variables to remove).
    """
    inherited = dict(os.environ) if inherited is None else inherited
    if CACHE_SWITCH in user_env or CACHE_SWITCH in inherited or CACHE_DIR in user_env:
        return {}, []
    return {CACHE_SWITCH: "false"}, [CACHE_DIR] if CACHE_DIR in inherited else []


def with_count(spec: BenchSpec) -> BenchSpec:
    """Every benchmark run is asked for a count of samples (``HOURLY_SAMPLES``, docs/measuring.md):
    the one a level chose (a bisection's, ``--samples``), else the user's ``--env HOURLY_SAMPLES``,
    else :data:`~hourly.analysis.process_stat.DEFAULT_SAMPLES` (a level that does not choose it)."""
    if spec.asked is not None:
        return spec
    from hourly.analysis.process_stat import DEFAULT_SAMPLES  # here: process_stat imports numpy
    return replace(spec, asked=asked_of(spec.env) or DEFAULT_SAMPLES)


def bench_env(spec: BenchSpec) -> dict[str, str]:
    """The benchmark's environment: hourly's, ``spec.python`` first on PATH, the compilation cache
    off (:func:`cache_defaults`), the user's ``--env``; a ``spec.python`` of an overlay
    (hourly.adapters.venvs.Overlay) puts its own packages first on PYTHONPATH last of all, so that no
    PYTHONPATH shadows the state's jax."""
    env = dict(os.environ)
    if spec.python:
        env["PATH"] = str(Path(spec.python).parent) + os.pathsep + env.get("PATH", "")
    set_, removed = cache_defaults(spec.env, env)
    for k in removed:
        env.pop(k, None)
    env.update(set_)
    if spec.asked is not None:  # before the user's --env: an HOURLY_SAMPLES of theirs wins
        env[SAMPLES_VAR] = str(spec.asked)
    env.update(spec.env)
    overlay = overlay_of(spec.python)
    if overlay is not None:
        env = overlay.activate(env)
    return env


def run_status(returncode: int | None, timed_out: bool, value: float | None,
               expect_metric: bool = True) -> Status:
    """The class of one run: timed out, crashed (non-zero exit), no metric printed, or OK.

    Without ``expect_metric`` (an exit-status scan) a run that exits 0 is OK."""
    if timed_out:
        return Status.TIMEOUT
    if returncode != 0:
        return Status.CRASHED
    if value is None and expect_metric:
        return Status.NO_METRIC
    return Status.OK


def read_run(output: str, returncode: int | None, timed_out: bool, duration: float, log: str, spec: BenchSpec,
             warmup: bool = False) -> Run:
    """One process's output read as ``spec`` says: its class, its value, its samples (and every
    named metric's). The one place a run's output becomes a :class:`Run`, for here and for a
    nightly container's runs."""
    if not spec.expect_metric:
        return Run(run_status(returncode, timed_out, None, False), None, returncode, duration, log, warmup)
    if spec.metrics is not None:  # named metrics: every METRIC line of the names asked for
        found = read_metric_samples(output, spec.warmup_samples)
        if spec.metrics != (ALL_METRICS,):
            found = {n: s for n, s in found.items() if n in spec.metrics}
        unavailable = read_unavailable(output)
        printed = any(s.values for s in found.values())
        status = run_status(returncode, timed_out, 0.0 if printed else None)
        return Run(status, None, returncode, duration, log, warmup, matched=sum(s.matched for s in found.values()),
                   metrics=found, unavailable_all=unavailable)
    if spec.samples == SAMPLES_LAST and not spec.warmup_samples:  # one value per process: its last match
        reading = read_metric(output, spec.metric_regex)
        status = run_status(returncode, timed_out, reading.value)
        return Run(status, reading.value if status is Status.OK else None, returncode, duration, log, warmup,
                   captured=reading.captured if status is Status.NO_METRIC else None,
                   unread=reading.unread if status is Status.NO_METRIC else None)
    s = parse_samples(output, spec.metric_regex, spec.warmup_samples)
    values = list(s.values[-1:] if spec.samples == SAMPLES_LAST else s.values)
    status = run_status(returncode, timed_out, median(values) if values else None)
    ok = status is Status.OK
    return Run(status, median(values) if ok else None, returncode, duration, log, warmup,
               samples=values if ok else [], matched=s.matched, warmup_samples=s.warmup, rejected=list(s.rejected),
               unread=s.unread if status is Status.NO_METRIC else None)


def result_of(runs: list[Run], spec: BenchSpec) -> BenchResult:
    """The runs as a result: in named mode, the primary's view of the processes (or the processes)."""
    if spec.metrics is None or not spec.expect_metric:
        return BenchResult(runs, None, spec.samples)
    result = BenchResult(runs, runs, spec.samples)
    return result.for_metric(spec.primary) if spec.primary else result


def metric_views(res: BenchResult, metrics: tuple[str, ...] | None, known: list[str] | None = None,
                 primary: str | None = None) -> list[tuple[str, BenchResult]]:
    """What one measurement records, as (metric, its runs): the regex's one metric (``metrics``
    None) as ``""``; else one per named metric: the names asked for, or (``all``) every name any
    run printed, every name already recorded (``known``: a metric a state stops printing reads
    ``no_metric`` there, never "not measured") and the primary. When no run measured any name
    (every run crashed, or none printed a METRIC line with a finite value), one ``""`` entry whose
    runs are the processes says so for every metric (:func:`whole`)."""
    if metrics is None:
        return [("", res)]
    wanted = list(metrics) if ALL_METRICS not in metrics else [*res.metric_names(), *(known or []), *([primary] if primary else [])]
    names = list(dict.fromkeys(wanted))
    views = {n: res.for_metric(n) for n in names}
    if not any(v.samples for v in views.values()):
        said = [f"{n}: {r.why_no_metric()}" for n, v in views.items() for r in v.counted[:1]
                if r.status is Status.NO_METRIC and (r.matched or r.unavailable)]
        return [("", whole(res, names, said))]
    return [(n, views[n]) for n in names]


def whole(res: BenchResult, names: list[str], said: list[str] | None = None) -> BenchResult:
    """The processes of a named-metric measurement that measured no name, as one result: crashed,
    timed out, or ``no_metric`` saying which lines were looked for."""
    procs = [r if r.status in (Status.CRASHED, Status.TIMEOUT) else replace(r, status=Status.NO_METRIC, value=None)
             for r in res.processes or []]
    return BenchResult(procs, None, res.sampling, looked_for=names, said=said or [])


def _free_stamp(log_dir: Path, tag: str) -> str:
    """The time to the second, made unique among ``tag``'s logs in ``log_dir`` (``.2``, ``.3`` …):
    two measurements of one state within a second (a bisection's rounds of a fast benchmark) wrote
    over each other's logs."""
    base = stamp = time.strftime("%Y%m%d-%H%M%S")
    n = 1
    while (log_dir / f"bench-{tag}-{stamp}-1.log").exists():
        n += 1
        stamp = f"{base}.{n}"
    return stamp


def _sample_line(spec: BenchSpec) -> re.Pattern:
    """What a line holding one of the process's samples matches (the primary's, in named mode)."""
    if spec.metrics is None:
        return compile_metric_regex(spec.metric_regex)
    return re.compile(named_line_regex(spec.primary) if spec.primary else rf"(?<!\w){SAMPLE_PREFIX}[ \t]+\S")


def run_benchmark(spec: BenchSpec, repeats: int, log_dir: Path, tag: str, warmup: int = 0,
                  stop_after_failed_warmup: bool = False, on_run: Callable[[Run], None] | None = None) -> BenchResult:
    """Run the benchmark ``warmup`` + ``repeats`` times; each run's log goes to
    ``log_dir/bench-<tag>-<time>-<i>.log``. The first ``warmup`` runs (of a state just installed: its first
    run pays for imports, caches and the GPU clocks, 25-90 % slower in JAX benchmarks) are recorded
    with ``"warmup": true`` and never counted in samples, value or status. ``stop_after_failed_warmup``
    (a bisection's probe): a warm-up run that crashed, timed out or printed no metric ends the
    measurement there, its class the state's — a state that crashes at import costs one process,
    not two. ``on_run`` hears of each run as it ends (a bisection's line per process)."""
    compile_metric_regex(spec.metric_regex)
    if spec.cwd and not Path(spec.cwd).is_dir():
        raise UserError(f"--bench-cwd {spec.cwd} is not a directory", "pass an existing directory")
    spec = with_count(spec)
    env = bench_env(spec)
    runs: list[Run] = []
    stamp = _free_stamp(Path(log_dir), tag)
    for i in range(warmup + repeats):
        log = Path(log_dir) / f"bench-{tag}-{stamp}-{i + 1}.log"
        res = proc.run(spec.cmd, cwd=spec.cwd, env=env, timeout=spec.timeout, log_path=log, check=False)
        run = read_run(res.output, res.returncode, res.timed_out, res.duration, str(log), spec, i < warmup)
        if res.line_times and spec.expect_metric:  # what the process cost, off when its samples arrived
            run.timing = timing(res.output, res.line_times, _sample_line(spec),
                                None if res.timed_out else res.duration)
        run.asked = spec.asked
        run.stopped = list(res.notes)
        runs.append(run)
        if on_run is not None:
            on_run(run)
        if stop_after_failed_warmup and i < warmup and run.status is not Status.OK:
            break
    return result_of(runs, spec)
