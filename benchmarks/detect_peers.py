"""hourly.detect next to other change-point detectors, on the same seeded series (issue 24).

    python3 -m venv /work/venv-peers
    /work/venv-peers/bin/pip install -r benchmarks/requirements-peers.txt
    /work/venv-peers/bin/python benchmarks/detect_peers.py [--series N] [--seed S]

Run from the repository root; hourly itself is not installed in that environment, only its
detector (numpy) is imported from the checkout. The series are exactly those of
``benchmarks/detect_recall.py --only issue24`` (same generator, same seed): slow runs among
repeats, 2-repeat points with one slow run, 3-6 point series with a x10-x60 step and a noisy
point, and x1.67 steps in 15-20 % noise. A found step and a false one are counted as there
(``detect_recall.match``: the window must hold the real step, give or take one point).

hourly gets every run of every point and the metric's direction. The peers get what they take:
one value per point, the median of its runs, and report change positions (a window of one
point: the last point before and the first after). Each is run as its documentation says:

- Apache Otava (``otava.analysis.compute_change_points``, the E-divisive "split and merge" of
  Hunter with Otava's defaults: window 50, p-value 0.001);
- asv (``asv.step_detect.detect_steps``: an L1 piecewise-constant fit whose penalty asv picks
  itself; every step boundary is a change, up or down);
- ruptures PELT (``rpt.Pelt(model="l2", min_size=1)``) with a BIC-like penalty
  ``2 sigma^2 ln n``, sigma from the MAD of successive differences / sqrt 2.

Every detector's steps under 1 % (relative change of the medians on either side) are dropped, as
hourly's ``--min-change`` default does, so that none is charged for sub-1 % splits. A peer that
cannot be imported is reported as such, with no numbers.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import dataclass

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import detect_recall as dr  # noqa: E402  (the series and the matching)
from hourly.analysis.detect import detect  # noqa: E402

MIN_CHANGE = 0.01


@dataclass(frozen=True)
class Found:
    """A peer's change: between ``before_index`` and ``after_index`` (as hourly's Change)."""

    before_index: int
    after_index: int
    edge: bool = False


def medians(series: list) -> list[float]:
    return [float(np.median(p)) if isinstance(p, list) else float(p) for p in series]


def from_breaks(y: list[float], breaks: list[int]) -> list[Found]:
    """Changes at the given first indices of new segments, those under MIN_CHANGE dropped."""
    breaks = sorted(b for b in set(breaks) if 0 < b < len(y))
    bounds = [0] + breaks + [len(y)]
    out = []
    for k, b in enumerate(breaks, start=1):
        before = float(np.median(y[bounds[k - 1]:b]))
        after = float(np.median(y[b:bounds[k + 1]]))
        if before != 0 and abs(after - before) / abs(before) < MIN_CHANGE:
            continue
        out.append(Found(b - 1, b))
    return out


def run_hourly(series: list, hib: bool) -> list:
    return detect(series, higher_is_better=hib).changes


def run_otava(series: list, hib: bool) -> list[Found]:
    from otava.analysis import compute_change_points
    y = medians(series)
    if len(y) < 3:
        return []
    cps, _ = compute_change_points(y, window_len=50, max_pvalue=0.001, min_magnitude=0.0)
    return from_breaks(y, [int(c.index) for c in cps])


def run_asv(series: list, hib: bool) -> list[Found]:
    from asv.step_detect import detect_steps
    y = medians(series)
    steps = detect_steps(y)
    return from_breaks(y, [int(s[0]) for s in steps[1:]])


def run_ruptures(series: list, hib: bool) -> list[Found]:
    import ruptures as rpt
    y = np.array(medians(series))
    n = len(y)
    if n < 2:
        return []
    d = np.abs(np.diff(y))
    sigma = 1.4826 * float(np.median(d)) / math.sqrt(2.0) if len(d) else 0.0
    sigma = max(sigma, 1e-4 * float(np.median(np.abs(y))), 1e-12)
    algo = rpt.Pelt(model="l2", min_size=1, jump=1).fit(y.reshape(-1, 1))
    breaks = algo.predict(pen=2.0 * sigma * sigma * math.log(n))
    return from_breaks(list(y), [int(b) for b in breaks[:-1]])


DETECTORS = {
    "hourly": (run_hourly, None),
    "otava": (run_otava, "otava.analysis"),
    "asv": (run_asv, "asv.step_detect"),
    "ruptures": (run_ruptures, "ruptures"),
}


def available(module: str | None) -> str | None:
    """None when the peer can be imported, else why not."""
    if module is None:
        return None
    try:
        __import__(module)
    except Exception as e:  # noqa: BLE001 -- any failure to import means "not here"
        return f"not installed here ({type(e).__name__}: {e}); pip install -r benchmarks/requirements-peers.txt"
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--series", type=int, default=400, help="series per family (default 400)")
    ap.add_argument("--seed", type=int, default=20230824)
    ap.add_argument("--tolerance", type=int, default=1)
    ap.add_argument("--detectors", default=",".join(DETECTORS))
    a = ap.parse_args()
    names = [x for x in a.detectors.split(",") if x]
    missing = {name: available(DETECTORS[name][1]) for name in names}
    for name, why in missing.items():
        if why:
            print(f"{name}: {why}")
    names = [n for n in names if not missing[n]]
    # the very series of detect_recall.py --only issue24 (same generator, same seed offset)
    rng = np.random.default_rng(a.seed + 24)
    families = {kind: [dr.make_issue24(kind, rng) for _ in range(a.series)] for kind in dr.ISSUE24_KINDS}
    print(f"seed {a.seed}, {a.series} series per family, tolerance {a.tolerance}")
    print(f"{'family':>9} {'detector':>9} {'steps':>6} {'found':>6} {'recall':>7} {'false+':>6} "
          f"{'fp/100':>7} {'misplaced':>9} {'ms/series':>9}")
    totals = {n: [0, 0, 0, 0] for n in names}   # steps, found, false, series
    for kind, items in families.items():
        for name in names:
            fn = DETECTORS[name][0]
            tot = found = fp = off = 0
            elapsed = 0.0
            for series, steps, hib in items:
                t0 = time.perf_counter()
                changes = fn(series, hib)
                elapsed += time.perf_counter() - t0
                hits, misplaced = dr.match(list(changes), steps, a.tolerance)
                tot += len(steps)
                f = sum(h is not None for h in hits)
                found += f
                off += misplaced
                fp += len(changes) - f - misplaced
            t = totals[name]
            t[0] += tot
            t[1] += found
            t[2] += fp
            t[3] += len(items)
            print(f"{kind:>9} {name:>9} {tot:>6} {found:>6} {found / max(tot, 1):>7.1%} {fp:>6} "
                  f"{100 * fp / len(items):>7.2f} {off:>9} {1000 * elapsed / len(items):>9.2f}")
    for name in names:
        tot, found, fp, n = totals[name]
        print(f"{'combined':>9} {name:>9} {tot:>6} {found:>6} {found / max(tot, 1):>7.1%} {fp:>6} "
              f"{100 * fp / max(n, 1):>7.2f}")


if __name__ == "__main__":
    main()
