"""Run any Python benchmark unchanged under the JAX profiler; save a trace and memory profiles.

    python -m hourly.harness.trace [--out DIR] [--host-tracer-level N] [--python-tracer-level N]
                           [--device-tracer-level N] [--memprof-at a,b] -- script.py args...
    python -m hourly.harness.trace --out DIR -- -m package.module args...

The script runs through :mod:`runpy` with ``sys.argv`` set as if it had been started directly.
Around it: ``jax.profiler.start_trace(DIR, create_perfetto_trace=True, profiler_options=...)``
(never ``create_perfetto_link``, which blocks), and at the end, after blocking on every live array,
``jax.profiler.save_device_memory_profile(DIR/memory.prof)``; the manifest keeps each device's
``memory_stats()`` then (peak bytes in use: TPU, GPU). The device tracer is JAX's default (on):
on a TPU or a GPU the trace holds the device's own timeline (``/device:TPU:0``'s ``XLA Ops``
line, a GPU's kernels per stream), which ``hourly profile`` and ``hourly explain`` read. Named checkpoints
(:func:`hourly.jaxbench.memory_checkpoint`) listed in ``--memprof-at`` or ``HOURLY_MEMPROF_AT``
write ``memory-<name>.prof``. ``DIR/manifest.json`` lists what was captured.

The script's exit status becomes ours. Older JAX versions without ``ProfileOptions`` (or without
some of its fields) still trace; the manifest says which options could not be applied.

This module imports only the standard library, JAX and :mod:`hourly.jaxbench`: it runs under the
Python of the build under test.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import runpy
import sys
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from hourly import jaxbench

MANIFEST = "manifest.json"
FINAL_MEMORY_PROFILE = "memory.prof"
MANIFEST_VERSION = 1


def parse_args(argv: list[str]) -> argparse.Namespace:
    if "--" in argv:
        split = argv.index("--")
        ours, target = argv[:split], argv[split + 1:]
    else:  # allow `python -m hourly.harness.trace script.py args` when nothing is ambiguous
        ours, target = [], list(argv)
        while target and target[0].startswith("--") and target[0] != "--":
            ours.append(target.pop(0))
            if "=" not in ours[-1] and target:
                ours.append(target.pop(0))
    parser = argparse.ArgumentParser(
        prog="python -m hourly.harness.trace",
        description="Run a Python benchmark under jax.profiler.trace and save memory profiles.",
        epilog="Everything after -- is the program: script.py args... or -m module args...")
    parser.add_argument("--out", type=Path, default=None,
                        help="output folder (default: ./hourly-trace-<UTC time>)")
    parser.add_argument("--host-tracer-level", type=int, choices=range(0, 4), default=None,
                        help="0 off, 1 user TraceMe only, 2 default, 3 verbose")
    parser.add_argument("--python-tracer-level", type=int, choices=range(0, 2), default=None,
                        help="0 off, 1 trace Python calls")
    parser.add_argument("--device-tracer-level", type=int, choices=range(0, 2), default=None,
                        help="0 off, 1 on (default)")
    parser.add_argument("--memprof-at", default="",
                        help="comma-separated memory_checkpoint names to save (* for all)")
    parser.add_argument("--no-final-memory-profile", action="store_true",
                        help="do not save memory.prof at the end")
    ns = parser.parse_args(ours)
    if not target:
        parser.error("nothing to run: give `-- script.py args...` or `-- -m module args...`")
    if target[0] == "-m":
        if len(target) < 2:
            parser.error("-m needs a module name")
        ns.module, ns.script, ns.args = target[1], None, target[2:]
    else:
        ns.module, ns.script, ns.args = None, target[0], target[1:]
    if ns.out is None:
        ns.out = Path(f"hourly-trace-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}")
    return ns


def profiler_options(jax: Any, host: int | None, python: int | None,
                     device: int | None) -> tuple[Any, dict[str, Any], dict[str, str]]:
    """Build ``ProfileOptions`` with what this JAX supports; return (options, applied, skipped)."""
    wanted = {"host_tracer_level": host, "python_tracer_level": python,
              "device_tracer_level": device}
    wanted = {k: v for k, v in wanted.items() if v is not None}
    options_cls = getattr(jax.profiler, "ProfileOptions", None)
    takes_options = "profiler_options" in inspect.signature(jax.profiler.start_trace).parameters
    if options_cls is None or not takes_options:
        return None, {}, {k: "this JAX has no ProfileOptions" for k in wanted}
    options = options_cls()
    applied, skipped = {}, {}
    for key, value in wanted.items():
        if hasattr(options, key):
            setattr(options, key, value)
            applied[key] = value
        else:
            skipped[key] = "not a ProfileOptions field in this JAX"
    for key in ("host_tracer_level", "python_tracer_level", "device_tracer_level"):
        if hasattr(options, key) and key not in applied:
            applied[key] = getattr(options, key)  # record the defaults in effect too
    return options, applied, skipped


def _relative_files(out: Path) -> dict[str, list[str]]:
    rel = lambda p: str(p.relative_to(out))
    return {
        "xplane": sorted(rel(p) for p in out.rglob("*.xplane.pb")),
        "perfetto": sorted(rel(p) for p in out.rglob("perfetto_trace.json.gz")),
        "trace_json": sorted(rel(p) for p in out.rglob("*.trace.json.gz")),
        "memory_profiles": sorted(rel(p) for p in out.glob("*.prof")),
    }


def _manifest(ns: argparse.Namespace, jax: Any, applied: dict, skipped: dict, wanted: set[str]) -> dict:
    """What the capture records about itself; status and files are filled in when it ends."""
    manifest = {
        "version": MANIFEST_VERSION,
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "argv": ([ns.script] if ns.script else ["-m", ns.module]) + list(ns.args),
        "cwd": os.getcwd(),
        "python": sys.executable,
        "jax_version": getattr(jax, "__version__", None),
        "jaxlib_version": _jaxlib_version(),
        "backend": None, "devices": [],
        "profiler_options": applied, "profiler_options_skipped": skipped,
        "memory_checkpoints_requested": sorted(wanted),
        "status": "running", "exit_code": None, "error": None,
    }
    try:
        manifest["backend"] = jax.default_backend()
        manifest["devices"] = [str(d) for d in jax.devices()]
    except Exception as e:  # no backend: the script will fail too, say so in the manifest
        manifest["error"] = f"jax backend unavailable: {e}"
    return manifest


def main(argv: list[str] | None = None) -> int:
    ns = parse_args(list(sys.argv[1:] if argv is None else argv))
    out: Path = ns.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    os.environ[jaxbench.ENV_TRACE_DIR] = str(out)
    wanted = jaxbench.requested_checkpoints() | {
        p.strip() for p in ns.memprof_at.split(",") if p.strip()}
    if wanted:
        os.environ[jaxbench.ENV_MEMPROF_AT] = ",".join(sorted(wanted))

    import jax
    options, applied, skipped = profiler_options(
        jax, ns.host_tracer_level, ns.python_tracer_level, ns.device_tracer_level)
    for key, why in skipped.items():
        print(f"# hourly.harness.trace: {key} ignored: {why}", file=sys.stderr)

    manifest = _manifest(ns, jax, applied, skipped, wanted)

    # start_trace's keywords differ between JAX versions (profiler_options only where it takes them)
    trace_kwargs: dict[str, Any] = {"create_perfetto_trace": True}
    if options is not None:
        trace_kwargs["profiler_options"] = options
    state = {"tracing": False}

    def finish(status: str, exit_code: int, error: str | None = None) -> None:
        """Stop the trace, save the final memory profile and the manifest (once)."""
        if state.get("finished"):
            return
        state["finished"] = True
        elapsed = time.perf_counter() - started
        if state["tracing"]:
            try:
                jax.profiler.stop_trace()
            except Exception as e:
                manifest["trace_error"] = f"stop_trace failed: {e}"
        if not ns.no_final_memory_profile:
            try:
                jaxbench.save_memory_profile(out / FINAL_MEMORY_PROFILE)  # blocks on every live array first
            except Exception as e:
                manifest["memory_profile_error"] = f"{type(e).__name__}: {e}"
        manifest["device_memory"] = device_memory(jax)
        manifest.update(status=status, exit_code=exit_code, error=error or manifest["error"],
                        program_seconds=round(elapsed, 3), files=_relative_files(out))
        (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        print(f"# hourly.harness.trace: {status}; trace and memory profiles in {out}", file=sys.stderr,
              flush=True)

    started = time.perf_counter()
    try:
        jax.profiler.start_trace(str(out), **trace_kwargs)
        state["tracing"] = True
    except Exception as e:  # e.g. a profiler already running: run anyway, without a trace
        manifest["trace_error"] = f"start_trace failed: {type(e).__name__}: {e}"
        print(f"# hourly.harness.trace: {manifest['trace_error']}", file=sys.stderr)

    old_argv, old_path0 = sys.argv, (sys.path[0] if sys.path else None)
    try:
        program_globals = _run_program(ns)
    except SystemExit as e:  # the frames (and the program's arrays) are alive until we return
        code = _exit_code(e.code)
        if code != 0 and not isinstance(e.code, int) and e.code is not None:
            print(e.code, file=sys.stderr)
        finish("ok" if code == 0 else "failed", code,
               None if code == 0 else f"program exited with {e.code!r}")
        return code
    except BaseException as e:
        traceback.print_exc()
        finish("crashed", 1, f"{type(e).__name__}: {e}")
        return 1
    else:
        finish("ok", 0)
        del program_globals
        return 0
    finally:
        sys.argv = old_argv
        if old_path0 is not None and sys.path and sys.path[0] != old_path0:
            sys.path.pop(0)


#: the fields of ``device.memory_stats()`` the manifest keeps (TPU and GPU report them; the CPU none)
MEMORY_STATS = ("bytes_in_use", "peak_bytes_in_use", "bytes_limit", "largest_alloc_size", "num_allocs")


def device_memory(jax: Any) -> dict[str, dict]:
    """``{device: {peak_bytes_in_use: …, …}}`` of each local device that reports memory stats, at the
    end of the run (after the final memory profile blocked on every live array); {} on the CPU."""
    out: dict[str, dict] = {}
    try:
        devices = jax.local_devices()
    except Exception:
        return out
    for d in devices:
        try:
            stats = d.memory_stats()
        except Exception:
            stats = None
        if stats:
            out[str(d)] = {k: int(stats[k]) for k in MEMORY_STATS if k in stats}
    return out


def _run_program(ns: argparse.Namespace) -> dict:
    """Run the script or module as ``__main__``, as ``python`` would; returns its globals."""
    if ns.script:
        sys.argv = [ns.script, *ns.args]
        sys.path.insert(0, str(Path(ns.script).resolve().parent))
        return runpy.run_path(ns.script, run_name="__main__")
    sys.argv = [ns.module, *ns.args]
    sys.path.insert(0, os.getcwd())
    return runpy.run_module(ns.module, run_name="__main__", alter_sys=True)


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    return 1


def _jaxlib_version() -> str | None:
    try:
        import jaxlib
        return getattr(jaxlib, "__version__", None) or getattr(jaxlib.version, "__version__", None)
    except Exception:
        return None


if __name__ == "__main__":
    sys.exit(main())
