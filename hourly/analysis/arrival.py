"""What a watch decides when a new nightly arrives (pure functions, no I/O; docs/watch.md).

A metric's nightly series (one point per build: a value, several samples, or ``None`` for a
missing night or a failed run) is judged at its newest builds only; nothing is said from the
series alone. The steps, each a function here:

1. :func:`arrival` -- on the arrival of the newest build(s): nothing (``QUIET``), too little
   history to judge (``SHORT``), no new measured build (``UNMEASURED``), or ``SUSPECT``: a step
   whose new level holds through the newest build, with the two builds to measure again. It
   suspects on two kinds of evidence: a step that the detector of ``hourly detect``
   (:func:`hourly.analysis.detect.detect`) finds in the last ``HISTORY`` builds with its new
   side after the last confirmed step, or the newest 1-``NEWEST`` builds lying, together,
   ``SUSPECT_Z`` standard errors beyond the level they follow (its robust spread) and beyond all
   but ``BEYOND`` of that level's builds. The bar is lower than the detector's own for a lone
   last point (1.5 x its threshold), because nothing is said before step 2. A change the history
   cannot place within ``MAX_WINDOW`` builds, or spread over its window at under ``MIN_RATE`` of
   the minimum change a build, is a drift, not a step: no one nightly to hunt. A pair already
   measured again without a confirmation is not suspected again. In a noisy series (point noise
   ``NOISY_NOISE`` or more) the newest ``NOISY_NEWEST`` builds are tested instead of ``NEWEST``.
2. :func:`plan_pairs` and :func:`confirm` -- the suspected step measured again: fresh runs of the
   build before it and of the build after it, interleaved (old, new, old, new, ...) and judged as
   pairs, so that whatever slows the machine for a while slows both. The pairs' log ratios go
   into a Wilcoxon signed-rank test and its Hodges-Lehmann interval (exact, no normal
   approximation), both directions, at ``ALPHA / LOOKS`` a look. ``CONFIRMED``: the builds
   differ, and by at least the minimum change of interest, and (when the builds are a window
   apart) by at least ``MIN_RATE`` minimum changes a build of the window, as measured again: a
   slower change, however real, is a drift (``UNDECIDED``, said so); ``REJECTED``: any change is below the
   minimum change; ``MORE``: neither yet, measure twice as many pairs (as Chromium Pinpoint adds
   runs to an UNKNOWN comparison); ``UNDECIDED``: the cap is reached and neither holds (say so:
   no alert, no all-clear). The first sample is planned by the suspected step's size in noise
   units, as Pinpoint plans by the effect in IQRs.
3. :func:`group` -- the confirmed steps of one arrival (several metrics) become one alert when one
   change can explain them all: their windows share a build.
4. :func:`recovery` -- a later confirmed step that brings the level back within the minimum change
   of the level before: the regression is already recovered.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, replace
from functools import lru_cache
from statistics import NormalDist
from typing import Collection, Sequence

import numpy as np

from hourly.analysis.detect import ChangeKind, Point, detect, median_variance_factor, point_samples

#: Builds of history the detector is given on each arrival (the newest ones: a month of nightlies).
HISTORY = 30
#: Good builds at the current level needed before the newest can be judged against it.
MIN_LEVEL_POINTS = 3
#: The newest builds are tested together as a new level: at most this many of them.
NEWEST = 6
#: ... or this many in a noisy series: one whose point noise (relative) is at least NOISY_NOISE.
#: There a step of a few minimum changes is near one build's noise, and six builds after it
#: rarely make it plain (against 20 builds before it, a 3 % step at 2 % noise is 2.6 standard
#: errors from six builds, 3.3 from twelve; 5 % at 5 %: 1.7 and 2.2); its first nights are not
#: suspected, and a later wide fit moves the level past it. (Tuned on benchmarks/watch_alerts.py's
#: tuning seeds 1-4, docs/watch.md.)
NOISY_NEWEST = 12
NOISY_NOISE = 0.015
#: A level of this many good builds is judged by its own robust spread alone (else by the
#: larger of that and the series' noise).
ROBUST_LEVEL_POINTS = 8
#: A step the detector cannot place within this many builds (``after_index - before_index``) is
#: not suspected from the fit: a slow drift spreads its change over many builds, and there is no
#: one nightly to hunt (tuned with the drift streams of benchmarks/watch_alerts.py).
MAX_WINDOW = 6
#: A suspect must change by at least this share of the minimum change per build of its window:
#: a change spread over many builds at a slower rate is a drift (there is no one nightly to
#: hunt), where a step's window is narrow for its size (tuned like MAX_WINDOW).
MIN_RATE = 0.3
#: The newest level must lie this many standard errors beyond the level it follows to be
#: suspected (tuned on benchmarks/watch_alerts.py's tuning seeds, docs/watch.md).
SUSPECT_Z = 3.0
#: ... and beyond all but this many of that level's builds (a level that already visits the new
#: value, a bimodal benchmark, holds no step there).
BEYOND = 1
#: One-sided level of a whole confirmation, however many times it looks: each look (10, 20, 40,
#: 80 pairs) tests at ALPHA / LOOKS (Bonferroni), so measuring more until it settles does not
#: raise the chance of confirming a step that is not there.
ALPHA = 0.01
#: Pairs a confirmation measures at least, and at most (the cap); each MORE doubles the pairs.
MIN_PAIRS = 10
MAX_PAIRS = 80
#: Looks a confirmation can take from MIN_PAIRS to MAX_PAIRS.
LOOKS = 1 + math.ceil(math.log2(MAX_PAIRS / MIN_PAIRS))
#: Power the first sample of a confirmation is planned for (at the suspected size).
PLAN_POWER = 0.9
#: The minimum change of interest when none is given (relative).
DEFAULT_MIN_CHANGE = 0.02

_MAD_TO_SIGMA = 1.4826


class ArrivalStatus(enum.Enum):
    """What an arrival decided."""

    QUIET = "quiet"              # judged: no step at the newest builds
    SUSPECT = "suspect"          # a step at the newest builds, to confirm by measuring again
    SHORT = "short"              # too few good builds at the current level to judge the newest
    UNMEASURED = "unmeasured"    # no build since the last decision has a measurement


@dataclass(frozen=True)
class Suspect:
    """A step suspected at the newest builds: measure ``before_index`` and ``after_index`` again.

    Indices are positions in the series as given. The culprit lies in the builds
    ``before_index + 1 .. after_index``; ``before_index`` is the last good build before the step
    and ``after_index`` the first at the new level. ``level_before``/``level_after`` are medians in
    the metric's units, ``relative_change = after / before - 1``. ``strength`` is the step in
    standard errors; ``source`` says which evidence raised it: ``"fit"`` (the detector found the
    step in the history) or ``"newest"`` (the newest builds lie beyond the level they follow).
    ``noise`` is the relative noise of one run, for planning the confirmation.
    """

    before_index: int
    after_index: int
    level_before: float
    level_after: float
    relative_change: float
    kind: ChangeKind
    strength: float
    source: str
    n_before: int
    n_after: int
    noise: float


@dataclass(frozen=True)
class Arrival:
    """The decision on arrival: ``suspects`` (oldest first) when the status is ``SUSPECT``.

    ``noise``: the relative noise of one point of the series; ``level_from``: the first build of
    the level the newest builds were judged against; ``why``: for ``SHORT`` and ``UNMEASURED``,
    what is missing.
    """

    status: ArrivalStatus
    suspects: tuple[Suspect, ...] = ()
    noise: float = 0.0
    level_from: int = 0
    why: str = ""


def _log_or_linear(series: Sequence[Point]) -> tuple[list[list[float]], bool]:
    samples = [point_samples(p) for p in series]
    positive = all(x > 0 for s in samples for x in s)
    if positive:
        return [[math.log(x) for x in s] for s in samples], True
    return samples, False


def _median(s: Sequence[float]) -> float:
    return float(np.median(np.asarray(s, dtype=float)))


def _run_noise(logs: list[list[float]], point_noise: float, log_scale: bool, level: float) -> float:
    """The relative noise of one run: the median spread of the points' repeats, never below the
    noise of one point (which also holds the night-to-night noise)."""
    spreads = [float(np.std(s, ddof=1)) for s in logs if len(s) > 1]
    rep = _median(spreads) if spreads else 0.0
    if not log_scale:
        rep = rep / abs(level) if level else 0.0
    return max(rep, point_noise)


def arrival(series: Sequence[Point], *, higher_is_better: bool = True, min_change: float | None = None,
            since: int = 0, level_from: int = 0, judged: Collection[tuple[int, int]] = (),
            rejected: Collection[tuple[int, int]] = (),
            history: int = HISTORY, suspect_z: float = SUSPECT_Z, newest: int = NEWEST, beyond: int = BEYOND,
            max_window: int = MAX_WINDOW, min_rate: float = MIN_RATE,
            noisy_newest: int = NOISY_NEWEST, noisy_noise: float = NOISY_NOISE) -> Arrival:
    """Judge the newest builds of ``series``: is there a step whose new level holds through them?

    ``since``: the first build a new step may start at (the build after the first build of the
    last confirmed step's new level); ``level_from``: the first build of the current level (that
    confirmed step's ``after_index``): the newest builds are judged against the builds from there
    on. ``judged``: the (before, after) pairs already measured again without a confirmation
    (rejected, or undecided at the cap): not suspected again, though the same step with another
    window is. ``rejected``: those of them that measuring again rejected (any change under the
    minimum change): their newest build was measured on an odd night, and is left out of the noise
    a short level is judged by as well (an undecided one may hold a real step: kept there).
    A quiet arrival decides nothing, so a step too small to see on its first night is
    suspected once its later builds make it plain. ``min_change``: steps smaller than this
    relative change are not suspected (default :data:`DEFAULT_MIN_CHANGE`). ``suspect_z``,
    ``beyond``, ``newest``, ``max_window``, ``min_rate``, ``noisy_newest``, ``noisy_noise``: the
    constants of the same names (``noisy_newest=newest`` restores the rule without it).
    """
    if min_change is None:
        min_change = DEFAULT_MIN_CHANGE
    n = len(series)
    start = max(0, n - history)
    logs, log_scale = _log_or_linear(series)
    good = [i for i in range(start, n) if logs[i]]
    if not good or good[-1] < since:
        return Arrival(ArrivalStatus.UNMEASURED, why="no build since the last decision has a measurement")
    det = detect(list(series[start:]), higher_is_better=higher_is_better, min_change=min_change)
    level = det.level
    point_noise = det.relative_noise
    run_noise = _run_noise([logs[i] for i in good], point_noise, log_scale, level)
    # a build whose step measuring again rejected was measured on an odd night: no evidence of the
    # series' noise either. A level too short to be judged by its own spread is judged by the
    # series' noise, and there one slow night read as noise that hid the next steps (7 % for a
    # 0.2 % benchmark): that floor is the noise of the series without its slow nights
    slow = {after for _, after in rejected if after >= start}
    floor_noise = point_noise if not slow else detect(
        [None if start + k in slow else p for k, p in enumerate(series[start:])],
        higher_is_better=higher_is_better, min_change=min_change).relative_noise
    def steep(rel: float, before: int, after: int) -> bool:
        return abs(math.log1p(rel)) >= min_rate * math.log1p(min_change) * (after - before) if rel > -1 else True

    fitted = [c for c in det.changes
              if start + c.after_index >= since and c.after_index - c.before_index <= max_window
              and steep(c.relative_change, c.before_index, c.after_index)
              and (start + c.before_index, start + c.after_index) not in judged]
    if fitted:
        return Arrival(ArrivalStatus.SUSPECT, tuple(
            Suspect(start + c.before_index, start + c.after_index, c.level_before, c.level_after,
                    c.relative_change, c.kind, c.strength, "fit", c.n_before, c.n_after, run_noise)
            for c in fitted), point_noise, level_from)
    # the current level starts after the last step the detector sees (a too wide one included:
    # the newest builds are compared with the builds after it), but not after one that measuring
    # again rejected (a slow night is no level)
    first = max([start, level_from] + [start + c.after_index for c in det.changes
                                       if (start + c.before_index, start + c.after_index) not in judged])
    # a build whose step measuring again did not confirm was measured on an odd night: it is no
    # evidence of a new level (nor of the old one's spread)
    odd = {after for _, after in judged}
    points = [i for i in good if i >= first and i not in odd]
    values = [_median(logs[i]) for i in points]
    if point_noise >= noisy_noise:   # a noisy series: a step needs more of its builds to be seen
        newest = max(newest, noisy_newest)
    candidates = [k for k, i in enumerate(points) if i >= since and k >= len(points) - newest]
    if not candidates or candidates[-1] < MIN_LEVEL_POINTS:
        return Arrival(ArrivalStatus.SHORT, noise=point_noise, level_from=first,
                       why=f"{len(points) - 1} good builds at the current level before the newest; "
                           f"{MIN_LEVEL_POINTS} are needed to judge it")
    passing = [s for s in (_newest_step(points, values, k, floor_noise, log_scale, min_change, higher_is_better,
                                        suspect_z, beyond, run_noise) for k in candidates if k >= MIN_LEVEL_POINTS)
               if s is not None]
    if not passing:
        return Arrival(ArrivalStatus.QUIET, noise=point_noise, level_from=first)
    best = strongest = max(passing, key=lambda s: s.strength)
    if not _reads_new(best, values[points.index(best.after_index)], log_scale):
        # the strongest split's tail starts with a build at the old level (a tail of two builds, one
        # at each level, has its median halfway): measuring that build again against the level
        # could only reject a real step at the next one. The after build is one that reads at the
        # new level, if any; the window still starts where the strongest split does (or before):
        # its first build may be the step's, read a little low that night
        new = [s for s in passing if _reads_new(s, values[points.index(s.after_index)], log_scale)]
        best = max(new, key=lambda s: s.strength) if new else best
    # the step may start at any build that passes: the window spans them all (a step at the
    # second newest build, its first night read at the old level, is inside it)
    for before in (passing[0].before_index, min(best.before_index, strongest.before_index)):
        if (before, best.after_index) not in judged and steep(best.relative_change, before, best.after_index):
            return Arrival(ArrivalStatus.SUSPECT, (replace(best, before_index=before),), point_noise, first)
    return Arrival(ArrivalStatus.QUIET, noise=point_noise, level_from=first)


def _reads_new(s: Suspect, value: float, log_scale: bool) -> bool:
    """Whether ``value`` (a build's median, in the series' scale) lies on the new level's side of
    the midpoint between the levels of ``s``."""
    before, after = (math.log(s.level_before), math.log(s.level_after)) if log_scale else (s.level_before, s.level_after)
    mid = (before + after) / 2
    return value < mid if after < before else value > mid


def _newest_step(points: list[int], values: list[float], k: int, point_noise: float, log_scale: bool, min_change: float, higher_is_better: bool, suspect_z: float, beyond: int,
                 run_noise: float) -> Suspect | None:
    """The builds ``points[k:]`` as a new level after ``points[:k]``, if it passes the bar."""
    base, tail = np.asarray(values[:k]), np.asarray(values[k:])
    lb, lt = float(np.median(base)), float(np.median(tail))
    # the level's own spread, robust to its outlier nights (a night on a slow machine, 5-20 %
    # off, in one of eight made the detector's noise, a root mean square, read 3 % for 0.5 %);
    # on a short level the series' noise too
    spread = _MAD_TO_SIGMA * float(np.median(np.abs(base - lb))) if len(base) >= 5 else 0.0
    scale = 1.0 if log_scale else abs(lb) or 1.0
    sigma = max(spread if len(base) >= ROBUST_LEVEL_POINTS else max(point_noise * scale, spread), 1e-4 * scale)
    se = sigma * math.sqrt(median_variance_factor(len(tail)) / len(tail) + (math.pi / 2) / len(base))
    diff = lt - lb
    z = abs(diff) / se
    rel = math.expm1(diff) if log_scale else diff / abs(lb) if lb else math.inf
    as_far = int(np.sum(base >= lt)) if diff > 0 else int(np.sum(base <= lt))
    if z < suspect_z or abs(rel) < min_change or as_far > beyond:
        return None
    before, after = (math.exp(lb), math.exp(lt)) if log_scale else (lb, lt)
    worse = (after < before) if higher_is_better else (after > before)
    return Suspect(points[k - 1], points[k], before, after, rel,
                   ChangeKind.REGRESSION if worse else ChangeKind.IMPROVEMENT, z, "newest", k,
                   len(points) - k, run_noise)


# ---------------------------------------------------------------------------------------------
# Confirmation: the two builds measured again, interleaved


class Verdict(enum.Enum):
    """What measuring a suspected step again said."""

    CONFIRMED = "confirmed"    # the step holds, in its direction, by the minimum change at least
    REJECTED = "rejected"      # any change between the two builds is below the minimum change
    MORE = "more"              # neither yet: measure ``next_pairs`` pairs in all and ask again
    UNDECIDED = "undecided"    # the cap is reached and neither holds (or a drift): unsure, say so


@dataclass(frozen=True)
class Confirmation:
    """A confirmation's verdict and its numbers (relative changes: new / old - 1).

    ``change`` is the Hodges-Lehmann estimate of the pairs' ratio, ``low``..``high`` its
    two-sided ``1 - alpha`` interval (one look's alpha; infinite when the pairs are too few to
    bound it), ``p_value`` the two-sided signed-rank p-value, ``higher`` the pairs whose new run
    is higher than its old run, ``pairs`` the pairs judged and ``next_pairs`` how many to have
    before asking again (``MORE``; else ``pairs``); ``note``: why a change that holds is
    ``UNDECIDED`` (too slow for its window: a drift).
    """

    verdict: Verdict
    pairs: int
    next_pairs: int
    change: float = 0.0
    low: float = -math.inf
    high: float = math.inf
    p_value: float = 1.0
    higher: int = 0
    level_before: float = 0.0
    level_after: float = 0.0
    note: str = ""


def plan_pairs(change: float, noise: float, *, min_change: float | None = None, cap: int = MAX_PAIRS,
               minimum: int = MIN_PAIRS) -> int:
    """Pairs to measure first for a suspected relative ``change`` with relative run ``noise``.

    The normal approximation of the signed-rank test's sample size (its efficiency against the
    t test is 0.95 for normal runs): ``(z_alpha + z_power)^2 2 sigma^2 / delta^2 / 0.95``, the
    step ``delta`` taken at its suspected size but never below the minimum change, and clipped to
    ``minimum``..``cap``. A 1.9-IQR step gets the minimum, a 0.3-IQR step the cap: the shape of
    Pinpoint's plan (10 runs for 1.9 IQR, 35 for 1, 360 for 0.3), with fewer runs because pairs
    measured back to back share the machine's slow spells.
    """
    if min_change is None:
        min_change = DEFAULT_MIN_CHANGE
    delta = max(abs(math.log1p(change)) if change > -1 else math.inf, math.log1p(min_change))
    z = NormalDist().inv_cdf(1 - ALPHA / LOOKS) + NormalDist().inv_cdf(PLAN_POWER)
    need = z * z * 2.0 * noise * noise / (delta * delta) / 0.95
    return int(min(cap, max(minimum, math.ceil(need))))


@lru_cache(maxsize=256)
def _signed_rank_cdf(n: int) -> np.ndarray:
    """P(W+ <= w) for w = 0 .. n(n+1)/2 under the null (no ties): exact, by convolution."""
    p = np.zeros(n * (n + 1) // 2 + 1)
    p[0] = 1.0
    top = 0
    for i in range(1, n + 1):
        shifted = np.zeros_like(p)
        shifted[i:top + i + 1] = p[:top + 1]
        p = 0.5 * (p + shifted)
        top += i
    return np.cumsum(p)


def _bound_rank(n: int, alpha: float) -> int:
    """k such that the k-th smallest Walsh average is a one-sided 1 - alpha lower bound (0: none)."""
    return int(np.searchsorted(_signed_rank_cdf(n), alpha, side="right"))


def confirm(old: Sequence[float | None], new: Sequence[float | None], *, min_change: float | None = None,
            cap: int = MAX_PAIRS, alpha: float = ALPHA / LOOKS, minimum: int = MIN_PAIRS,
            window: int = 1, min_rate: float = MIN_RATE) -> Confirmation:
    """Judge a suspected step from runs measured again, interleaved: ``old[i]`` (the build before
    the step) was run right before ``new[i]`` (the build after it).

    Both directions are tested (each at ``alpha / 2``): the fresh runs, not the history, say which
    way the builds differ, so a step whose first night was measured on a slow machine (a real +5 %
    read as -10 %) is still confirmed, as +5 %. ``alpha`` is the level of this one look (the whole
    confirmation's ALPHA shared by its LOOKS). A pair with a failed run (``None``, NaN) is left out.
    Values are compared as log ratios when every one is positive, else as differences relative to
    the old build's median. ``window``: the builds between the two (``after_index - before_index``);
    a change that holds but is under ``min_rate`` minimum changes a build of it is a drift, not a
    step (the test :func:`arrival` applies to the history's estimate, applied to the change
    measured again, which a drift's slow nights cannot inflate): ``UNDECIDED``, with a ``note``.
    ``min_rate=0`` drops that test.
    """
    if min_change is None:
        min_change = DEFAULT_MIN_CHANGE
    pairs = [(float(a), float(b)) for a, b in zip(old, new, strict=False)
             if a is not None and b is not None and math.isfinite(float(a)) and math.isfinite(float(b))]
    n = len(pairs)
    if n < minimum:
        return Confirmation(Verdict.MORE if n < cap else Verdict.UNDECIDED, n, min(minimum, cap))
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    log_scale = bool(np.all(a > 0) and np.all(b > 0))
    ref = float(np.median(a))
    if log_scale:
        d = np.log(b) - np.log(a)
        up, down = math.log1p(min_change), (math.log1p(-min_change) if min_change < 1 else -math.inf)
    else:
        d = (b - a) / (abs(ref) or 1.0)
        up, down = min_change, -min_change
    walsh = np.sort((d[:, None] + d[None, :])[np.triu_indices(n)] / 2.0)
    hl = float(np.median(walsh))
    k = _bound_rank(n, alpha / 2.0)
    low = float(walsh[k - 1]) if k >= 1 else -math.inf
    high = float(walsh[len(walsh) - k]) if k >= 1 else math.inf
    ranks = np.argsort(np.argsort(np.abs(d))) + 1
    w_plus = int(np.sum(ranks[d > 0]))
    cdf = _signed_rank_cdf(n)
    m = len(cdf) - 1
    p_value = min(1.0, 2.0 * float(min(cdf[min(w_plus, m - w_plus)], 0.5)))

    def rel(x: float) -> float:
        return math.expm1(x) if log_scale else x

    def verdict(v: Verdict, next_pairs: int) -> Confirmation:
        return Confirmation(v, n, next_pairs, change=rel(hl), low=rel(low), high=rel(high), p_value=p_value,
                            higher=int(np.sum(d > 0)), level_before=ref, level_after=float(np.median(b)))

    if (low > 0 and hl >= up) or (high < 0 and hl <= down):
        if abs(hl) < min_rate * (up if log_scale else min_change) * window:
            return replace(verdict(Verdict.UNDECIDED, n),
                           note=f"a change of {rel(hl):+.2%} over a window of {window} builds: slower than "
                                f"{min_rate:g} minimum changes a build, a drift rather than one step")
        return verdict(Verdict.CONFIRMED, n)
    if down < low and high < up:
        return verdict(Verdict.REJECTED, n)
    if n >= cap:
        return verdict(Verdict.UNDECIDED, n)
    return verdict(Verdict.MORE, min(cap, 2 * n))


# ---------------------------------------------------------------------------------------------
# Alerts: the confirmed steps of one arrival, grouped; recoveries


@dataclass(frozen=True)
class Confirmed:
    """A confirmed step of one metric: its window (the culprit is in builds ``before_index + 1 ..
    after_index``), its levels and change as measured again, and its kind."""

    metric: str
    before_index: int
    after_index: int
    level_before: float
    level_after: float
    relative_change: float
    kind: ChangeKind


@dataclass(frozen=True)
class Alert:
    """Confirmed steps one change can explain: every step's window holds the builds
    ``before_index + 1 .. after_index`` (the narrowest window they share)."""

    before_index: int
    after_index: int
    steps: tuple[Confirmed, ...]

    @property
    def regression(self) -> bool:
        return any(s.kind is ChangeKind.REGRESSION for s in self.steps)


def group(steps: Sequence[Confirmed]) -> list[Alert]:
    """The fewest alerts such that the steps of each share at least one build of their windows.

    Steps whose windows overlap can be one change (the same nightly made several metrics slower),
    and one alert starts one hunt over the builds they share. Windows that do not overlap are
    different changes, and each gets its own alert. The steps are taken by the end of their
    window: the first group holds every step whose window contains the earliest end, and so on
    (a window is an interval of builds, so steps that overlap pairwise share a build).
    """
    order = sorted(steps, key=lambda s: (s.after_index, s.before_index, s.metric))
    alerts: list[Alert] = []
    taken: list[Confirmed] = []
    for s in order:
        if taken and s.before_index < taken[0].after_index:
            taken.append(s)
            continue
        if taken:
            alerts.append(_alert(taken))
        taken = [s]
    if taken:
        alerts.append(_alert(taken))
    return alerts


def _alert(steps: list[Confirmed]) -> Alert:
    return Alert(max(s.before_index for s in steps), min(s.after_index for s in steps), tuple(steps))


@dataclass(frozen=True)
class Recovery:
    """A later step that brought the level back: at build ``after_index``, to ``level``, which is
    ``relative_to_before`` away from the level before the original step."""

    after_index: int
    level: float
    relative_to_before: float


def recovery(step: Confirmed | Suspect, later: Sequence[Confirmed | Suspect], *,
             min_change: float | None = None) -> Recovery | None:
    """The first of the ``later`` steps (confirmed, after ``step``) that undoes ``step``: it goes
    the other way, and its new level is within ``min_change`` of the level before ``step``."""
    if min_change is None:
        min_change = DEFAULT_MIN_CHANGE
    up = step.level_after > step.level_before
    for s in sorted(later, key=lambda s: s.after_index):
        if s.after_index <= step.after_index or (s.level_after > s.level_before) == up:
            continue
        back = s.level_after / step.level_before - 1.0 if step.level_before else math.inf
        if abs(back) < min_change:
            return Recovery(s.after_index, s.level_after, back)
    return None
