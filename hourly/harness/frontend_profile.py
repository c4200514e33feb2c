"""Profile JAX's front end — tracing, lowering, dispatch — at the Python level, in one process.

    python -m hourly.harness.frontend_profile bench.py[:NAME] --out FILE.json [--repeats 7] [--warmup 2]
                                      [--iters 100] [--phases trace,lower,dispatch] [--x64]

The target is the per-phase harness's (:mod:`hourly.jaxbench_phases`): a file or module whose
``make()`` returns ``(fn, args)`` or ``(fn, args, kwargs)``. After ``--warmup`` untimed rounds
(trace, lower, compile, run: the first trace of a process pays for lazy imports), each of
``--repeats`` rounds clears JAX's caches (``jax.clear_caches()``), collects garbage, and runs

* ``trace``: ``jit(fn).trace(*args)`` under :mod:`cProfile`,
* ``lower``: ``traced.lower()`` under :mod:`cProfile`,
* ``dispatch``: ``--iters`` calls of the compiled ``fn(*args)``, each returning (not waited for)
  under :mod:`cProfile`, blocked on after the profiler stops,

each with a fresh profiler, the garbage collector off inside the profiled call, and the same call
timed once more without the profiler (``plain_ms``: what the profiler's overhead hides). Every
function's own time, cumulative time and call count in each repeat go to ``FILE.json`` keyed
``module:function`` (``jax._src.interpreters.partial_eval:trace_to_jaxpr``; a C function by its
name, ``<built-in method time.sleep>``, with the Python function that spent most time in it as
``via``) — line numbers are left out of the key, so the same function matches across commits
that move it. Two functions of one module with one name (closures named ``wrapper``) are summed.

One run is one process: its repeats share the process's state (allocations, caches, where its
threads landed, the machine's load while it ran), so they show that process's noise, not the
state's. ``hourly profile`` runs it in several processes at the last-good and the first-bad state
of a front-end step, interleaved (good, bad, good, bad, …), and diffs the states with the process
as the unit of noise (:mod:`hourly.profile.frontend`); each file keeps when its process started
(``started``, seconds since the epoch) and on which machine (``host``) for that. Standard library and JAX only (it runs under the
Python of the build under test, with only the ``hourly`` package on ``PYTHONPATH``).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import platform
import pstats
import sys
import time
import traceback
from functools import partial
from typing import Any, Callable

from hourly import jaxbench_phases as harness

#: 2: ``started`` and ``host`` added
FORMAT_VERSION = 2
PHASES = ("trace", "lower", "dispatch")
#: a function whose cumulative time stays under this in every repeat is left out of the file (ms)
KEEP_MS = 0.001


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m hourly.harness.frontend_profile",
                                     description="Profile tracing, lowering and dispatch with cProfile.")
    parser.add_argument("target", help="bench.py[:NAME] or package.module[:NAME] (NAME default make)")
    parser.add_argument("--out", required=True, help="the JSON file to write")
    parser.add_argument("--repeats", type=int, default=7, help="profiled rounds (default 7)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed rounds first (default 2)")
    parser.add_argument("--iters", type=int, default=100, help="calls per dispatch round (default 100)")
    parser.add_argument("--phases", default=",".join(PHASES), help="comma-separated, from trace,lower,dispatch")
    parser.add_argument("--x64", action="store_true", help="turn jax_enable_x64 on (default off)")
    parser.add_argument("--traceback", action="store_true", help="print the traceback before the error line")
    ns = parser.parse_args(argv)
    ns.phases = tuple(p.strip() for p in ns.phases.split(",") if p.strip())
    bad = [p for p in ns.phases if p not in PHASES]
    if bad or not ns.phases:
        parser.error(f"--phases {','.join(ns.phases)!r}: choose from {','.join(PHASES)}")
    if ns.repeats < 1 or ns.iters < 1 or ns.warmup < 0:
        parser.error("--repeats and --iters must be at least 1, --warmup at least 0")
    return ns


class Modules:
    """A code object's file → the module it belongs to (from ``sys.modules``, read when asked)."""

    def __init__(self) -> None:
        self.by_file: dict[str, str] = {}
        for name, module in list(sys.modules.items()):
            f = getattr(module, "__file__", None)
            if isinstance(f, str):
                if name == "__hourly_bench__":  # the harness's name for a target file: its own name
                    name = os.path.splitext(os.path.basename(f))[0]
                self.by_file.setdefault(os.path.realpath(f), name)

    def name(self, filename: str) -> str:
        real = os.path.realpath(filename)
        if real in self.by_file:
            return self.by_file[real]
        parts = real.replace("\\", "/").split("/")
        return "/".join(parts[-2:]).removesuffix(".py")


def function_key(func: tuple[str, int, str], modules: Modules) -> str:
    filename, _line, name = func
    if filename == "~" or filename.startswith("<"):  # a C function, or code compiled from a string
        return name if filename == "~" else f"{filename}:{name}"
    return f"{modules.name(filename)}:{name}"


def table(profile: cProfile.Profile, modules: Modules) -> dict[str, list]:
    """``{key: [own ms, cumulative ms, calls, via]}`` of one profiled call."""
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    out: dict[str, list] = {}
    for func, (_cc, nc, tt, ct, callers) in stats.items():
        key = function_key(func, modules)
        row = out.setdefault(key, [0.0, 0.0, 0, None])
        row[0] += tt * 1e3
        row[1] += ct * 1e3
        row[2] += nc
        if func[0] == "~" and callers:  # a C function: the Python function that spent most in it
            top = max(callers.items(), key=lambda kv: kv[1][2])[0]
            row[3] = function_key(top, modules)
    return out


def profiled(call: Callable[[], Any]) -> tuple[Any, cProfile.Profile, float]:
    """``call()`` under a fresh profiler, the collector off; its result, the profile, wall ms."""
    gc.collect()
    profile = cProfile.Profile()
    was = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter()
        profile.enable()
        try:
            result = call()
        finally:
            profile.disable()
        wall = (time.perf_counter() - t0) * 1e3
    finally:
        if was:
            gc.enable()
    return result, profile, wall


def plain(call: Callable[[], Any]) -> tuple[Any, float]:
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter()
        result = call()
        return result, (time.perf_counter() - t0) * 1e3
    finally:
        if was:
            gc.enable()


class Recorder:
    def __init__(self, phases: tuple[str, ...]):
        self.phases: dict[str, dict] = {p: {"wall_ms": [], "plain_ms": [], "tables": []} for p in phases}

    def add(self, phase: str, profile: cProfile.Profile, wall: float, plain_ms: float) -> None:
        rec = self.phases[phase]
        rec["wall_ms"].append(round(wall, 4))
        rec["plain_ms"].append(round(plain_ms, 4))
        rec["tables"].append(profile)

    def document(self) -> dict:
        modules = Modules()  # read at the end: every module the calls imported is in sys.modules
        out: dict[str, dict] = {}
        for phase, rec in self.phases.items():
            tables = [table(p, modules) for p in rec["tables"]]
            n = len(tables)
            functions: dict[str, dict] = {}
            for i, t in enumerate(tables):
                for key, (own, cum, calls, via) in t.items():
                    f = functions.setdefault(key, {"own_ms": [0.0] * n, "cum_ms": [0.0] * n, "calls": [0] * n,
                                                   "via": None})
                    f["own_ms"][i], f["cum_ms"][i], f["calls"][i] = round(own, 4), round(cum, 4), calls
                    f["via"] = via or f["via"]
            functions = {k: v for k, v in functions.items() if max(v["cum_ms"]) >= KEEP_MS or max(v["own_ms"]) >= KEEP_MS}
            for v in functions.values():
                if v["via"] is None:
                    del v["via"]
            out[phase] = {"wall_ms": rec["wall_ms"], "plain_ms": rec["plain_ms"], "functions": functions}
        return out


def run(ns: argparse.Namespace) -> dict:
    started = time.time()
    import jax
    harness._set(jax, "jax_enable_x64", bool(ns.x64))
    maker, label = harness.load_maker(ns.target)
    fn, args, kwargs = harness.call_maker(maker, label)
    target = harness.Target(jax, fn, args, kwargs)
    harness.cache_off(jax)
    notes: list[str] = []
    phases = tuple(p for p in PHASES if p in ns.phases)
    if not target.can_trace and "trace" in phases:
        notes.append("this JAX's jit has no .trace(): tracing is profiled inside lower (trace + lower)")
        phases = tuple(p for p in phases if p != "trace")
        if "lower" not in phases:
            phases = ("lower", *phases)
    for _ in range(ns.warmup):
        harness._clear(jax)
        target.compiled()
        target.run()
    rec = Recorder(phases)
    for _ in range(ns.repeats):
        if "trace" in phases or "lower" in phases:
            # profiled: trace, then lower what was traced (caches cleared: both happen afresh)
            harness._clear(jax)
            traced = None
            if target.can_trace:
                if "trace" in phases:
                    traced, t_prof, t_wall = profiled(target.trace)
                else:
                    traced = target.trace()
            if "lower" in phases:
                lower = traced.lower if traced is not None else target.lowered
                _, l_prof, l_wall = profiled(partial(harness._user_call, "lowering fn", lower))
            # the same without the profiler
            harness._clear(jax)
            if target.can_trace:
                traced, t_plain = plain(target.trace)
                if "trace" in phases:
                    rec.add("trace", t_prof, t_wall, t_plain)
            if "lower" in phases:
                lower = traced.lower if traced is not None else target.lowered
                _, l_plain = plain(partial(harness._user_call, "lowering fn", lower))
                rec.add("lower", l_prof, l_wall, l_plain)
    if "dispatch" in phases:  # after the front end, which clears the caches: one compile for all
        target.run()  # compiles (untimed)
        for _ in range(max(ns.warmup, 1)):
            target.run()
        outs: list[Any] = []

        def calls() -> None:
            for _ in range(ns.iters):
                outs.append(target.call())
        for _ in range(ns.repeats):
            _, prof, wall = profiled(calls)
            harness._block(jax, outs)
            outs.clear()
            _, plain_ms = plain(calls)
            harness._block(jax, outs)
            outs.clear()
            rec.add("dispatch", prof, wall, plain_ms)
    return {"version": FORMAT_VERSION, "profiler": "cProfile", "target": label,
            "environment": harness._versions(jax), "jax_version": getattr(jax, "__version__", None),
            "backend": jax.default_backend(), "python": sys.version.split()[0],
            "repeats": ns.repeats, "warmup": ns.warmup, "iters": ns.iters, "phases": rec.document(),
            "notes": notes, "started": round(started, 3), "host": platform.node(), "pid": os.getpid()}


def main(argv: list[str] | None = None) -> int:
    ns = parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        doc = run(ns)
    except harness.BenchError as e:
        if ns.traceback and e.__cause__ is not None:
            traceback.print_exception(type(e.__cause__), e.__cause__, e.__cause__.__traceback__)
        print(f"hourly-frontend-profile: error: {e}", file=sys.stderr, flush=True)
        return e.code
    out = os.path.abspath(ns.out)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.replace(tmp, out)
    print(f"# hourly.harness.frontend_profile: {doc['target']}: {', '.join(doc['phases'])} x {ns.repeats} repeats -> {out}",
          file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
