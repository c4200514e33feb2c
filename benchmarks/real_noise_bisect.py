"""A real-noise bisection: `hourly bisect --only jax` over real jax-ml/jax history, run several times.

    python benchmarks/real_noise_bisect.py --jax-clone /work/jaxclone --python /work/jax2024/bin/python
    python benchmarks/real_noise_bisect.py ... --window flat     # a window with no change in it
    python benchmarks/real_noise_bisect.py ... --runs 3 --workroot /tmp/rnb --json

Without ``--jax-clone`` and ``--python`` it prints why it skips and exits 0 (CI has neither: a
clone of jax-ml/jax and a Python with a 2024 jaxlib are a few hundred MB of downloads).

The window (``--window change``, the default) is 2024-04-30 18:00 → 2024-05-01 06:00 UTC of JAX's
first-parent history: 11 states, one of them the merge 738612802e (PR #21017, "[omnitracing] pop
frames", committed 2024-04-30 17:04 -07:00), which wraps every ``Primitive.bind`` in a context
manager and made the eager dispatch of one primitive ~20 % slower on this CPU (``lax.neg`` of an
8-vector, ~11 → ~13.5 µs; PR #21044, two days later and outside the window, is titled
"[omnitracing] partially un-regress dispatch time"). ``--window flat`` is
2024-04-24 00:00 → 12:00 UTC (dispatch flat within the noise in a sampling of April 2024).
``--good/--bad/--expect`` take any other window and the culprit expected there.

The benchmark is benchmarks/real_jax/dispatch_op.py (``--op neg --stat min``): a real CPU
benchmark on whatever else the machine is doing. jaxlib stays as installed in ``--python``
(jaxlib 0.4.26 fits every JAX commit of both windows: JAX 0.4.27.dev, minimum jaxlib 0.4.23);
each state's ``jax`` package is built from its commit with ``pip wheel`` (the default of
``--only jax``). Every run gets a fresh workdir, so nothing measured is reused; the build cache
(``--cache-dir``, default ``<workroot>/cache``) is shared, since a wheel built from a commit is
the same wheel every time (``--fresh-cache`` gives each run its own).

Each run prints a row of benchmarks/real_bisect.py's table (probes, benchmark process starts,
samples, wall and bench seconds) and its answer: the culprit (a confirmed one), a candidate (not confirmed), a range
(unsure states beside the step), or no step (the ends do not differ). The bar: the expected culprit
every run, or an honest candidate/range/none — never another commit named as the culprit. Exit 1
when a run named a wrong culprit, 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_bisect import HEADER, TALLY, Run, bisect_once, row, skip  # noqa: E402

HERE = Path(__file__).resolve().parent
BENCH = HERE / "real_jax" / "dispatch_op.py"
METRIC = r"dispatch_us:\s*(?P<value>[0-9.]+)"

WINDOWS = {
    "change": ("2024-04-30 18:00", "2024-05-01 06:00", "738612802e"),
    "flat": ("2024-04-24 00:00", "2024-04-24 12:00", None),
}


def one_run(i: int, args, good: str, bad: str, expect: str | None) -> Run:
    workdir = Path(args.workroot) / f"run-{i}"
    cache = workdir / "cache" if args.fresh_cache else Path(args.cache_dir or Path(args.workroot) / "cache")
    hourly_args = [
        "--only", "jax", "--jax-repo", args.jax_clone, "--ref", args.ref, "--python", args.python,
        "--good", good, "--bad", bad,
        "--bench-cmd", f"python3 {TALLY} {BENCH} --op {args.op} --stat min --calls {args.calls} --blocks {args.blocks}",
        "--metric-regex", METRIC, "--lower-is-better", "--cache-dir", str(cache.resolve()), *args.extra,
    ]
    return bisect_once(i, hourly_args, Path(args.workroot), workdir, expect)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jax-clone", help="a clone of jax-ml/jax (its history is read, its tree checked out)")
    ap.add_argument("--python", help="a Python with a jaxlib fitting the window (0.4.26 for the default ones)")
    ap.add_argument("--window", choices=sorted(WINDOWS), default="change")
    ap.add_argument("--good"), ap.add_argument("--bad"), ap.add_argument("--expect")
    ap.add_argument("--ref", default="origin/main")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--op", default="neg")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--blocks", type=int, default=20)
    ap.add_argument("--workroot", default="real-noise-bisect")
    ap.add_argument("--cache-dir")
    ap.add_argument("--fresh-cache", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("extra", nargs="*", help="more hourly bisect flags, after --")
    args = ap.parse_args()
    if not args.jax_clone or not args.python:
        return skip("real_noise_bisect", "give --jax-clone (a clone of jax-ml/jax) and --python "
                    "(a Python with jaxlib installed, e.g. jaxlib==0.4.26 'numpy<2' 'scipy<1.14' "
                    "'ml_dtypes<0.5' opt_einsum wheel); see docs/bisect.md, 'On the real jax-ml/jax history'")
    good, bad, expect = WINDOWS[args.window]
    good, bad = args.good or good, args.bad or bad
    expect = args.expect if args.expect is not None else (expect if not (args.good or args.bad) else None)
    os.makedirs(args.workroot, exist_ok=True)
    results = []
    if not args.json:
        print(HEADER, flush=True)
    for i in range(1, args.runs + 1):
        r = one_run(i, args, good, bad, expect)
        results.append(r)
        if not args.json:
            print(row(r), flush=True)
    wrong = sum(a["class"] == "wrong" for r in results for a in r.answers)
    exact = sum(a["class"] == "exact" for r in results for a in r.answers)
    summary = {"window": [good, bad], "expect": expect, "runs": [r.as_json() for r in results],
               "exact": exact, "wrong": wrong}
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print(f"window {good} .. {bad}, expected {expect or 'no culprit'}: {exact} exact, {wrong} wrong "
              f"of {args.runs} runs")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
