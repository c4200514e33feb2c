"""The small model `benchmarks/tpu/profile_capture.py` captures on an accelerator (and on the CPU).

Two states of one program, chosen by ``HOURLY_TPU_VARIANT`` (``good`` or ``bad``), as a culprit
would leave them:

- the bad state's block multiplies by ``sin`` of its activation: new ops in the step's own module
  (the HLO diff and the op-time join find them, timed from the device's ops);
- it holds 8 MiB more on the device (the memory profile's site is the ``keep.append`` line);
- while tracing it runs a pure-Python function, ``expand_rules`` (the front-end profile's diff
  must name it first).

As a script (``python profile_model.py``, under ``python -m hourly.harness.trace``) it runs 20 training
steps; as a target (``make()``) it gives the step and its inputs to ``hourly.harness.frontend_profile``.
Standard library and JAX only.
"""

import os

import jax
import jax.numpy as jnp

BAD = os.environ.get("HOURLY_TPU_VARIANT", "good") == "bad"
WIDTH, DEPTH, BATCH = 256, 4, 128


def expand_rules(n):
    """The bad state's planted front-end cost: pure Python, run once per block while tracing."""
    acc = 0
    for i in range(n):
        acc += (i * 7) % 13
    return acc


def block(p, x):
    if BAD:
        expand_rules(50000)
    h = jnp.tanh(x @ p["w1"] + p["b1"])
    if BAD:
        h = h * jnp.sin(h)
    return x + h @ p["w2"]


def loss(params, x):
    for p in params:
        x = block(p, x)
    return (x * x).mean()


def params_and_input():
    key = jax.random.PRNGKey(0)
    params = []
    for _ in range(DEPTH):
        key, k1, k2 = jax.random.split(key, 3)
        params.append({"w1": jax.random.normal(k1, (WIDTH, WIDTH), jnp.float32) * 0.05,
                       "b1": jnp.zeros((WIDTH,), jnp.float32),
                       "w2": jax.random.normal(k2, (WIDTH, WIDTH), jnp.float32) * 0.05})
    x = jax.random.normal(key, (BATCH, WIDTH), jnp.float32)
    return params, x


def make():
    params, x = params_and_input()
    return jax.value_and_grad(loss), (params, x)


if __name__ == "__main__":
    step = jax.jit(jax.value_and_grad(loss))
    params, x = params_and_input()
    keep = []
    if BAD:
        keep.append(jnp.zeros((2048, 1024), jnp.float32).block_until_ready())  # 8 MiB held to the end
    for _ in range(20):
        value, grads = step(params, x)
    jax.block_until_ready((value, grads))
    print(f"variant {'bad' if BAD else 'good'}: loss {float(value):.6f} on {jax.devices()[0]}")
