"""Measure a JAX function phase by phase, in one process, and print one line per sample.

    python -m hourly.jaxbench_phases bench.py [--repeats 5] [--iters 50] [--warmup 3] [--x64]
    python -m hourly.jaxbench_phases package.module:make_small
    python /path/to/hourly/jaxbench_phases.py bench.py      (the same, where hourly is not installed)

The target is a Python file (``bench.py``, or ``bench.py:NAME``) or an importable module
(``package.module:NAME``) whose ``make()`` (or ``NAME()``), called with no argument, returns
``(fn, args)`` or ``(fn, args, kwargs)``: the function to measure, its positional arguments (a
tuple of arrays or pytrees), and keyword arguments passed as they are. ``fn`` is used as it is
when it is already ``jax.jit``-ed (its static and donated arguments are kept), else it is jitted.

Each phase is its own metric, named with its unit (:data:`PHASES`), and each sample is one line::

    METRIC trace_ms: 12.34          one sample (many per phase; warm-up is never printed)
    MEDIAN trace_ms: 12.31          the median of the phase's samples, once, after them
    UNAVAILABLE peak_memory_bytes: the cpu backend reports no device.memory_stats() ...
    # ...                           a comment for people (no regex of hourly's reads it)

How each phase is measured (``docs/measuring.md`` has the why):

- inputs go to the device first (``jax.device_put``, then blocked on); 64-bit mode is off unless
  ``--x64`` is given; every time is ``time.perf_counter()`` (``process_time`` moves in 10 ms steps
  on some machines); the garbage collector runs before each trace/lower/compile repeat, and once
  before a loop of short calls, which then runs with it off (as ``timeit`` does);
- ``--warmup`` untimed rounds come first (the first trace of a process pays for lazy imports);
- ``trace_ms``, ``lower_ms``, ``compile_ms``: ``jit(fn).trace(*args)``, ``.lower()``,
  ``.compile()``, each timed apart, ``--repeats`` times, with JAX's in-memory caches cleared
  (``jax.clear_caches()``) before each repeat and the persistent compilation cache off;
- ``compile_cached_ms``: the same compile loaded from a warm persistent compilation cache, in a
  private folder made for this run and removed after it; a sample counts only when JAX reported a
  cache hit for it (``jax.monitoring``);
- ``first_call_ms``: ``fn(*args)`` blocked, every cache cleared before (trace + lower + compile +
  run: the time to a first result);
- ``dispatch_us``: a tiny jitted call (``x + 1`` on 8 floats) returning, not waited for
  (asynchronous dispatch), ``--iters`` times; ``step_dispatch_us``: the same for ``fn(*args)``;
- ``step_ms``: ``fn(*args)`` ended by ``jax.block_until_ready`` on the whole output, ``--iters``
  times, after the compiling call and ``--warmup`` calls;
- ``peak_memory_bytes``: ``peak_bytes_in_use`` of ``device.memory_stats()`` (TPU, GPU) after the
  steps; on a backend without it (CPU) an ``UNAVAILABLE`` line says so, never a 0.
  ``live_array_bytes`` (bytes of the arrays alive after a step: inputs, outputs, what the program
  keeps, never the temporaries inside a step) and ``compiled_temp_bytes`` (XLA's temporary
  buffers of the compiled step, ``compiled.memory_analysis()``) are printed where JAX has them.

A ``make()`` (or the function) that raises ends the run with one line on stderr, ``hourly-bench:
error: make() in bench.py raised ValueError: ... (bench.py:12)``, and exit status 1 (``--traceback``
prints the traceback first); a target that cannot be found: exit status 2.

Lower is better for every phase: times and bytes (``hourly.metric.higher_is_better`` holds the
rule, by unit). This module imports only the standard library and JAX: it runs under the Python
of the build under test, by path where ``hourly`` is not installed.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__" and sys.path and os.path.abspath(sys.path[0] or os.curdir) == \
        os.path.dirname(os.path.abspath(__file__)):
    # run by path: Python put hourly's own folder first on sys.path, where hourly's bisect/,
    # profile/ and trace.py would shadow the standard library's bisect, profile and trace
    del sys.path[0]

# the standard library's modules are imported after that repair, on purpose
import argparse
import contextlib
import gc
import importlib
import importlib.util
import shutil
import statistics
import tempfile
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Iterator, TextIO

#: the prefixes of the machine-readable lines (hourly.metric reads them)
SAMPLE, MEDIAN, UNAVAILABLE = "METRIC", "MEDIAN", "UNAVAILABLE"
#: the samples per phase hourly asks one process for (hourly.measure.sample_cost.SAMPLES_VAR; this
#: module imports nothing of hourly's)
SAMPLES_VAR = "HOURLY_SAMPLES"
#: what the error line starts with
ERROR_PREFIX = "hourly-bench: error: "
#: the size of the tiny call whose dispatch is timed
TINY_SIZE = 8


@dataclass(frozen=True)
class Phase:
    metric: str   # the metric's name as printed, ending in its unit
    group: str    # the --phases name that selects it
    what: str     # one line for people


PHASES: tuple[Phase, ...] = (
    Phase("trace_ms", "trace", "jit(fn).trace(*args): Python traced to a jaxpr, caches cleared"),
    Phase("lower_ms", "lower", "traced.lower(): the jaxpr lowered to StableHLO"),
    Phase("compile_ms", "compile", "lowered.compile(), cold: persistent compilation cache off"),
    Phase("compile_cached_ms", "compile_cached",
          "lowered.compile() loaded from a warm persistent compilation cache (a private folder)"),
    Phase("first_call_ms", "first_call", "fn(*args) blocked, every cache cleared: trace to result"),
    Phase("dispatch_us", "dispatch", "a tiny jitted call returning, not waited for (async dispatch)"),
    Phase("step_dispatch_us", "step_dispatch", "fn(*args) returning, not waited for"),
    Phase("step_ms", "step", "fn(*args) ended by block_until_ready, after warm-up"),
    Phase("peak_memory_bytes", "memory", "peak bytes in use on the device (device.memory_stats())"),
    Phase("live_array_bytes", "memory", "bytes of the live arrays after a step (not a peak)"),
    Phase("compiled_temp_bytes", "memory", "XLA's temporary buffers of the compiled step"),
)
GROUPS: tuple[str, ...] = tuple(dict.fromkeys(p.group for p in PHASES))


class BenchError(Exception):
    """The run cannot go on: one line for the user (and an exit status)."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


# ------------------------------------------------------------------------------------- lines

class Lines:
    """Prints the machine-readable lines, flushed as they come (a crash keeps what was measured)."""

    def __init__(self, out: TextIO):
        self.out = out
        self.samples: dict[str, list[float]] = {}

    def _print(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def sample(self, metric: str, value: float) -> None:
        self.samples.setdefault(metric, []).append(value)
        self._print(f"{SAMPLE} {metric}: {_number(value)}")

    def median(self, metric: str) -> None:
        values = self.samples.get(metric)
        if values:
            self._print(f"{MEDIAN} {metric}: {_number(statistics.median(values))}")

    def unavailable(self, metric: str, reason: str) -> None:
        self._print(f"{UNAVAILABLE} {metric}: {' '.join(reason.split())}")

    def note(self, text: str) -> None:
        self._print(f"# {' '.join(text.split())}")


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and abs(value) >= 1 else f"{value:.6g}"


# ------------------------------------------------------------------------------------- the target

def load_maker(target: str) -> tuple[Callable, str]:
    """The maker ``target`` names and a label for messages (``make() in bench.py``)."""
    where, _, name = target.rpartition(":") if ":" in target else (target, "", "make")
    name = name or "make"
    if where.endswith(".py") or os.sep in where or os.path.isfile(where):
        path = os.path.abspath(where)
        if not os.path.isfile(path):
            raise BenchError(f"no such file: {where} — give a Python file with make(), or "
                             "package.module:function", code=2)
        label = os.path.basename(path)
        sys.path.insert(0, os.path.dirname(path))  # its neighbours import as under `python bench.py`
        spec = importlib.util.spec_from_file_location("__hourly_bench__", path)
        if spec is None or spec.loader is None:
            raise BenchError(f"{where} cannot be imported as a Python file", code=2)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as e:
            raise BenchError(f"importing {label} raised {_describe(e, path)}") from e
    else:
        label = where
        sys.path.insert(0, os.getcwd())  # as `python -m` does
        try:
            module = importlib.import_module(where)
        except ModuleNotFoundError as e:
            if e.name and (where == e.name or where.startswith(e.name + ".")):
                raise BenchError(f"no module named {where!r} — give a Python file with make(), or an "
                                 "importable package.module:function", code=2) from e
            raise BenchError(f"importing {where} raised {_describe(e, None)}") from e
        except Exception as e:
            raise BenchError(f"importing {where} raised {_describe(e, None)}") from e
    maker = getattr(module, name, None)
    if not callable(maker):
        raise BenchError(f"{label} has no function {name}() — define {name}() returning "
                         "(fn, args) or (fn, args, kwargs)", code=2)
    return maker, f"{name}() in {label}"


def call_maker(maker: Callable, label: str) -> tuple[Callable, tuple, dict]:
    """``(fn, args, kwargs)`` from the maker, checked; a maker that raises is one clear error."""
    try:
        made = maker()
    except Exception as e:
        raise BenchError(f"{label} raised {_describe(e, getattr(maker, '__code__', None))}") from e
    if not isinstance(made, (tuple, list)) or len(made) not in (2, 3):
        raise BenchError(f"{label} returned {type(made).__name__}, not (fn, args) or (fn, args, kwargs)")
    fn, args, kwargs = (*made, {}) if len(made) == 2 else made
    if not callable(fn):
        raise BenchError(f"{label} returned {type(fn).__name__} as the function, which is not callable")
    if not isinstance(args, (tuple, list)):
        raise BenchError(f"{label} returned {type(args).__name__} as the arguments: give a tuple, "
                         "e.g. (fn, (x,))")
    if not isinstance(kwargs, dict):
        raise BenchError(f"{label} returned {type(kwargs).__name__} as the keyword arguments: give a dict")
    return fn, tuple(args), kwargs


def _describe(e: BaseException, where: Any) -> str:
    """``ValueError: first line of the message (file.py:12)``: one line, the innermost frame in
    ``where`` (a path or a code object's file) when the traceback passes there, else the innermost."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    message = lines[0] + (" …" if len(lines) > 1 else "") if lines else ""
    frames = traceback.extract_tb(e.__traceback__)
    path = getattr(where, "co_filename", where)
    mine = [f for f in frames if path and os.path.abspath(f.filename) == os.path.abspath(path)]
    mine = mine or [f for f in frames if not _is_library(f.filename)]  # outside JAX and this harness
    frame = mine[-1] if mine else None
    at = f" ({os.path.basename(frame.filename)}:{frame.lineno})" if frame else ""
    return f"{type(e).__name__}{': ' + message if message else ''}{at}"


def _is_library(filename: str) -> bool:
    parts = os.path.normpath(filename).split(os.sep)
    return (os.path.abspath(filename) == os.path.abspath(__file__)
            or any(p in ("jax", "jaxlib", "importlib") for p in parts[:-1]) or filename.startswith("<"))


# ------------------------------------------------------------------------------------- JAX

def _block(jax: Any, tree: Any) -> Any:
    return jax.block_until_ready(tree)


def _clear(jax: Any) -> None:
    jax.clear_caches()
    gc.collect()


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """Collect once, then keep the collector out of a loop of short timed calls (as timeit does):
    a collection right before a call of microseconds makes it ten times slower (cold caches)."""
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _set(jax: Any, option: str, value: Any) -> bool:
    try:
        jax.config.update(option, value)
        return True
    except Exception:  # an option this JAX does not have
        return False


def _reset_persistent_cache() -> None:
    try:
        from jax.experimental.compilation_cache.compilation_cache import reset_cache
    except ImportError:
        from jax._src.compilation_cache import reset_cache  # older JAX
    reset_cache()


def cache_off(jax: Any) -> None:
    """Persistent compilation cache off, whatever the environment said (cold compiles stay cold)."""
    _set(jax, "jax_enable_compilation_cache", False)
    try:
        _reset_persistent_cache()
    except Exception:
        pass


def cache_on(jax: Any, folder: str) -> None:
    """Persistent compilation cache on, in ``folder``, for every compile however short or small."""
    _set(jax, "jax_compilation_cache_dir", folder)
    if not _set(jax, "jax_enable_compilation_cache", True):
        raise BenchError("this JAX has no jax_enable_compilation_cache option")
    _set(jax, "jax_persistent_cache_min_compile_time_secs", 0.0)
    _set(jax, "jax_persistent_cache_min_entry_size_bytes", 0)
    _reset_persistent_cache()


class CacheHits:
    """Counts JAX's ``/jax/compilation_cache/cache_hits`` events while it is open."""

    EVENT = "/jax/compilation_cache/cache_hits"

    def __init__(self, jax: Any) -> None:
        self.count = 0
        self._monitoring = getattr(jax, "monitoring", None)
        register = getattr(self._monitoring, "register_event_listener", None)
        self.ok = register is not None
        if register is not None:
            register(self._listen)

    def _listen(self, event: str, **_kw: Any) -> None:
        if event == self.EVENT:
            self.count += 1

    def close(self) -> None:
        unregister = getattr(self._monitoring, "unregister_event_listener", None)
        if unregister is not None:
            try:
                unregister(self._listen)
            except Exception:
                pass


def _user_call(what: str, f: Callable, *a: Any, **kw: Any) -> Any:
    """Run a step of the user's function; an exception there is the user's, in one line."""
    try:
        return f(*a, **kw)
    except BenchError:
        raise
    except Exception as e:
        raise BenchError(f"{what} raised {_describe(e, None)}") from e


@dataclass
class Options:
    repeats: int = 5
    iters: int = 50
    warmup: int = 3
    x64: bool = False
    phases: tuple[str, ...] = GROUPS


class Target:
    """The function under measure, jitted, with its arguments on the device."""

    def __init__(self, jax: Any, fn: Callable, args: tuple, kwargs: dict):
        self.jax = jax
        # a function jitted already keeps its static and donated arguments
        self.jitted: Any = fn if callable(getattr(fn, "lower", None)) else jax.jit(fn)
        self.can_trace = callable(getattr(self.jitted, "trace", None))
        self.args = _user_call("putting the arguments on the device",
                               lambda: _block(jax, jax.device_put(args)))
        self.kwargs = kwargs

    def call(self) -> Any:
        """``fn(*args)``, not waited for."""
        return _user_call("calling fn", self.jitted, *self.args, **self.kwargs)

    def run(self) -> Any:
        """``fn(*args)``, waited for."""
        return _block(self.jax, self.call())

    def trace(self) -> Any:
        return _user_call("tracing fn", self.jitted.trace, *self.args, **self.kwargs)

    def lowered(self) -> Any:
        if self.can_trace:
            return _user_call("lowering fn", self.trace().lower)
        return _user_call("lowering fn", self.jitted.lower, *self.args, **self.kwargs)

    def compiled(self) -> Any:
        return _user_call("compiling fn", self.lowered().compile)


#: the phases that trace, lower or compile afresh (they clear JAX's caches)
FRONT_END = ("trace", "lower", "compile", "compile_cached", "first_call")


def measure(jax: Any, fn: Callable, args: tuple, kwargs: dict, opts: Options, lines: Lines) -> None:
    """Every selected phase, in an order where no phase warms another's cache by accident: the
    front end (caches cleared each time) first, then the calls of one compiled function."""
    wanted = set(opts.phases)
    target = Target(jax, fn, args, kwargs)
    cache_off(jax)
    compiled = None
    if wanted & set(FRONT_END):
        for _ in range(opts.warmup):  # the first trace of a process pays for lazy imports, MLIR set-up
            _clear(jax)
            compiled = target.compiled()
            target.run()
    if wanted & {"trace", "lower", "compile"}:
        compiled = _front_end(target, wanted, opts, lines)
    if "compile_cached" in wanted:
        _compile_cached(jax, target.lowered, opts, lines)
    if "first_call" in wanted:
        _first_call(target, opts, lines)
    if "dispatch" in wanted:
        _dispatch(jax, opts, lines)
    if wanted & {"step", "step_dispatch", "memory"}:
        target.run()  # compiles (untimed)
        for _ in range(opts.warmup):
            target.run()
    if "step" in wanted:
        _step(target, opts, lines)
    if "step_dispatch" in wanted:
        _step_dispatch(target, opts, lines)
    if "memory" in wanted:
        _memory(jax, target, compiled, lines)


def _front_end(target: Target, wanted: set[str], opts: Options, lines: Lines) -> Any:
    jax, perf = target.jax, time.perf_counter
    if not target.can_trace:
        for group in ("trace", "lower"):
            if group in wanted:
                lines.unavailable(f"{group}_ms", "this JAX's jit has no .trace(): tracing and lowering "
                                                 "cannot be timed apart")
    compiled = None
    for _ in range(opts.repeats):
        _clear(jax)
        if target.can_trace:
            t0 = perf()
            traced = target.trace()
            t1 = perf()
            lowered = _user_call("lowering fn", traced.lower)
            t2 = perf()
            if "trace" in wanted:
                lines.sample("trace_ms", (t1 - t0) * 1e3)
            if "lower" in wanted:
                lines.sample("lower_ms", (t2 - t1) * 1e3)
        else:
            lowered = target.lowered()
        if "compile" in wanted:
            gc.collect()
            t0 = perf()
            compiled = _user_call("compiling fn", lowered.compile)
            t1 = perf()
            lines.sample("compile_ms", (t1 - t0) * 1e3)
    for metric in ("trace_ms", "lower_ms", "compile_ms"):
        lines.median(metric)
    return compiled


def _first_call(target: Target, opts: Options, lines: Lines) -> None:
    for _ in range(opts.repeats):
        _clear(target.jax)
        t0 = time.perf_counter()
        target.run()
        lines.sample("first_call_ms", (time.perf_counter() - t0) * 1e3)
    lines.median("first_call_ms")


def _dispatch(jax: Any, opts: Options, lines: Lines) -> None:
    tiny = jax.jit(lambda x: x + 1)
    x = _block(jax, jax.device_put(jax.numpy.zeros((TINY_SIZE,), jax.numpy.float32)))
    for _ in range(max(opts.warmup, 1)):
        _block(jax, tiny(x))
    perf = time.perf_counter
    with _no_gc():
        for _ in range(opts.iters):
            t0 = perf()
            y = tiny(x)
            t1 = perf()
            _block(jax, y)
            lines.sample("dispatch_us", (t1 - t0) * 1e6)
    lines.median("dispatch_us")


def _step(target: Target, opts: Options, lines: Lines) -> None:
    perf = time.perf_counter
    with _no_gc():
        for _ in range(opts.iters):
            t0 = perf()
            target.run()
            lines.sample("step_ms", (perf() - t0) * 1e3)
    lines.median("step_ms")


def _step_dispatch(target: Target, opts: Options, lines: Lines) -> None:
    perf = time.perf_counter
    with _no_gc():
        for _ in range(opts.iters):
            t0 = perf()
            out = target.call()
            t1 = perf()
            _block(target.jax, out)  # the queue is empty before the next sample
            lines.sample("step_dispatch_us", (t1 - t0) * 1e6)
    lines.median("step_dispatch_us")


def _compile_cached(jax: Any, lowered_of: Callable, opts: Options, lines: Lines) -> None:
    """Fill a private persistent cache with one compile, then time compiles that load from it."""
    metric = "compile_cached_ms"
    hits = CacheHits(jax)
    folder = tempfile.mkdtemp(prefix="hourly-bench-cache-")
    try:
        if not hits.ok:
            lines.unavailable(metric, "this JAX has no jax.monitoring.register_event_listener: a "
                                      "cache hit cannot be told from a compile")
            return
        try:
            cache_on(jax, folder)
        except Exception as e:
            lines.unavailable(metric, f"the persistent compilation cache cannot be turned on "
                                      f"({type(e).__name__}: {e})")
            return
        _clear(jax)
        _user_call("compiling fn", lowered_of().compile)  # fills the cache (untimed)
        if not any(os.scandir(folder)):
            lines.unavailable(metric, f"this JAX wrote nothing to the persistent compilation cache on "
                                      f"the {jax.default_backend()} backend")
            return
        missed = 0
        for _ in range(opts.repeats):
            _clear(jax)
            lowered = lowered_of()
            before = hits.count
            gc.collect()
            t0 = time.perf_counter()
            _user_call("compiling fn", lowered.compile)
            t1 = time.perf_counter()
            if hits.count > before:
                lines.sample(metric, (t1 - t0) * 1e3)
            else:
                missed += 1
        if missed == opts.repeats:
            lines.unavailable(metric, "JAX reported no persistent cache hit: every compile was a new one")
            return
        if missed:
            lines.note(f"{missed} of {opts.repeats} compiles missed the persistent cache and were not counted")
        lines.median(metric)
    finally:
        hits.close()
        cache_off(jax)
        shutil.rmtree(folder, ignore_errors=True)


def _memory(jax: Any, target: Target, compiled: Any, lines: Lines) -> None:
    """After the steps (the device's peak covers them), with one output of fn held: the inputs and
    that output are what lives then."""
    device = jax.devices()[0]
    gc.collect()
    held = target.run()
    try:
        stats = device.memory_stats()
    except Exception:
        stats = None
    if stats and "peak_bytes_in_use" in stats:
        lines.sample("peak_memory_bytes", int(stats["peak_bytes_in_use"]))
    else:
        lines.unavailable("peak_memory_bytes",
                          f"the {device.platform} backend reports no device.memory_stats(); "
                          "live_array_bytes counts the live arrays instead (not a peak)")
    try:
        arrays = jax.live_arrays()
        live = sum(a.nbytes for a in arrays if not a.is_deleted() and device in a.devices())
        lines.sample("live_array_bytes", int(live))
    except Exception as e:
        lines.unavailable("live_array_bytes", f"jax.live_arrays() failed ({type(e).__name__}: {e})")
    del held
    try:
        analysis = (compiled if compiled is not None else target.compiled()).memory_analysis()
        temp = getattr(analysis, "temp_size_in_bytes", None)
    except Exception:
        temp = None
    if temp is None:
        lines.unavailable("compiled_temp_bytes", "this JAX gives no compiled.memory_analysis()")
    else:
        lines.sample("compiled_temp_bytes", int(temp))
    for metric in ("peak_memory_bytes", "live_array_bytes", "compiled_temp_bytes"):
        lines.median(metric)


# ------------------------------------------------------------------------------------- the program

def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m hourly.jaxbench_phases",
        description="Measure a JAX function phase by phase in one process; one line per sample.",
        epilog="TARGET: bench.py (its make()), bench.py:NAME, or package.module:NAME; the maker returns "
               "(fn, args) or (fn, args, kwargs).")
    parser.add_argument("target", help="bench.py[:NAME] or package.module[:NAME] (NAME default make)")
    parser.add_argument("--repeats", type=_at_least(1), default=None,
                        help="samples of trace, lower, compile, compile_cached, first_call "
                             f"(default ${SAMPLES_VAR} when hourly sets it, else 5)")
    parser.add_argument("--iters", type=_at_least(1), default=None,
                        help=f"samples of step, step_dispatch, dispatch (default ${SAMPLES_VAR}, else 50)")
    parser.add_argument("--warmup", type=_at_least(0), default=3,
                        help="untimed rounds before the samples (default 3)")
    parser.add_argument("--x64", action="store_true", help="turn jax_enable_x64 on (default off)")
    parser.add_argument("--phases", default=",".join(GROUPS),
                        help=f"comma-separated, from {','.join(GROUPS)} (default all)")
    parser.add_argument("--traceback", action="store_true",
                        help="print the traceback before the one-line error")
    ns = parser.parse_args(argv)
    asked = asked_samples()
    ns.repeats = ns.repeats or asked or 5
    ns.iters = ns.iters or asked or 50
    chosen = tuple(p.strip() for p in ns.phases.split(",") if p.strip())
    unknown = [p for p in chosen if p not in GROUPS]
    if unknown or not chosen:
        parser.error(f"--phases {ns.phases!r}: choose from {','.join(GROUPS)}")
    ns.phases = chosen
    return ns


def asked_samples(env: dict[str, str] | None = None) -> int | None:
    """The samples per phase hourly asks this process for (``HOURLY_SAMPLES``, docs/measuring.md):
    the default of ``--repeats`` and ``--iters``; None when unset or not a whole number above 0."""
    raw = (os.environ if env is None else env).get(SAMPLES_VAR, "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else None


def _at_least(low: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = int(text)
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}")
        return value
    return parse


def _versions(jax: Any) -> str:
    try:
        import jaxlib
        jaxlib_version = getattr(jaxlib, "__version__", None) or jaxlib.version.__version__
    except Exception:
        jaxlib_version = "unknown"
    device = jax.devices()[0]
    kind = getattr(device, "device_kind", "") or device.platform
    return (f"jax {jax.__version__}, jaxlib {jaxlib_version}, backend {jax.default_backend()}, "
            f"device {kind} ({len(jax.devices())} in all, the first used), "
            f"python {sys.version.split()[0]}")


def precision_notes(jax: Any, args: tuple, x64: bool) -> list[str]:
    """What makes the comparison unlike like: 64-bit mode turned on by the program, 64-bit inputs."""
    notes = []
    if jax.config.jax_enable_x64 and not x64:
        notes.append("jax_enable_x64 was turned on by the benchmark itself: JAX computes in 64-bit "
                     "where inputs allow, much slower than the float32 default")
    wide = [f"{jax.tree_util.keystr(path) or 'input'} is {leaf.dtype}"
            for path, leaf in jax.tree_util.tree_flatten_with_path(args)[0]
            if str(getattr(leaf, "dtype", "")) in ("float64", "complex128")]
    if wide and not x64:
        notes.append(f"64-bit inputs ({'; '.join(wide[:5])})" +
                     (" computed in 64-bit" if jax.config.jax_enable_x64 else
                      ": with x64 off JAX truncates them to 32-bit on transfer"))
    return notes


def run(ns: argparse.Namespace, out: TextIO) -> None:
    import jax
    _set(jax, "jax_enable_x64", bool(ns.x64))  # before the target's module makes any array
    maker, label = load_maker(ns.target)
    fn, args, kwargs = call_maker(maker, label)
    lines = Lines(out)
    lines.note(f"hourly-bench: {label}: {_versions(jax)}; x64 {'on' if ns.x64 else 'off'}; "
               f"--repeats {ns.repeats} --iters {ns.iters} --warmup {ns.warmup}")
    for text in precision_notes(jax, args, ns.x64):
        print(f"hourly-bench: warning: {text}", file=sys.stderr, flush=True)
    opts = Options(ns.repeats, ns.iters, ns.warmup, ns.x64, ns.phases)
    measure(jax, fn, args, kwargs, opts, lines)


def main(argv: list[str] | None = None) -> int:
    ns = parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        run(ns, sys.stdout)
    except BenchError as e:
        sys.stdout.flush()
        if ns.traceback and e.__cause__ is not None:
            traceback.print_exception(type(e.__cause__), e.__cause__, e.__cause__.__traceback__)
        print(f"{ERROR_PREFIX}{e}", file=sys.stderr, flush=True)
        return e.code
    return 0


if __name__ == "__main__":
    sys.exit(main())
