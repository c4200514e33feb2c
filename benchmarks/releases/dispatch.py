"""A trivial jit's dispatch time in µs (lower is better): the benchmark of benchmarks/releases_real_index.py."""
import statistics
import time

import jax
import jax.numpy as jnp

f = jax.jit(lambda x: x + 1)
x = jnp.ones(())
for _ in range(200):  # compile, then warm up
    f(x).block_until_ready()
n, blocks = 2000, []
for _ in range(5):
    start = time.perf_counter()
    for _ in range(n):
        f(x).block_until_ready()
    blocks.append((time.perf_counter() - start) / n * 1e6)
print(f"jax {jax.__version__}, jaxlib {jax.lib.__version__}")
print(f"dispatch_us: {statistics.median(blocks):.3f}")
