"""Terminal output of the scan and of detection (rich): every table, mark and value format."""

from __future__ import annotations

import math
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from hourly.analysis.series import PointStatus, Series
from hourly.measure.pinned import pinned_line
from hourly.model import NightlyPoint, PointResult, ScanReport, Step
from hourly.render.console import print_wrapped
from hourly.text.plurals import plural

if TYPE_CHECKING:  # detection pulls in numpy
    from hourly.analysis.detect import Change, ChangeKind, Detection


def fmt_value(p: PointResult | NightlyPoint, digits: int = 2, count: bool = True) -> str:
    """A point's metric cell: the value with its spread (and sample count), or its status."""
    if p.value is None:
        return str(p.status)
    text = f"{p.value:.4g}"
    if p.spread is not None:
        text += f" ±{p.spread * 100:.{digits}f}%" + (f" (n={len(p.samples)})" if count else "")
    return text


def arrow(kind: ChangeKind) -> str:
    """The one mark of a step's direction: ▼ a regression, ▲ an improvement."""
    return "▼" if kind.value == "regression" else "▲"


def step_marks(steps: Sequence[Step]) -> dict[int, str]:
    """Table marks by point index: "▼ -9.9%" at the first point after each step."""
    return {st.after_index: f"{arrow(st.kind)} {_pct(st.change.relative_change)}" + (" edge" if st.change.edge else "")
            for st in steps}


def scan_table(report: ScanReport, marks: dict[int, str] | None = None, title: str = "hourly scan") -> Table:
    if (report.pairing or {}).get("pairing") == "pin":
        title += " (pin pairing)"
    t = Table(title=title, show_edge=False, pad_edge=False)  # fits 80 columns with 99 samples and a mark
    pinned = (report.pinned or {}).get("side")
    # every point measured as often (the usual case): the count once, in the header
    counts = {len(p.samples) for p in report.points if p.value is not None and p.spread is not None}
    count = counts.pop() if len(counts) == 1 else None
    t.add_column("time (UTC)")
    t.add_column("xla (pinned)" if pinned == "xla" else "xla")
    t.add_column("jax (pinned)" if pinned == "jax" else "jax")
    t.add_column("metric" if count is None else f"metric (n={count})", justify="right")
    t.add_column("step")
    behind = any(report.behind_pin(p) for p in report.points)
    if behind:  # time pairing: the XLA commit is older than the JAX commit's own pin (docs/scan.md)
        t.add_column("xla vs jax's pin")
    marks = marks or {}
    prev = None
    for i, p in enumerate(report.points):
        same = prev is not None and (prev.xla, prev.jax) == (p.xla, p.jax)
        style = None if p.status in ("ok", "cached", "built", "planned") else "red"
        pin = report.behind_pin(p)
        extra = [Text(f"older than pin {pin[:10]}" if pin else "")] if behind else []
        t.add_row(p.time, _rev(p.xla), _rev(p.jax), fmt_value(p, count=count is None), marks.get(i, "" if not same else "·"),
                  *extra, style=style)
        prev = p
    return t


def _rev(value: str) -> Text:
    """A commit cell: a SHA shortened, a pinned jaxlib's label (``jaxlib-0.4.14``) whole; never markup."""
    return Text(value[:10] if all(c in "0123456789abcdef" for c in value) else value)


def pairing_lines(report: ScanReport) -> list[str]:
    """How JAX and XLA were paired, and (time pairing) the pairs older than their JAX commit's pin."""
    notes = report.pairing or {}
    if notes.get("pairing") == "pin":
        return ["pairing: pin (each JAX commit with the XLA commit its pin names)"]
    behind = notes.get("behind_pin") or {}
    out = []
    if behind:
        failed = {f"{p.xla}:{p.jax}" for p in report.points if p.status == "build_failed"} & set(behind)
        out.append(f"pairing: time; {plural(len(behind), 'pair')} combine{'s' if len(behind) == 1 else ''} a JAX commit with an XLA commit older than "
                   "its pin (marked \"older than pin\"): such a pair may not build, JAX may need an XLA feature it "
                   "does not have yet" + (f"; {len(failed)} of them failed to build, likely for that reason" if failed else ""))
    unknown = notes.get("unknown") or {}
    if unknown:
        out.append(f"{plural(len(unknown), 'JAX commit')} pin{'s' if len(unknown) == 1 else ''} an XLA commit the XLA checkout does not have "
                   f"(e.g. {next(iter(unknown.values()))[:12]}): fetch it to check those pairs against their pins")
    return out


def summary_line(report: ScanReport) -> str:
    n = len(report.points)
    pairs = plural(report.distinct_pairs, "distinct (xla, jax) pair")
    pinned = pinned_line(report.pinned)
    held = ("; " + pinned) if pinned else ""
    notes = "".join("\n" + line for line in pairing_lines(report))
    if report.plan is None:
        return f"{plural(report.builds, 'build')} for {plural(n, 'instant')} ({pairs}){held}" + notes
    p = report.plan
    lines = [f"dry run: {plural(n, 'instant')}, {pairs}{held}", f"the scan would run {plural(p.builds, 'build')}"]
    if p.measured is None:
        lines.append(f"{plural(p.built, 'pair')} already built (add --bench-cmd to count those measured)")
    else:
        lines.append(f"{plural(p.built, 'pair')} already built, {p.measured} measured")
    return "\n".join(lines + pairing_lines(report))


def counts_line(report: ScanReport) -> str | None:
    """How many runs and samples each value rests on, when runs printed many samples."""
    every = [p for m in report.metrics for p in m.points] if report.metrics is not None else report.points
    pts = [p for p in every if p.run_samples is not None and p.samples]
    if not pts:
        return None
    runs = sorted({len(p.samples) for p in pts})
    per = sorted({round(p.run_samples / len(p.samples)) for p in pts if p.run_samples})
    head = "each value: one run's value" if runs == [1] else f"each value: the median of {'/'.join(map(str, runs))} runs' values"
    return (f"{head}, a run's value the median of its own samples ({'/'.join(map(str, per))} a run); runs, "
            "not samples, are what detection and bisection count")


def print_report(console: Console, report: ScanReport, marks: dict[int, str] | None = None) -> None:
    console.print(scan_table(report, marks))
    for line in summary_line(report).splitlines():
        print_wrapped(console, line)


@contextmanager
def progress_bar(console: Console, unit: str, describe: Callable[[object], str]) -> Iterator[Callable]:
    """A progress bar (done/total, current item, time left); yields ``on_progress(done, total, item)``
    where ``item`` is what is being worked on now (None between items: the bar shows ``unit``)."""
    with Progress(TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
                  TimeRemainingColumn(), console=console, transient=True) as progress:
        task = progress.add_task(unit, total=None)

        def on_progress(done: int, total: int, item: Any) -> None:
            progress.update(task, completed=done, total=total,
                            description=describe(item) if item else unit)

        yield on_progress


# -- detection -----------------------------------------------------------------------------------

def _pct(x: float) -> str:
    from hourly.analysis.detect import percent
    return percent(x)


#: How detection estimated the noise (hourly.analysis.detect.Detection.noise_source), in words.
NOISE_SOURCES = {
    "repeats": "from the repeats within each pair",
    "successive differences": "from the differences between neighbouring points",
    "both": "from the repeats within each pair and the differences between neighbouring points",
    "prior": "assumed: too few points to estimate it",
    "none": "no points to estimate it from",
}


def noise_words(source: str, unit: str = "pair") -> str:
    return NOISE_SOURCES.get(source, source).replace("within each pair", f"within each {unit}")


def format_change(change: Change, labels: Sequence[str], before_labels: Sequence[str] | None = None,
                  edge: str | None = None) -> str:
    """One line per step, as an engineer would file it.

    e.g. "regression -9.9% between c and e: 100 -> 90.1 (51 sigma)"; an edge step (one point
    on its side) says so, since that point should be measured again before bisecting. ``edge``:
    what replaces that clause, when the step was measured again (hourly.render.steps.edge_note).
    """
    if edge is None:
        edge = "; edge step: one point on its side, measure it again to confirm" if change.edge else ""
    return (f"{change.kind.value} {_pct(change.relative_change)} between "
            f"{(before_labels or labels)[change.before_index]} and {labels[change.after_index]}: "
            f"{change.level_before:.4g} -> {change.level_after:.4g} "
            f"(n={change.n_before} / n={change.n_after} points; step {change.strength:.0f}x its standard error)"
            + edge)


def change_marks(changes: Sequence[Change], failed: Sequence[int] = (),
                 outliers: Sequence[int] = ()) -> dict[int, str]:
    """Marks for a table of the points, by index: where each step lands, and what was set aside.

    The first point after a step gets "▼ regression -9.9%" (▲ for an improvement); points
    between the two sides of a step (failed or outliers) get "│". Outliers elsewhere get
    "outlier". Usable as ``marks`` of hourly.render.scan.scan_table.
    """
    marks: dict[int, str] = {i: "outlier" for i in outliers}
    for c in changes:
        marks[c.after_index] = f"{arrow(c.kind)} {c.kind.value} {_pct(c.relative_change)}" + (" edge" if c.edge else "")
        for i in range(c.before_index + 1, c.after_index):
            marks[i] = "│" + (" outlier" if i in outliers else "")
    return marks


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def detection_json(series: Series, found: Detection) -> dict:
    """The --json object: points with status, and every change with the labels around it."""
    labels = series.labels
    return {
        "points": [{"label": p.label, "value": p.value, "status": str(p.status)} for p in series.points],
        "changes": [{
            "before": series.before_labels[c.before_index], "after": labels[c.after_index],
            "from_value": c.level_before, "to_value": c.level_after,
            "relative_change": _finite(c.relative_change), "kind": c.kind.value, "edge": c.edge,
            "n_before": c.n_before, "n_after": c.n_after,
        } for c in found.changes],
    }


def detection_table(series: Series, found: Detection, title: str = "hourly detect") -> Table:
    marks = change_marks(found.changes, found.failed, found.outliers)
    t = Table(title=title)
    t.add_column("label")
    t.add_column("value", justify="right")
    t.add_column("status")
    t.add_column("step")
    for i, p in enumerate(series.points):
        if p.value is None:
            value = "—"
        elif len(p.samples) > 1:
            value = f"{p.value:.4g} (n={len(p.samples)})"
        else:
            value = f"{p.value:.4g}"
        style = "red" if p.status is PointStatus.FAILED else None
        t.add_row(p.label, value, str(p.status), marks.get(i, ""), style=style)
    return t
