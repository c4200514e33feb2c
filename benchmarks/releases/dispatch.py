"""A trivial jit's dispatch time in µs (lower is better): the benchmark of benchmarks/releases_real_index.py.

The function is the identity, a *trivial* computation: jax 0.4.13 ran such functions
through a Python fast path of its own ("trivial execution"), removed later (970f4c9d4d), and that path
was far slower to dispatch than compiled executables (issue #16's 255 µs → 3.3 µs). ``x + 1`` is
not trivial and shows no step.
"""
import statistics
import time

import jax
import jax.numpy as jnp

f = jax.jit(lambda x: x)
x = jnp.ones(())
for _ in range(200):  # compile, then warm up
    jax.block_until_ready(f(x))
n, blocks = 2000, []
for _ in range(5):
    start = time.perf_counter()
    for _ in range(n):
        jax.block_until_ready(f(x))
    blocks.append((time.perf_counter() - start) / n * 1e6)
print(f"jax {jax.__version__}, jaxlib {jax.lib.__version__}")
print(f"dispatch_us: {statistics.median(blocks):.3f}")
