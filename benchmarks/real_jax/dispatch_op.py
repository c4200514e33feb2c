"""Eager dispatch time of one small JAX operation, in µs per call (lower is better).

    python3 dispatch_op.py [--op add|neg|index|identity_jit|asarray] [--calls N] [--blocks B] [--stat median|min]
                           [--each]

The benchmark of benchmarks/real_noise_bisect.py and of the real-history checks in docs/bisect.md.
It imports nothing but jax (any JAX of 2023 on), so it runs on every state of a bisection. Each
block times ``--calls`` calls, each blocked to completion; the line ``dispatch_us:`` is the median
of the blocks, or with ``--stat min`` their minimum (the timeit convention: on a shared machine the
fastest block is the one least disturbed by other processes; the run-to-run noise left is real and
is what the bisection's statistics deal with).

``--each`` prints one ``dispatch_us:`` line per block instead — every block a sample, for
``--metric-samples all`` — and takes the number of blocks from ``HOURLY_SAMPLES`` when hourly sets
it (docs/measuring.md: hourly chooses how many samples a process gives from what a process and a
sample cost); ``--blocks`` otherwise.

``--device cpu`` commits the array to the host's CPU device (on an accelerator host: the process still
opens the accelerator, as every JAX process there does, but the op's time is JAX's own dispatch, not
the accelerator's round trip — on a TPU v5e a blocked eager op takes ≈580 µs, where a 1 µs change to
JAX's Python is 0.2 %). ``--pipelined`` blocks once per block instead of once per call (the calls
queue, as a program's eager ops do).

``--op neg`` is ``lax.neg`` of a small array, eager: one ``Primitive.bind`` per call, so it sees
every change to JAX's Python bind path. JAX's jnp operators (``x + 1``) are jitted functions from
2024 on, dispatched in C++ without a Python bind.
"""
import argparse
import os
import statistics
import time

import jax
import jax.numpy as jnp
from jax import lax

ap = argparse.ArgumentParser()
ap.add_argument("--op", default="add", choices=["add", "neg", "index", "identity_jit", "asarray"])
ap.add_argument("--calls", type=int, default=2000)
ap.add_argument("--blocks", type=int, default=5)
ap.add_argument("--stat", default="median", choices=["median", "min"])
ap.add_argument("--each", action="store_true", help="one dispatch_us: line per block (HOURLY_SAMPLES blocks)")
ap.add_argument("--device", choices=["default", "cpu"], default="default",
                help="cpu: the array on the host's CPU device, whatever the default backend")
ap.add_argument("--pipelined", action="store_true", help="block once per block, not once per call")
a = ap.parse_args()
if a.each and os.environ.get("HOURLY_SAMPLES", "").isdigit():
    a.blocks = max(int(os.environ["HOURLY_SAMPLES"]), 1)

x = jnp.ones((8,), jnp.float32)
if a.device == "cpu":
    x = jax.device_put(x, jax.devices("cpu")[0])
ident = jax.jit(lambda v: v)
op = {
    "add": lambda: x + 1,            # jnp's operator (a jitted function from 2024 on)
    "neg": lambda: lax.neg(x),       # an eager primitive: Primitive.bind, then dispatch
    "index": lambda: x[3],           # jnp indexing with a static integer
    "identity_jit": lambda: ident(x),  # a trivial jitted function
    "asarray": lambda: jnp.asarray(1.0),  # a Python scalar onto the device
}[a.op]
for _ in range(200):  # compile, then warm up
    jax.block_until_ready(op())
blocks = []
for _ in range(a.blocks):
    start = time.perf_counter()
    if a.pipelined:
        y = None
        for _ in range(a.calls):
            y = op()
        jax.block_until_ready(y)
    else:
        for _ in range(a.calls):
            jax.block_until_ready(op())
    blocks.append((time.perf_counter() - start) / a.calls * 1e6)
    if a.each:
        print(f"dispatch_us: {blocks[-1]:.3f}", flush=True)
print(f"jax {jax.__version__}, jaxlib {jax.lib.__version__}, op {a.op}, device {x.devices()}, "
      f"{'pipelined' if a.pipelined else 'blocked'}, blocks "
      + " ".join(f"{b:.2f}" for b in blocks))
if not a.each:
    value = min(blocks) if a.stat == "min" else statistics.median(blocks)
    print(f"dispatch_us: {value:.3f}")
