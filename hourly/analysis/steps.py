"""Detection applied to scan results: group instants by pair, find steps, mark the table.

Consecutive instants that resolved to the same (xla, jax) pair share one measurement, so they are
one point for the detector (feeding the copies would fake a noiseless series). A step is reported
between the LAST instant of the pair before it and the FIRST instant of the pair after it.
"""

from __future__ import annotations

from dataclasses import dataclass

from hourly.analysis.detect import Change, Detection, EdgeCheck, detect
from hourly.analysis.series import Series, SeriesPoint
from hourly.model import PointResult, Step


@dataclass
class Group:
    first: int   # index of its first instant in the scan's points
    last: int    # index of its last instant
    point: PointResult

    @property
    def samples(self) -> list[float] | None:
        if self.point.status != "ok":
            return None
        return list(self.point.samples) or ([self.point.value] if self.point.value is not None else None)


def group_points(points: list[PointResult], keys: list | None = None) -> list[Group]:
    """Consecutive points with the same key are one group; the key is the (xla, jax) pair unless
    ``keys`` (one per point) says what else tells points apart (the nightly level: the image)."""
    keys = keys if keys is not None else [(p.xla, p.jax) for p in points]
    groups: list[Group] = []
    for i, p in enumerate(points):
        if groups and keys[groups[-1].last] == keys[i]:
            groups[-1].last = i
        else:
            groups.append(Group(i, i, p))
    return groups


def find_steps(points: list[PointResult], higher_is_better: bool = True,
               min_change: float | None = None, keys: list | None = None) -> tuple[list[Step], Detection, list[Group]]:
    groups = group_points(points, keys)
    detection = detect([g.samples for g in groups], higher_is_better=higher_is_better, min_change=min_change)
    steps = []
    for c in detection.changes:
        b, a = groups[c.before_index], groups[c.after_index]
        steps.append(Step(c, points[b.last], points[a.first], b.last, a.first))
    return steps, detection, groups


def too_short(detection: Detection, unit: str = "point") -> str | None:
    """Why a series cannot say "no step" (:attr:`Detection.too_short`), in one clause naming its
    ``unit`` ("pair", "date", "release"); None when its noise is a fair measure. The caller adds
    the command that measures what is missing."""
    if not detection.too_short:
        return None
    from hourly.analysis.detect import percent
    if detection.noise_assumed:
        return (f"too few {unit}s to measure the noise: one run per {unit} and under 4 {unit}s, so the noise "
                f"({percent(detection.relative_noise).lstrip('+')} per {unit}) is assumed, not measured")
    if detection.repeated:
        return (f"too few {unit}s to tell noise from steps: the {unit}s differ by more than their repeats, "
                "which is steps or noise between runs that the repeats do not see")
    return (f"too few {unit}s to tell noise from steps: one value per {unit}, and the differences between "
            f"neighbours (read as noise of {percent(detection.relative_noise).lstrip('+')} per {unit}) "
            "may be the steps themselves")


def series_from_points(points: list[PointResult], source: str = "") -> Series:
    """A :class:`~hourly.analysis.series.Series` of one point per pair-run, labelled by its first instant;
    ``last_label`` carries the run's last instant (the label of a step's "before" side)."""
    return Series(tuple(SeriesPoint(p.point.time, tuple(p.samples or ()), last_label=points[p.last].time)
                        for p in group_points(points)), source)








def edge_pairs(change: Change, groups: list[Group]) -> tuple[Group, Group, str] | None:
    """The two pairs an edge step is confirmed with, earlier first, and which end of the series
    the lone pair is at ("last" or "first"): the lone pair and its nearest measured neighbour;
    None for any other step."""
    if not change.edge:
        return None
    good = [i for i, g in enumerate(groups) if g.samples]
    if change.n_after == 1 and change.after_index == good[-1]:
        return groups[good[-2]], groups[good[-1]], "last"
    if change.n_before == 1 and change.before_index == good[0]:
        return groups[good[0]], groups[good[1]], "first"
    return None


def step_key(step: Step) -> tuple[str, str]:
    """How a step is named across commands: the times of its last point before and first after."""
    return step.before.time, step.after.time


def standing(steps: list[Step], checks: dict | None) -> list[Step]:
    """The steps that still stand: all but the edge steps that measuring again called an outlier
    (:attr:`~hourly.analysis.detect.EdgeVerdict.OUTLIER`: the new runs read like the neighbour, so
    the scan's value was one slow or fast run and there is nothing to bisect)."""
    from hourly.analysis.detect import EdgeVerdict
    checks = checks or {}
    return [st for st in steps
            if not ((c := checks.get(step_key(st))) is not None and c.verdict is EdgeVerdict.OUTLIER)]


def edge_check_json(step: Step, check: EdgeCheck, pairs: tuple[Group, Group, str]) -> dict:
    """An edge step's check for --json: the step, the verdict, the new numbers and the two pairs."""
    return {"before": step.before.time, "after": step.after.time, "side": pairs[2],
            "verdict": check.verdict.value, "level_before": check.level_before, "level_after": check.level_after,
            "relative_change": check.relative_change, "samples_before": check.samples_before,
            "samples_after": check.samples_after,
            "pairs": [{"xla": g.point.xla, "jax": g.point.jax} for g in pairs[:2]]}


#: Point statuses where the benchmark ran to its end (exit 0), and where it did not.
RUNNING = ("ok", "no_metric")
CRASHING = ("crashed", "timeout")
#: Point statuses of a benchmark that ran to its end: printing its metric, and not printing it
#: (``MLUPS: nan``, or nothing); a window between them is a "metric_lost" (or "metric_back") window.
PRINTING = ("ok",)
SILENT = ("no_metric",)
#: The two kinds of window of each question: (going bad, coming back).
CRASH_KINDS = ("crash", "fix")
METRIC_KINDS = ("metric_lost", "metric_back")


@dataclass
class CrashWindow:
    """Where the benchmark goes from running to crashing (``crash``) or back (``fix``), or from
    printing its metric to running without it (``metric_lost``) or back (``metric_back``): the
    last instant of the pair before and the first instant of the pair after (points that say
    nothing about that question — build failures, planned points, and for the metric's windows
    crashes — are passed over, like untestable states)."""

    kind: str  # "crash", "fix", "metric_lost" or "metric_back"
    before: PointResult
    after: PointResult
    before_index: int
    after_index: int

    @property
    def bad(self) -> bool:
        """The benchmark goes bad here (a crash, or its metric stops), rather than coming back."""
        return self.kind in ("crash", "metric_lost")

    def as_json(self) -> dict:
        return {"kind": self.kind, "before": self.before.time, "after": self.after.time,
                "before_status": self.before.status, "after_status": self.after.status,
                "before_pair": {"xla": self.before.xla, "jax": self.before.jax},
                "after_pair": {"xla": self.after.xla, "jax": self.after.jax}}


def status_windows(points: list[PointResult], good: tuple[str, ...], bad: tuple[str, ...],
                   kinds: tuple[str, str]) -> list[CrashWindow]:
    """Every window where the points' status goes from ``good`` to ``bad`` (``kinds[0]``) or back
    (``kinds[1]``); points of any other status are passed over."""
    out: list[CrashWindow] = []
    last: tuple[bool, Group] | None = None
    for g in group_points(points):
        st = g.point.status
        if st not in good and st not in bad:
            continue
        failing = st in bad
        if last is not None and last[0] != failing:
            out.append(CrashWindow(kinds[0] if failing else kinds[1], points[last[1].last], g.point,
                                   last[1].last, g.first))
        last = (failing, g)
    return out


def crash_windows(points: list[PointResult]) -> list[CrashWindow]:
    """Every window where the scan's points go from running (exit 0) to crashing or timing out,
    or back."""
    return status_windows(points, RUNNING, CRASHING, CRASH_KINDS)


def metric_windows(points: list[PointResult]) -> list[CrashWindow]:
    """Every window where the benchmark stops printing its metric while still exiting 0 (ok →
    no_metric: ``MLUPS: nan``, or no line at all), or starts printing it again. A metric that
    stops is not "no step": it is a window to bisect, by whether each state prints the metric."""
    return status_windows(points, PRINTING, SILENT, METRIC_KINDS)


def all_windows(points: list[PointResult]) -> list[CrashWindow]:
    """Crash windows and metric windows, in the order of the points."""
    return sorted(crash_windows(points) + metric_windows(points), key=lambda w: (w.after_index, w.kind))
