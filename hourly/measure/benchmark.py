"""The benchmark executor: run a command N times, parse one metric, classify each run.

The command is an argument list (split like a shell would by the caller, never run through a
shell string). Every run keeps its exit code, duration, log and parsed value.
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from hourly.adapters import proc
from hourly.adapters.venvs import overlay_of
from hourly.errors import UserError
from hourly.metric import DEFAULT_METRIC_REGEX, MetricReading, compile_metric_regex, read_metric
from hourly.model import Status


@dataclass
class Run:
    status: Status
    value: float | None
    returncode: int | None
    duration: float
    log_path: str
    warmup: bool = False  # a warm-up run of a state just installed: recorded, never counted
    #: what the metric regex captured that is no finite number (``1e400``, ``inf``, a word): the
    #: run is ``no_metric`` and says so (hourly.metric.read_metric)
    captured: str | None = None

    def as_dict(self) -> dict:
        d = {"status": self.status.value, "value": self.value, "returncode": self.returncode,
             "duration": round(self.duration, 3), "log": self.log_path}
        if self.warmup:
            d["warmup"] = True
        if self.captured is not None:
            d["captured"] = self.captured
        return d


@dataclass
class BenchResult:
    runs: list[Run] = field(default_factory=list)

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
        return [r.value for r in self.counted if r.status is Status.OK and r.value is not None]

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
        return statistics.median(self.samples) if self.samples else None

    def detail(self) -> str | None:
        bad = [r for r in self.judged if r.status is not Status.OK]
        if not bad:
            return None
        r = bad[0]
        what = {Status.CRASHED: f"exit code {r.returncode}", Status.TIMEOUT: "timed out",
                Status.NO_METRIC: MetricReading(None, r.captured).why_none()}.get(r.status, r.status.value)
        return f"{what}; log {r.log_path}"


@dataclass
class BenchSpec:
    cmd: list[str]
    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    metric_regex: str = DEFAULT_METRIC_REGEX
    timeout: float | None = None
    python: str | None = None  # its directory goes first on PATH, so `python3` means it
    expect_metric: bool = True  # False (--mode exit): a run passes or fails by its exit code alone


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


def run_benchmark(spec: BenchSpec, repeats: int, log_dir: Path, tag: str, warmup: int = 0,
                  stop_after_failed_warmup: bool = False) -> BenchResult:
    """Run the benchmark ``warmup`` + ``repeats`` times; each run's log goes to
    ``log_dir/bench-<tag>-<i>.log``. The first ``warmup`` runs (of a state just installed: its first
    run pays for imports, caches and the GPU clocks, 25-90 % slower in JAX benchmarks) are recorded
    with ``"warmup": true`` and never counted in samples, value or status. ``stop_after_failed_warmup``
    (a bisection's probe): a warm-up run that crashed, timed out or printed no metric ends the
    measurement there, its class the state's — a state that crashes at import costs one process,
    not two."""
    rx = compile_metric_regex(spec.metric_regex)
    if spec.cwd and not Path(spec.cwd).is_dir():
        raise UserError(f"--bench-cwd {spec.cwd} is not a directory", "pass an existing directory")
    env = bench_env(spec)
    result = BenchResult()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for i in range(warmup + repeats):
        log = Path(log_dir) / f"bench-{tag}-{stamp}-{i + 1}.log"
        res = proc.run(spec.cmd, cwd=spec.cwd, env=env, timeout=spec.timeout, log_path=log, check=False)
        reading = read_metric(res.output, rx) if spec.expect_metric else MetricReading(None)
        status = run_status(res.returncode, res.timed_out, reading.value, spec.expect_metric)
        result.runs.append(Run(status, reading.value if status is Status.OK else None, res.returncode,
                               res.duration, str(log), warmup=i < warmup,
                               captured=reading.captured if status is Status.NO_METRIC else None))
        if stop_after_failed_warmup and i < warmup and status is not Status.OK:
            break
    return result
