"""A series' resolution: the smallest step its detection could have shown (pure functions, no I/O).

"no step found" is an answer only down to the size of step the noise let the detector see. The
detector (:mod:`hourly.analysis.detect`) keeps a step between two levels when it is at least
``need`` standard errors, where a level of ``a`` points and one of ``b`` points, each point with
noise ``sigma``, have a standard error of ``sigma * sqrt(1/a + 1/b)``, and ``need`` is ``z_min``
(:func:`~hourly.analysis.detect.z_threshold`), times SHORT_SEGMENT_FACTOR (1.5) beside a level of
1-2 points once the series has 4 points or more. A step between the ``k``-th and the next of ``n``
good points therefore shows only when it is at least::

    need_k * sigma * sqrt(1/k + 1/(n - k))

on the detector's scale (log values for times and rates: ``exp(...) - 1`` as a relative change).
The *resolution* is the largest of those over every ``k``: the step size that holds between any
two neighbouring points, whichever they are (the last pair of a window alone at a new level is
the worst place, and the one a regression that landed in the window's last hour is in). It is a
detection limit: a step of exactly that size is shown about half of the time, one 1.5 times as
large almost always; a smaller one never.

The noise of one point is the detector's own (``Detection.noise``); repeats shrink it as
``1/sqrt(repeats)`` (a median of 3 or more runs varies sqrt(pi/2) times more than a mean, as
:func:`~hourly.analysis.detect._repeat_noise` counts), so the repeats that bring the resolution
under a target are ``repeats * (resolution / target)**2`` on the detector's scale.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

from hourly.analysis.detect import Detection, level_need, median_noise_factor, percent, z_threshold

#: The most repeats a fix names: past this, measuring each pair more is not a plan (say so instead).
MAX_SUGGESTED_REPEATS = 100


def size(x: float, floor: float | None = None) -> str:
    """A relative size unsigned ("21.6%"); a resolution just above ``floor`` never reads as the
    floor itself ("1.01%", not "1.0%": it did not resolve it), rounded up where it would."""
    text = percent(x).lstrip("+")
    if floor is not None and x > floor and text == percent(floor).lstrip("+"):
        text = f"{math.ceil(x * 1e4 - 1e-9) / 100:.2f}%"
    return text


def boundary_need(k: int, n: int, z_min: float) -> float:
    """The z a step between the ``k``-th and ``k+1``-th of ``n`` points must reach to be shown."""
    return level_need(z_min, k, n - k, n >= 4)


def step_resolution(sigma: float, n: int, z_min: float | None = None) -> tuple[float, int]:
    """The smallest step (on the detector's scale, in units of ``sigma``'s) that shows between any
    two neighbouring points of ``n``, and the ``k`` where it is largest (the worst boundary).
    ``z_min``: the detector's threshold for ``n`` points unless given."""
    if n < 2:
        raise ValueError("a step needs two points")
    z = z_threshold(n) if z_min is None else z_min
    worst = max(range(1, n), key=lambda k: (boundary_need(k, n, z) * math.sqrt(1.0 / k + 1.0 / (n - k)), -k))
    return boundary_need(worst, n, z) * sigma * math.sqrt(1.0 / worst + 1.0 / (n - worst)), worst


@dataclass(frozen=True)
class Resolution:
    """The smallest relative step a detection could have shown between any two neighbouring points."""

    relative: float     #: that step as a relative change (0.277 = 27.7 %)
    noise: float        #: relative noise of one point's value (the detector's)
    noise_source: str   #: where the detector read it (``Detection.noise_source``)
    threshold: float    #: the z the worst boundary needs
    points: int         #: good points the detector judged (outliers left out)
    repeats: int        #: runs per point (the median over points)
    log_scale: bool

    def _scaled(self, x: float) -> float:
        """A relative change on the detector's scale."""
        return math.log1p(x) if self.log_scale else x

    def resolves(self, min_change: float) -> bool:
        """Whether every step of ``min_change`` or more would have shown (a floor of 0: never)."""
        return min_change > 0 and self.relative <= min_change

    def repeats_for(self, min_change: float) -> int:
        """The runs per point that bring the resolution to ``min_change`` or under, the number of
        points staying the same (the noise shrinking as 1/sqrt(runs))."""
        if min_change <= 0:
            raise ValueError("no number of repeats resolves a step of 0")
        now, want = self._scaled(self.relative), self._scaled(min_change)
        r = max(self.repeats, 1)
        need = r
        for _ in range(4):  # the median's factor depends on the answer: settle it
            factor = median_noise_factor(need) / median_noise_factor(r)
            need = max(r + 1, math.ceil(r * (now * factor / want) ** 2 - 1e-9))
        return need

    def as_json(self, min_change: float) -> dict:
        return {"relative": self.relative, "min_change": min_change, "resolves": self.resolves(min_change),
                "noise": self.noise, "noise_source": self.noise_source, "z": self.threshold,
                "points": self.points, "repeats": self.repeats,
                "repeats_needed": None if self.resolves(min_change) or min_change <= 0 else self.repeats_for(min_change)}


def resolution(found: Detection, runs: Sequence[int]) -> Resolution | None:
    """The resolution of a detection (None with fewer than two points, where no step can show, and
    where the noise was assumed, not measured: no size of step is known to show through it).
    ``runs``: how many runs each good point's value rests on."""
    good = [r for r in runs if r > 0]
    n = len(good) - len(found.outliers)
    if n < 2 or found.noise_assumed:
        return None
    sigma = found.noise / abs(found.level) if found.level else 0.0
    step, worst = step_resolution(sigma, n, found.threshold or None)
    counts = sorted(good)
    relative = math.expm1(step) if found.log_scale else step
    return Resolution(relative, sigma, found.noise_source, boundary_need(worst, n, found.threshold or z_threshold(n)),
                      n, counts[len(counts) // 2], found.log_scale)


def unresolved_words(r: Resolution, floor: float) -> str:
    """What a series that found no step says where steps of ``floor`` could not show through its
    noise: "no step of 21.6% or more, and steps from 1.0% to 21.6% cannot be told from the noise"."""
    x = size(r.relative, floor)
    return f"no step of {x} or more, and steps from {size(floor)} to {x} cannot be told from the noise"


def repeats_fix(r: Resolution, floor: float, unit: str, command: Callable[[int], str]) -> str:
    """The fix of an unresolved series: each ``unit`` (pair, date, release) measured as often as
    :meth:`Resolution.repeats_for` says, by ``command(repeats)``; past
    :data:`MAX_SUGGESTED_REPEATS` the line says first that the benchmark is too noisy for the
    question. The command stays last: it is copied from the end of the line."""
    n = r.repeats_for(floor)
    text = f"measure each {unit} {n} times to see steps of {size(floor)}: {command(n)}"
    if n > MAX_SUGGESTED_REPEATS:
        text = (f"a benchmark that needs {n} runs a {unit} is too noisy for this question: quieten it, or "
                f"read steps of {size(r.relative, floor)} or more as the answer; else {text}")
    return text
