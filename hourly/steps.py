"""Detection applied to scan results: group instants by pair, find steps, mark the table.

Consecutive instants that resolved to the same (xla, jax) pair share one measurement, so they are
one point for the detector (feeding the copies would fake a noiseless series). A step is reported
between the LAST instant of the pair before it and the FIRST instant of the pair after it.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from .detect import Change, Detection, detect, percent
from .model import PointResult, Step
from .render import arrow, step_marks
from .series import Series, SeriesPoint
from .words import found, plural


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
    n = step.numbers()
    sign = arrow(c.kind)
    moved = [f"{name} {getattr(step.before, name)[:10]}→{getattr(step.after, name)[:10]}"
             for name in ("xla", "jax") if getattr(step.before, name) != getattr(step.after, name)]
    return (f"{sign} {c.kind.value} {percent(n.relative_change)} ({n.levels()}, {n.counts()};"
            f" {c.strength:.0f}× its standard error) between {step.before.time} and {step.after.time}; "
            f"moved: {', '.join(moved) or 'nothing'}"
            + edge_note(c))


#: Point statuses where the benchmark ran to its end (exit 0), and where it did not.
RUNNING = ("ok", "no_metric")
CRASHING = ("crashed", "timeout")


@dataclass
class CrashWindow:
    """Where the benchmark goes from running to crashing (``crash``) or back (``fix``): the last
    instant of the pair before and the first instant of the pair after (build failures between
    them are passed over, like untestable states)."""

    kind: str  # "crash" or "fix"
    before: PointResult
    after: PointResult
    before_index: int
    after_index: int

    def as_json(self) -> dict:
        return {"kind": self.kind, "before": self.before.time, "after": self.after.time,
                "before_status": self.before.status, "after_status": self.after.status,
                "before_pair": {"xla": self.before.xla, "jax": self.before.jax},
                "after_pair": {"xla": self.after.xla, "jax": self.after.jax}}


def crash_windows(points: list[PointResult]) -> list[CrashWindow]:
    """Every window where the scan's points go from running (exit 0) to crashing or timing out,
    or back."""
    out: list[CrashWindow] = []
    last: tuple[bool, Group] | None = None
    for g in group_points(points):
        st = g.point.status
        if st not in RUNNING and st not in CRASHING:
            continue  # build failed, planned: says nothing about the benchmark
        crashing = st in CRASHING
        if last is not None and last[0] != crashing:
            out.append(CrashWindow("crash" if crashing else "fix", points[last[1].last], g.point,
                                   last[1].last, g.first))
        last = (crashing, g)
    return out


def bisect_command(w: CrashWindow, workdir: str) -> str:
    """The command that bisects a crash window to its commit (exit status: 0 good, else bad), or
    a fix window to the commit that fixed it (``--find-fix``: the good end is the later one)."""
    if w.kind == "fix":
        return shlex.join(["hourly", "bisect", "--find-fix", "--mode", "exit", "--bad", w.before.time,
                           "--good", w.after.time, "--workdir", workdir])
    return shlex.join(["hourly", "bisect", "--mode", "exit", "--good", w.before.time, "--bad", w.after.time,
                       "--workdir", workdir])


def describe_crash(w: CrashWindow, workdir: str) -> str:
    moved = [f"{name} {getattr(w.before, name)[:10]}→{getattr(w.after, name)[:10]}"
             for name in ("xla", "jax") if getattr(w.before, name) != getattr(w.after, name)]
    what = (f"✖ crash: runs at {w.before.time}, {w.after.status} from {w.after.time}" if w.kind == "crash"
            else f"✔ fix: {w.before.status} at {w.before.time}, runs again from {w.after.time}")
    line = f"{what}; moved: {', '.join(moved) or 'nothing'}"
    return line + f"; {'bisect it' if w.kind == 'crash' else 'find the fix'}: {bisect_command(w, workdir)}"


def crash_marks(windows: list[CrashWindow]) -> dict[int, str]:
    return {w.after_index: "✖ crash" if w.kind == "crash" else "✔ fix" for w in windows}


def marks_for_report(report, s) -> tuple[dict[int, str], list[str]]:
    """Marks for the scan table (at the first instant after each step or crash window) and one
    line per step and per crash window."""
    crashes = crash_windows(report.points)
    marks, lines = crash_marks(crashes), []
    if any(p.status == "ok" and p.value is not None for p in report.points):
        steps, _, _ = find_steps(report.points, s.higher_is_better)
        marks.update(step_marks(steps))
        lines = [found(len(steps), "step")] + [describe(st) for st in steps]
    if crashes:
        lines += [f"{plural(len(crashes), 'crash window')} (running ↔ crashing):"]
        lines += [describe_crash(w, s.workdir) for w in crashes]
    return marks, lines
