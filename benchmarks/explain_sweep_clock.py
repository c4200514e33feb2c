"""The sweep fixtures of tests/test_explain.py on the wall clock: does the pass the sweep names make
the planted regression faster for real?

Two fixtures, each kernel under each setting in a fresh process (jaxlib on the CPU, compiled before
timing, ``block_until_ready`` on every call), the median of ``--reps`` groups of 10 calls:

- **reduce-window** (the sweep test's fixture): ``lax.reduce_window`` of a 4x4 box sum, plain (the
  first-bad state: the culprit dropped jax's workaround) and with
  ``--xla_disable_hlo_passes=fusion-wrapper`` (the good state's workaround, and what the sweep
  finds). Measured on all CPUs and on one (the test's benchmark pins itself to one CPU).
- **float sort** (the earlier fixture, kept for its figures): ``comparison-expander`` disabled
  shrinks the program but gives back little on the clock.

    python benchmarks/explain_sweep_clock.py [--n 512] [--reps 15]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

FIXTURES = {
    "reduce-window": ({"reduce_window 4x4": "jax.lax.reduce_window(x, 0.0, jax.lax.add, (4, 4), (1, 1), 'VALID')"},
                      {"plain": "", "fusion-wrapper disabled": "--xla_disable_hlo_passes=fusion-wrapper"}),
    "float sort": ({"good (int sort)": "jnp.sum(jnp.sort(x.astype(jnp.int32), axis=0))",
                    "bad (float sort)": "jnp.sum(jnp.sort(x, axis=0))"},
                   {"plain": "", "comparison-expander disabled": "--xla_disable_hlo_passes=comparison-expander"}),
}

CHILD = r'''
import json, os, statistics, sys, time
expr, n, reps, one_cpu = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
if one_cpu:
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
import jax, jax.numpy as jnp
ns = {"jnp": jnp, "jax": jax}
exec("def f(x):\n    return " + expr, ns)
x = jax.random.normal(jax.random.key(0), (n, n), jnp.float32)
fn = jax.jit(ns["f"])
fn(x).block_until_ready()
size = sum(1 for line in fn.lower(x).compile().as_text().splitlines() if " = " in line)
groups = []
for _ in range(reps):
    t = time.perf_counter()
    for _ in range(10):
        fn(x).block_until_ready()
    groups.append((time.perf_counter() - t) / 10)
print(json.dumps({"instructions": size, "median_ms": statistics.median(groups) * 1e3}))
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
    args = ap.parse_args()
    load = open("/proc/loadavg").read().split()[0] if os.path.exists("/proc/loadavg") else "?"
    print(f"{args.n}x{args.n} float32, median of {args.reps} groups of 10 calls, load {load}, {os.cpu_count()} CPUs")
    for fixture, (kernels, settings) in FIXTURES.items():
        for cpus in ((False, True) if fixture == "reduce-window" else (False,)):
            for kname, expr in kernels.items():
                for sname, flags in settings.items():
                    r = measure(expr, flags, args.n, args.reps, cpus)
                    print(f"  {fixture:13} {'1 CPU' if cpus else 'all CPUs':8} {kname:18} {sname:30} "
                          f"{r['instructions']:3d} instructions {r['median_ms']:8.3f} ms")


if __name__ == "__main__":
    main()
