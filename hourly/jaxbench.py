"""Measure a JAX function the right way, and print lines hourly's scans can read.

A benchmark that forgets compilation, asynchronous dispatch, 64-bit mode or host→device copies
measures the wrong thing. :func:`benchmark` does it right:

1. puts the inputs on the device first (``jax.device_put`` then ``jax.block_until_ready``);
2. times the first call on its own, as compile time;
3. warms up, then times ``iters`` calls, each ended by ``jax.block_until_ready`` on the whole
   output pytree;
4. reports the median and the spread (IQR, MAD, min, max).

This is warm-up apart inside one process: the compiling first call and the warm-up calls are never
timed with the rest. ``hourly scan``/``bisect`` do the same one level up (``--warmup-runs``): the
first run of the whole benchmark after a state was installed is recorded and not counted.

It warns (:class:`PrecisionWarning`) when ``jax_enable_x64`` is on or an input is float64 where
float32 is expected. :meth:`BenchResult.report` prints one machine-readable line per metric::

    METRIC step_time_ms: 1.234
    METRIC step_time_compile_s: 0.532
    COMPILE_TIME_S: 0.532

which ``hourly scan --metric-regex`` picks up with :func:`metric_regex` (see ``docs/measuring.md``).

:func:`memory_checkpoint` saves a device memory profile at a named point of a program when
``hourly trace`` (or ``HOURLY_MEMPROF_AT``) asks for that point, and does nothing otherwise, so
benchmarks can keep the calls in for normal scans.

This module imports only the standard library, JAX and :mod:`hourly.text.plurals` (standard library
only): it runs inside the benchmarked program, under whatever Python the build under test uses.
"""

from __future__ import annotations

import math
import os
import re
import statistics
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, TextIO

from hourly.text.plurals import plural

#: One number as the benchmark lines print it (also matches ``1e-05`` and ``-3``).
NUMBER_PATTERN = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"

#: Template of the regex for one ``METRIC`` line; fill ``{metric}`` with the metric's full name
#: (e.g. ``step_time_ms``). ``metric_regex("step_time_ms")`` does it, escaping the name.
METRIC_REGEX_TEMPLATE = r"METRIC {metric}:\s*(?P<value>" + NUMBER_PATTERN + r")"

#: Regex of the compile-time line (``COMPILE_TIME_S: 0.532``).
COMPILE_TIME_REGEX = r"COMPILE_TIME_S:\s*(?P<value>" + NUMBER_PATTERN + r")"

#: The samples hourly asks each benchmark process for (``HOURLY_SAMPLES``; docs/measuring.md).
ENV_SAMPLES = "HOURLY_SAMPLES"


def asked_samples(default: int) -> int:
    """How many samples this process should print: ``HOURLY_SAMPLES`` when hourly set it (a whole
    number above 0), else ``default``. A benchmark that prints one ``METRIC`` line per sample loops
    this many times, so that hourly can weigh a process's fixed cost against its samples."""
    raw = os.environ.get(ENV_SAMPLES, "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else default


#: Environment variables shared with :mod:`hourly.harness.trace`.
ENV_TRACE_DIR = "HOURLY_TRACE_DIR"
ENV_MEMPROF_AT = "HOURLY_MEMPROF_AT"

_UNITS = {"s": 1.0, "ms": 1e3, "us": 1e6, "ns": 1e9}


class PrecisionWarning(UserWarning):
    """The benchmark runs in (or is fed) 64-bit floats where 32-bit is expected."""


def metric_regex(metric: str) -> str:
    """The regex, with a ``value`` group, that picks the ``METRIC <metric>:`` line."""
    return METRIC_REGEX_TEMPLATE.format(metric=re.escape(metric))


def metric_name(name: str, unit: str) -> str:
    """``step_time`` + ``ms`` → ``step_time_ms`` (a name already ending in the unit is kept)."""
    return name if name.endswith(f"_{unit}") else f"{name}_{unit}"


# --------------------------------------------------------------------------- statistics (pure)

def quantile(sorted_values: list[float], q: float) -> float:
    """Linear-interpolated quantile of already-sorted values (numpy's default method)."""
    if not sorted_values:
        raise ValueError("no values")
    pos = (len(sorted_values) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def median_abs_deviation(values: list[float]) -> float:
    """Median of absolute deviations from the median (unscaled)."""
    med = statistics.median(values)
    return statistics.median(abs(v - med) for v in values)


@dataclass
class BenchResult:
    """Timings of one benchmarked function, in seconds."""

    name: str
    times_s: list[float]
    compile_time_s: float
    warmup: int
    unit: str = "ms"
    warnings: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.times_s:
            raise ValueError("a benchmark needs at least one timed call")
        if self.unit not in _UNITS:
            raise ValueError(f"unit must be one of {sorted(_UNITS)}, not {self.unit!r}")

    @property
    def iters(self) -> int:
        return len(self.times_s)

    @property
    def _sorted(self) -> list[float]:
        return sorted(self.times_s)

    @property
    def median_s(self) -> float:
        return statistics.median(self.times_s)

    @property
    def q1_s(self) -> float:
        return quantile(self._sorted, 0.25)

    @property
    def q3_s(self) -> float:
        return quantile(self._sorted, 0.75)

    @property
    def iqr_s(self) -> float:
        return self.q3_s - self.q1_s

    @property
    def mad_s(self) -> float:
        return median_abs_deviation(self.times_s)

    @property
    def min_s(self) -> float:
        return min(self.times_s)

    @property
    def max_s(self) -> float:
        return max(self.times_s)

    @property
    def metric(self) -> str:
        """Full metric name as printed, e.g. ``step_time_ms``."""
        return metric_name(self.name, self.unit)

    def in_unit(self, seconds: float) -> float:
        return seconds * _UNITS[self.unit]

    def metric_lines(self) -> list[str]:
        """The machine-readable lines: median step time, compile time (twice: named and plain)."""
        return [f"METRIC {self.metric}: {self.in_unit(self.median_s):.6g}",
                f"METRIC {self.name}_compile_s: {self.compile_time_s:.6g}",
                f"COMPILE_TIME_S: {self.compile_time_s:.6g}"]

    def summary(self) -> str:
        """One human-readable line (starts with ``#`` so no metric regex mistakes it)."""
        u, f = self.unit, self.in_unit
        return (f"# {self.name}: median {f(self.median_s):.4g} {u}, IQR {f(self.iqr_s):.3g} {u}, "
                f"MAD {f(self.mad_s):.3g} {u}, min {f(self.min_s):.4g} {u}, "
                f"max {f(self.max_s):.4g} {u} over {plural(self.iters, 'call')} after {self.warmup} warm-up;"
                f" first call (compile) {self.compile_time_s:.4g} s")

    def report(self, file: TextIO | None = None) -> None:
        """Print the summary line, then the metric lines, and flush."""
        out = file or sys.stdout
        print(self.summary(), file=out)
        for line in self.metric_lines():
            print(line, file=out)
        out.flush()

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "metric": self.metric, "unit": self.unit, "iters": self.iters,
                "warmup": self.warmup, "compile_time_s": self.compile_time_s,
                "median_s": self.median_s, "iqr_s": self.iqr_s, "mad_s": self.mad_s,
                "min_s": self.min_s, "max_s": self.max_s, "warnings": list(self.warnings)}


# --------------------------------------------------------------------------- JAX side

def _jax() -> Any:
    import jax  # imported lazily so the statistics above work (and test) without JAX
    return jax


def precision_warnings(tree: Any, expect_dtype: str | None = "float32") -> list[str]:
    """Messages about 64-bit mode and float64 leaves of ``tree`` (empty when all is well).

    ``expect_dtype=None`` (or ``"float64"``) means the user wants 64-bit: nothing to say.
    """
    if expect_dtype is None or str(expect_dtype) == "float64":
        return []
    jax = _jax()
    found = []
    if jax.config.jax_enable_x64:
        found.append("jax_enable_x64 is on: JAX computes in 64-bit where inputs allow, which is "
                     "much slower than the float32 default; turn it off to compare like with like")
    wide = []
    for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
        dtype = getattr(leaf, "dtype", None)
        if dtype is not None and str(dtype) in ("float64", "complex128"):
            wide.append(f"{jax.tree_util.keystr(path) or 'input'} is {dtype}")
    if wide:
        found.append(f"inputs are 64-bit where {expect_dtype} is expected ({'; '.join(wide[:5])})"
                     + ("" if jax.config.jax_enable_x64 else
                        " — with x64 off JAX truncates them to 32-bit on transfer"))
    return found


def put_on_device(tree: Any, device: Any = None) -> Any:
    """``jax.device_put`` every array leaf of ``tree`` and wait until the copies are done."""
    jax = _jax()
    placed = jax.device_put(tree, device)
    return jax.block_until_ready(placed)


def benchmark(fn: Callable, *args: Any, name: str = "step_time", iters: int = 100,
              warmup: int = 5, unit: str = "ms", device: Any = None,
              expect_dtype: str | None = "float32", kwargs: dict | None = None) -> BenchResult:
    """Time ``fn(*args, **kwargs)``: compile apart, warm-up, then ``iters`` blocked calls.

    ``args`` are moved to the device before anything is timed; ``kwargs`` are passed as they are
    (use them for static arguments). ``fn`` should be ``jax.jit``-ed at its outermost level.
    """
    if iters < 1:
        raise ValueError("iters must be at least 1")
    if warmup < 0:
        raise ValueError("warmup must be >= 0")
    jax = _jax()
    kwargs = kwargs or {}
    messages = precision_warnings(args, expect_dtype)
    for message in messages:
        warnings.warn(message, PrecisionWarning, stacklevel=2)
    args = put_on_device(args, device)

    start = time.perf_counter()
    jax.block_until_ready(fn(*args, **kwargs))
    compile_time = time.perf_counter() - start

    for _ in range(warmup):
        jax.block_until_ready(fn(*args, **kwargs))

    times = []
    for _ in range(iters):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args, **kwargs))
        times.append(time.perf_counter() - start)
    return BenchResult(name, times, compile_time, warmup, unit, messages)


# --------------------------------------------------------------------------- memory profiles

def requested_checkpoints(env: dict[str, str] | None = None) -> set[str]:
    """Names listed in ``HOURLY_MEMPROF_AT`` (comma-separated; ``*`` means every checkpoint)."""
    raw = (os.environ if env is None else env).get(ENV_MEMPROF_AT, "")
    return {part.strip() for part in raw.split(",") if part.strip()}


def block_on_live_arrays() -> int:
    """Wait for every live array, so pending work has allocated; returns how many there are."""
    jax = _jax()
    arrays = jax.live_arrays()
    for array in arrays:
        try:
            array.block_until_ready()
        except Exception:  # deleted or donated meanwhile: nothing to wait for
            pass
    return len(arrays)


def save_memory_profile(path: str | os.PathLike) -> Path:
    """Block on live arrays, then write the device memory profile (gzip'd pprof) to ``path``."""
    jax = _jax()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    block_on_live_arrays()
    jax.profiler.save_device_memory_profile(str(path))
    return path


_CHECKPOINT_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


def memory_checkpoint(name: str, out_dir: str | os.PathLike | None = None) -> Path | None:
    """Save ``memory-<name>.prof`` if this checkpoint was requested, else do nothing.

    Requested means ``name`` (or ``*``) is in ``HOURLY_MEMPROF_AT``. The file goes to ``out_dir``,
    else ``HOURLY_TRACE_DIR`` (set by ``hourly trace``), else the current directory.
    """
    if not _CHECKPOINT_NAME.match(name):
        raise ValueError(f"checkpoint name {name!r} may hold only letters, digits, '_', '.', '-'")
    wanted = requested_checkpoints()
    if name not in wanted and "*" not in wanted:
        return None
    folder = Path(out_dir or os.environ.get(ENV_TRACE_DIR) or ".")
    path = save_memory_profile(folder / f"memory-{name}.prof")
    print(f"# hourly: memory profile at {name!r} saved to {path}", file=sys.stderr, flush=True)
    return path
