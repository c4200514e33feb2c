"""Example target of the per-phase harness: a tiny transformer's training step.

    hourly bench docs/examples/jaxbench_phases_example.py
    python hourly/jaxbench_phases.py docs/examples/jaxbench_phases_example.py      (no hourly needed)
    python -m hourly.jaxbench_phases docs/examples/jaxbench_phases_example.py:make_small

make() returns the function and its arguments; the harness jits the function, puts the arguments
on the device, and measures trace, lower, compile, first call, dispatch, step and memory. This file
imports only JAX (and NumPy, which JAX needs): it runs under any build's Python.
"""

import jax
import jax.numpy as jnp
import numpy as np


def init(rng, layers, width, vocab):
    # NumPy draws the weights (float32 arrays; the harness puts them on the device): jax.random
    # would compile a program for each shape first, seconds on a CPU before anything is measured
    def dense(n_in, n_out):
        return rng.standard_normal((n_in, n_out), np.float32) / np.float32(n_in ** 0.5)

    return {
        "embed": dense(vocab, width),
        "out": dense(width, vocab),
        "blocks": [{"qkv": dense(width, 3 * width), "proj": dense(width, width),
                    "up": dense(width, 4 * width), "down": dense(4 * width, width)}
                   for _ in range(layers)],
    }


def norm(x):
    return (x - x.mean(-1, keepdims=True)) * jax.lax.rsqrt(x.var(-1, keepdims=True) + 1e-5)


def forward(params, tokens, heads):
    x = params["embed"][tokens]
    n, width = x.shape
    mask = jnp.tril(jnp.ones((n, n), bool))
    for block in params["blocks"]:
        q, k, v = jnp.split(norm(x) @ block["qkv"], 3, axis=-1)
        q, k, v = (t.reshape(n, heads, width // heads).transpose(1, 0, 2) for t in (q, k, v))
        scores = jnp.where(mask, q @ k.transpose(0, 2, 1) / (width // heads) ** 0.5, -1e9)
        x = x + (jax.nn.softmax(scores) @ v).transpose(1, 0, 2).reshape(n, width) @ block["proj"]
        x = x + jax.nn.gelu(norm(x) @ block["up"]) @ block["down"]
    return norm(x) @ params["out"]


def loss(params, tokens, heads):
    logits = forward(params, tokens[:-1], heads)
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), tokens[1:, None], axis=-1))


def train_step(params, tokens, heads=4):
    grads = jax.grad(loss)(params, tokens, heads)
    return jax.tree_util.tree_map(lambda p, g: p - 1e-3 * g, params, grads)


def make(layers=2, width=128, tokens=65, vocab=256):
    """The step, its arguments, and its keyword arguments (``heads`` is static: jit it yourself with
    ``static_argnames`` to pass it as a keyword; here it keeps its default)."""
    rng = np.random.default_rng(0)
    params = init(rng, layers, width, vocab)
    batch = rng.integers(0, vocab, tokens, dtype=np.int32)
    return train_step, (params, batch)


def make_small():
    return make(layers=2, width=64, tokens=33)
