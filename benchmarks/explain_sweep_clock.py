"""The sweep fixture of tests/test_explain.py on the wall clock: does the pass the sweep names
(``--xla_disable_hlo_passes=comparison-expander`` for a float sort) make the planted regression
faster for real, or only smaller in instructions (the test's cost model)?

For each kernel (the fixture's good and bad ones) and each setting (no flag, the pass disabled), a
fresh process compiles the kernel with jaxlib on the CPU and reports the compiled program's
instruction count and the median time of ``--reps`` groups of 10 calls.

    python benchmarks/explain_sweep_clock.py [--n 256] [--reps 15]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

KERNELS = {
    "good (int sort)": "jnp.sum(jnp.sort(x.astype(jnp.int32), axis=0))",
    "bad (float sort)": "jnp.sum(jnp.sort(x, axis=0))",
}
SETTINGS = {"plain": "", "comparison-expander disabled": "--xla_disable_hlo_passes=comparison-expander"}

CHILD = r'''
import json, statistics, sys, time
import jax, jax.numpy as jnp
expr, n, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ns = {"jnp": jnp}
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--reps", type=int, default=15)
    args = ap.parse_args()
    print(f"{args.n}x{args.n} float32, median of {args.reps} groups of 10 calls")
    for kname, expr in KERNELS.items():
        for sname, flags in SETTINGS.items():
            env = {**os.environ, "XLA_FLAGS": " ".join(x for x in (os.environ.get("XLA_FLAGS", ""), flags) if x)}
            out = subprocess.run([sys.executable, "-c", CHILD, expr, str(args.n), str(args.reps)],
                                 env=env, capture_output=True, text=True, check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"  {kname:18} {sname:30} {r['instructions']:3d} instructions  {r['median_ms']:9.2f} ms")


if __name__ == "__main__":
    main()
