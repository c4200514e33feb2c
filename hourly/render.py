"""Terminal output: the scan table and its summary line (rich)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from .scan import PointResult, ScanReport
from .words import plural


def fmt_value(p: PointResult) -> str:
    if p.value is None:
        return p.status
    text = f"{p.value:.4g}"
    if p.spread is not None:
        text += f" ±{p.spread * 100:.2f}% (n={len(p.samples)})"
    return text


def scan_table(report: ScanReport, marks: dict[int, str] | None = None, title: str = "hourly scan") -> Table:
    t = Table(title=title)
    t.add_column("time (UTC)")
    t.add_column("xla")
    t.add_column("jax")
    t.add_column("metric", justify="right")
    t.add_column("")
    marks = marks or {}
    prev = None
    for i, p in enumerate(report.points):
        same = prev is not None and (prev.xla, prev.jax) == (p.xla, p.jax)
        style = None if p.status in ("ok", "cached", "built", "planned") else "red"
        t.add_row(p.time, p.xla[:10], p.jax[:10], fmt_value(p), marks.get(i, "" if not same else "·"),
                  style=style)
        prev = p
    return t


def summary_line(report: ScanReport) -> str:
    n = len(report.points)
    pairs = plural(report.distinct_pairs, "distinct (xla, jax) pair")
    if report.plan is None:
        return f"{plural(report.builds, 'build')} for {plural(n, 'instant')} ({pairs})"
    p = report.plan
    lines = [f"dry run: {plural(n, 'instant')}, {pairs}", f"the scan would run {plural(p.builds, 'build')}"]
    if p.measured is None:
        lines.append(f"{plural(p.built, 'pair')} already built (add --bench-cmd to count those measured)")
    else:
        lines.append(f"{plural(p.built, 'pair')} already built, {p.measured} measured")
    return "\n".join(lines)


def print_report(console: Console, report: ScanReport, marks: dict[int, str] | None = None) -> None:
    console.print(scan_table(report, marks))
    console.print(summary_line(report))


@contextmanager
def progress_bar(console: Console, unit: str, describe: Callable[[object], str]) -> Iterator[Callable]:
    """A progress bar (done/total, current item, time left); yields ``on_progress(done, total, item)``
    where ``item`` is what is being worked on now (None between items: the bar shows ``unit``)."""
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeRemainingColumn(), console=console, transient=True) as progress:
        task = progress.add_task(unit, total=None)

        def on_progress(done: int, total: int, item) -> None:
            progress.update(task, completed=done, total=total,
                            description=describe(item) if item else unit)

        yield on_progress
