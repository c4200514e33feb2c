"""Find every step change in a benchmark series (pure functions, no I/O).

A series is a list of points; each point is a float, ``None`` (a failed point: the program crashed
or printed no metric) or a sequence of repeated samples of the same measurement.

How it works (details and the reasons in docs/detection.md):

1. Failed points are dropped; the good points keep their original indices, so a step that spans a
   failed point is one step from the last good point before to the first good point after.
2. The noise of one point, ``sigma``, is estimated robustly: from the spread of repeated samples
   (median over points of the scaled MAD, divided by sqrt(samples)), and from the point-to-point
   noise (scaled MAD of successive differences / sqrt(2)), which a few steps or outliers do not
   move. With both, the larger wins (repeats miss run-to-run noise). With neither (under 4 good
   points, no repeats) a prior of 0.2 % of the level is used. Never below 0.01 % of the level.
3. The series is fitted exactly by a piecewise-constant function (optimal partitioning, least
   squares) with a penalty ``z_min**2 * sigma**2`` per step, where ``z_min`` grows slowly with the
   length (multiple testing). A split pays for itself only when the two sides differ by about
   ``z_min`` standard errors.
4. Single-point segments are outliers, not steps: the worst is set aside and the fit redone
   until none is left. (In a series of fewer than 4 good points a single point at either end
   is allowed; a lone point between two others is still an outlier.)
5. ``sigma`` is refined from the differences inside the fitted segments (RMS / sqrt(2)) and the
   fit is redone.
6. Adjacent segments whose levels (medians) differ by less than ``z_min`` standard errors
   (1.5x that beside a segment of 1-2 points), or by less than ``min_change`` (relative), are
   merged, least significant first, until every remaining step is significant.

asv fits an L1 Potts model whose penalty is chosen by an information criterion and then only
reports regressions against the best value; E-divisive (Otava/Hunter) uses permutation tests of an
energy statistic, which needs long series and is slow. This detector knows the noise scale
explicitly (repeats or successive differences), so it works on 2 points as well as on 1000,
reports improvements as well as regressions, and treats outliers and failed points explicitly.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Sequence, Union

import numpy as np

Point = Union[float, int, None, Sequence[float]]

#: Relative noise of one point assumed when the series itself cannot tell (too short, no repeats).
PRIOR_RELATIVE_NOISE = 0.002
#: Noise is never taken below this fraction of the level (constant or quantised series).
NOISE_FLOOR_RELATIVE = 1e-4
#: Consistency constant of the MAD for a normal distribution.
_MAD_TO_SIGMA = 1.4826


class ChangeKind(enum.Enum):
    """Whether a step made things worse or better, given the metric's direction."""

    REGRESSION = "regression"
    IMPROVEMENT = "improvement"


@dataclass(frozen=True)
class Change:
    """One step: between ``before_index`` (last good point before) and ``after_index``.

    Indices are positions in the series as given (failed points included). ``strength`` is the
    step divided by its standard error (a z-score; >= ``z_min`` for every reported change).
    """

    before_index: int
    after_index: int
    level_before: float
    level_after: float
    relative_change: float
    strength: float
    kind: ChangeKind


@dataclass(frozen=True)
class Detection:
    """Everything the detector found: the changes plus what it set aside and the noise it used."""

    changes: list[Change]
    failed: list[int] = field(default_factory=list)
    outliers: list[int] = field(default_factory=list)
    noise: float = 0.0              #: absolute noise (sigma) of one point
    noise_source: str = "none"      #: "repeats", "successive differences", "both", "prior"
    threshold: float = 0.0          #: z_min used

    level: float = 0.0              #: median level of the good points

    @property
    def relative_noise(self) -> float:
        return self.noise / abs(self.level) if self.level else 0.0


def point_value(point: Point) -> float | None:
    """The value of one point: itself, the median of its samples, or None if failed."""
    samples = point_samples(point)
    if not samples:
        return None
    return float(np.median(samples))


def point_samples(point: Point) -> list[float]:
    """The finite samples of one point ([] for a failed point)."""
    if point is None:
        return []
    if isinstance(point, (int, float)):
        raw = [float(point)]
    else:
        raw = [float(s) for s in point if s is not None]
    return [s for s in raw if math.isfinite(s)]


def z_threshold(n: int) -> float:
    """How many standard errors a step must be for ``n`` good points.

    About 3.5 for a handful of points, growing like sqrt(2 log n) so that the chance of a false
    step over a whole series stays small (tuned with benchmarks/detect_recall.py).
    """
    return max(3.5, math.sqrt(2.0 * math.log(max(n, 2)) + 8.0))


def estimate_noise(values: np.ndarray, samples: list[list[float]]) -> tuple[float, str]:
    """Robust noise (sigma) of one point value, and where it came from.

    ``values`` are the good point values in order; ``samples`` their repeated samples.
    """
    level = float(np.median(np.abs(values))) if len(values) else 0.0
    floor = max(NOISE_FLOOR_RELATIVE * level, 1e-12)
    rep = _repeat_noise(samples)
    diff = None
    if len(values) >= 4:
        d = np.abs(np.diff(values))
        diff = _MAD_TO_SIGMA * float(np.median(d)) / math.sqrt(2.0)
    if rep is not None and diff is not None:
        return max(rep, diff, floor), "both"
    if rep is not None:
        return max(rep, floor), "repeats"
    if diff is not None:
        return max(diff, floor), "successive differences"
    return max(PRIOR_RELATIVE_NOISE * level, floor), "prior"


#: A step next to a segment of 1-2 points (a short dip or bump) must be this much stronger:
#: with heavy-tailed run times two slow runs in a row are not rare (benchmarks/detect_recall.py
#: --heavy-tails: false steps per 200-point series 0.07 -> 0.02; Gaussian recall unchanged).
SHORT_SEGMENT_FACTOR = 1.5


def within_segment_noise(v: np.ndarray, bounds: list[int]) -> float | None:
    """Point-to-point noise from the differences that do not cross a fitted step.

    RMS / sqrt(2): outliers are already set aside and steps excluded, so the plain RMS is safe
    here, about twice as efficient as the MAD used for the first guess (which matters on 10-20
    point series) and, unlike the MAD, it sees heavy tails. None with under 3 differences.
    """
    parts = [np.diff(v[a:b]) for a, b in zip(bounds[:-1], bounds[1:]) if b - a >= 2]
    if not parts:
        return None
    d = np.concatenate(parts)
    if len(d) < 3:
        return None
    return math.sqrt(float(np.mean(d * d))) / math.sqrt(2.0)


def _repeat_noise(samples: list[list[float]]) -> float | None:
    """Noise of a point's median from the spread of its repeats (None without repeats)."""
    per_point = []
    counts = []
    for s in samples:
        if len(s) >= 2:
            a = np.asarray(s)
            if len(s) == 2:
                sd = abs(a[0] - a[1]) / math.sqrt(2.0)   # unbiased-ish for a pair
            else:
                sd = _MAD_TO_SIGMA * float(np.median(np.abs(a - np.median(a))))
            per_point.append(sd)
            counts.append(len(s))
    if not per_point:
        return None
    sd = float(np.median(per_point))
    k = float(np.median(counts))
    # standard error of a median of k samples (sqrt(pi/2) larger than that of a mean)
    factor = 1.0 if k <= 2 else math.sqrt(math.pi / 2.0)
    return sd * factor / math.sqrt(k)


def segment(values: np.ndarray, penalty: float) -> list[int]:
    """Optimal partitioning (least squares + ``penalty`` per extra segment).

    Returns the start index of every segment (the first is 0). Exact, O(n^2) with numpy; series
    here are at most a few thousand points.
    """
    n = len(values)
    if n == 0:
        return []
    x = values - np.median(values)  # centred: keeps the sums of squares exact for big levels
    s1 = np.concatenate([[0.0], np.cumsum(x)])
    s2 = np.concatenate([[0.0], np.cumsum(x * x)])
    best = np.empty(n + 1)
    best[0] = -penalty
    last = np.zeros(n + 1, dtype=int)
    for t in range(1, n + 1):
        s = np.arange(t)                       # candidate start of the last segment
        m = t - s
        seg = s2[t] - s2[s] - (s1[t] - s1[s]) ** 2 / m
        total = best[s] + seg + penalty
        j = int(np.argmin(total))
        best[t] = total[j]
        last[t] = j
    starts = []
    t = n
    while t > 0:
        starts.append(int(last[t]))
        t = int(last[t])
    return sorted(starts)


def detect(series: Sequence[Point], *, higher_is_better: bool = True,
           min_change: float | None = None) -> Detection:
    """Find every step in ``series``; see the module docstring for how."""
    samples_all = [point_samples(p) for p in series]
    failed = [i for i, s in enumerate(samples_all) if not s]
    good_idx = [i for i, s in enumerate(samples_all) if s]
    values = np.array([float(np.median(samples_all[i])) for i in good_idx], dtype=float)
    samples = [samples_all[i] for i in good_idx]
    if len(values) == 0:
        return Detection(changes=[], failed=failed, noise_source="none")
    sigma, source = estimate_noise(values, samples)
    level = float(np.median(np.abs(values)))
    z_min = z_threshold(len(values))

    keep, pos, v, segs = _fit(values, sigma, z_min, min_change)
    if source in ("successive differences", "both"):
        # Second pass: the first guess (MAD of all differences) is robust but noisy on short
        # series; re-estimate from the differences inside the fitted segments and refit.
        refined = within_segment_noise(v, segs)
        if refined is not None:
            rep = _repeat_noise(samples) if source == "both" else None
            floor = max(NOISE_FLOOR_RELATIVE * level, 1e-12)
            new_sigma = max(refined, rep or 0.0, floor)
            if new_sigma != sigma:
                sigma = new_sigma
                keep, pos, v, segs = _fit(values, sigma, z_min, min_change)
    changes = []
    for k in range(1, len(segs) - 1):
        a0, a1, b1 = segs[k - 1], segs[k], segs[k + 1]
        before = float(np.median(v[a0:a1]))
        after = float(np.median(v[a1:b1]))
        z = _z(v[a0:a1], v[a1:b1], sigma)
        rel = _relative(before, after)
        worse = (after < before) if higher_is_better else (after > before)
        changes.append(Change(
            before_index=good_idx[pos[a1 - 1]],
            after_index=good_idx[pos[a1]],
            level_before=before, level_after=after, relative_change=rel, strength=z,
            kind=ChangeKind.REGRESSION if worse else ChangeKind.IMPROVEMENT,
        ))
    outliers = [good_idx[i] for i in np.flatnonzero(~keep)]
    return Detection(changes=changes, failed=failed, outliers=outliers, noise=sigma,
                     noise_source=source, threshold=z_min, level=level)


def _fit(values: np.ndarray, sigma: float, z_min: float, min_change: float | None):
    """Fit, set aside outliers (single-point segments) one by one, refit; then prune."""
    keep = np.ones(len(values), dtype=bool)
    while True:
        pos = np.flatnonzero(keep)
        v = values[pos]
        starts = segment(v, (z_min * sigma) ** 2)
        bounds = starts + [len(v)]
        lonely = _outliers(bounds, len(values))
        if not lonely:
            break
        # set aside only the worst one: the others may be artefacts of it
        worst = max(lonely, key=lambda i: _deviation(v, bounds, i))
        keep[pos[worst]] = False
    return keep, pos, v, _prune(v, bounds, sigma, z_min, min_change, len(values) >= 4)


def detect_changes(series: Sequence[Point], *, higher_is_better: bool = True,
                   min_change: float | None = None) -> list[Change]:
    """The steps of ``series`` (see :func:`detect` for outliers and noise as well)."""
    return detect(series, higher_is_better=higher_is_better, min_change=min_change).changes


def _outliers(bounds: list[int], n_good: int) -> list[int]:
    """Positions of single-point segments: outliers rather than steps.

    A single point between two other segments is always an outlier. One at either end of the
    series is too, unless the series has fewer than 4 good points (then it is all there is).
    """
    nseg = len(bounds) - 1
    out = []
    for k in range(nseg):
        if bounds[k + 1] - bounds[k] != 1:
            continue
        interior = 0 < k < nseg - 1
        if interior or n_good >= 4:
            out.append(bounds[k])
    return out


def _deviation(v: np.ndarray, bounds: list[int], i: int) -> float:
    """How far the single point ``i`` lies from the closest of its neighbouring segments."""
    k = bounds.index(i)
    near = []
    if k > 0:
        near.append(float(np.median(v[bounds[k - 1]:i])))
    if k + 2 < len(bounds):
        near.append(float(np.median(v[i + 1:bounds[k + 2]])))
    return min(abs(v[i] - m) for m in near) if near else 0.0


def _z(a: np.ndarray, b: np.ndarray, sigma: float) -> float:
    se = sigma * math.sqrt(1.0 / len(a) + 1.0 / len(b))
    return abs(float(np.median(b)) - float(np.median(a))) / se


def _relative(before: float, after: float) -> float:
    if before == 0:
        return math.copysign(math.inf, after) if after != 0 else 0.0
    return (after - before) / abs(before)


def _prune(v: np.ndarray, bounds: list[int], sigma: float, z_min: float,
           min_change: float | None, strict_short: bool = True) -> list[int]:
    """Merge adjacent segments whose difference is not significant (or below min_change)."""
    bounds = list(bounds)
    while len(bounds) > 2:
        worst, worst_score = None, None
        for k in range(1, len(bounds) - 1):
            a, b = v[bounds[k - 1]:bounds[k]], v[bounds[k]:bounds[k + 1]]
            z = _z(a, b, sigma)
            rel = abs(_relative(float(np.median(a)), float(np.median(b))))
            need = z_min * SHORT_SEGMENT_FACTOR if strict_short and min(len(a), len(b)) <= 2 else z_min
            weak = z < need or (min_change is not None and rel < min_change)
            if weak:
                score = min(z / need, rel / min_change if min_change else math.inf)
                if worst_score is None or score < worst_score:
                    worst, worst_score = k, score
        if worst is None:
            break
        del bounds[worst]
    return bounds
