"""Capture a real device trace, memory profile and front-end profile of a small model at two
states, and print what hourly's readers make of them. Made for the TPU machine `device` lends
(JAX, jaxlib and libtpu on PYTHONPATH, no package index, hourly not installed):

    PYTHONPATH=$PWD:$PYTHONPATH python3 benchmarks/tpu/profile_capture.py --out $OUT/tpu-profile

It runs on any backend (on the CPU here, for its own test). Processes each opening the device
once (6-11 s each on the TPU machine): for each state (benchmarks/tpu/profile_model.py, ``good``
and ``bad``) one run of the model under ``python -m hourly.harness.trace`` with
``XLA_FLAGS=--xla_dump_to=…`` (as ``hourly explain`` runs its dump runs), then ``--processes``
(4) runs of ``python -m hourly.harness.frontend_profile`` of its ``make()`` per state, interleaved good,
bad, good, … as ``hourly profile`` runs them — then, in this process, no JAX at all:

1. what each trace holds (``hourly.profile.xplane``): planes, lines, event counts, a few event
   names and the stats on the device's op events;
2. the op table each state's trace gives (device ops on an accelerator: which plane and line);
3. ``hourly.profile.compare``: op times, peak and live device memory, good against bad;
4. ``hourly explain``'s reading path: the dumps' HLO diff and the op-time join of the changed
   instructions with the device op tables;
5. the front-end diff (``hourly.profile.frontend``);
6. CHECKS: one PASS / FAIL / SKIP line each; the exit status is 1 when any FAILs.

Everything lands under ``--out`` (the traces stay there for a test fixture: copy back
``<out>/bad/plugins/profile/*/*.xplane.pb``). ``--no-libtpu-retry``: when the XLA_FLAGS dump holds
no module on a TPU, do not try one more run with the dump flags in ``LIBTPU_INIT_ARGS``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # hourly from this checkout, whatever PYTHONPATH says

from hourly.analysis import hlo_diff, op_times  # noqa: E402
from hourly.profile import frontend  # noqa: E402
from hourly.profile.capture import TraceOptions, capture  # noqa: E402
from hourly.profile.compare import compare, load_capture, read_trace  # noqa: E402
from hourly.profile.xplane import parse_xspace  # noqa: E402

MODEL = Path(__file__).resolve().parent / "profile_model.py"
SIDES = ("good", "bad")


class Checks:
    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str]] = []

    def add(self, verdict: str, name: str, detail: str) -> None:
        self.rows.append((verdict, name, detail))

    def check(self, ok: bool, name: str, detail: str) -> None:
        self.add("PASS" if ok else "FAIL", name, detail)

    def failed(self) -> bool:
        return any(v == "FAIL" for v, _, _ in self.rows)


def env_for(side: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    return {"HOURLY_TPU_VARIANT": side, "PYTHONPATH": path, "JAX_ENABLE_COMPILATION_CACHE": "false",
            **(extra or {})}


def section(title: str) -> None:
    print(f"\n=== {title}", flush=True)


def run_side(side: str, out: Path, timeout: float) -> dict:
    """The capture (trace + memory profile + dump) of one state."""
    dump = out / f"{side}-dump"
    shutil.rmtree(dump, ignore_errors=True)
    flags = " ".join(filter(None, [os.environ.get("XLA_FLAGS"), f"--xla_dump_to={dump}", "--xla_dump_hlo_as_text"]))
    t0 = time.perf_counter()
    cap = capture([sys.executable, str(MODEL)], out / side, env=env_for(side, {"XLA_FLAGS": flags}), cwd=str(out),
                  options=TraceOptions(python_tracer_level=0), timeout=timeout, check=False)
    t1 = time.perf_counter()
    print(f"{side}: capture {'ok' if cap.ok else 'FAILED'} in {t1 - t0:.1f} s (log {out / side / 'run.log'})",
          flush=True)
    for key in ("trace_error", "memory_profile_error", "error"):
        if cap.manifest.get(key):
            print(f"  {side} manifest {key}: {cap.manifest[key]}")
    if not cap.ok:
        print(cap.output[-3000:])
    return {"capture_ok": cap.ok, "dump": dump, "seconds": {"capture": round(t1 - t0, 1)}}


def run_front_end(out: Path, processes: int, repeats: int, timeout: float, runs: dict, iters: int = 100,
                  warmup: int = 2) -> None:
    """``processes`` front-end profiles of each state, interleaved good, bad, good, … as ``hourly
    profile`` runs them (``<side>/frontend-<k>.json``); each state's count of those that worked
    goes to ``runs[side]["front_end_ok"]``."""
    for side in SIDES:
        frontend.clear(out / side)
        runs[side].update(front_end_ok=0, seconds={**runs[side]["seconds"], "front_end": 0.0})
    for k in range(1, processes + 1):
        for side in SIDES:
            fe_out = frontend.process_file(out / side, k)
            t0 = time.perf_counter()
            res = frontend.run_profile(sys.executable, str(MODEL), fe_out, str(out), env_for(side), repeats=repeats,
                                       warmup=warmup, iters=iters, timeout=timeout)
            took = time.perf_counter() - t0
            runs[side]["seconds"]["front_end"] = round(runs[side]["seconds"]["front_end"] + took, 1)
            runs[side]["front_end_ok"] += bool(res.ok and fe_out.is_file())
            print(f"{side}: front-end process {k} of {processes} {'ok' if res.ok else 'FAILED'} in {took:.1f} s "
                  f"(log {fe_out.with_suffix('.log')})", flush=True)
            if not res.ok:
                print(res.output[-3000:])


def inventory(side: str, out: Path) -> None:
    cap = load_capture(out / side)
    if cap.xplane is None:
        print(f"{side}: no *.xplane.pb")
        return
    space = parse_xspace(cap.xplane)
    print(f"{side}: {cap.xplane} ({cap.xplane.stat().st_size:,} bytes); hosts {space.hostnames}; "
          f"errors {space.errors}; warnings {space.warnings[:3]}")
    for plane in space.planes:
        lines = [ln for ln in plane.lines if ln.events]
        print(f"  plane {plane.name!r}: {len(plane.lines)} lines, {sum(len(ln.events) for ln in plane.lines)} events"
              + (f"; plane stats {sorted(plane.stats)[:12]}" if plane.is_device else ""))
        if not plane.is_device:
            continue
        for ln in lines:
            names = list(dict.fromkeys(ev.name for ev in ln.events))
            stats = sorted({k for ev in ln.events for k in ev.stats})
            print(f"    line {ln.name!r}: {len(ln.events)} events, {len(names)} names, e.g. {names[:5]}; "
                  f"stats {stats[:14]}")
            for ev in ln.events[:2]:  # what one event carries, verbatim (long values cut)
                shown = {k: (v[:80] if isinstance(v, str) else v) for k, v in ev.stats.items() if not isinstance(v, bytes)}
                print(f"      e.g. name {ev.name!r} display {ev.display!r} {ev.duration_ps / 1e6:.3f} µs stats {shown}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("tpu-profile"), help="output folder (default ./tpu-profile)")
    ap.add_argument("--processes", type=int, default=4, help="front-end processes per state, interleaved (default 4)")
    ap.add_argument("--repeats", type=int, default=7, help="front-end profile repeats per process (default 7)")
    ap.add_argument("--iters", type=int, default=100,
                    help="calls per dispatch round of a front-end profile (default 100; no check reads them)")
    ap.add_argument("--warmup", type=int, default=2,
                    help="untimed rounds before a front-end profile's repeats (default 2)")
    ap.add_argument("--timeout", type=float, default=240, help="seconds per process (default 240)")
    ap.add_argument("--no-libtpu-retry", action="store_true")
    ap.add_argument("--keep", type=Path, default=None,
                    help="copy the small files worth keeping there at the end (the XSpaces, manifests, memory "
                         "profiles, front-end profiles, the report): e.g. $OUT on the device machine")
    ns = ap.parse_args()
    out = ns.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    sys.stdout = Tee(sys.stdout, out / "report.txt")  # the whole report, whatever a caller keeps of stdout
    try:
        return run(ns, out)
    finally:
        sys.stdout.flush()
        if ns.keep is not None:
            keep(out, ns.keep.resolve())


class Tee:
    def __init__(self, stream, path: Path):
        self.stream, self.file = stream, open(path, "w")

    def write(self, text: str) -> int:
        self.file.write(text)
        return self.stream.write(text)

    def flush(self) -> None:
        self.file.flush()
        self.stream.flush()


def keep(out: Path, dest: Path) -> None:
    patterns = ("*/plugins/profile/*/*.xplane.pb", "*/manifest.json", "*/memory.prof", "*/frontend-*.json",
                "*/run.log", "*/frontend-*.log", "summary.json", "frontend-diff.json", "report.txt")
    for pattern in patterns:
        for f in out.glob(pattern):
            target = dest / f.relative_to(out)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, target)
    print(f"kept in {dest}: " + ", ".join(str(p.relative_to(dest)) for p in sorted(dest.rglob("*")) if p.is_file()),
          file=sys.__stdout__, flush=True)


def run(ns: argparse.Namespace, out: Path) -> int:
    checks = Checks()
    started = time.perf_counter()

    section("runs (each process opens the device once)")
    runs = {side: run_side(side, out, ns.timeout) for side in SIDES}
    run_front_end(out, ns.processes, ns.repeats, ns.timeout, runs, ns.iters, ns.warmup)
    manifests = {side: load_capture(out / side).manifest for side in SIDES}
    backend = manifests["bad"].get("backend") or "unknown"
    print(f"backend {backend}; devices {manifests['bad'].get('devices')}; jax {manifests['bad'].get('jax_version')}, "
          f"jaxlib {manifests['bad'].get('jaxlib_version')}; python {sys.version.split()[0]}")
    checks.check(all(r["capture_ok"] for r in runs.values()), "capture",
                 "both states ran under hourly.harness.trace: " + ", ".join(f"{s} {manifests[s].get('status')}" for s in SIDES))

    section("1. what the traces hold (hourly.profile.xplane)")
    for side in SIDES:
        inventory(side, out)

    section("2. the op tables (hourly.profile.compare.read_trace)")
    tables = {}
    for side in SIDES:
        t = read_trace(load_capture(out / side))
        tables[side] = t
        if t is None:
            print(f"{side}: no trace")
            continue
        print(f"{side}: {t.describe()}; {len(t.ops)} ops; notes {t.notes}")
        for op in t.top(8):
            print(f"    {op.name}: {op.count} calls, {op.total_us:.1f} µs in all")
    bad = tables["bad"]
    if bad is None:
        checks.add("FAIL", "device timeline", "no trace was read")
    elif backend == "cpu":
        checks.check(bad.source == "hlo_op", "device timeline",
                     f"cpu backend: no device timeline, host ops read ({bad.describe()})")
    else:
        checks.check(bad.source == "device" and bad.plane.startswith("/device:"), "device timeline",
                     bad.describe())
        checks.check(bool(bad.ops) and sum("/" in k for k in bad.ops) >= 0.8 * len(bad.ops), "ops by module",
                     f"{sum('/' in k for k in bad.ops)} of {len(bad.ops)} device ops keyed module/op, e.g. "
                     f"{[op.name for op in bad.top(3)]}")

    section("3. good against bad (hourly.profile.compare)")
    comparison = compare(out / "good", out / "bad")
    print(comparison.render(top=8))
    g_ops, b_ops = (set(t.ops) if t is not None else set() for t in (tables["good"], tables["bad"]))
    both = g_ops & b_ops
    grown = [c for c in comparison.ops if c.delta > 0]
    checks.check(bool(g_ops) and len(both) >= 0.5 * len(g_ops), "op names match across the states",
                 f"{len(both)} of the good state's {len(g_ops)} ops are in the bad trace by the same key "
                 f"(largest growth: {grown[0].name} {grown[0].good:.1f} → {grown[0].bad:.1f} µs)" if grown else
                 f"{len(both)} of {len(g_ops)}")
    mem = comparison.memory[0] if comparison.memory else None
    checks.check(mem is not None and mem.name.startswith("<module> (tpu/profile_model.py:")
                 and abs(mem.delta - 8 * 2**20) < 1024, "memory site",
                 f"top change {mem.name} {mem.delta / 2**20:+.3f} MiB" if mem else "no memory profile")
    peaks = comparison.peaks()
    if backend == "cpu":
        checks.check(peaks == (None, None), "peak memory", "cpu backend: no memory_stats(), none recorded")
    else:
        checks.check(all(p is not None for p in peaks), "peak memory", f"device peak bytes good/bad {peaks}")

    section("4. hourly explain's reading: the HLO diff and the op-time join from the trace's ops")
    dumps = {side: runs[side]["dump"] for side in SIDES}
    files = {side: sorted(p.name for p in dumps[side].glob("*after_optimizations*")) if dumps[side].is_dir() else []
             for side in SIDES}
    print(f"dumps: good {len(files['good'])} optimized modules, bad {len(files['bad'])}; e.g. {files['bad'][:3]}")
    if not files["bad"] and backend == "tpu" and not ns.no_libtpu_retry:
        retry = out / "bad-dump-libtpu"
        shutil.rmtree(retry, ignore_errors=True)
        args = f"--xla_dump_to={retry} --xla_dump_hlo_as_text"
        import subprocess
        p = subprocess.run([sys.executable, str(MODEL)], env={**os.environ, **env_for("bad", {"LIBTPU_INIT_ARGS": " ".join(
            filter(None, [os.environ.get("LIBTPU_INIT_ARGS"), args]))})}, capture_output=True, text=True,
            timeout=ns.timeout)
        got = sorted(q.name for q in retry.glob("*after_optimizations*")) if retry.is_dir() else []
        print(f"XLA_FLAGS wrote no module; with LIBTPU_INIT_ARGS={args!r}: exit {p.returncode}, {len(got)} optimized "
              f"modules {got[:3]}; stderr tail {p.stderr[-500:]!r}")
        checks.add("FAIL", "dump", "XLA_FLAGS=--xla_dump_to wrote no optimized module on the TPU; "
                   f"LIBTPU_INIT_ARGS {'did' if got else 'did not either'}: hourly explain's dumps need it")
    elif files["bad"]:
        diffs = hlo_diff.diff_dumps(dumps["good"], dumps["bad"])
        changed = [d for d in diffs if not d.identical]
        print(f"HLO diff: {len(diffs)} modules paired, {len(changed)} changed: {[d.key for d in changed][:4]}")
        if tables["good"] is not None and bad is not None:
            rec = op_times.join([d.as_dict() for d in diffs], {k: v.durations for k, v in tables["good"].ops.items()},
                                {k: v.durations for k, v in bad.ops.items()}, source=bad.source)
            for r in rec["rows"][:8]:
                print(f"    {r['kind']} {r['module']}/{r['name']} {r['opcode']}: {r['delta_us']:+.2f} µs "
                      f"(calls {(r['good'] or {}).get('calls', 0)}/{(r['bad'] or {}).get('calls', 0)})")
            print(f"    untimed: {[r['name'] for r in rec['untimed']][:8]}; rest {rec['rest']} ops, "
                  f"{len(rec['rest_moved'])} moved; only in one trace: "
                  f"{ {k: v[:4] for k, v in rec['only_in_trace'].items()} }")
            checks.check(bool(changed) and bool(rec["rows"]), "op-time join",
                         f"{len(rec['rows'])} changed instructions timed from {bad.describe()}")
    else:
        checks.add("FAIL", "dump", "no optimized module dumped")

    section("5. the front-end diff (hourly.profile.frontend)")
    if all(runs[s]["front_end_ok"] for s in SIDES):
        d = frontend.diff(frontend.load_state(out / "good"), frontend.load_state(out / "bad"), "trace_ms")
        d.update(target=str(MODEL), files={s: [str(f) for f in frontend.process_files(out / s)] for s in SIDES})
        print("\n".join(frontend.lines(d)))
        trace = d["phases"].get("trace", {})
        first = (trace.get("grew_own") or [{}])[0].get("function")
        called = [r["function"] for r in trace.get("calls_changed") or []]
        if d.get("judged", True) and ns.processes >= 4:
            checks.check(first == "profile_model:expand_rules", "front-end diff", f"first own-time growth in trace: {first}")
        else:
            # fewer than 4 processes a state: hourly judges no time (only processes show a state's noise);
            # the call counts, the same in every process of a state, still name the planted function
            checks.check("profile_model:expand_rules" in called and first is None, "front-end diff (calls)",
                         f"time not judged with {ns.processes} processes a state (4 needed); calls changed in "
                         f"every process: {called[:3]}")
        (out / "frontend-diff.json").write_text(json.dumps(d, indent=1))
    else:
        checks.add("FAIL", "front-end diff", "a front-end profile failed (logs above)")

    section("CHECKS")
    for verdict, name, detail in checks.rows:
        print(f"{verdict} {name}: {detail}")
    total = time.perf_counter() - started
    print(f"{sum(v == 'PASS' for v, _, _ in checks.rows)} passed, {sum(v == 'FAIL' for v, _, _ in checks.rows)} failed; "
          f"{total:.0f} s in all; files under {out}")
    (out / "summary.json").write_text(json.dumps({"backend": backend, "checks": checks.rows, "seconds": round(total, 1),
                                                  "runs": {s: r["seconds"] for s, r in runs.items()}}, indent=1))
    return 1 if checks.failed() else 0


if __name__ == "__main__":
    sys.exit(main())
