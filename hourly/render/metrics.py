"""A scan that records several named metrics (``--metrics``, the per-phase harness): the table with
one column per metric, what each metric did ("lower_ms +31.0 %, step_ms unchanged (within ±1.2 %)"),
each step with the ``hourly bisect`` command of its metric's window, and the same for --json."""

from __future__ import annotations

import shlex
from typing import Any

from rich.table import Table
from rich.text import Text

from hourly.analysis.moved import Verdict, summary
from hourly.analysis.steps import CrashWindow, crash_windows, step_key
from hourly.model import ScanReport, Step
from hourly.options import command_line, join
from hourly.render.scan import _rev, counts_line, step_marks, summary_line
from hourly.render.steps import bisect_command, describe, describe_crash
from hourly.scan.table import MetricFinding, findings
from hourly.text.plurals import plural


def step_command(st: Step, metric: str, workdir: str) -> str:
    """The bisection of one metric's step: its window, the metric selected (a regression: the
    commit that made it worse; an improvement: the one that made it better, ``--find-fix``)."""
    ends: list[tuple[str, Any]] = ([("good", st.before.time), ("bad", st.after.time)] if st.kind.value == "regression"
                                   else [("find_fix", True), ("bad", st.before.time), ("good", st.after.time)])
    return command_line("bisect", [("metric", metric), *ends, ("workdir", workdir)])


def window_command(w: CrashWindow, metric: str, workdir: str) -> str:
    """A metric window's bisection (``--mode printed``) for one named metric."""
    argv = shlex.split(bisect_command(w, workdir))
    return join([*argv[:2], "--metric", metric, *argv[2:]])


def table(report: ScanReport, found: list[MetricFinding]) -> Table:
    """One row per instant, one column per metric: its value (the median of each run's value; a run
    that printed many samples gives one, their median) and the mark of each of its steps."""
    t = Table(title="hourly scan: every metric", show_edge=False, pad_edge=False)
    t.add_column("time (UTC)")
    t.add_column("xla")
    t.add_column("jax")
    marks = []
    for f in found:
        better = "↑" if f.metric.higher_is_better else "↓"
        t.add_column(f"{f.metric.name} {better}", justify="right")
        marks.append(step_marks(f.moved.steps))
    prev = None
    for i, p in enumerate(report.points):
        same = prev is not None and (prev.xla, prev.jax) == (p.xla, p.jax)
        cells = []
        for f, mk in zip(found, marks, strict=True):
            q = f.metric.points[i]
            text = f"{q.value:.4g}" if q.value is not None else str(q.status)
            mark = mk.get(i, "·" if same else "")
            cells.append(Text(f"{text} {mark}".rstrip(), style="red" if q.status not in ("ok", "planned") else ""))
        t.add_row(p.time, _rev(p.xla), _rev(p.jax), *cells)
        prev = p
    return t


def lines(report: ScanReport, s: Any, found: list[MetricFinding]) -> list[str]:
    """The summary over every metric, then per metric its steps (each with its bisect command),
    its metric windows, or why it is unchanged or cannot tell; the crash windows once (a crash
    ends the run for every metric)."""
    from hourly.scan.table import gap_note
    out = [f"per metric: {summary([f.moved for f in found])}" if found else
           "no named metric was recorded yet: no run printed a METRIC line"]
    for f in found:
        m, name = f.moved, f.metric.name
        checks = f.metric.edge_checks or {}
        if m.verdict == Verdict.MOVED:
            for st in m.steps:
                check = checks.get(step_key(st))
                verb = "bisect it" if st.kind.value == "regression" else "find what made it better"
                out.append(f"{name}: {describe(st, check)}; {verb}: {step_command(st, name, s.workdir)}")
        elif m.verdict == Verdict.UNCHANGED:
            assert m.bound is not None and m.noise is not None and m.side is not None
            out.append(f"{name}: unchanged: no step of ±{m.bound * 100:.1f} % or more with {m.side} or more points on "
                       f"each side (noise ±{m.noise * 100:.2g} % per point, {plural(m.points, 'point')})")
        else:
            out.append(f"{name}: {m.verdict}: {m.why}")
        for w in f.windows:
            head = describe_crash(w, s.workdir).split("; bisect it:")[0].split("; find the fix:")[0]
            out.append(f"{name}: {head}; {'bisect it' if w.bad else 'find the fix'}: {window_command(w, name, s.workdir)}")
    crashes = crash_windows(report.points)
    if crashes:
        out.append(f"{plural(len(crashes), 'crash window')} (running ↔ crashing, every metric):")
        out += [describe_crash(w, s.workdir) for w in crashes]
    gap = gap_note(report.points, s) if report.plan is None else None
    if gap:
        out.append(gap)
    return out


def print_report(console: Any, report: ScanReport, s: Any) -> None:
    from hourly.render.console import print_wrapped
    found = findings(report)
    console.print(table(report, found))
    for line in summary_line(report).splitlines():
        print_wrapped(console, line)
    note = counts_line(report)
    if note:
        print_wrapped(console, note)
    for line in lines(report, s, found):
        print_wrapped(console, line)


def as_json(report: ScanReport, s: Any) -> dict:
    """``metrics``: per metric its direction, points, steps (each with its bisect command), metric
    windows, edge checks and what it did; ``moved``: the one-line summary."""
    found = findings(report)
    out: dict[str, Any] = {}
    for f in found:
        steps = []
        for st in f.moved.steps:
            d = st.as_json()
            d["bisect"] = step_command(st, f.metric.name, s.workdir)
            steps.append(d)
        out[f.metric.name] = {
            "higher_is_better": f.metric.higher_is_better,
            "points": [p.as_json() for p in f.metric.points],
            **f.moved.as_json(), "steps": steps,
            "windows": [dict(w.as_json(), bisect=window_command(w, f.metric.name, s.workdir)) for w in f.windows],
            "edge_checks": f.metric.edge_json or []}
    return {"metrics": out, "moved": summary([f.moved for f in found])}


def found_anything(report: ScanReport) -> bool:
    """A step or a metric window in any metric, or a crash window."""
    return bool(crash_windows(report.points)) or any(f.moved.steps or f.windows for f in findings(report))

