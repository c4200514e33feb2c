"""Which jax ran, on which device, and how long tracing and lowering a small training step took.

    python3 which_jax.py      # jax: 0.10.2.dev20260617+12b5b52 …/jax/__init__.py / device: tpu TPU v5 lite / lower_ms: 41.3

The benchmark of benchmarks/real_jax/host_overlay.sh: every state of an `hourly scan --only jax`
on a host as it is prints its own `jax.__version__` and the file it was imported from, so the run
shows that each state ran its own jax over the machine's jaxlib (docs/accelerators.md).
"""

import time

import jax
import jax.numpy as jnp

print("jax:", jax.__version__, jax.__file__)
d = jax.devices()[0]
print("device:", d.platform, d.device_kind)


def loss(w, x):
    for _ in range(8):
        x = jnp.tanh(x @ w)
    return x.sum()


x, w = jnp.ones((128, 256)), jnp.full((256, 256), 0.01)
t0 = time.perf_counter()
jax.jit(jax.grad(loss)).lower(w, x)
print(f"lower_ms: {(time.perf_counter() - t0) * 1e3:.1f}")
