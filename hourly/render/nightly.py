"""Terminal output of ``hourly nightly``: the table of dates, the steps and the boundary (rich)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from hourly.model import Status
from hourly.nightly.plan import NightlyReport
from hourly.options import command_line
from hourly.render.console import PlainPrint
from hourly.render.scan import fmt_value, step_marks
from hourly.render.steps import describe, unresolved
from hourly.render.steps import line as resolution_line
from hourly.text.plurals import found, status_counts


def _short(sha: str | None, n: int = 10) -> str:
    return sha[:n] if sha else "-"


def table(report: NightlyReport) -> Table:
    """The guide's ``grep MLUPS OUT*``, readable: one row per date with image facts, every
    detected step marked (▼ worse, ▲ better) on the first date after it, and the boundary."""
    t = Table(title="hourly nightly", caption=f"images: {report.settings.image}")
    t.add_column("date", no_wrap=True)
    t.add_column("digest", no_wrap=True)
    t.add_column("xla", no_wrap=True)
    t.add_column("jax", no_wrap=True)
    if report.metrics is not None:  # one column per named metric, each with its steps' marks
        return _metrics_table(report, t)
    t.add_column("metric", justify="right", no_wrap=True)
    t.add_column("", no_wrap=True)
    marks = step_marks(report.steps)
    b = report.boundary
    for i, p in enumerate(report.points):
        mark = marks.get(i, "")
        if b and p is b.good:
            mark = "good"
        elif b and p is b.bad:
            mark = f"bad {mark}" if mark else f"bad ({p.status.value})"
        style = None if p.status is Status.OK else ("dim" if p.status is Status.MISSING else "red")
        t.add_row(p.date, _short((p.digest or "").removeprefix("sha256:") or None, 12),
                  _short(p.xla, 8), _short(p.jax, 8), fmt_value(p, digits=1, count=False), mark, style=style)
    return t


def _metrics_table(report: NightlyReport, t: Table) -> Table:
    marks = []
    for m in report.metrics or []:
        t.add_column(f"{m.name} {'↑' if m.higher_is_better else '↓'}", justify="right", no_wrap=True)
        marks.append(step_marks(m.steps))
    t.add_column("", no_wrap=True)
    b = report.boundary
    for i, p in enumerate(report.points):
        cells = [f"{q.value:.4g} {mk.get(i, '')}".rstrip() if q.value is not None else q.status.value
                 for q, mk in ((m.points[i], mk) for m, mk in zip(report.metrics or [], marks, strict=True))]
        edge = "good" if b and p is b.good else "bad" if b and p is b.bad else ""
        style = None if p.status is Status.OK else ("dim" if p.status is Status.MISSING else "red")
        t.add_row(p.date, _short((p.digest or "").removeprefix("sha256:") or None, 12),
                  _short(p.xla, 8), _short(p.jax, 8), *cells, edge, style=style)
    return t


def _metric_lines(report: NightlyReport) -> list[str]:
    """What each named metric did over the dates, and each step."""
    from hourly.analysis.moved import Verdict, summary
    metrics = report.metrics or []
    out = [f"per metric: {summary([m.moved for m in metrics])}" if metrics else
           "no named metric was recorded yet: no run printed a METRIC line"]
    for m in metrics:
        mv = m.moved
        if mv.verdict == Verdict.MOVED:
            out += [f"  {m.name}: {describe(st)}" for st in m.steps]
        elif mv.verdict == Verdict.UNCHANGED:
            out.append(f"  {m.name}: unchanged: no step of ±{mv.bound * 100:.1f} % or more with {mv.side} or more "
                       f"dates on each side (noise ±{mv.noise * 100:.2g} % per date, {mv.points} dates)")
        else:
            out.append(f"  {m.name}: {mv.verdict}: {mv.why}")
    return out


def print_report(console: Console, report: NightlyReport) -> None:
    kw: PlainPrint = dict(highlight=False, markup=False, soft_wrap=True)
    console.print(table(report))
    console.print(f"{status_counts(report.points, 'date')};"
                  f" {report.measured} measured now, the rest from {report.settings.workdir}", **kw)
    if report.metrics is not None:
        for line in _metric_lines(report):
            console.print(line, **kw)
    n = len(report.steps) if report.metrics is None else sum(len(m.steps) for m in report.metrics)
    gaps = report.gaps()
    blind = report.unresolved()
    unmeasured = bool(report.points) and all(p.status is Status.MISSING for p in report.points)
    if not n and unmeasured:  # never "no steps found" from no image at all (the error says why)
        console.print("no date has an image: no step could show", **kw)
    elif not n and report.boundary is None and report.none_measured():  # every run failed: nor from that
        console.print("no date measured the metric: no step could show", **kw)
    elif not n and report.undecided:  # never "no steps found" from differences that may be the steps
        console.print(report.undecided, **kw)
    elif blind:  # never "no steps found" below what the noise lets show
        line = unresolved(report.resolution, unit="date") or ""  # blind: a line, never None
        console.print(line + ("; the window is not all there:" if gaps else ""), **kw)
    elif n or not gaps:
        console.print(found(n, "step"), **kw)
    else:  # never "no steps found" over dates that hold no evidence
        measured = sum(p.status is not Status.MISSING for p in report.points)
        console.print(f"no step found among the {measured} dates measured; the window is not all there:", **kw)
    for g in gaps:
        span = g["from"] if g["from"] == g["to"] else f"{g['from']} .. {g['to']}"
        if g["kind"] == "not measured":
            console.print(f"  {span}: not measured yet (an interrupted run) — run the same `hourly nightly` "
                          "command again: it measures only what is missing", **kw)
        else:
            console.print(f"  {span}: no nightly image at the window's {'start' if g['from'] == report.points[0].date else 'end'}"
                          " — a change in those days would not show; move --from/--to to dates that have an "
                          "image, or scan those hours inside a neighbouring day's container (`hourly hunt`)", **kw)
    for st in report.steps if report.metrics is None else []:
        console.print(f"  {describe(st)}", **kw)
    if report.resolution is not None and not blind and report.metrics is None:
        console.print(resolution_line(report.resolution, "date"), **kw)
    if n and report.undecided:
        console.print(f"more steps may hide: {report.undecided}", **kw)
    b = report.boundary
    if b is None:
        if unmeasured:
            console.print("no boundary to hand over until a date has an image (below)", **kw)
        elif report.none_measured():
            console.print("no boundary to hand over until a date measures the metric (below)", **kw)
        elif report.undecided:
            console.print("no boundary to hand over until the dates tell noise from steps (above)", **kw)
        elif blind:
            console.print("no boundary to hand over until the dates are measured often enough to show a "
                          "step of 1% (below)", **kw)
        else:
            console.print("no slowdown between good days and no crash after a good day: nothing to hand "
                          "over", **kw)
        return
    if b.kind == "slower":
        assert b.change is not None  # find_boundary: a slowdown comes with its change
        what = f"{b.change * 100:+.1f}%"
    else:
        what = f"{b.bad.status.value}"
    console.print(f"\nboundary: {b.good.date} (good) → {b.bad.date} (bad, {what})", **kw)
    for side, p in (("good", b.good), ("bad", b.bad)):
        console.print(f"  {side}: xla {p.xla or '?'}  jax {p.jax or '?'}  {p.digest or ''}",
                      **kw)
    if (b.good.xla, b.good.jax) == (b.bad.xla, b.bad.jax):
        console.print("both images hold the same xla and jax commits: the change is in the container's "
                      "environment; the same dates through `"
                      + command_line("hunt", {"good_date": b.good.date, "bad_date": b.bad.date})
                      + "` show what differs between them", **kw)
        return
    console.print("next: start the good day's container, then scan the window hour by hour inside it:", **kw)
    for cmd in report.next_commands():
        console.print(f"  {cmd}", **kw)
