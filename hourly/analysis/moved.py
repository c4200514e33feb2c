"""What each metric of a window did: it moved (its steps), it did not move (no step of a stated
size or more), or the evidence cannot tell — for a run that records several metrics at once
(``--metrics``: the per-phase harness's trace, lower, compile, dispatch, step, memory).

"Unchanged" is an answer, and the evidence must carry it (the rule above all): only a series long
enough for its noise to be measured (detection's, :func:`hourly.analysis.steps.find_steps`), with
no stretch left unmeasured and no window where the metric stops being printed, and always with
the size of step it rules out. Anything less says why it cannot tell.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from hourly.analysis.detect import DEFAULT_MIN_CHANGE, NOISE_SOURCE_LIMIT, Detection, percent
from hourly.analysis.steps import find_steps, group_points, metric_windows
from hourly.model import PointResult, Step

#: Fewer measured points than this (distinct pairs) cannot say a metric did not move: a step between
#: any two of them is also the noise of a series this short.
MIN_POINTS_UNCHANGED = 4
#: "Unchanged" rules out a step with at least this fraction of the measured points on each side
#: (a step nearer an end, resting on fewer points, may be larger and unseen: said in the JSON).
SIDE_FRACTION = 0.25


class Verdict:
    MOVED = "moved"
    UNCHANGED = "unchanged"
    UNSURE = "cannot tell"
    UNMEASURED = "not measured"


@dataclass
class Moved:
    """What one metric did over the window."""

    metric: str
    higher_is_better: bool
    verdict: str            # a Verdict value
    steps: list[Step] = field(default_factory=list)
    #: unchanged: no step of this relative size or more with ``side`` points or more on each side
    bound: float | None = None
    side: int | None = None
    noise: float | None = None  # relative noise of one point (unchanged)
    points: int = 0         # measured points (distinct pairs with a value)
    why: str | None = None  # cannot tell / not measured: why

    def short(self) -> str:
        """``lower_ms +31.0 %`` / ``step_ms unchanged (within ±1.2 %)`` / ``x: cannot tell (...)``."""
        if self.verdict == Verdict.MOVED:
            return f"{self.metric} " + ", ".join(f"{percent(st.change.relative_change)}" for st in self.steps)
        if self.verdict == Verdict.UNCHANGED:
            assert self.bound is not None
            return f"{self.metric} unchanged (within ±{self.bound * 100:.1f} %)"
        return f"{self.metric} {self.verdict} ({self.why})"

    def as_json(self) -> dict:
        out: dict = {"metric": self.metric, "verdict": self.verdict, "higher_is_better": self.higher_is_better,
                     "measured_points": self.points, "steps": [st.as_json() for st in self.steps]}
        if self.verdict == Verdict.UNCHANGED:
            out.update(within=self.bound, min_points_each_side=self.side, noise_per_point=self.noise)
        if self.why:
            out["why"] = self.why
        return out


def what_moved(metric: str, points: list[PointResult], higher_is_better: bool, min_change: float | None = None,
               incomplete: bool = False, keys: list | None = None,
               dropped: Callable[[Step], bool] | None = None) -> tuple[Moved, Detection | None]:
    """What ``metric`` did over ``points`` (one metric's view of a scan, a nightly window or the
    releases, in order; ``incomplete``: points of the window are not measured yet; ``keys``:
    :func:`~hourly.analysis.steps.find_steps`' grouping; ``dropped``: steps that do not stand, an
    edge step that measuring again called an outlier), and the detection it rests on (None when
    nothing was measured)."""
    groups = [g for g in group_points(points, keys) if g.samples]
    if not groups:
        failed = next((p for p in points if p.status not in ("ok", "planned")), None)
        why = "no state measured it" + (f": {failed.status}" + (f", {failed.detail}" if failed.detail else "")
                                        if failed else "")
        return Moved(metric, higher_is_better, Verdict.UNMEASURED, why=why), None
    steps, detection, _ = find_steps(points, higher_is_better, min_change, keys)
    steps = [st for st in steps if not (dropped and dropped(st))]
    n = len(groups)
    if steps:
        return Moved(metric, higher_is_better, Verdict.MOVED, steps, points=n), detection
    unsure = Moved(metric, higher_is_better, Verdict.UNSURE, points=n)
    lost = metric_windows(points)
    if lost:
        unsure.why = f"no step in the values measured, but it stops being printed between {lost[0].before.time} and {lost[0].after.time}"
    elif incomplete:
        unsure.why = "no step in the part measured so far; the rest is not measured yet"
    elif n < MIN_POINTS_UNCHANGED:
        unsure.why = f"{n} measured point{'s' if n != 1 else ''}: too few to tell a step from noise"
    elif getattr(detection, "too_short", False):  # detection's short-series reading (issue 33)
        unsure.why = "too short a series to tell its noise from steps: measure more points or repeats"
    elif detection.noise_source in ("prior", "none"):
        unsure.why = "its noise could not be measured"
    elif detection.noise_source == NOISE_SOURCE_LIMIT:
        unsure.why = "its points vary more than a benchmark's noise is taken to be"
    if unsure.why:
        return unsure, detection
    side = max(1, int(n * SIDE_FRACTION))
    rel = detection.relative_noise
    detectable = detection.threshold * rel * math.sqrt(1 / side + 1 / max(n - side, 1))
    floor = DEFAULT_MIN_CHANGE if min_change is None else min_change
    bound = max(detectable, floor)
    return Moved(metric, higher_is_better, Verdict.UNCHANGED, bound=bound, side=side, noise=rel, points=n), detection


def summary(moved: list[Moved]) -> str:
    """One line over every metric: ``lower_ms +31.0 %, step_ms unchanged (within ±1.2 %)``."""
    return ", ".join(m.short() for m in moved)

