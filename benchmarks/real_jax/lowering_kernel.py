"""A small jitted kernel whose optimized HLO a real JAX commit changed.

`lax.igamma` (the regularized lower incomplete gamma function) is lowered by JAX itself, in
`jax/_src/lax/special.py`, into a while loop of elementwise ops. jax-ml/jax commit da23cf20a2
("Fix `lax.special.igamma` and `lax.special.igammac` for `a = inf` & `x` finite.", 2026-06-27)
added the `a = inf` case to that lowering: the CPU's optimized HLO of this kernel grows from 752 to
764 instructions (jaxlib 0.10.2). The benchmark prints that count as its metric (deterministic,
so a bisection over it has no noise) and the kernel's wall clock beside it.

    python3 lowering_kernel.py            # hlo_instructions: 764 / igamma_us: ... / jax: ...

Run by `benchmarks/real_jax/explain_lowering.py`; any JAX of 2026 with jaxlib 0.10.2 runs it.
"""

from __future__ import annotations

import argparse
import re
import time

import jax
import jax.numpy as jnp

_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%\S+\s*=\s")


def kernel(a, x):
    return jax.lax.igamma(a, x)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=4096, help="vector length")
    parser.add_argument("--calls", type=int, default=50, help="timed calls")
    args = parser.parse_args()
    a = jnp.linspace(0.5, 8.0, args.n, dtype=jnp.float32)
    x = jnp.linspace(0.1, 9.0, args.n, dtype=jnp.float32)
    jitted = jax.jit(kernel)
    text = jitted.lower(a, x).compile().as_text()
    count = sum(1 for line in text.splitlines() if _INSTRUCTION.match(line))
    jitted(a, x).block_until_ready()
    start = time.perf_counter()
    for _ in range(args.calls):
        jitted(a, x).block_until_ready()
    elapsed = (time.perf_counter() - start) / args.calls
    print(f"jax: {jax.__version__}")
    print(f"igamma_us: {elapsed * 1e6:.1f}")
    print(f"hlo_instructions: {count}")


if __name__ == "__main__":
    main()
