"""Recall and false positives of hourly.detect over many random series (seeded).

    PYTHONPATH=. python benchmarks/detect_recall.py [--series N] [--seed S]

Each series: a random length, 0-4 steps of 1-10 % (up or down) at random places at least 3
points apart, Gaussian noise of 0.05-1 % of the level, and sometimes an outlier (3-10 %), failed
points (None) and repeated samples. A true step counts as found when a reported change's window
[before, after] contains it, give or take ``--tolerance`` points; a reported change that matches
no true step is a false positive. Recall is broken down by the step's size in noise units
(a 1 % step in 1 % noise with 5 points a side is below any detector's reach: z = 1.6).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from hourly.detect import detect


HEAVY_TAILS = False  # --heavy-tails: Student-t noise with 3 degrees of freedom (scaled to the same sd)


def _noise(rng: np.random.Generator, size: int) -> np.ndarray:
    if HEAVY_TAILS:
        return rng.standard_t(3, size) / np.sqrt(3.0)
    return rng.standard_normal(size)


def make_series(rng: np.random.Generator, n: int,
                steps_allowed: bool = True) -> tuple[list, list[int], float, list[float]]:
    noise = rng.uniform(0.0005, 0.01)
    nsteps = int(rng.integers(0, 5)) if steps_allowed else 0
    cands = list(range(3, n - 2))
    steps: list[int] = []
    rng.shuffle(cands)
    for c in cands:
        if len(steps) == nsteps:
            break
        if all(abs(c - s) >= 3 for s in steps):
            steps.append(c)
    steps.sort()
    sizes = [float(rng.uniform(0.01, 0.10) * rng.choice([-1, 1])) for _ in steps]
    level = np.full(n, 100.0)
    for s, size in zip(steps, sizes):
        level[s:] *= 1 + size
    repeats = int(rng.choice([1, 1, 3]))
    series: list = []
    for i in range(n):
        vals = level[i] * (1 + noise * _noise(rng, repeats))
        series.append(float(vals[0]) if repeats == 1 else [float(x) for x in vals])
    if rng.random() < 0.5:  # one outlier
        i = int(rng.integers(0, n))
        bump = 1 + rng.uniform(0.03, 0.10) * rng.choice([-1, 1])
        series[i] = series[i] * bump if repeats == 1 else [x * bump for x in series[i]]
    for i in range(n):  # failed points
        if rng.random() < 0.05:
            series[i] = None
    return series, steps, noise, sizes


def run(nseries: int, seed: int, lengths: list[int], tolerance: int) -> None:
    rng = np.random.default_rng(seed)
    print(f"{'':>5} {'length':>6} {'series':>6} {'steps':>6} {'found':>6} {'recall':>7} "
          f"{'recall z>=8':>11} {'false+':>6} {'fp/series':>9} {'ms/series':>9}")
    rows = [(n, True) for n in lengths] + [(n, False) for n in lengths]
    for n, steps_allowed in rows:
        tot = found = fp = 0
        big = big_found = 0
        elapsed = 0.0
        for _ in range(nseries):
            series, steps, noise, sizes = make_series(rng, n, steps_allowed)
            t0 = time.perf_counter()
            changes = detect(series).changes
            elapsed += time.perf_counter() - t0
            matched = set()
            for s, size in zip(steps, sizes):
                # the step's z with the points it has on each side (up to the next steps)
                left = s - max([p for p in steps if p < s], default=0)
                right = min([p for p in steps if p > s], default=n) - s
                z = abs(size) / (noise * np.sqrt(1 / left + 1 / right))
                hit = None
                for k, c in enumerate(changes):
                    if k not in matched and c.before_index - tolerance < s <= c.after_index + tolerance:
                        hit = k
                        break
                tot += 1
                big += z >= 8
                if hit is not None:
                    matched.add(hit)
                    found += 1
                    big_found += z >= 8
            fp += len(changes) - len(matched)
        print(f"{'steps' if steps_allowed else 'none':>5} {n:>6} {nseries:>6} {tot:>6} {found:>6} {found / max(tot, 1):>7.1%} "
              f"{big_found / max(big, 1):>11.1%} {fp:>6} {fp / nseries:>9.3f} "
              f"{1000 * elapsed / nseries:>9.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--series", type=int, default=400)
    ap.add_argument("--seed", type=int, default=20230824)
    ap.add_argument("--tolerance", type=int, default=1)
    ap.add_argument("--lengths", default="8,20,40,75,200")
    ap.add_argument("--heavy-tails", action="store_true",
                    help="Student-t (3 dof) noise instead of Gaussian: real runs have rare slow ones")
    a = ap.parse_args()
    global HEAVY_TAILS
    HEAVY_TAILS = a.heavy_tails
    run(a.series, a.seed, [int(x) for x in a.lengths.split(",")], a.tolerance)


if __name__ == "__main__":
    main()
