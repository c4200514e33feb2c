"""`hourly detect [SOURCE]`: find every step in a series and say which are regressions.

SOURCE is a workdir holding a results store (default ./hourly-work), a CSV with `label,value`
columns (by its .csv suffix), or otherwise the output of `grep METRIC OUT*`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from hourly.errors import UsageError
from hourly.metric import compile_metric_regex
from hourly.options import command_line
from hourly.text.plurals import plural

from .common import command, shared_direction

if TYPE_CHECKING:  # detection pulls in numpy: imported where a command runs it
    from hourly.analysis.detect import Detection, EdgeCheck
    from hourly.analysis.resolution import Resolution
    from hourly.analysis.series import Series


@command("detect")
def detect(
    source: Optional[str] = typer.Argument(
        None, help="Workdir with a results store (default ./hourly-work), a CSV with "
                   "label,value columns, the output of `grep METRIC OUT*`, or - for standard input."),
    *,
    metric_regex: str,
    higher_is_better: Optional[bool],
    min_change: Optional[float],
    json_out: bool,
    config: Optional[str],
) -> None:
    """Find every step in a series: regressions and improvements, each with its window."""
    if min_change is not None and not (min_change >= 0 and math.isfinite(min_change)):
        raise UsageError(f"--min-change {min_change} is not a relative change",
                         "give a fraction >= 0, e.g. --min-change 0.02 for 2%")
    compile_metric_regex(metric_regex)  # a bad regex is an error before any input is read
    from hourly.analysis.detect import detect as detect_steps
    from hourly.render.scan import detection_json, detection_table, format_change, noise_words
    from hourly.scan.sources import DEFAULT_SOURCE, STDIN, load_series, load_text
    if source == STDIN:  # `grep -H MLUPS OUT* | hourly detect -`
        import sys
        series = load_text(sys.stdin.read(), "<stdin>", metric_regex)
    else:
        _require_a_scan_in(Path(source if source is not None else DEFAULT_SOURCE))
        series = load_series(source, metric_regex)
    from .common import err_console
    if series.dropped_note():  # nothing is left out of the input without a word
        err_console.print(f"hourly: warning: {series.dropped_note()}", markup=False, highlight=False, soft_wrap=True)
    if series.unreadable_note():  # a failed point says why: the value it could not read
        err_console.print(f"hourly: warning: {series.unreadable_note()}", markup=False, highlight=False, soft_wrap=True)
    if higher_is_better is None:  # as --higher-is-better's help says: the store's, else hourly.toml's
        from hourly.scan.sources import stored_direction_of
        higher_is_better = stored_direction_of(source)
    higher_is_better = shared_direction(higher_is_better, config)
    found = detect_steps(series.detector_input(), higher_is_better=higher_is_better,
                         min_change=min_change)
    checks = _edge_checks(series, found)
    # a workdir's edge step that its scan measured again and found an outlier is no step (as in
    # scan and show): said as such, and the rest is judged as if it were not found
    stand = [c for c, check in zip(found.changes, checks, strict=True) if not _outlier(check)]
    from hourly.analysis.steps import too_short
    why = too_short(found)  # never "no step found" from differences that may be the steps
    undecided = None
    if why is not None:
        from hourly.scan.sources import undecided_fix
        undecided = f"{why}; {undecided_fix(source, found)}"
    from hourly.analysis.detect import DEFAULT_MIN_CHANGE
    from hourly.analysis.resolution import resolution
    floor = DEFAULT_MIN_CHANGE if min_change is None else min_change
    res = resolution(found, [len(p.samples) for p in series.points])  # the smallest step that could show
    if json_out:
        from hourly.scan.sources import resolution_fix
        res_json = None if res is None else {
            **res.as_json(floor), "fix": None if res.resolves(floor) or floor <= 0 else resolution_fix(source, res, floor)}
        out = detection_json(series, found)
        for check, row in zip(checks, out["changes"], strict=True):
            row["edge_check"] = None if check is None else check.verdict.value
        typer.echo(json.dumps({**out, "order": series.order, "undecided": undecided, "resolution": res_json}))
        _require_measured_noise(found, stand, checks, undecided)
        _require_decided(stand, undecided)
        _require_evidence(series, found)
        _require_resolved(source, stand, res, floor)
        return
    from hourly.render.steps import line as resolution_line
    from hourly.render.steps import unresolved
    blind = None if stand or undecided else unresolved(res, floor, "point")
    from .common import console
    console.print(detection_table(series, found))
    good = len(series) - len(found.failed)
    console.print(f"{plural(len(series), 'point')} ({good} ok, {len(found.failed)} failed"
                  + (f", {plural(len(found.outliers), 'outlier')}"
                     if found.outliers else "")
                  + f"); noise {found.relative_noise * 100:.2f}% per point ({noise_words(found.noise_source)}); "
                  + f"points {series.order}",
                  markup=False, highlight=False, soft_wrap=True)
    if not stand and not series.unread and not _too_few(series):
        one = ("the window holds one (xla, jax) pair: no commit landed in it, so it has no step to find"
               if _with_values(series) == 1 and _of_a_store(series) else None)  # scan's words, not an all-clear
        console.print(one or undecided or blind or "no step found",  # never below what the noise lets show
                      markup=False, highlight=False, soft_wrap=True)
    # what else holds a step: said beside the steps (with none found, the first is the error)
    for what, fix in series.unread[0 if found.changes else 1:]:
        err_console.print(f"hourly: note: {what} — {fix}", markup=False, highlight=False, soft_wrap=True)
    from hourly.render.steps import edge_note
    for c, check in zip(found.changes, checks, strict=True):  # measured again: in the scan's words
        console.print(format_change(c, series.labels, series.before_labels, None if check is None else edge_note(c, check)),
                      markup=False, highlight=False, soft_wrap=True)
    if stand and undecided and not found.noise_assumed:
        console.print(f"more steps may hide: {undecided}", markup=False, highlight=False, soft_wrap=True)
    if res is not None and blind is None and not found.noise_assumed:  # no resolution from an assumed noise
        console.print(resolution_line(res, "point"), markup=False, highlight=False, soft_wrap=True)
    _require_measured_noise(found, stand, checks, undecided)
    _require_decided(stand, undecided)
    _require_evidence(series, found)
    _require_resolved(source, stand, res, floor)


def _edge_checks(series: Series, found: Detection) -> list:
    """Each change's stored edge check (hourly.analysis.detect.EdgeCheck), in the order of
    ``found.changes``: None for any but a workdir's edge step its scan measured again."""
    stored = series.edge_checks or {}
    labels, before = series.labels, series.before_labels
    return [stored.get((before[c.before_index], labels[c.after_index])) if c.edge else None for c in found.changes]


def _outlier(check: EdgeCheck | None) -> bool:
    from hourly.analysis.detect import EdgeVerdict
    return check is not None and check.verdict is EdgeVerdict.OUTLIER


def _require_resolved(source: str | None, stand: list, res: Resolution | None, floor: float) -> None:
    """No step found where a step of --min-change could not have shown through the noise is no
    answer: exit 1 with the resolution and what brings it under --min-change. ``stand``: the steps
    found, less edge steps measured again as outliers."""
    if stand or res is None or floor <= 0 or res.resolves(floor):
        return
    from hourly.scan.resolution import unresolved_error
    from hourly.scan.sources import resolution_fix
    raise unresolved_error(res, floor, resolution_fix(source, res, floor))


def _require_measured_noise(found: Detection, stand: list, checks: list, undecided: str | None) -> None:
    """A step (or an outlier) judged against an assumed noise is no answer (too few points of one
    run each to measure it): exit 1 naming what measures it, unless every step left was measured
    again by the workdir's scan and confirmed."""
    if not found.noise_assumed or not undecided or not (stand or found.outliers):
        return
    from hourly.analysis.detect import EdgeVerdict
    if stand and not found.outliers and all(
            check is not None and check.verdict is EdgeVerdict.CONFIRMED
            for c, check in zip(found.changes, checks, strict=True) if not _outlier(check)):
        return
    from hourly.errors import UserError
    why, _, fix = undecided.partition("; ")
    found_words = " and ".join(w for w in (plural(len(stand), "step") if stand else "",
                                           plural(len(found.outliers), "outlier") if found.outliers else "") if w)
    one = len(stand) + len(found.outliers) == 1
    raise UserError(f"cannot tell whether the {found_words} above {'is' if one else 'are'} real: {why}", fix)


def _require_decided(stand: list, undecided: str | None) -> None:
    """No step in a series too short to tell noise from steps is no answer: exit 1 with the fix."""
    if undecided and not stand:
        from hourly.errors import UserError
        why, _, fix = undecided.partition("; ")
        raise UserError(why, fix)


def _with_values(series: Series) -> int:
    return sum(1 for p in series.points if p.samples)


def _of_a_store(series: Series) -> bool:
    from hourly.adapters.store import STORE_NAME
    return Path(series.source).name == STORE_NAME


def _too_few(series: Series) -> bool:
    """Fewer than two points with a value, where that is no answer: a file's, or a workdir's with
    failed points. A scan of one pair, measured, is one: no commit landed in its window."""
    n = _with_values(series)
    return n < 2 and (n < len(series.points) or not _of_a_store(series))


def _require_evidence(series: Series, found: Detection) -> None:
    """"no step found" only from a series that could show one: at least two points with a value
    (:func:`_too_few`: a workdir's one measured pair is one), and nothing left unread that holds a step (a store's crash or metric windows): else exit 1
    naming what is missing."""
    if found.changes:
        return
    from hourly.errors import UserError
    if series.unread:
        what, fix = series.unread[0]
        raise UserError(f"no step in the values of {series.source}, but {what}", fix)
    if _too_few(series):
        n = _with_values(series)
        failed = len(series.points) - n
        fix = (f"{command_line('show', {'workdir': Path(series.source).parent})} says why its runs failed"
               if _of_a_store(series)
               else "give at least two points with a value")
        raise UserError(f"{series.source or 'the input'}: {plural(n, 'point')} with a value"
                        + (f" ({failed} failed)" if failed else "") + ": a step needs two at least", fix)


def _require_a_scan_in(folder: Path) -> None:
    """A workdir another level made (a watch, the daily or the release level): what it holds and
    the command that reads it (its values are no scan's series)."""
    from hourly.adapters.store import STORE_NAME, Store
    if not (folder / STORE_NAME).is_file():
        return
    from .common import require_a_scan
    store = Store(folder, create=False, read_only=True)
    try:
        require_a_scan(store, "detect", reads_answers=False)
    finally:
        store.close()
