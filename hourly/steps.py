"""Detection applied to scan results: group instants by pair, find steps, mark the table.

Consecutive instants that resolved to the same (xla, jax) pair share one measurement, so they are
one point for the detector (feeding the copies would fake a noiseless series). A step is reported
between the LAST instant of the pair before it and the FIRST instant of the pair after it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .detect import Change, Detection, detect, percent
from .model import PointResult, Step
from .render import arrow, step_marks
from .series import Series, SeriesPoint
from .words import found


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


def group_points(points: list[PointResult]) -> list[Group]:
    groups: list[Group] = []
    for i, p in enumerate(points):
        if groups and (groups[-1].point.xla, groups[-1].point.jax) == (p.xla, p.jax):
            groups[-1].last = i
        else:
            groups.append(Group(i, i, p))
    return groups


def find_steps(points: list[PointResult], higher_is_better: bool = True,
               min_change: float | None = None) -> tuple[list[Step], Detection, list[Group]]:
    groups = group_points(points)
    detection = detect([g.samples for g in groups], higher_is_better=higher_is_better, min_change=min_change)
    steps = []
    for c in detection.changes:
        b, a = groups[c.before_index], groups[c.after_index]
        steps.append(Step(c, points[b.last], points[a.first], b.last, a.first))
    return steps, detection, groups


def series_from_points(points: list[PointResult], source: str = "") -> Series:
    """A :class:`~hourly.series.Series` of one point per pair-run, labelled by its first instant;
    ``last_label`` carries the run's last instant (the label of a step's "before" side)."""
    return Series(tuple(SeriesPoint(p.point.time, tuple(p.samples or ()), last_label=points[p.last].time)
                        for p in group_points(points)), source)


def edge_note(change: Change) -> str:
    """What an edge step means, for a line that describes it ("" for any other step)."""
    if not change.edge:
        return ""
    return "; edge step: one pair on its side, measure it again to confirm"


def describe(step: Step) -> str:
    c = step.change
    sign = arrow(c.kind)
    moved = [name for name in ("xla", "jax") if getattr(step.before, name) != getattr(step.after, name)]
    return (f"{sign} {c.kind.value} {percent(c.relative_change)} ({c.level_before:.4g} → {c.level_after:.4g},"
            f" z={c.strength:.0f}) between {step.before.time} and {step.after.time}; "
            f"moved: {', '.join(moved) or 'nothing'}"
            f" (xla {step.before.xla[:10]}→{step.after.xla[:10]}, jax {step.before.jax[:10]}→{step.after.jax[:10]})"
            + edge_note(c))


def marks_for_report(report, s) -> tuple[dict[int, str], list[str]]:
    """Marks for the scan table (at the first instant after each step) and one line per step."""
    if not any(p.status == "ok" for p in report.points):
        return {}, []
    steps, _, _ = find_steps(report.points, s.higher_is_better)
    marks = step_marks(steps)
    lines = [found(len(steps), "step")] + [describe(st) for st in steps]
    return marks, lines
