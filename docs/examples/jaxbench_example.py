r"""Example regression benchmark written with hourly.jaxbench.

A fixed-size MLP training step, jitted at the outermost level, timed with compilation, warm-up and
asynchronous dispatch handled. It prints, e.g.:

    # train_step: median 1.234 ms, IQR ... ; first call (compile) 0.53 s
    METRIC train_step_ms: 1.234
    METRIC train_step_compile_s: 0.53
    COMPILE_TIME_S: 0.53

Scan with:  hourly scan ... --metric-regex 'METRIC train_step_ms:\s*(?P<value>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)'
Trace with: hourly trace --out traces/here --memprof-at after_init -- python docs/examples/jaxbench_example.py
"""

import argparse

import jax
import jax.numpy as jnp
import numpy as np

from hourly import jaxbench


def init_params(rng, sizes):
    # NumPy draws the weights, jnp.asarray puts them on the device: jax.random would compile a
    # program for each shape first, a second or more on a CPU before anything is measured
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        params.append({"w": jnp.asarray(rng.standard_normal((n_in, n_out), np.float32) / np.float32(n_in ** 0.5)),
                       "b": jnp.zeros((n_out,), jnp.float32)})
    return params


def loss(params, x, y):
    for layer in params[:-1]:
        x = jax.nn.relu(x @ layer["w"] + layer["b"])
    out = x @ params[-1]["w"] + params[-1]["b"]
    return jnp.mean((out - y) ** 2)


@jax.jit  # jit the whole step, the outermost function
def train_step(params, x, y):
    grads = jax.grad(loss)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - 1e-3 * g, params, grads)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=256)   # fixed input size for a hunt
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--iters", type=int, default=100)   # fixed iteration count
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    params = init_params(rng, [args.width] * 4)
    x = jnp.asarray(rng.standard_normal((args.batch, args.width), np.float32))
    y = jnp.zeros((args.batch, args.width), jnp.float32)
    jaxbench.memory_checkpoint("after_init")   # saved only when hourly trace asks for it

    result = jaxbench.benchmark(train_step, params, x, y, name="train_step",
                                iters=args.iters, warmup=args.warmup)
    result.report()


if __name__ == "__main__":
    main()
