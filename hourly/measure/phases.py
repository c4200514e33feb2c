"""``hourly bench``: the per-phase JAX harness (``hourly/jaxbench_phases.py``) run under a chosen
Python, its lines read back per phase, and the options that feed the same harness to a scan.

The harness runs by its path (``python /…/hourly/jaxbench_phases.py bench.py``): it needs only the
standard library and JAX, so the Python of a build under test runs it without hourly installed,
exactly as ``hourly scan --bench-cmd`` will run it there.
"""

from __future__ import annotations

import os
import shlex
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

from hourly.adapters import proc
from hourly.errors import UserError
from hourly.metric import (
    MEDIAN_PREFIX,
    Samples,
    higher_is_better,
    named_line_regex,
    read_metric_samples,
    read_unavailable,
)

#: the harness, beside the hourly package's other modules (found by path, never imported here)
HARNESS = Path(__file__).resolve().parents[1] / "jaxbench_phases.py"
#: what the harness's one error line starts with (hourly.jaxbench_phases.ERROR_PREFIX)
ERROR_PREFIX = "hourly-bench: error: "
#: what each of the harness's warnings starts with (64-bit mode or inputs: hourly.jaxbench_phases.run)
WARNING_PREFIX = "hourly-bench: warning: "
#: where the harness file is mounted in a nightly container
CONTAINER_HARNESS = "/opt/hourly/jaxbench_phases.py"
CONTAINER_DIR = "/dir"


@dataclass(frozen=True)
class HarnessOptions:
    """The harness's own options (``python -m hourly.jaxbench_phases --help``)."""

    repeats: int = 5
    iters: int = 50
    warmup: int = 3
    x64: bool = False
    phases: tuple[str, ...] = ()  # empty: every phase
    traceback: bool = True  # into the log, above the one-line error the user sees

    def to_args(self) -> list[str]:
        args = ["--repeats", str(self.repeats), "--iters", str(self.iters), "--warmup", str(self.warmup)]
        if self.x64:
            args.append("--x64")
        if self.phases:
            args += ["--phases", ",".join(self.phases)]
        if self.traceback:
            args.append("--traceback")
        return args


def split_target(target: str) -> tuple[str, str]:
    """``bench.py:make_small`` → (``bench.py``, ``:make_small``); ``bench.py`` → (``bench.py``, ``""``)."""
    where, colon, name = target.rpartition(":")
    return (where, colon + name) if colon else (target, "")


def is_file_target(target: str) -> bool:
    """A file (``bench.py``, ``dir/bench``), not a module (``package.module``)."""
    where = split_target(target)[0]
    return where.endswith(".py") or os.sep in where


def absolute_target(target: str, cwd: str | os.PathLike | None = None) -> str:
    """A file target made absolute (so the command runs from any folder); a module target as is."""
    if not is_file_target(target):
        return target
    where, name = split_target(target)
    return str((Path(cwd or os.getcwd()) / where).resolve()) + name


def check_target(target: str, cwd: str | os.PathLike | None = None) -> None:
    """A file target that does not exist is an error before any process starts."""
    if not is_file_target(target):
        return
    where = split_target(target)[0]
    if not (Path(cwd or os.getcwd()) / where).is_file():
        raise UserError(f"no such file: {where}",
                        "give a Python file whose make() returns (fn, args), or package.module:function")


def harness_command(python: str, target: str, options: HarnessOptions,
                    harness: str | os.PathLike = HARNESS) -> list[str]:
    return [python, str(harness), target, *options.to_args()]


@dataclass(frozen=True)
class PhaseStats:
    """One phase's samples from one run, and their median and spread."""

    name: str
    samples: tuple[float, ...]
    rejected: tuple[str, ...] = ()

    @property
    def unit(self) -> str:
        return self.name.rsplit("_", 1)[-1] if "_" in self.name else ""

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    def quantile(self, q: float) -> float:
        """Linear-interpolated quantile (numpy's default method)."""
        ordered = sorted(self.samples)
        pos = (len(ordered) - 1) * q
        lo = int(pos)
        hi = min(lo + 1, len(ordered) - 1)
        return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)

    @property
    def iqr(self) -> float:
        return self.quantile(0.75) - self.quantile(0.25)

    @property
    def higher_is_better(self) -> bool | None:
        return higher_is_better(self.name)

    def as_dict(self) -> dict:
        return {"unit": self.unit, "n": len(self.samples), "median": self.median,
                "q1": self.quantile(0.25), "q3": self.quantile(0.75), "iqr": self.iqr,
                "min": min(self.samples), "max": max(self.samples),
                "higher_is_better": self.higher_is_better, "samples": list(self.samples),
                **({"rejected": list(self.rejected)} if self.rejected else {})}


@dataclass
class PhaseReport:
    """What one harness run measured: each phase's samples, the phases it could not measure."""

    command: list[str]
    phases: dict[str, PhaseStats] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)
    header: str | None = None
    log: str | None = None
    duration: float | None = None
    #: a metric printed only with values that are no finite number (nan, inf)
    no_value: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: the harness's warnings (on its stderr, which the log keeps): each without its prefix
    warnings: list[str] = field(default_factory=list)


def read_report(output: str, command: list[str]) -> PhaseReport:
    """The harness's output read back: one :class:`PhaseStats` per metric that has samples."""
    report = PhaseReport(command, unavailable=read_unavailable(output))
    found: dict[str, Samples] = read_metric_samples(output)
    for name, s in found.items():
        if s.values:
            report.phases[name] = PhaseStats(name, s.values, s.rejected)
        else:
            report.no_value[name] = (s.unread,) if s.unread else s.rejected  # unread: a number not guessed at
    for line in output.splitlines():
        if line.startswith("# hourly-bench:") and report.header is None:
            report.header = line[2:].strip()
        elif line.startswith(WARNING_PREFIX):
            report.warnings.append(line[len(WARNING_PREFIX):])
    return report


def run_harness(target: str, options: HarnessOptions, *, python: str | None = None,
                cwd: str | os.PathLike | None = None, env: dict[str, str] | None = None,
                timeout: float | None = None, log_path: str | os.PathLike | None = None) -> PhaseReport:
    """Run the harness on ``target`` under ``python`` (default: this one) and read its lines.

    A harness that fails (``make()`` raised, no such file, a timeout) is a :class:`UserError` whose
    line is the harness's own one-line error, with the log's path."""
    python = python or sys.executable
    check_target(target, cwd)
    command = harness_command(python, target, options)
    merged = {**os.environ, **(env or {})}
    res = proc.run(command, cwd=cwd, env=merged, timeout=timeout, log_path=log_path, check=False)
    where = f"traceback and full output: {log_path}" if log_path else "run alone: " + shlex.join(command)
    if res.timed_out:
        raise UserError(f"the harness did not finish within {timeout:g} s",
                        f"give --timeout more, or fewer --repeats/--iters; {where}")
    if res.returncode != 0:
        said = [ln[len(ERROR_PREFIX):] for ln in res.output.splitlines() if ln.startswith(ERROR_PREFIX)]
        if said:
            message, _, fix = said[-1].partition(" — ")
            raise UserError(message, f"{fix or 'fix the benchmark'}; {where}")
        last = res.tail(1).strip()
        printed = f": {last}" if last else f" and printed nothing (is {python} a Python?)"
        raise UserError(f"the harness exited with status {res.returncode}{printed}", where)
    report = read_report(res.output, command)
    report.log, report.duration = (str(log_path) if log_path else None), res.duration
    if not report.phases and not report.unavailable:
        raise UserError("the harness printed no METRIC line", where)
    return report


# -- feeding the same harness to scan, bisect and nightly -----------------------------------------

@dataclass(frozen=True)
class ScanOptions:
    """The options that run the harness inside ``hourly scan``/``bisect`` and ``nightly``."""

    bench_cmd: str                # for scan/bisect: the state's python3 (first on PATH) runs it
    bench_cwd: str | None         # for a module target: where it imports from
    per_metric: dict[str, list[str]]  # metric -> [--metric-regex, REGEX, direction flag]
    nightly: list[str] | None     # --mount ... --bench-cmd ... for a nightly container, if it can be said
    nightly_gap: str | None       # why not, when it cannot


def scan_options(target: str, options: HarnessOptions, metrics: list[str],
                 cwd: str | os.PathLike | None = None, harness: str | os.PathLike = HARNESS) -> ScanOptions:
    """The ``--bench-cmd``, ``--metric-regex`` and direction of each metric, for a scan over builds.

    The regex picks the harness's ``MEDIAN <metric>:`` line: one value per run, the median of the
    run's samples (a scan reads one value per run today)."""
    cwd = Path(cwd or os.getcwd()).resolve()
    target = absolute_target(target, cwd)
    bench = shlex.join(harness_command("python3", target, options, harness))
    per_metric = {}
    for name in metrics:
        direction = higher_is_better(name)
        flag = [] if direction is None else ["--higher-is-better" if direction else "--lower-is-better"]
        per_metric[name] = ["--metric-regex", named_line_regex(name, MEDIAN_PREFIX), *flag]
    nightly, gap = None, None
    if is_file_target(target):
        where, name = split_target(target)
        try:
            inside = f"{CONTAINER_DIR}/{Path(where).relative_to(cwd).as_posix()}{name}"
        except ValueError:
            gap = f"{where} is outside the current folder, which a nightly container sees at {CONTAINER_DIR}: " \
                  "run hourly bench from a folder above it"
        else:
            nightly = ["--mount", f"{cwd}:{CONTAINER_DIR}", "--mount", f"{Path(harness)}:{CONTAINER_HARNESS}:ro",
                       "--bench-cmd", shlex.join(harness_command("python3", inside, options, CONTAINER_HARNESS))]
    else:
        gap = "a module target must be importable inside the container: give the file of its make() instead"
    return ScanOptions(bench, None if is_file_target(target) else str(cwd), per_metric, nightly, gap)
