"""Rounds and builds of a bisection against W, the states probed per round (issue #15).

    PYTHONPATH=. python benchmarks/parallel_rounds.py [--windows 300] [--seed 0] [--days 1-3]

Windows of 1–3 days (``--days``) sampled from the real first-parent histories of xla and jax
(June–October 2023, /work/shared/data/history/), their candidate states made as hourly makes
them (:func:`hourly.analysis.bisection.candidate_states`), with one or two regressions of 10 % planted at
random commits inside that make a state of their own. Oracle verdicts: each state's samples are
its planted level exactly, so every verdict is right and only the probe choice differs. The
search is hourly's own :class:`~hourly.analysis.bisection.StepSearch`, the ends measured first as the
Bisector does; W=1 is ``run()`` (one state a round), W>1 ``run_rounds`` (W states a round). Exit
mode (a crash at the planted commit, a tenth of the states untestable) runs
:func:`~hourly.analysis.bisection.next_probe` against :func:`~hourly.analysis.bisection.plan_probes`.

Per W: rounds (calls of measure_many: what wall time scales with, a build and benchmark per
round), builds (distinct states measured: what the cluster pays), and whether the answer equals
the sequential one. ``log`` is the mean of log_(W+1) of the window's steps, the ideal round count.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from window_hunt import DAY, load_walks

from hourly.analysis.bisection import Verdict, bounds, candidate_states, next_probe, plan_probes
from hourly.analysis.step_search import StepSearch

WORKERS = (1, 2, 4, 8)


def sample_window(walks, rng, days: tuple[int, int]):
    lo = max(w[-1][1] for w in walks.values())  # both histories cover the window
    hi = min(w[0][1] for w in walks.values())
    length = int(rng.integers(days[0], days[1] + 1)) * DAY
    start = int(rng.integers(lo, hi - length))
    return candidate_states(walks, start, start + length)


def metric(n: int, culprits: list[int], workers: int) -> tuple[list[tuple[int, int]], int, int]:
    """(steps, rounds, builds) of the window search with oracle samples."""
    def f(i: int, c: int) -> list[float]:
        return [1000.0 * 1.1 ** sum(i >= k for k in culprits)] * c
    built: set[int] = set()
    search = StepSearch(n, lambda i, c: (built.add(i), f(i, c))[1], higher_is_better=False,
                        known={0: f(0, 3), n - 1: f(n - 1, 3)})
    if workers == 1:
        calls = [0]
        inner = search.measure
        search.measure = lambda i, c: (calls.__setitem__(0, calls[0] + 1), inner(i, c))[1]
        steps = search.run()
        rounds = calls[0]
    else:
        def many(reqs):
            built.update(reqs)
            return {i: f(i, c) for i, c in reqs.items()}
        steps, rounds = search.run_rounds(many, workers)
    return [(s.lo, s.hi) for s in steps], rounds, len(built)


def crash(n: int, culprit: int, skips: set[int], workers: int) -> tuple[tuple[int, int], int, int]:
    """(last good, first bad), rounds, builds of the exit-status search."""
    def v(i: int) -> Verdict:
        return Verdict.SKIP if i in skips else Verdict.BAD if i >= culprit else Verdict.GOOD
    verdicts: dict[int, Verdict] = {}
    rounds = 0
    while True:
        plan = plan_probes(n, verdicts, workers) if workers > 1 else \
            [i for i in [next_probe(n, verdicts)] if i is not None]
        if not plan:
            b = bounds(n, verdicts)
            return (b.lo, b.hi), rounds, len(verdicts)
        verdicts.update({i: v(i) for i in plan})
        rounds += 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--windows", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--days", default="1-3", help="window length in days, a range")
    a = ap.parse_args()
    days = tuple(int(x) for x in a.days.split("-")) if "-" in a.days else (int(a.days),) * 2
    rng = np.random.default_rng(a.seed)
    walks = load_walks()
    t0 = time.time()
    rows: dict[tuple[str, int], list[tuple[int, int, int, bool]]] = {}
    sizes = []
    for _ in range(a.windows):
        states = sample_window(walks, rng, days)
        n = len(states)
        if n < 4:
            continue
        sizes.append(n)
        for kind, k in (("1 regression", 1), ("2 regressions", 2)):
            culprits = sorted(int(x) for x in rng.choice(np.arange(1, n), size=k, replace=False))
            first = None
            for w in WORKERS:
                steps, rounds, builds = metric(n, culprits, w)
                first = first or steps
                assert steps == [(c - 1, c) for c in culprits], (n, culprits, w, steps)
                rows.setdefault((kind, w), []).append((n, rounds, builds, steps == first))
        culprit = int(rng.integers(1, n))
        skips = {int(i) for i in rng.choice(np.arange(1, n - 1), size=max(1, (n - 2) // 10), replace=False)} - {culprit}
        first = None
        for w in WORKERS:
            ans, rounds, builds = crash(n, culprit, skips, w)
            first = first or ans
            rows.setdefault(("crash (exit mode)", w), []).append((n, rounds, builds, ans == first))
    print(f"{len(sizes)} windows of {days[0]}-{days[1]} days, states per window: median "
          f"{statistics.median(sizes):.0f}, {min(sizes)}-{max(sizes)}; {time.time() - t0:.0f} s\n")
    print("| window | W | rounds (mean) | rounds (max) | log_(W+1) steps | builds (mean) | rounds vs W=1 | same answer as W=1 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for kind in ("1 regression", "2 regressions", "crash (exit mode)"):
        base = statistics.mean(r[1] for r in rows[(kind, 1)])
        for w in WORKERS:
            rs = rows[(kind, w)]
            mean_r = statistics.mean(r[1] for r in rs)
            ideal = statistics.mean(math.log(r[0] - 1, w + 1) for r in rs)
            print(f"| {kind} | {w} | {mean_r:.1f} | {max(r[1] for r in rs)} | {ideal:.1f} | "
                  f"{statistics.mean(r[2] for r in rs):.1f} | {mean_r / base:.2f} | "
                  f"{sum(r[3] for r in rs) / len(rs) * 100:.0f} % |")


if __name__ == "__main__":
    main()
