"""`hourly detect [SOURCE]`: find every step in a series and say which are regressions.

SOURCE is a workdir holding a results store (default ./hourly-work), a CSV with `label,value`
columns (by its .csv suffix), or otherwise the output of `grep METRIC OUT*`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Optional, Sequence

import typer
from rich.console import Console
from rich.table import Table

from ..bench import DEFAULT_METRIC_REGEX
from ..detect import DEFAULT_MIN_CHANGE, Change, ChangeKind, Detection, detect as detect_steps, percent
from ..errors import UsageError, UserError
from ..series import PointStatus, Series, load_csv, load_grep_text
from ..words import plural

DEFAULT_SOURCE = "./hourly-work"


def load_series(source: str | None, metric_regex: str = DEFAULT_METRIC_REGEX) -> Series:
    """The series behind SOURCE: a workdir's store, a CSV or grep output."""
    path = Path(source if source is not None else DEFAULT_SOURCE)
    if path.is_dir():
        try:
            from ..store_series import load_store_series  # written with the results store
        except ImportError as e:  # pragma: no cover - until the store loader is wired in
            raise UserError(f"{path} is a directory, and this build cannot read a results store",
                            "pass the grep output or CSV file instead") from e
        return load_store_series(path)
    if not path.exists():
        if source is None:
            raise UserError(f"no results store at {DEFAULT_SOURCE}",
                            "run `hourly scan` first, or pass a file: `hourly detect runs.txt`")
        raise UserError(f"{path}: no such file or directory",
                        "give a workdir, a CSV with label,value columns, or `grep METRIC OUT*` output")
    if path.suffix.lower() == ".csv":
        return load_csv(path)
    return load_grep_text(path, metric_regex)


def _stored_direction(source: str | None) -> bool:
    """The direction stored with a workdir's scan; higher is better for files and old stores."""
    path = Path(source if source is not None else DEFAULT_SOURCE)
    if not path.is_dir():
        return True
    from ..store_series import stored_direction
    found = stored_direction(path)
    return True if found is None else found


def _pct(x: float) -> str:
    return percent(x)


def format_change(change: Change, labels: Sequence[str], before_labels: Sequence[str] | None = None) -> str:
    """One line per step, as an engineer would file it.

    e.g. "regression -9.9% between c and e: 100 -> 90.1 (51 sigma)"; an edge step (one point
    on its side) says so, since that point should be measured again before bisecting.
    """
    return (f"{change.kind.value} {_pct(change.relative_change)} between "
            f"{(before_labels or labels)[change.before_index]} and {labels[change.after_index]}: "
            f"{change.level_before:.4g} -> {change.level_after:.4g} "
            f"({change.strength:.0f} sigma)"
            + ("; edge step: one point on its side, measure it again to confirm" if change.edge else ""))


def change_marks(changes: Sequence[Change], failed: Sequence[int] = (),
                 outliers: Sequence[int] = ()) -> dict[int, str]:
    """Marks for a table of the points, by index: where each step lands, and what was set aside.

    The first point after a step gets "▼ regression -9.9%" (▲ for an improvement); points
    between the two sides of a step (failed or outliers) get "│". Outliers elsewhere get
    "outlier". Usable as ``marks`` of hourly.render.scan_table.
    """
    marks: dict[int, str] = {i: "outlier" for i in outliers}
    for c in changes:
        arrow = "▼" if c.kind is ChangeKind.REGRESSION else "▲"
        marks[c.after_index] = f"{arrow} {c.kind.value} {_pct(c.relative_change)}" + (" edge" if c.edge else "")
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


def detect(
    source: Optional[str] = typer.Argument(
        None, help="Workdir with a results store (default ./hourly-work), a CSV with "
                   "label,value columns, or the output of `grep METRIC OUT*`."),
    metric_regex: str = typer.Option(DEFAULT_METRIC_REGEX, "--metric-regex",
                                     help="Regex with a (?P<value>...) group, for grep output."),
    higher_is_better: Optional[bool] = typer.Option(None, "--higher-is-better/--lower-is-better",
                                                    help="Direction of the metric: higher (throughput, e.g. MLUPS) "
                                                         "or lower (times) [default: the stored scan's for a "
                                                         "workdir, else higher]."),
    min_change: Optional[float] = typer.Option(None, "--min-change",
                                               help="Ignore steps smaller than this relative change, "
                                                    f"e.g. 0.02 for 2%; 0 reports every significant step "
                                                    f"[default: {DEFAULT_MIN_CHANGE:g}]."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object instead of a table."),
) -> None:
    """Find every step in a series: regressions and improvements, each with its window."""
    if min_change is not None and not (min_change >= 0 and math.isfinite(min_change)):
        raise UsageError(f"--min-change {min_change} is not a relative change",
                         "give a fraction >= 0, e.g. --min-change 0.02 for 2%")
    series = load_series(source, metric_regex)
    if higher_is_better is None:
        higher_is_better = _stored_direction(source)
    found = detect_steps(series.detector_input(), higher_is_better=higher_is_better,
                         min_change=min_change)
    if json_out:
        typer.echo(json.dumps(detection_json(series, found)))
        return
    console = Console()
    console.print(detection_table(series, found))
    good = len(series) - len(found.failed)
    console.print(f"{plural(len(series), 'point')} ({good} ok, {len(found.failed)} failed"
                  + (f", {plural(len(found.outliers), 'outlier')}"
                     if found.outliers else "")
                  + f"); noise {found.relative_noise * 100:.2f}% per point ({found.noise_source})")
    if not found.changes:
        console.print("no step found")
    for c in found.changes:
        console.print(format_change(c, series.labels, series.before_labels), markup=False, highlight=False)
