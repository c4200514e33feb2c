"""Find every step change in a benchmark series (pure functions, no I/O).

A series is a list of points; each point is a float, ``None`` (a failed point: the program crashed
or printed no metric) or a sequence of repeated samples of the same measurement.

How it works (details and the reasons in docs/detection.md):

1. Failed points are dropped; the good points keep their original indices, so a step that spans a
   failed point is one step from the last good point before to the first good point after.
   With positive samples, a point's *slow runs* (slower than its fastest run by over 6 sigma of
   the runs around it, and by 3 %) are left out of its value and of the noise
   (:func:`drop_slow_runs`): the median of two runs is their mean, so one slow run moved a point
   by half of it. A point whose runs disagree that way is doubtful, and a step resting on one or
   two such points alone must beat the spread of all their runs.
2. When every sample is positive (times, rates) the series is analysed on a log scale, so the noise
   is relative: a run timed at 200 us +-20 % and at 3.5 us +-10 % has comparable noise, where one
   absolute sigma would be set by one level and find false steps in the other.
   The noise of one point, ``sigma``, is estimated robustly: from the spread of repeated samples
   (median over points of the scaled MAD, divided by sqrt(samples)), and from the point-to-point
   noise (scaled MAD of successive differences / sqrt(2)), which a few steps or outliers do not
   move. With both, the larger wins (repeats miss run-to-run noise). With neither (under 4 good
   points, no repeats) a prior of 0.2 % of the level is used. Never below 0.01 % of the level,
   and on a log scale never above 30 % (MAX_LOG_NOISE): on 4 points one of the 3 differences is
   the step and another a noisy point, and no estimate from them can tell a x38 step from noise.
3. The series is fitted exactly by a piecewise-constant function (optimal partitioning, least
   squares) with a penalty ``z_min**2 * sigma**2`` per step, where ``z_min`` grows slowly with the
   length (multiple testing). A split pays for itself only when the two sides differ by about
   ``z_min`` standard errors. A stretch whose local noise is over twice sigma is weighted down
   (:func:`local_weights`), so a much noisier level is not split.
4. Single-point segments between two others are outliers, not steps: the worst is set aside and
   the fit redone until none is left. A single point at either end is an *edge step* (the new
   level holds for one point only: "it got slower in the last nightly"); it is reported with
   ``edge=True`` once it passes the stricter test of step 6, so that it can be measured again.
   An outlier set aside right next to a step that lies beyond one side's level (away from the
   other level) belongs to that side: a slow run just before a speed-up is the old code's, so
   the step's window keeps its real ends. One between the two levels stays inside the window.
5. ``sigma`` is refined from the differences inside the fitted segments (RMS / sqrt(2)) and the
   fit is redone.
6. Adjacent segments whose levels (medians) differ by less than ``z_min`` standard errors (each
   side's noise from the differences inside it, pulled towards the local noise around it and
   never below sigma)
   (1.5x that beside a segment of 1-2 points), or by less than ``min_change`` (relative), are
   merged, least significant first, until every remaining step is significant. ``min_change``
   is a practical floor: 1 % unless given (0 reports every significant step). On a log scale with
   levels 1.25x apart, each step must also hold against the noise of its own levels alone
   (:func:`regime_z`), and an excursion (out and back) against a higher bar
   (:func:`regime_threshold`). Between two such regimes, that test, not the noise of the
   differences around the step, judges the levels' noise, and a step that a noise of
   MAX_LOG_NOISE would not explain passes it even on 2-3 degrees of freedom.
   The local noise leaves out the differences that cross a fitted step (they are the step's).
7. Each fitted segment is re-tested for a step hidden in it (:func:`hidden_steps`): its best
   split, judged by Student's t on the segment's own noise *given the split* (and its points'
   repeats). The fit's noise came from the differences inside the segments, so a step it did
   not see inflated the very noise it was judged by (a -2 % step in the level after a -7 % one).

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
from itertools import pairwise
from statistics import NormalDist
from typing import Sequence, Union

import numpy as np

# a step's record (Change, ChangeKind) is one of the records between stages (hourly.model); detection
# makes it, and every module that reads one may import it from here too
from hourly.model import Change, ChangeKind, median

Point = Union[float, int, None, Sequence[float]]

#: Relative noise of one point assumed when the series itself cannot tell (too short, no repeats).
PRIOR_RELATIVE_NOISE = 0.002
#: Noise is never taken below this fraction of the level (constant or quantised series).
NOISE_FLOOR_RELATIVE = 1e-4
#: On a log scale (times, rates) the noise of one point is never taken above this (a run 65 %
#: slower or 40 % faster at one sigma): a series whose points vary more is either short and has a
#: huge step in it (102.7, 2.67, 2.71, 4.82 us: the successive differences, and a level of three
#: points one of which is noisy, cannot tell the step from noise) or is no benchmark to bisect.
MAX_LOG_NOISE = 0.3
#: ``Detection.noise_source`` when the noise was taken at MAX_LOG_NOISE (it reads as it is).
NOISE_SOURCE_LIMIT = "the most a benchmark's noise is taken to be: its points vary more"
#: ``Detection.noise_source`` when the repeats decided because the differences were steps
#: (:func:`_short_reading`: a short series whose neighbours differ by its steps).
NOISE_SOURCE_REPEATS_OVER_STEPS = "repeats, the differences between neighbours being steps"
#: By default a step smaller than this relative change is not reported (``min_change``).
DEFAULT_MIN_CHANGE = 0.01
#: Consistency constant of the MAD for a normal distribution.
_MAD_TO_SIGMA = 1.4826


@dataclass(frozen=True)
class Detection:
    """Everything the detector found: the changes plus what it set aside and the noise it used."""

    changes: list[Change]
    failed: list[int] = field(default_factory=list)
    outliers: list[int] = field(default_factory=list)
    noise: float = 0.0              #: absolute noise (sigma) of one point
    noise_source: str = "none"      #: "repeats", "successive differences", "both", "prior", NOISE_SOURCE_LIMIT
    threshold: float = 0.0          #: z_min used

    level: float = 0.0              #: median level of the good points
    log_scale: bool = False         #: analysed on a log scale (noise relative to the level)
    #: The series is too short for its differences to tell noise from steps (:func:`_short_reading`):
    #: a reading with less noise (its closest neighbours', or its points' repeats') finds steps in
    #: half its differences or more, which the noise read from those differences called noise.
    #: Its changes are what the differences' noise allows; "no step" is not an answer then.
    too_short: bool = False
    #: Whether the points had repeats (the words of ``too_short`` differ: measure repeats, or more points).
    repeated: bool = False

    @property
    def noise_assumed(self) -> bool:
        """The noise was not measured but assumed (:data:`PRIOR_RELATIVE_NOISE`: under 4 points of
        one run each): every step and outlier found rests on that assumption (``too_short`` is set)."""
        return self.noise_source == "prior"

    @property
    def relative_noise(self) -> float:
        return self.noise / abs(self.level) if self.level else 0.0


def percent(x: float) -> str:
    """A relative change as a signed percentage that never reads "+0.0%".

    One decimal from 1 % up ("-6.9%"), two significant digits below ("+0.12%", "-0.0043%").
    """
    if not math.isfinite(x):
        return "+inf" if x > 0 else ("-inf" if x < 0 else "nan")
    p = x * 100
    if p == 0:
        return "0%"
    if abs(p) >= 0.995:
        return f"{p:+.1f}%"
    decimals = 1 - math.floor(math.log10(abs(p)))
    return f"{p:+.{decimals}f}%"


def point_value(point: Point) -> float | None:
    """The value of one point: itself, the median of its samples, or None if failed."""
    samples = point_samples(point)
    if not samples:
        return None
    return float(median(samples))  # hourly.model's: two values near 1e308 have no sum


def point_samples(point: Point) -> list[float]:
    """The finite samples of one point ([] for a failed point)."""
    if point is None:
        return []
    if isinstance(point, (int, float)):
        raw = [float(point)]
    else:
        raw = [float(s) for s in point if s is not None]
    return [s for s in raw if math.isfinite(s)]


def _median(s: list[float]) -> float:
    """The median of a short list (np.median costs more than the detector on long series)."""
    if len(s) == 1:
        return s[0]
    o = sorted(s)
    m = len(o) // 2
    return o[m] if len(o) % 2 else 0.5 * (o[m - 1] + o[m])


#: A run slower than the fastest run of its point by more than this many times the noise of one
#: run around it (and by SLOW_RUN_MIN at least) is a slow run (a noisy neighbour, a cold cache),
#: not the point's level: it is left out of the point's value and of the noise estimates. Its
#: distance to the fastest run is at most the point's range, which for normal runs is over
#: 6 sigma in 2 pairs and 7 triples out of 10^5 (simulated).
SLOW_RUN_FACTOR = 6.0
#: ... relative: a run under 3 % slower is never left out (a real edge step whose new level's runs
#: spread 1.8 % lost a run to a noise read low from eight points).
SLOW_RUN_MIN = 0.03
#: Points either side whose repeats give the noise a run is judged against.
SLOW_RUN_HALF_WINDOW = 10
#: The noise of one run is read from the 30th percentile of the points' ranges around it, which
#: slow runs in up to half of those points barely move (the median moved with a quarter).
SLOW_RUN_QUANTILE = 0.3
#: ... the 30th percentile of the range of k normal runs, in sigmas (simulated, 2 x 10^6 each).
_RANGE_Q30 = {2: 0.545, 3: 1.138, 4: 1.531, 5: 1.819, 6: 2.042, 7: 2.225, 8: 2.378, 9: 2.508,
              10: 2.623, 11: 2.724, 12: 2.815}


def _range_sigma(s: list[float]) -> float | None:
    """The noise of one run read from the range of one point's repeats, scaled so that the 30th
    percentile over points of normal runs is sigma (None for a single run)."""
    if len(s) < 2:
        return None
    q30 = _RANGE_Q30.get(len(s), 2.815 + 0.7 * math.log(len(s) / 12.0))
    return (max(s) - min(s)) / q30


def drop_slow_runs(samples: list[list[float]],
                   higher_is_better: bool = True) -> tuple[list[list[float]], list[float]]:
    """Each point's runs without its slow ones (positive values: times or rates), and for each
    point whose runs had a slow one the noise of one run that all its runs show (else 0; on the
    log scale).

    Timing noise is not symmetric: most runs of a point agree to a fraction of a percent and now
    and then one is 5-30 % slow. The median of two runs is their mean, so one slow run of two
    moves the point by half of it, and two such points in a row read as a false dip; a level
    with one slow run in eight has its noise read several times too high. A run is slow when it
    is slower (lower for a rate, higher for a time) than its point's fastest run by over
    SLOW_RUN_FACTOR times the noise of one run, measured (a low quantile of the points' ranges,
    as sigma) over the 2 x SLOW_RUN_HALF_WINDOW + 1 points around it (shifted inwards at the
    ends) whose medians are within REGIME_RATIO of its own (a level that far away may have a
    noise of its own), and by
    SLOW_RUN_MIN at least. A single run is never touched. Up to half of a point's runs are
    left out as they are; more only when the fast ones agree (within that limit) with one of
    the two points either side: else the fast one may be the odd one, or the point's level
    noisier than its neighbours' (the last point of a level of 20 % noise after one of 2 %), and
    all its runs stay. Either way, and when both runs of a pair were slow (the faster is then no
    level either), the point is doubtful: its doubt, the standard deviation of all its runs, is
    kept, and a step that rests on one or two such points alone must beat it (:func:`_prune`).
    """
    logs = [[math.log(x) for x in s] for s in samples]
    ranges = [_range_sigma(s) for s in logs]
    medians = [_median(s) for s in logs]
    n = len(samples)
    width = 2 * SLOW_RUN_HALF_WINDOW + 1
    out, doubt = [], []
    for i, (s, lg) in enumerate(zip(samples, logs, strict=True)):
        if len(s) < 2:
            out.append(s)
            doubt.append(0.0)
            continue
        start = min(max(0, i - SLOW_RUN_HALF_WINDOW), max(0, n - width))
        # only points at its level: a level 1.25x away may have its own noise (a regime)
        near = [x for x, m in zip(ranges[start:start + width], medians[start:start + width], strict=True)
                if x is not None and abs(m - medians[i]) < _REGIME_CUT]
        limit = max(SLOW_RUN_FACTOR * float(np.quantile(near, SLOW_RUN_QUANTILE)), math.log1p(SLOW_RUN_MIN))
        best = max(lg) if higher_is_better else min(lg)
        slow = [abs(x - best) > limit for x in lg]
        if any(slow):
            # more slow runs than others: the fast ones are the point's level only if a
            # neighbour agrees with them, else they may be the odd ones (or the level noisier
            # than its neighbours) and all stay; the point is doubtful either way
            fast = [x for x, bad in zip(lg, slow, strict=True) if not bad]
            agree = any(abs(medians[j] - _median(fast)) <= limit
                        for j in (i - 2, i - 1, i + 1, i + 2) if 0 <= j < n)
            out.append([x for x, bad in zip(s, slow, strict=True) if not bad] if sum(slow) <= len(s) // 2 or agree else s)
            doubt.append(float(np.std(lg, ddof=1)))
        else:
            out.append(s)
            doubt.append(0.0)
    return out, doubt


def z_threshold(n: int) -> float:
    """How many standard errors a step must be for ``n`` good points.

    About 3.5 for a handful of points, growing like sqrt(2 log n) so that the chance of a false
    step over a whole series stays small (tuned with benchmarks/detect_recall.py).
    """
    return max(3.5, math.sqrt(2.0 * math.log(max(n, 2)) + 8.0))


def estimate_noise(values: np.ndarray, samples: list[list[float]],
                   relative: bool = False) -> tuple[float, str]:
    """Robust noise (sigma) of one point value, and where it came from.

    ``values`` are the good point values in order; ``samples`` their repeated samples.
    ``relative``: they are logarithms, so sigma is relative and the floor and prior are too.
    """
    level = 1.0 if relative else (float(np.median(np.abs(values))) if len(values) else 0.0)
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
    parts = [np.diff(v[a:b]) for a, b in pairwise(bounds) if b - a >= 2]
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
    return sd * median_noise_factor(k) / math.sqrt(k)


def median_noise_factor(k: float) -> float:
    """How much more the median of ``k`` repeats varies than their mean, as the detector counts it:
    the standard error of a median of 3 or more samples is sqrt(pi/2) larger (1 for 1-2 samples,
    whose median is their mean)."""
    return 1.0 if k <= 2 else math.sqrt(math.pi / 2.0)


def level_need(z_min: float, len_a: int, len_b: int, strict_short: bool) -> float:
    """The z a step between two neighbouring levels of ``len_a`` and ``len_b`` points must reach:
    ``z_min``, times SHORT_SEGMENT_FACTOR beside a level of 1-2 points when ``strict_short`` (a
    series of 4 points or more)."""
    return z_min * SHORT_SEGMENT_FACTOR if strict_short and min(len_a, len_b) <= 2 else z_min


#: Half-width (in differences) of the window that measures the local noise around a point.
LOCAL_NOISE_HALF_WINDOW = 5
#: ... and how much noisier than the series that stretch must be before it is weighted down.
LOCAL_NOISE_FACTOR = 2.0


def local_weights(v: np.ndarray, sigma: float, half: int = LOCAL_NOISE_HALF_WINDOW) -> np.ndarray | None:
    """Least-squares weights that give a noisier stretch of the series less say: (sigma / s_i)^2
    where ``s_i`` (:func:`local_noise`) > ``LOCAL_NOISE_FACTOR`` x sigma, else 1."""
    s = local_noise(v, sigma, half)
    if s is None:
        return None
    # only a stretch clearly noisier than the series (twice sigma) is weighted down: ten
    # differences give a rough estimate, and an outlier's two differences must not hide it
    return np.where(s > LOCAL_NOISE_FACTOR * sigma, (sigma / s) ** 2, 1.0)


def local_noise(v: np.ndarray, sigma: float, half: int = LOCAL_NOISE_HALF_WINDOW,
                bounds: list[int] | None = None) -> np.ndarray | None:
    """The noise around each point, ``s_i``, never below ``sigma``.

    ``s_i`` is the noise around point i (from the successive differences within ``half``
    differences of it; a step is one large difference among them, which a low quantile
    ignores), never below ``sigma``. None when the series is too short to tell (under 2*half+1 points).
    ``bounds``: the fitted segments; a difference that crosses one of their boundaries is a
    step's, not noise, and is left out. On a short series one window holds most of it: a -7 %
    step and a -2 % step 4 points apart are two of its ten differences, and with them the
    noise around the -2 % step read twice the series' and hid it (issue 24).
    """
    n = len(v)
    if n < 2 * half + 1:
        return None
    d = np.abs(np.diff(v))
    if bounds is not None and len(bounds) > 2:
        d[[b - 1 for b in bounds[1:-1]]] = np.nan
    # the 2*half differences around point i, shifted inwards at the ends so that every window is
    # full (an outlier's two differences never make half of one)
    starts = np.clip(np.arange(n) - half, 0, len(d) - 2 * half)
    windows = np.lib.stride_tricks.sliding_window_view(d, 2 * half)[starts]
    # the 40th percentile of |difference| (0.524 sigma*sqrt(2) for normal noise): a step's or an
    # outlier's large differences, two of ten, barely move it
    if np.isnan(d).any():
        valid = np.sum(~np.isnan(windows), axis=1)
        q = np.full(n, sigma * 0.524 * math.sqrt(2.0))
        some = valid > 0
        q[some] = np.nanquantile(windows[some], 0.4, axis=1)
        s = q / 0.524 / math.sqrt(2.0)
    else:
        s = np.quantile(windows, 0.4, axis=1) / 0.524 / math.sqrt(2.0)
    return np.maximum(s, sigma)


def segment(values: np.ndarray, penalty: float, weights: np.ndarray | None = None) -> list[int]:
    """Optimal partitioning (weighted least squares + ``penalty`` per extra segment).

    Returns the start index of every segment (the first is 0). Exact, O(n^2) with numpy; series
    here are at most a few thousand points.
    """
    n = len(values)
    if n == 0:
        return []
    x = values - np.median(values)  # centred: keeps the sums of squares exact for big levels
    w = np.ones(n) if weights is None else weights
    s0 = np.concatenate([[0.0], np.cumsum(w)])
    s1 = np.concatenate([[0.0], np.cumsum(w * x)])
    s2 = np.concatenate([[0.0], np.cumsum(w * x * x)])
    best = np.empty(n + 1)
    best[0] = -penalty
    last = np.zeros(n + 1, dtype=int)
    for t in range(1, n + 1):
        s = np.arange(t)                       # candidate start of the last segment
        m = s0[t] - s0[s]
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
    """Find every step in ``series``; see the module docstring for how.

    ``min_change``: steps smaller than this relative change are not reported; None means
    :data:`DEFAULT_MIN_CHANGE` (1 %), 0 reports every significant step.
    """
    if min_change is None:
        min_change = DEFAULT_MIN_CHANGE
    samples_all = [point_samples(p) for p in series]
    scale = overflow_scale([x for s in samples_all for x in s])
    if scale != 1.0:  # values near the float's limit (1e308): their sums and differences overflow
        found = detect([[x * scale for x in s] or None for s in samples_all],
                       higher_is_better=higher_is_better, min_change=min_change)
        return _unscaled(found, scale)
    failed = [i for i, s in enumerate(samples_all) if not s]
    good_idx = [i for i, s in enumerate(samples_all) if s]
    doubt = np.zeros(len(good_idx))
    if all(x > 0 for i in good_idx for x in samples_all[i]):
        kept, slow_doubt = drop_slow_runs([samples_all[i] for i in good_idx], higher_is_better)
        for i, s in zip(good_idx, kept, strict=True):
            samples_all[i] = s
        doubt = np.array(slow_doubt)
    raw = np.array([_median(samples_all[i]) for i in good_idx], dtype=float)
    samples = [samples_all[i] for i in good_idx]
    if len(raw) == 0:
        return Detection(changes=[], failed=failed, noise_source="none")
    level = float(np.median(np.abs(raw)))
    # Times and rates are positive and their noise grows with their level: work on log values,
    # where sigma is relative. Zero or negative values keep the linear scale.
    log_scale = all(x > 0 for s in samples for x in s)
    if log_scale:
        samples = [[math.log(x) for x in s] for s in samples]
        values = np.log(raw)
    else:
        values = raw
    sigma, source = estimate_noise(values, samples, relative=log_scale)
    if log_scale:
        sigma = min(sigma, MAX_LOG_NOISE)
    floor = max(NOISE_FLOOR_RELATIVE * (1.0 if log_scale else level), 1e-12)
    z_min = z_threshold(len(values))

    within = _within_point(samples)
    keep, pos, v, segs = _fit(values, sigma, z_min, min_change, log_scale, within, doubt)
    if source in ("successive differences", "both"):
        # Second pass: the first guess (MAD of all differences) is robust but noisy on short
        # series; re-estimate from the differences inside the fitted segments and refit.
        refined = within_segment_noise(v, segs)
        if refined is not None:
            rep = _repeat_noise(samples) if source == "both" else None
            new_sigma = max(refined, rep or 0.0, floor)
            if log_scale:
                new_sigma = min(new_sigma, MAX_LOG_NOISE)
            if new_sigma != sigma:
                sigma = new_sigma
                keep, pos, v, segs = _fit(values, sigma, z_min, min_change, log_scale, within, doubt)
    # A short series whose differences are its steps: the noise read from them is the steps'
    # (100, 100, 80, 80, 60: noise 12.9 %, no step). Where the repeats measure the noise, they
    # decide; with one value per point the series is too short to tell (issue 33).
    too_short = False
    if source in ("successive differences", "both", "prior"):
        rep = _repeat_noise(samples) if source == "both" else None
        other = _short_reading(values, sigma, rep, floor, z_min, min_change, log_scale, within, doubt,
                               len(segs) - 2)
        if other is not None and other[0] is not None:
            keep, pos, v, segs = other[0]
            sigma, source = other[1], NOISE_SOURCE_REPEATS_OVER_STEPS
        elif other is not None:
            too_short = True
    # Re-test each segment on its own: a step the first fit did not see stayed inside a segment,
    # and its difference inflated the noise the refit was judged with (a -2 % step after a -7 %).
    hidden = hidden_steps(v, segs, z_min, min_change, log_scale, (within[0][pos], within[1][pos]))
    if hidden:
        segs = sorted(segs + list(hidden))
        refined = within_segment_noise(v, segs)
        if refined is not None and source in ("successive differences", "both"):
            rep = _repeat_noise(samples) if source == "both" else None
            sigma = max(refined, rep or 0.0, floor)
            if log_scale:
                sigma = min(sigma, MAX_LOG_NOISE)
    if source == "prior" and len(values) >= 2:
        # one run per point and too few points for their differences to measure the noise: the
        # noise is assumed, so neither a step nor "no step" rests on anything measured (issue 44)
        too_short = True
    r = raw[pos]
    changes = []
    for k in range(1, len(segs) - 1):
        a0, a1, b1 = segs[k - 1], segs[k], segs[k + 1]
        before = float(np.median(r[a0:a1]))
        after = float(np.median(r[a1:b1]))
        z = max(_z(v[a0:a1], v[a1:b1], sigma), hidden.get(a1, 0.0))
        first, last = locate(v, a0, a1, b1, sigma)
        lo, hi = _window(values, int(pos[first - 1]), int(pos[last]), float(np.median(v[a0:a1])),
                         float(np.median(v[a1:b1])))
        rel = _relative(before, after)
        worse = (after < before) if higher_is_better else (after > before)
        edge = (k == 1 and a1 - a0 == 1) or (k == len(segs) - 2 and b1 - a1 == 1)
        changes.append(Change(
            before_index=good_idx[lo],
            after_index=good_idx[hi],
            level_before=before, level_after=after, relative_change=rel, strength=z,
            kind=ChangeKind.REGRESSION if worse else ChangeKind.IMPROVEMENT, edge=edge,
            n_before=a1 - a0, n_after=b1 - a1,
            samples_before=sum(len(samples[int(pos[i])]) for i in range(a0, a1)),
            samples_after=sum(len(samples[int(pos[i])]) for i in range(a1, b1)),
        ))
    outliers = [good_idx[i] for i in np.flatnonzero(~keep)]
    return Detection(changes=changes, failed=failed, outliers=outliers,
                     noise=sigma * level if log_scale else sigma,
                     noise_source=NOISE_SOURCE_LIMIT if log_scale and sigma >= MAX_LOG_NOISE else source,
                     threshold=z_min, level=level, log_scale=log_scale, too_short=too_short,
                     repeated=any(len(x) > 1 for x in samples))


#: Values larger than this (in magnitude) are analysed scaled down by a power of two (exact): a
#: median of two values near 1e308 (their sum), a difference or a level times a ratio overflows to inf.
OVERFLOW_GUARD = 2.0 ** 500


def overflow_scale(x: Sequence[float] | np.ndarray) -> float:
    """The power of two that brings the largest finite value of ``x`` near 1 when any is past
    :data:`OVERFLOW_GUARD` (a sum, a mean or a difference of them would overflow), else 1:
    multiplying by it and dividing the result again is exact, and relative changes do not move.
    Detection and every other statistic of raw values (hourly.analysis.samples, process_stat,
    paired) scale with it."""
    a = np.abs(np.asarray(x, dtype=float))
    top = float(a[np.isfinite(a)].max()) if a.size and np.isfinite(a).any() else 0.0
    return 2.0 ** -math.frexp(top)[1] if top > OVERFLOW_GUARD else 1.0


def _unscaled(found: Detection, scale: float) -> Detection:
    """A detection of values multiplied by ``scale``, in the values' own units."""
    from dataclasses import replace
    changes = [replace(c, level_before=c.level_before / scale, level_after=c.level_after / scale)
               for c in found.changes]
    return replace(found, changes=changes, noise=found.noise / scale, level=found.level / scale)


def _short_reading(values: np.ndarray, sigma: float, rep: float | None, floor: float, z_min: float,
                   min_change: float | None, log_scale: bool, within: tuple[np.ndarray, np.ndarray],
                   doubt: np.ndarray, steps: int) -> tuple[_Fitted | None, float] | None:
    """Whether the noise read from the differences between neighbours was the series' steps.

    The median of the differences is a noise estimate only while fewer than half of them are
    steps. On a handful of points two steps are half of them: 100, 80, 80, 60 read 14.9 % of noise
    and no step. So the series is read again with less noise: its points' repeats' (``rep``), or
    else what its closest neighbours say (the smaller half of the differences). When that reading
    finds more steps than ``steps`` (the reported fit's) and its steps and outliers take half the
    differences or more (where the median breaks down), the first reading is not to be trusted:

    - with repeats whose noise explains every difference the new reading calls noise (within
      ``z_min`` standard errors) and no point set aside as an outlier, the repeats decide: returns ``((keep, pos, v, segs), sigma)``,
      that reading's fit and noise;
    - else (one value per point, or points that differ by more than their repeats say) the
      series is too short to tell noise from steps: returns ``(None, sigma)``.

    None when the first reading stands (the new one finds no more steps, or only a few among
    many differences: a long series' differences are a fair measure of its noise).
    """
    m = len(values) - 1
    if m < 1:
        return None
    if rep is not None:
        other = max(rep, floor)
    else:
        d = np.sort(np.abs(np.diff(values)))
        small = d[:max(1, m // 2)]
        other = max(math.sqrt(float(np.mean(small * small))) / math.sqrt(2.0), floor)
    if log_scale:
        other = min(other, MAX_LOG_NOISE)
    if other >= sigma:
        return None
    # the median difference is noise to the new reading as well (or below the smallest step
    # reported): it was no step, and the first reading stands (most series end here, unrefitted)
    floor_step = (math.log1p(min_change) if log_scale else min_change * float(np.median(np.abs(values)))) \
        if min_change else 0.0
    if float(np.median(np.abs(np.diff(values)))) <= max(z_min * math.sqrt(2.0) * other, floor_step):
        return None
    keep, pos, v, segs = _fit(values, other, z_min, min_change, log_scale, within, doubt)
    found = len(segs) - 2
    set_aside = int(np.sum(~keep))
    if found <= steps or 2 * (found + 2 * set_aside) < m:
        return None
    if rep is not None and not set_aside:
        # the repeats explain every difference inside the new reading's levels, and it sets no
        # point aside: a point that no level of its neighbours holds is noise the repeats miss
        inside = [np.diff(v[a:b]) for a, b in pairwise(segs) if b - a >= 2]
        d_in = np.abs(np.concatenate(inside)) if inside else np.zeros(0)
        if not len(d_in) or float(d_in.max()) <= z_min * math.sqrt(2.0) * other:
            return (keep, pos, v, segs), other
    return None, other


#: Variance of the median of k normal samples over that of their mean (k = 1, 2: the same),
#: simulated (10^7 samples each); an even k's median is the mean of the middle two, so it varies less.
_MEDIAN_VARIANCE = {3: 1.346, 4: 1.192, 5: 1.434, 6: 1.286, 7: 1.475, 8: 1.343, 9: 1.496, 10: 1.384,
                    11: 1.509, 12: 1.411, 13: 1.521, 14: 1.43, 15: 1.526, 16: 1.448, 17: 1.528,
                    18: 1.458, 19: 1.536, 20: 1.467, 21: 1.537, 22: 1.48, 23: 1.54, 24: 1.482, 25: 1.548}


def median_variance_factor(k: int) -> float:
    """How much more a median of ``k`` samples varies than their mean (towards pi/2 for large k)."""
    if k <= 2:
        return 1.0
    if k in _MEDIAN_VARIANCE:
        return _MEDIAN_VARIANCE[k]
    return math.pi / 2.0 * (1.0 - 1.4 / k if k % 2 == 0 else 1.0)


def _within_point(samples: list[list[float]]) -> tuple[np.ndarray, np.ndarray]:
    """Per point, what its repeats say of the noise of its value: the sum of squared deviations
    from the point's mean divided by its repeats (so on the scale of one point's mean), times
    :func:`median_variance_factor` (a point's value is its median), and its degrees of freedom
    (repeats - 1; 0 for a single run)."""
    ss = np.array([float(np.sum((np.asarray(s) - np.mean(s)) ** 2)) / len(s) * median_variance_factor(len(s))
                   if len(s) > 1 else 0.0 for s in samples])
    return ss, np.array([max(len(s) - 1, 0) for s in samples])


#: A step found inside a fitted segment must have at least this many points on each side: shorter
#: levels (a lone run, a pair) are the first fit's to judge, with its stricter rules for them.
HIDDEN_MIN_SIDE = 3


def hidden_steps(v: np.ndarray, bounds: list[int], z_min: float, min_change: float | None,
                 log_scale: bool, within: tuple[np.ndarray, np.ndarray] | None) -> dict[int, float]:
    """Steps hidden inside the fitted segments: for each segment, its best split into two levels
    judged against the noise of that segment alone *given the split*.

    The fit judges every step with one noise for the series, and that noise is read from the
    differences inside the fitted segments. A step the fit did not see (a -2 % step in the level
    after a -7 % one, on 13 points) is one of those differences, so the noise it is judged by
    holds it, and the refit cannot see it either. Here each segment's best split (least squares,
    at least HIDDEN_MIN_SIDE points a side) is tested as a two-sample problem with unknown noise:
    Student's t on the pooled spread of the two sides around their own means (plus each point's
    repeats, as :func:`regime_z` does), at the same tail probability as ``z_min``, and at least
    ``min_change``. What passes is proposed to the caller, which keeps it only if the usual
    pruning, with the noise re-read with it in place, keeps it too.
    """
    out: dict[int, float] = {}
    for a0, b1 in pairwise(bounds):
        n = b1 - a0
        if n < 2 * HIDDEN_MIN_SIDE:
            continue
        x = v[a0:b1] - float(np.mean(v[a0:b1]))
        c1, c2 = np.cumsum(x), np.cumsum(x * x)
        t = np.arange(HIDDEN_MIN_SIDE, n - HIDDEN_MIN_SIDE + 1)
        left = c2[t - 1] - c1[t - 1] ** 2 / t
        right = (c2[-1] - c2[t - 1]) - (c1[-1] - c1[t - 1]) ** 2 / (n - t)
        j = int(np.argmin(left + right))
        split = int(t[j])
        ss, dof = float(left[j] + right[j]), n - 2
        if within is not None:
            ss += float(np.sum(within[0][a0:b1]))
            dof += int(np.sum(within[1][a0:b1]))
        if ss <= 0.0:
            continue
        a, b = x[:split], x[split:]
        diff = float(b.mean()) - float(a.mean())
        stat = abs(diff) / (math.sqrt(ss / dof) * math.sqrt(1.0 / len(a) + 1.0 / len(b)))
        ma, mb = float(np.median(v[a0:a0 + split])), float(np.median(v[a0 + split:b1]))
        rel = abs(math.expm1(mb - ma)) if log_scale else abs(_relative(ma, mb))
        z = t_as_z(stat, dof)
        # the best split of all (any side's length) cuts off 1-2 points at an end of the
        # segment: the split found rests on them (a last run alone at a new level and two old
        # ones beside it), and a level of 1-2 points needs the fit's stricter test
        full = np.arange(1, n)
        cost = (c2[full - 1] - c1[full - 1] ** 2 / full) + \
            ((c2[-1] - c2[full - 1]) - (c1[-1] - c1[full - 1]) ** 2 / (n - full))
        best = int(full[int(np.argmin(cost))])
        need = z_min * SHORT_SEGMENT_FACTOR if min(best, n - best) < HIDDEN_MIN_SIDE else z_min
        if z >= need and (not min_change or rel >= min_change):
            out[a0 + split] = z
    return out


#: a fit: the points kept (a mask), their positions, their values, the segments' starts and end
_Fitted = tuple[np.ndarray, np.ndarray, np.ndarray, list[int]]


def _fit(values: np.ndarray, sigma: float, z_min: float, min_change: float | None,
         log_scale: bool = False, within: tuple[np.ndarray, np.ndarray] | None = None,
         doubt: np.ndarray | None = None) -> _Fitted:
    """Fit, set aside outliers (single-point segments) one by one, refit; then prune.
    ``within``: each point's repeats' noise (:func:`_within_point`), for the regime test;
    ``doubt``: each point's noise from all its runs when a slow one was left out (else 0)."""
    keep = np.ones(len(values), dtype=bool)
    while True:
        pos = np.flatnonzero(keep)
        v = values[pos]
        starts = segment(v, (z_min * sigma) ** 2, local_weights(v, sigma))
        bounds = starts + [len(v)]
        lonely = _outliers(bounds)
        if not lonely:
            break
        # set aside only the worst one: the others may be artefacts of it
        worst = max(lonely, key=lambda i: _deviation(v, bounds, i))
        keep[pos[worst]] = False
    kept = (within[0][pos], within[1][pos]) if within is not None else None
    return keep, pos, v, _prune(v, bounds, sigma, z_min, min_change, len(values) >= 4, log_scale,
                                local_noise(v, sigma, bounds=bounds), kept, None if doubt is None else doubt[pos])


def detect_changes(series: Sequence[Point], *, higher_is_better: bool = True,
                   min_change: float | None = None) -> list[Change]:
    """The steps of ``series`` (see :func:`detect` for outliers and noise as well)."""
    return detect(series, higher_is_better=higher_is_better, min_change=min_change).changes


def _outliers(bounds: list[int]) -> list[int]:
    """Positions of single-point segments between two others: outliers rather than steps.

    A single point at either end of the series is kept: it is an edge step if it passes the
    pruning (with the stricter test for short segments), else it merges with its neighbour.
    """
    nseg = len(bounds) - 1
    return [bounds[k] for k in range(1, nseg - 1) if bounds[k + 1] - bounds[k] == 1]


#: A split position whose fit is worse than the best by under this many sigma^2 (a likelihood
#: ratio) is a place the step may be: the window covers them all.
LOCATE_Q = 6.0


def locate(v: np.ndarray, a0: int, a1: int, b1: int, sigma: float) -> tuple[int, int]:
    """Where the step between segments ``v[a0:a1]`` and ``v[a1:b1]`` may be: the first and last
    plausible first position of the new level (``a1`` among them).

    Each split ``t`` of ``v[a0:b1]`` into two levels has a residual sum of squares; with a small
    step in large noise (a x1.5 step at 20 % noise) neighbouring splits fit almost as well, and
    the step's window must cover them all or a bisection would search the wrong commits. The
    noise is the larger of ``sigma`` and the pooled noise of the two segments (its own level's).
    """
    x = v[a0:b1] - float(np.mean(v[a0:b1]))
    n = len(x)
    if n < 3:
        return a1, a1
    c1, c2 = np.cumsum(x), np.cumsum(x * x)
    t = np.arange(1, n)                      # left part x[:t], right part x[t:]
    left = c2[t - 1] - c1[t - 1] ** 2 / t
    right = (c2[-1] - c2[t - 1]) - (c1[-1] - c1[t - 1]) ** 2 / (n - t)
    cost = left + right
    s2 = max(sigma * sigma, float(cost[a1 - a0 - 1]) / (n - 2))
    ok = np.flatnonzero(cost - float(cost.min()) <= LOCATE_Q * s2) + 1 + a0
    return min(int(ok[0]), a1), max(int(ok[-1]), a1)


def _window(values: np.ndarray, lo: int, hi: int, level_before: float,
            level_after: float) -> tuple[int, int]:
    """A step's window (good-point positions) once the outliers set aside inside it are placed.

    A point set aside between ``lo`` and ``hi`` is placed by where it lies on the way from the
    level before to the level after (0 to 1): under a quarter of the way (beyond the level before
    included) it belongs before the step, so the window starts at it; over three quarters, after.
    Points nearer the middle stay inside the window. (A point 0.05 % off its level, set aside by
    noise measured in hundredths of a percent, is not a reason to widen a 20 % step's window.)
    """
    span = level_after - level_before
    if span == 0:
        return lo, hi
    inside = list(range(lo + 1, hi))
    while inside and (values[inside[0]] - level_before) / span < 0.25:
        lo = inside.pop(0)
    while inside and (values[inside[-1]] - level_before) / span > 0.75:
        hi = inside.pop()
    return lo, hi


def _deviation(v: np.ndarray, bounds: list[int], i: int) -> float:
    """How far the single point ``i`` lies from the closest of its neighbouring segments."""
    k = bounds.index(i)
    near = []
    if k > 0:
        near.append(float(np.median(v[bounds[k - 1]:i])))
    if k + 2 < len(bounds):
        near.append(float(np.median(v[i + 1:bounds[k + 2]])))
    return min(abs(v[i] - m) for m in near) if near else 0.0


#: Weight (in degrees of freedom) of the series' noise when a segment's own noise is estimated.
SEGMENT_NOISE_PRIOR_DOF = 4.0


def segment_noise(seg: np.ndarray, sigma: float) -> float:
    """The noise of one segment: its own (differences inside it) pulled towards ``sigma``.

    Never below ``sigma``. Noise differs from level to level (a run at 200 us +-20 % before a
    speed-up, 3.5 us +-10 % after); one sigma for all would split the noisier level.
    """
    if len(seg) < 2:
        return sigma
    d = np.diff(seg)
    own = float(np.mean(d * d)) / 2.0
    dof = float(len(d))
    pooled = (dof * own + SEGMENT_NOISE_PRIOR_DOF * sigma * sigma) / (dof + SEGMENT_NOISE_PRIOR_DOF)
    return max(sigma, math.sqrt(pooled))


def _z(a: np.ndarray, b: np.ndarray, sigma: float, prior_a: float | None = None,
       prior_b: float | None = None, floor_a: float = 0.0, floor_b: float = 0.0) -> float:
    """The step between segments ``a`` and ``b`` in standard errors, each side with its own noise
    (pulled towards ``prior_a``/``prior_b``, the local noise around it, or else ``sigma``; never
    below ``floor_a``/``floor_b``)."""
    sa = max(segment_noise(a, prior_a or sigma), floor_a)
    sb = max(segment_noise(b, prior_b or sigma), floor_b)
    se = math.sqrt(sa * sa / len(a) + sb * sb / len(b))
    return abs(float(np.median(b)) - float(np.median(a))) / se


def _relative(before: float, after: float) -> float:
    if before == 0:
        return math.copysign(math.inf, after) if after != 0 else 0.0
    return (after - before) / abs(before)


def _doubt(doubt: np.ndarray | None, lo: int, hi: int) -> float:
    """The noise a segment of 1-2 points must at least have: the RMS of its points' doubt."""
    if doubt is None or hi - lo > 2:
        return 0.0
    return math.sqrt(float(np.mean(doubt[lo:hi] ** 2)))


def _prune(v: np.ndarray, bounds: list[int], sigma: float, z_min: float,
           min_change: float | None, strict_short: bool = True, log_scale: bool = False,
           local: np.ndarray | None = None,
           within: tuple[np.ndarray, np.ndarray] | None = None,
           doubt: np.ndarray | None = None) -> list[int]:
    """Merge adjacent segments whose difference is not significant (or below min_change).

    ``doubt``: per point, the noise its runs show when a slow one was left out; a segment of 1-2
    points has at least the noise of its doubtful points (a pair whose runs were both slow)."""
    bounds = list(bounds)
    # noise that scales with the level: once the series has levels a factor REGIME_RATIO apart,
    # each step must also hold against the noise of its own levels (regime_z)
    regimes = log_scale and _has_regimes(v, bounds)
    while len(bounds) > 2:
        worst, worst_score = None, None
        meds = [float(np.median(v[x:y])) for x, y in pairwise(bounds)] if regimes else []
        for k in range(1, len(bounds) - 1):
            a, b = v[bounds[k - 1]:bounds[k]], v[bounds[k]:bounds[k + 1]]
            fa = _doubt(doubt, bounds[k - 1], bounds[k])
            fb = _doubt(doubt, bounds[k], bounds[k + 1])
            ma, mb = float(np.median(a)), float(np.median(b))
            if local is None or (regimes and abs(mb - ma) >= _REGIME_CUT and min(len(a), len(b)) > 2):
                # between two regimes their own noise is judged by regime_z; the noise around
                # the step (ten differences, the step's among them) is no better a guess of it
                # and, pulled above the levels' own, lost x1.67 steps in 15-20 % noise
                z = _z(a, b, sigma, floor_a=fa, floor_b=fb)
            else:   # each side's noise is pulled towards the noise around it, not the series'
                z = _z(a, b, sigma, float(np.median(local[bounds[k - 1]:bounds[k]])),
                       float(np.median(local[bounds[k]:bounds[k + 1]])), fa, fb)
            rel = abs(math.expm1(mb - ma)) if log_scale else abs(_relative(ma, mb))
            need = level_need(z_min, len(a), len(b), strict_short)
            # the t test already asks more of a short level (its few degrees of freedom): z_min,
            # or more for an excursion (a level that goes out and comes back can start and end
            # anywhere: n x its length placements, not n)
            own = regime_z(v, bounds, meds, k, within, SHORT_SEGMENT_FACTOR if strict_short else 1.0) \
                / regime_threshold(len(v), z_min, bounds, meds, k) if regimes else math.inf
            score = min(z / need, own, rel / min_change if min_change else math.inf)
            if score < 1.0:
                if worst_score is None or score < worst_score:
                    worst, worst_score = k, score
        if worst is None:
            break
        del bounds[worst]
    return bounds


#: With repeated runs and fewer degrees of freedom than this among the points of the step's levels
#: (the first release after two others: 2 + 1 points, each run twice), the regime test takes the
#: noise of those points' repeats as known (a normal z rather than Student's t on 1-3 degrees of
#: freedom, which lost a 20 % step in 1 % noise), but still their own noise, not the series'.
MIN_REGIME_DOF = 2

#: Levels this factor apart are different regimes: their noise may differ (noise scales with the level).
REGIME_RATIO = 1.25
#: ... the same on the log scale the regime test works on
_REGIME_CUT = math.log(REGIME_RATIO)


def _has_regimes(v: np.ndarray, bounds: list[int]) -> bool:
    """Whether two adjacent fitted segments (log values) lie REGIME_RATIO or more apart."""
    meds = [float(np.median(v[x:y])) for x, y in pairwise(bounds)]
    return any(abs(q - p) >= _REGIME_CUT for p, q in pairwise(meds))


def excursion_length(bounds: list[int], meds: list[float], k: int) -> int:
    """Points in the shorter excursion at boundary ``k``, 0 if there is none.

    A segment beside the boundary is an excursion when the level beyond it is back within
    REGIME_RATIO of the level on the boundary's other side: it went out and came back.
    """
    cut = _REGIME_CUT
    lengths = []
    if k + 1 < len(meds) and abs(meds[k + 1] - meds[k - 1]) < cut:   # segment k goes out and back
        lengths.append(bounds[k + 1] - bounds[k])
    if k >= 2 and abs(meds[k - 2] - meds[k]) < cut:                   # so does segment k - 1
        lengths.append(bounds[k] - bounds[k - 1])
    return min(lengths) if lengths else 0


def regime_threshold(n: int, z_min: float, bounds: list[int], meds: list[float], k: int) -> float:
    """What :func:`regime_z` must reach at boundary ``k`` of a series of ``n`` points.

    ``z_min`` for a step, which has about ``n`` places to be. An excursion of ``m`` points has
    about ``n x m`` (where it starts and how long it lasts), so it must beat the threshold of a
    series that long, ``z_threshold(n * m)``: a stretch of a noisy level that reads low by chance
    is an excursion, and one real speed-up or slow-down is not.
    """
    m = excursion_length(bounds, meds, k)
    return max(z_min, z_threshold(n * m)) if m else z_min


def regime_z(v: np.ndarray, bounds: list[int], meds: list[float], k: int,
             within: tuple[np.ndarray, np.ndarray] | None = None, short_factor: float = 1.0) -> float:
    """The step at boundary ``k`` judged against the noise of its own levels alone, as a z-score.

    A regime is a run of adjacent segments less than REGIME_RATIO apart. The step's two sides and
    the other segments of their regimes give a pooled within-segment noise ``s`` with ``dof``
    degrees of freedom (points minus segments); under "no step" the two sides are one level with
    one noise, so ``t = |mean b - mean a| / (s sqrt(1/na + 1/nb))`` follows Student's t. The
    result is the normal z as unlikely as that t (:func:`t_as_z`): with few points on the level
    its noise is uncertain and the step must be larger. ``inf`` when there is no noise to use.
    ``within``: each point's repeats (:func:`_within_point`) add their own evidence of the noise —
    a level of one point measured three times is not a level of unknown noise. With too few points
    for Student's t (MIN_REGIME_DOF) the repeats' noise is taken as known, like the global test,
    and then the global test's rule for a level of 1-2 points applies too: the z is divided by
    ``short_factor`` (SHORT_SEGMENT_FACTOR, or 1 on a series too short for that rule).
    """
    lo, hi = k - 1, k
    cut = _REGIME_CUT
    while lo > 0 and abs(meds[lo] - meds[lo - 1]) < cut:
        lo -= 1
    while hi + 1 < len(meds) and abs(meds[hi + 1] - meds[hi]) < cut:
        hi += 1
    ss = 0.0
    dof = 0
    for j in range(lo, hi + 1):
        seg = v[bounds[j]:bounds[j + 1]]
        ss += float(np.sum((seg - seg.mean()) ** 2))
        dof += len(seg) - 1
    repeats = within is not None and int(np.sum(within[1][bounds[lo]:bounds[hi + 1]])) > 0
    few = dof < MIN_REGIME_DOF and repeats
    if repeats and within is not None:  # each point's repeats add their evidence of the noise
        ss += float(np.sum(within[0][bounds[lo]:bounds[hi + 1]]))
        dof += int(np.sum(within[1][bounds[lo]:bounds[hi + 1]]))
    if dof < 1 or ss <= 0.0:
        return math.inf
    a, b = v[bounds[k - 1]:bounds[k]], v[bounds[k]:bounds[k + 1]]
    s = math.sqrt(ss / dof)
    t = abs(float(b.mean()) - float(a.mean())) / (s * math.sqrt(1.0 / len(a) + 1.0 / len(b)))
    # too few points to say anything of the levels' own spread, but repeated runs: their noise is
    # taken as known (a normal z, as the global test does), yet it is theirs, not the series'
    z = t / short_factor if few else t_as_z(t, dof)
    # Student's t on 2-3 degrees of freedom has tails so long that no step is significant (a
    # x38 step before 2.67, 2.71, 4.82 us: t 8.8, z 2.5); but a step that would need a noise
    # above MAX_LOG_NOISE to be chance is a step
    bound = abs(float(b.mean()) - float(a.mean())) / (MAX_LOG_NOISE * math.sqrt(1.0 / len(a) + 1.0 / len(b)))
    return max(z, bound / short_factor if min(len(a), len(b)) <= 2 else bound)


def t_two_sided(t: float, dof: int) -> float:
    """P(|T| >= t) for Student's t with integer ``dof`` >= 1 (Abramowitz & Stegun 26.7.3-4)."""
    th = math.atan(abs(t) / math.sqrt(dof))
    c2 = math.cos(th) ** 2
    if dof % 2:
        term, total = 1.0, 1.0 if dof > 1 else 0.0
        for j in range(3, dof, 2):   # 1 + (2/3)c2 + (2*4)/(3*5)c2^2 + ...
            term *= (j - 1) / j * c2
            total += term
        inside = 2.0 / math.pi * (th + math.sin(th) * math.cos(th) * total)
    else:
        term, total = 1.0, 1.0
        for j in range(2, dof, 2):   # 1 + (1/2)c2 + (1*3)/(2*4)c2^2 + ...
            term *= (j - 1) / j * c2
            total += term
        inside = math.sin(th) * total
    return max(0.0, 1.0 - inside)


def t_as_z(t: float, dof: int) -> float:
    """The normal z-score with the same two-sided tail probability as ``t`` with ``dof``."""
    p = t_two_sided(t, dof)
    if p <= 0.0:
        return math.inf
    if p >= 1.0:
        return 0.0
    return -NormalDist().inv_cdf(p / 2.0)


class EdgeVerdict(enum.Enum):
    """What measuring an edge step's pair (and its neighbour) again said about it."""

    CONFIRMED = "confirmed"   # the new level holds: the step is real, bisect it
    OUTLIER = "outlier"       # the pair measures like its neighbour: the scan's run was an outlier
    REVERSED = "reversed"     # the pairs differ the other way: the scan's runs were too few to read it
    UNMEASURED = "unmeasured"  # measuring again failed (crash, build failure): still unconfirmed


@dataclass(frozen=True)
class EdgeCheck:
    """An edge step measured again: the verdict and the new numbers (medians of the new samples,
    oriented like the step: ``before`` is the earlier pair)."""

    verdict: EdgeVerdict
    level_before: float | None = None
    level_after: float | None = None
    relative_change: float | None = None
    samples_before: int = 0
    samples_after: int = 0


def check_edge(change: Change, before: Sequence[float], after: Sequence[float],
               min_change: float | None = None) -> EdgeCheck:
    """Judge an edge step from new samples of its two pairs (``before``: the earlier pair).

    The two pairs measured again, back to back, are a series of two points with repeats; the step
    is confirmed when :func:`detect` finds a step between them in the same direction as
    ``change`` (significant against the spread of the new repeats and at least ``min_change``);
    when it finds one in the other direction, the step is not what the scan's runs said, nor
    nothing (``REVERSED``: the runs are too noisy for one per pair); else the scan's lone value
    was an outlier.
    """
    b, a = point_samples(list(before)), point_samples(list(after))
    if not b or not a:
        return EdgeCheck(EdgeVerdict.UNMEASURED, samples_before=len(b), samples_after=len(a))
    lb, la = _median(b), _median(a)
    found = detect([b, a], min_change=min_change).changes
    up = change.level_after > change.level_before
    verdict = (EdgeVerdict.OUTLIER if not found else
               EdgeVerdict.CONFIRMED if (found[0].level_after > found[0].level_before) == up else EdgeVerdict.REVERSED)
    return EdgeCheck(verdict, lb, la, _relative(lb, la), len(b), len(a))
