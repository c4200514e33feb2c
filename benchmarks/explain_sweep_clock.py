"""The sweep fixtures of tests/test_explain.py on the wall clock: does the pass the sweep names make
the planted regression faster for real?

Each kernel under each setting in ``--procs`` fresh processes (jaxlib on the CPU, compiled before
timing, ``block_until_ready`` on every call), each the median of ``--reps`` groups of 10 calls, and,
as the test's benchmark does, the ratio of a reference program's median call (a 96x96 matmul that
no setting here changes) to the kernel's, the two timed call by call in turn; printed: the median
over the processes and their range (the spread from one process to the next is what a bisection
sees):

- **reduce-window 2x2** (the sweep test's fixture): ``lax.reduce_window`` of a 2x2 box sum, plain
  (the first-bad state: the culprit dropped jax's workaround) and with
  ``--xla_disable_hlo_passes=fusion-wrapper`` (the good state's workaround, and what the sweep
  finds); on all CPUs and on one (the test's benchmark pins itself to one CPU).
- **reduce-window 4x4** (the fixture before it): the same with a 4x4 window, whose plain and
  disabled levels overlapped from one process to the next under load.
- **float sort** (the first fixture, kept for its figures): ``comparison-expander`` disabled
  shrinks the program but gives back little on the clock.

    python benchmarks/explain_sweep_clock.py [--n 512] [--reps 15] [--procs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

WRAPPER = {"plain": "", "fusion-wrapper disabled": "--xla_disable_hlo_passes=fusion-wrapper"}
FIXTURES = {
    "reduce-window 2x2": ({"box sum 2x2": "jax.lax.reduce_window(x, 0.0, jax.lax.add, (2, 2), (1, 1), 'VALID')"},
                          WRAPPER),
    "reduce-window 4x4": ({"box sum 4x4": "jax.lax.reduce_window(x, 0.0, jax.lax.add, (4, 4), (1, 1), 'VALID')"},
                          WRAPPER),
    "float sort": ({"good (int sort)": "jnp.sum(jnp.sort(x.astype(jnp.int32), axis=0))",
                    "bad (float sort)": "jnp.sum(jnp.sort(x, axis=0))"},
                   {"plain": "", "comparison-expander disabled": "--xla_disable_hlo_passes=comparison-expander"}),
}

CHILD = r'''
import json, os, statistics, sys, time
expr, n, reps, one_cpu = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
if one_cpu:
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[-1]})  # the last, as the test's benchmark
import jax, jax.numpy as jnp
ns = {"jnp": jnp, "jax": jax}
exec("def f(x):\n    return " + expr, ns)
x = jax.random.normal(jax.random.key(0), (n, n), jnp.float32)
r = jax.random.normal(jax.random.key(1), (96, 96), jnp.float32)
fn, ref = jax.jit(ns["f"]), jax.jit(lambda a: a @ a)
fn(x).block_until_ready()
ref(r).block_until_ready()
size = sum(1 for line in fn.lower(x).compile().as_text().splitlines() if " = " in line)
groups, refs = [], []
for _ in range(reps):
    t = time.perf_counter()
    for _ in range(10):
        fn(x).block_until_ready()
    groups.append((time.perf_counter() - t) / 10)
    t = time.perf_counter()
    for _ in range(10):
        ref(r).block_until_ready()
    refs.append((time.perf_counter() - t) / 10)
print(json.dumps({"instructions": size, "median_ms": statistics.median(groups) * 1e3,
                  "ratio": statistics.median(refs) / statistics.median(groups)}))
'''


def measure(expr: str, flags: str, n: int, reps: int, one_cpu: bool) -> dict:
    env = {**os.environ, "XLA_FLAGS": " ".join(x for x in (os.environ.get("XLA_FLAGS", ""), flags) if x)}
    out = subprocess.run([sys.executable, "-c", CHILD, expr, str(n), str(reps), "1" if one_cpu else "0"],
                         env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--procs", type=int, default=5, help="fresh processes per kernel and setting")
    args = ap.parse_args()

    def load() -> str:
        return open("/proc/loadavg").read().split()[0] if os.path.exists("/proc/loadavg") else "?"
    print(f"{args.n}x{args.n} float32, median of {args.reps} groups of 10 calls per process, {args.procs} processes "
          f"each, load {load()} at the start, {os.cpu_count()} CPUs")
    print("  ms: the kernel's call, median over the processes [range]; ratio: the reference call's time / the kernel's")
    for fixture, (kernels, settings) in FIXTURES.items():
        for cpus in ((False, True) if fixture.startswith("reduce-window") else (False,)):
            for kname, expr in kernels.items():
                for sname, flags in settings.items():
                    rs = [measure(expr, flags, args.n, args.reps, cpus) for _ in range(args.procs)]
                    ms, ratio = sorted(r["median_ms"] for r in rs), sorted(r["ratio"] for r in rs)
                    print(f"  {fixture:17} {'1 CPU' if cpus else 'all CPUs':8} {kname:16} {sname:24} "
                          f"{rs[0]['instructions']:3d} instr  ms {statistics.median(ms):7.3f} [{ms[0]:.3f}-{ms[-1]:.3f}]  "
                          f"ratio {statistics.median(ratio):6.3f} [{ratio[0]:.3f}-{ratio[-1]:.3f}]")
    print(f"load {load()} at the end")


if __name__ == "__main__":
    main()
