"""Steps and crash windows as text: the step lines, the edge marks, the crash window's line and
the command that bisects it, the marks of the scan table."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hourly import options
from hourly.analysis.detect import DEFAULT_MIN_CHANGE, Change, EdgeCheck, EdgeVerdict, percent
from hourly.analysis.resolution import Resolution, resolution, size
from hourly.analysis.steps import (
    METRIC_KINDS,
    CrashWindow,
    all_windows,
    crash_windows,
    find_steps,
    metric_windows,
    standing,
    step_key,
)
from hourly.model import ScanReport, Step
from hourly.render.scan import arrow, noise_words, step_marks
from hourly.text.plurals import found, plural

if TYPE_CHECKING:
    from hourly.measure.settings import Settings


def edge_note(change: Change, check: EdgeCheck | None = None) -> str:
    """What an edge step means, and what measuring it again said, for a line that describes it
    ("" for any other step)."""
    if not change.edge:
        return ""
    if check is None or check.verdict is EdgeVerdict.UNMEASURED:
        why = "; measuring it again failed" if check is not None else ""
        return f"; edge step: one pair on its side{why}, measure it again to confirm"
    change_again = check.relative_change
    assert change_again is not None  # measured again (not UNMEASURED): check_edge sets the numbers
    again = (f"measured again ({check.samples_before} / {check.samples_after} samples):"
             f" {check.level_before:.4g} → {check.level_after:.4g} ({percent(change_again)})")
    if check.verdict is EdgeVerdict.CONFIRMED:
        return f"; edge step confirmed, {again}"
    if check.verdict is EdgeVerdict.REVERSED:
        return (f"; edge step NOT confirmed, {again}: the other way, so one run per pair cannot read this"
                " step (see below)")
    return f"; edge step NOT confirmed, {again}: the scan's value was an outlier, nothing to bisect"



def edge_verdict_mark(check: EdgeCheck | None) -> str:
    """What follows "edge" in an edge step's table mark: its verdict once measured again."""
    if check is None or check.verdict is EdgeVerdict.UNMEASURED:
        return ""
    return {EdgeVerdict.CONFIRMED: " ✔", EdgeVerdict.REVERSED: " ✖ reversed"}.get(check.verdict, " ✖ outlier")



def describe(step: Step, check: EdgeCheck | None = None) -> str:
    c = step.change
    n = step.numbers()
    sign = arrow(c.kind)
    moved = [f"{name} {getattr(step.before, name)[:10]}→{getattr(step.after, name)[:10]}"
             for name in ("xla", "jax") if getattr(step.before, name) != getattr(step.after, name)]
    return (f"{sign} {c.kind.value} {percent(n.relative_change)} ({n.levels()}, {n.counts()};"
            f" {c.strength:.0f}× its standard error) between {step.before.time} and {step.after.time}; "
            f"moved: {', '.join(moved) or 'nothing'}"
            + edge_note(c, check))



def bisect_command(w: CrashWindow, workdir: str) -> str:
    """The command that bisects a crash window to its commit (exit status: 0 good, else bad), or
    a fix window to the commit that fixed it (``--find-fix``: the good end is the later one); a
    metric window likewise by whether each state prints the metric (``--mode printed``)."""
    mode = "printed" if w.kind in METRIC_KINDS else "exit"
    if not w.bad:
        return options.command_line("bisect", {"find_fix": True, "mode": mode, "bad": w.before.time,
                                               "good": w.after.time, "workdir": workdir})
    return options.command_line("bisect", {"mode": mode, "good": w.before.time, "bad": w.after.time,
                                           "workdir": workdir})



def describe_crash(w: CrashWindow, workdir: str) -> str:
    moved = [f"{name} {getattr(w.before, name)[:10]}→{getattr(w.after, name)[:10]}"
             for name in ("xla", "jax") if getattr(w.before, name) != getattr(w.after, name)]
    what = {"crash": f"✖ crash: runs at {w.before.time}, {w.after.status} from {w.after.time}",
            "fix": f"✔ fix: {w.before.status} at {w.before.time}, runs again from {w.after.time}",
            "metric_lost": f"✖ metric lost: printed at {w.before.time}, runs without printing it "
                           f"({w.after.status}) from {w.after.time}",
            "metric_back": f"✔ metric back: {w.before.status} at {w.before.time}, printed again from "
                           f"{w.after.time}"}[w.kind]
    line = f"{what}; moved: {', '.join(moved) or 'nothing'}"
    return line + f"; {'bisect it' if w.bad else 'find the fix'}: {bisect_command(w, workdir)}"



CRASH_MARKS = {"crash": "✖ crash", "fix": "✔ fix", "metric_lost": "✖ no metric", "metric_back": "✔ metric"}


def crash_marks(windows: list[CrashWindow]) -> dict[int, str]:
    return {w.after_index: CRASH_MARKS[w.kind] for w in windows}



def marks_for_report(report: ScanReport, s: Settings) -> tuple[dict[int, str], list[str]]:
    """Marks for the scan table (at the first instant after each step, crash window or metric
    window) and one line per step and per window (an edge step with what measuring it again said).
    "no steps found" is never said over a window where the metric stopped: the steps are looked
    for in what was measured, and the windows are named."""
    from hourly.scan.table import gap_note
    gap = gap_note(report.points, s) if report.plan is None else None
    crashes = crash_windows(report.points)
    lost = metric_windows(report.points)
    marks, lines = crash_marks(crashes + lost), []
    if any(p.status == "ok" and p.value is not None for p in report.points):
        from hourly.scan.table import one_state, undecided_note
        steps, detection, groups = find_steps(report.points, s.higher_is_better)
        undecided = undecided_note(detection, s)
        checks = report.edge_checks or {}
        marks.update(step_marks(steps))
        for st in steps:
            if st.change.edge:
                check = checks.get(step_key(st))
                if check is not None and check.verdict in (EdgeVerdict.OUTLIER, EdgeVerdict.REVERSED):
                    # "edge ✖ outlier" is too wide for 80 columns
                    marks[st.after_index] = f"{arrow(st.change.kind)} {percent(st.change.relative_change)} {check.verdict.value}"
                else:
                    marks[st.after_index] += edge_verdict_mark(check)
        head = found(len(steps), "step")
        if not steps and (crashes or lost):
            head = "no step in the measured values; the benchmark changes how it ends:"
        elif not steps and gap:
            head = "no step found in the part measured so far (the scan is incomplete: see below)"
        elif not steps and (one := one_state(report.points)) is not None:  # nothing to compare
            head = f"the {one[0]}; {one[1]}"
        elif not steps and undecided:  # never "no steps found" from differences that may be the steps
            head = undecided
        res = resolution(detection, [len(g.samples or []) for g in groups])
        short = unresolved(res) if not steps and head == found(0, "step") else None
        head = short or head  # never "no steps found" below what the noise lets show
        lines = [head] + [describe(st, checks.get(step_key(st))) for st in steps]
        if steps and undecided:
            lines.append(f"more steps may hide: {undecided}")
        if res is not None and short is None:  # the unresolved head says it already
            lines.append(line(res))
    if crashes:
        lines += [f"{plural(len(crashes), 'crash window')} (running ↔ crashing):"]
        lines += [describe_crash(w, s.workdir) for w in crashes]
    if lost:
        lines += [f"{plural(len(lost), 'metric window')} (prints the metric ↔ runs without printing it):"]
        lines += [describe_crash(w, s.workdir) for w in lost]
    if gap:
        lines.append(gap)
    return marks, lines


# -- the scan's resolution (hourly.analysis.resolution) ---------------------------------------------

def evidence(r: Resolution, unit: str = "pair") -> str:
    """What the figure rests on: the points, their runs, their noise and the z a step needs."""
    return (f"{plural(r.points, unit)}, {plural(r.repeats, 'run')} each, noise {size(r.noise)} per {unit} "
            f"({noise_words(r.noise_source, unit)}), a step must be {r.threshold:.1f}× its standard error")


def line(r: Resolution, unit: str = "pair") -> str:
    """The resolution line under a scan's table."""
    return (f"resolution: a step of {size(r.relative, DEFAULT_MIN_CHANGE)} or more between any two neighbouring {unit}s shows; "
            f"smaller ones cannot be told from the noise ({evidence(r, unit)})")


def unresolved(r: Resolution | None, min_change: float = DEFAULT_MIN_CHANGE, unit: str = "pair") -> str | None:
    """The line that replaces "no steps found" when steps of ``min_change`` could not show; None
    when they could (or with no resolution: under two pairs)."""
    if r is None or r.resolves(min_change) or min_change <= 0:
        return None
    x = size(r.relative, min_change)
    return (f"no step of {x} or more; steps under {x} cannot be told from this "
            f"noise ({evidence(r, unit)})")



def found_anything(report: ScanReport, s: Settings) -> bool:
    """A step that stands (not an edge step measured again and called an outlier: that is no step
    found), a crash window or a metric window in the scan's table."""
    if all_windows(report.points):
        return True
    return any(p.status == "ok" and p.value is not None for p in report.points) and \
        bool(standing(find_steps(report.points, s.higher_is_better)[0], report.edge_checks))


def undecided_json(report: ScanReport, s: Settings) -> str | None:
    """For --json: why the scan's table cannot tell noise from steps, and the command that can
    (hourly.scan.table.undecided_note); None when its noise is a fair measure."""
    if not any(p.status == "ok" and p.value is not None for p in report.points):
        return None
    from hourly.scan.table import undecided_note
    return undecided_note(find_steps(report.points, s.higher_is_better)[1], s)


def windows_json(report: ScanReport) -> list[dict]:
    """Every crash window and metric window of a scan's table, for --json."""
    return [w.as_json() for w in all_windows(report.points)]
