"""Terminal output of ``hourly hunt``: one table, one row per step or crash window (rich).

Every cell that comes from outside (commit subjects, image names, reasons) is a plain ``Text``,
so rich never interprets it as markup.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from hourly.answers import HuntRow
from hourly.hunt.run import HuntReport
from hourly.render.console import PlainPrint


def _value(v: float | None) -> str:
    return "-" if v is None else f"{v:.4g}"


def _size(row: HuntRow) -> str:
    if row.kind == "crash":
        return "crash"
    a, b = row.from_value, row.to_value
    if a in (None, 0) or b is None:
        return "-"
    return f"{(b - a) / a * 100:+.1f}%"


def answer_text(row: HuntRow) -> str:
    """The culprit (repo, SHA, subject, link), or the range and why (after the releases that
    framed the window, with --from-release)."""
    releases = "; ".join(f"between jax {r['last_good']} and {r['first_bad']}" for r in row.release or [])
    text = _answer(row)
    return f"{releases}\n{text}" if releases else text


def _answer(row: HuntRow) -> str:
    if row.error:
        return f"not bisected: {row.error}"
    c = row.culprit
    if c:
        return f"{c.repo} {c.sha[:12]} {c.subject}\n{c.link}"
    parts = []
    scan = row.scan
    if scan:
        parts.append(f"hourly scan: {scan['instants']} instants every {scan['step']}, {scan['pairs']} pairs")
    if row.range:
        parts.append(f"range of {len(row.range)} commit(s): " + " ".join(s[:10] for s in row.range))
    if row.reason:
        parts.append(row.reason)
    for d in row.environment or []:
        parts.append(f"  {d['name']}: {d['good'] or '(unset)'} → {d['bad'] or '(unset)'}")
    return "\n".join(parts) or "-"


def table(report: HuntReport) -> Table:
    t = Table(title="hourly hunt")
    for col in ("good day", "bad day", "kind", "size", "answer", "builds", "runs"):
        t.add_column(col, no_wrap=col not in ("answer",))
    for row in report.rows:
        kind = row.kind + (f" of {row.metric}" if row.metric else "")  # a named metric's window
        t.add_row(Text(row.good_date), Text(row.bad_date), Text(kind), Text(_size(row)),
                  Text(answer_text(row)), Text(str(row.builds)), Text(str(row.runs)))
    return t


def print_report(console: Console, report: HuntReport) -> None:
    kw: PlainPrint = dict(highlight=False, markup=False, soft_wrap=True)
    if report.releases is not None:
        from hourly.hunt.from_releases import describe_step
        steps = report.releases.steps if report.releases.metrics is None else [  # every named metric's
            st for m in report.releases.metrics for st in m.steps]
        hunted = [st for st in steps if st.kind in ("regression", "crash")]
        if not hunted and report.releases.undecided:  # never "nothing to hunt" from differences that may be steps
            console.print(f"no window to hunt yet: {report.releases.undecided}", **kw)
            return
        if not hunted:
            console.print("no regression and no crash between the releases: nothing to hunt", **kw)
            return
        for st in hunted:
            console.print(describe_step(st), **kw)
    undecided = getattr(report.nightly, "undecided", None)
    if not report.rows and undecided:
        console.print(f"no window to hunt yet: {undecided}", **kw)
        return
    if not report.rows and report.releases is None and report.nightly is not None and report.nightly.unresolved():
        from hourly.render.steps import unresolved  # never "nothing to hunt" below what the noise lets show
        console.print(f"no window to hunt yet: {unresolved(report.nightly.resolution, unit='date')}", **kw)
        return
    if not report.rows:
        console.print("no regression and no crash window at the daily level: nothing to hunt", **kw)
        return
    console.print(table(report))
    console.print(report.counts(), **kw)  # never "bisected now" for a window answered without a bisection
    from hourly.render.explain import explained_stage_lines
    for row in report.rows:
        for ex in row.explained or []:
            console.print(f"{row.good_date} → {row.bad_date}:", **kw)
            for line in explained_stage_lines(ex):
                console.print(line, **kw)
