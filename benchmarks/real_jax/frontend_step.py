"""The front end of JAX on a small transformer's training step: tracing and lowering, in ms.

    python3 frontend_step.py [--layers 4] [--width 128] [--tokens 64] [--repeats 7] [--stat min|median]
                             [--every]

The benchmark of benchmarks/real_history_2026.py (docs/real-history.md). It imports nothing but
jax and runs on every JAX of 2026 with jaxlib 0.10.2, on any backend (CPU here, a TPU chip on the
TPU machine): what it times is pure Python — building the jaxpr of the step
(``jax.jit(step).trace(...)``, forward, backward and an SGD update of a decoder-only transformer:
embedding, ``--layers`` blocks of layer norm, causal self-attention and an MLP, a cross-entropy
loss) and lowering it to StableHLO (``.lower()``). Nothing is compiled, nothing runs on the
device, so the figures move with JAX's Python only.

Each repeat traces a new function object (the trace cache is keyed on the function), after one
warm-up repeat that fills the caches a first call fills (the jitted helpers of ``jax.numpy``, the
lowering rules' own caches). Per repeat it prints ``repeat i: trace_ms ... lower_ms ...``, then
one line per phase with the minimum (``--stat min``, default: on a shared machine the fastest
repeat is the least disturbed) or the median of the repeats:

    trace_ms: 150.2
    lower_ms: 95.3
    frontend_ms: 245.5     # trace + lower of the same repeat

With ``--every`` it also prints a ``frontend_ms:`` line per repeat (before the summary lines), for
a reader that takes every match as a sample. With ``--each PHASE`` (trace, lower or frontend) it
prints ``each_ms:`` once per repeat for that phase — every repeat a sample, for hourly's
``--metric-samples all`` — and takes the number of repeats from ``HOURLY_SAMPLES`` when hourly sets it. With ``--dispatch`` it then times eager dispatch too
(``dispatch_us:`` for ``lax.neg`` of an 8-vector, one ``Primitive.bind`` a call; ``add_us:`` for
``x + 1``, a jitted ``jnp`` operator; µs per call, the same statistic over 10 blocks of 200 calls).
"""

from __future__ import annotations

import time

STARTED = time.perf_counter()

import argparse  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

IMPORTED = time.perf_counter()


def init(seed: int, layers: int, width: int, vocab: int, tokens: int) -> dict:
    """The parameters, built with NumPy and put on the device in one transfer.

    Built with ``jax.random`` each shape was an eager op compiled for the backend (2.5-3 s on a
    CPU, more where a compile is dearer): set-up a process pays before its first sample, in every
    process. The values do not matter to what is timed (tracing and lowering see shapes and dtypes
    only), and these are the same shapes and dtypes (float32), uncommitted arrays as before."""
    rng = np.random.default_rng(seed)

    def dense(n_in, n_out):
        return (rng.standard_normal((n_in, n_out), np.float32) / np.sqrt(n_in)).astype(np.float32)

    params = {"embed": dense(vocab, width), "pos": dense(tokens, width), "out": dense(width, vocab),
              "blocks": []}
    for _ in range(layers):
        params["blocks"].append({
            "ln1": np.ones((width,), np.float32), "ln2": np.ones((width,), np.float32),
            "qkv": dense(width, 3 * width), "proj": dense(width, width),
            "up": dense(width, 4 * width), "down": dense(4 * width, width),
        })
    return jax.device_put(params)


def layer_norm(x, scale):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.var(x, axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5) * scale


def attention(x, qkv, proj, heads: int):
    t, d = x.shape[-2], x.shape[-1]
    q, k, v = jnp.split(x @ qkv, 3, axis=-1)
    q, k, v = (a.reshape(*a.shape[:-1], heads, d // heads).swapaxes(-2, -3) for a in (q, k, v))
    logits = q @ k.swapaxes(-1, -2) / jnp.sqrt(d // heads)
    mask = jnp.tril(jnp.ones((t, t), bool))
    logits = jnp.where(mask, logits, -1e9)
    out = jax.nn.softmax(logits, axis=-1) @ v
    return out.swapaxes(-2, -3).reshape(*x.shape) @ proj


def make_step(heads: int, lr: float = 1e-3):
    """A new training-step function each call (a fresh object: jax traces it afresh)."""

    def loss(params, tokens):
        x = params["embed"][tokens[:, :-1]] + params["pos"][: tokens.shape[1] - 1]
        for b in params["blocks"]:
            x = x + attention(layer_norm(x, b["ln1"]), b["qkv"], b["proj"], heads)
            x = x + jax.nn.gelu(layer_norm(x, b["ln2"]) @ b["up"]) @ b["down"]
        logits = x @ params["out"]
        logp = jax.nn.log_softmax(logits, axis=-1)
        target = jax.nn.one_hot(tokens[:, 1:], logits.shape[-1])
        return -jnp.mean(jnp.sum(logp * target, axis=-1))

    def step(params, tokens):
        value, grads = jax.value_and_grad(loss)(params, tokens)
        params = jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)
        return params, value

    return step


CLOCKS = {"wall": time.perf_counter, "cpu": time.thread_time}


def one_repeat(params, tokens, heads: int, clock=time.perf_counter) -> tuple[float, float]:
    jitted = jax.jit(make_step(heads))
    start = clock()
    traced = jitted.trace(params, tokens)
    mid = clock()
    traced.lower()
    end = clock()
    return (mid - start) * 1e3, (end - mid) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--stat", choices=["min", "median"], default="min")
    ap.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                    help="wall: perf_counter; cpu: this thread's CPU time (time.thread_time), which "
                         "leaves out the time other processes hold the core (not on gVisor: 10 ms steps)")
    ap.add_argument("--every", action="store_true", help="also print frontend_ms: once per repeat")
    ap.add_argument("--each", choices=["trace", "lower", "frontend"],
                    help="every repeat a sample: one `each_ms:` line per repeat of this phase, and as many "
                         "repeats as hourly asks for (HOURLY_SAMPLES) when it sets it")
    ap.add_argument("--dispatch", action="store_true",
                    help="also time eager dispatch: lax.neg and x + 1 of an 8-vector (dispatch_us:, add_us:)")
    a = ap.parse_args()
    if a.each and os.environ.get("HOURLY_SAMPLES", "").isdigit():
        a.repeats = max(int(os.environ["HOURLY_SAMPLES"]), 1)
    backend = jax.default_backend()  # opens the device (the chip, on an accelerator host)
    opened = time.perf_counter()
    params = init(0, a.layers, a.width, a.vocab, a.tokens)
    tokens = jax.device_put(np.random.default_rng(1).integers(0, a.vocab, (a.batch, a.tokens), dtype=np.int32))
    jax.block_until_ready((params, tokens))
    built = time.perf_counter()
    clock = CLOCKS[a.clock]
    one_repeat(params, tokens, a.heads, clock)  # warm-up: the caches a first call fills
    warm = time.perf_counter()
    # where this process's time before its first sample went (no metric: hourly reads each_ms: etc.)
    print(f"setup_s: import {IMPORTED - STARTED:.2f} open {backend} {opened - IMPORTED:.2f} "
          f"inputs {built - opened:.2f} warm-up {warm - built:.2f}", flush=True)
    rows = []
    for i in range(a.repeats):
        t, lo = one_repeat(params, tokens, a.heads, clock)
        rows.append((t, lo))
        print(f"repeat {i}: trace_ms {t:.2f} lower_ms {lo:.2f}")
        if a.every:
            print(f"frontend_ms: {t + lo:.3f}")
        if a.each:
            print(f"each_ms: {dict(trace=t, lower=lo, frontend=t + lo)[a.each]:.3f}", flush=True)
    pick = min if a.stat == "min" else statistics.median
    print(f"jax {jax.__version__}, jaxlib {jax.lib.__version__}, backend {jax.default_backend()}, "
          f"layers {a.layers}, width {a.width}, tokens {a.tokens}, {a.repeats} repeats, {a.stat}, {a.clock} clock")
    print(f"trace_ms: {pick(r[0] for r in rows):.3f}")
    print(f"lower_ms: {pick(r[1] for r in rows):.3f}")
    print(f"frontend_ms: {pick(r[0] + r[1] for r in rows):.3f}", flush=True)
    if a.dispatch:
        x = jnp.ones((8,), jnp.float32)
        for name, op in (("dispatch_us", lambda: jax.lax.neg(x)), ("add_us", lambda: x + 1)):
            for _ in range(200):
                jax.block_until_ready(op())
            blocks = []
            for _ in range(10):
                start = time.perf_counter()
                for _ in range(200):
                    jax.block_until_ready(op())
                blocks.append((time.perf_counter() - start) / 200 * 1e6)
            print(f"{name}: {pick(blocks):.3f}", flush=True)


if __name__ == "__main__":
    main()
