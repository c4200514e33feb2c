"""Example target of the per-phase harness: a tiny transformer's training step.

    hourly bench docs/examples/jaxbench_phases_example.py
    python hourly/jaxbench_phases.py docs/examples/jaxbench_phases_example.py      (no hourly needed)
    python -m hourly.jaxbench_phases docs/examples/jaxbench_phases_example.py:make_small

make() returns the function and its arguments; the harness jits the function, puts the arguments
on the device, and measures trace, lower, compile, first call, dispatch, step and memory. This file
imports only JAX: it runs under any build's Python.
"""

import jax
import jax.numpy as jnp


def init(key, layers, width, vocab):
    def dense(k, n_in, n_out):
        return jax.random.normal(k, (n_in, n_out), jnp.float32) / n_in ** 0.5

    keys = iter(jax.random.split(key, 2 + 4 * layers))
    return {
        "embed": dense(next(keys), vocab, width),
        "out": dense(next(keys), width, vocab),
        "blocks": [{"qkv": dense(next(keys), width, 3 * width), "proj": dense(next(keys), width, width),
                    "up": dense(next(keys), width, 4 * width), "down": dense(next(keys), 4 * width, width)}
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
    key = jax.random.PRNGKey(0)
    params = init(key, layers, width, vocab)
    batch = jax.random.randint(key, (tokens,), 0, vocab)
    return train_step, (params, batch)


def make_small():
    return make(layers=2, width=64, tokens=33)
