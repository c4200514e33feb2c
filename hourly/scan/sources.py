"""A workdir's results store as a labelled series, for ``hourly detect WORKDIR``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from hourly.adapters.store import STORE_NAME, Store
from hourly.analysis.series import Series, parse_csv_text, parse_grep_lines
from hourly.analysis.steps import all_windows, series_from_points
from hourly.errors import UserError
from hourly.measure.settings import Settings, effective, stored_scan_settings
from hourly.metric import DEFAULT_METRIC_REGEX
from hourly.options import command_line
from hourly.scan.table import scan_command, stored_scan, unmeasured_pairs
from hourly.text.plurals import plural

if TYPE_CHECKING:
    from hourly.analysis.detect import Detection
    from hourly.analysis.resolution import Resolution


def stored_direction(path: str | Path) -> bool | None:
    """The scan's ``higher_is_better`` as stored in a workdir (None: no stored scan)."""
    store = Store(path, create=False, read_only=True)
    try:
        saved = store.load_settings("scan")
        return None if not saved or "higher_is_better" not in saved else bool(saved["higher_is_better"])
    finally:
        store.close()


def load_store_series(path: str | Path) -> Series:
    store = Store(path, create=False, read_only=True)
    try:
        s, _ = effective({}, base=stored_scan_settings(store.load_settings("scan"), store.workdir))
        report = stored_scan(store, s)
        if report.metrics is not None and len(report.metrics) > 1:  # one series per metric, each its direction
            names = ", ".join(m.name for m in report.metrics)
            raise UserError(f"{store.workdir} holds a scan of {len(report.metrics)} named metrics ({names}); "
                            "hourly detect reads one series",
                            f"{command_line('show', {'workdir': store.workdir})} finds the steps of each; or give detect one "
                            "metric's points as a CSV (label,value) from hourly show --json")
        measured = [p for p in report.points if p.status != "planned"]  # a pair not measured yet is no failure
        unread = []
        if len(measured) < len(report.points):
            n, total = unmeasured_pairs(report.points), len({(p.xla, p.jax) for p in report.points})
            unread.append((f"the scan is incomplete ({n} of {total} pairs not measured): a step there is not seen",
                           f"run the same scan again to resume it: {scan_command(s)}"))
        windows = all_windows(measured)
        if windows:
            kinds = sorted({w.kind for w in windows})
            unread.append((f"its scan holds {plural(len(windows), 'window')} where the runs change how they end ("
                           + ", ".join(kinds) + f": {windows[0].before.time} → {windows[0].after.time}"
                           + (", ..." if len(windows) > 1 else "") + "), which detect does not read (it reads values)",
                           f"{command_line('show', {'workdir': store.workdir})} lists them, "
                           f"{command_line('bisect', {'workdir': store.workdir})} bisects them"))
        return replace(series_from_points(measured, str(store.path)), unread=tuple(unread),
                       edge_checks=report.edge_checks or None)
    finally:
        store.close()


def _stored_scan_settings(workdir: Path) -> Settings:
    """The settings of the scan stored in ``workdir``, as its next commands would run it."""
    store = Store(workdir, create=False, read_only=True)  # detect writes nothing: a read-only workdir reads
    try:
        s, _ = effective({}, base=stored_scan_settings(store.load_settings("scan"), store.workdir))
    finally:
        store.close()
    return s


def undecided_fix(source: str | None, detection: Detection) -> str:
    """What tells noise from steps in a series too short to (Detection.too_short): for a workdir,
    its scan with each pair measured again several times; for a file, more runs per label."""
    from hourly.scan.table import UNDECIDED_REPEATS, repeats_command, undecided_note
    path = Path(source if source is not None else DEFAULT_SOURCE)
    if path.is_dir():
        s = _stored_scan_settings(path)
        note = undecided_note(detection, s)
        return note.partition("; ")[2] if note else repeats_command(s)
    if detection.repeated:
        return "measure more points between them, or bisect a window directly (hourly bisect --good TIME --bad TIME)"
    return (f"measure each point {UNDECIDED_REPEATS} times (as many `LABEL:` lines or CSV rows per label) "
            "and run hourly detect again")


def resolution_fix(source: str | None, res: Resolution, min_change: float) -> str:
    """What brings a series' resolution (hourly.analysis.resolution) under ``min_change``: for a
    workdir, its scan with each pair measured that many times; for a file, as many runs per label."""
    from hourly.analysis.resolution import size
    path = Path(source if source is not None else DEFAULT_SOURCE)
    if path.is_dir():
        from hourly.scan.resolution import fix
        return fix(res, _stored_scan_settings(path), min_change)
    return (f"measure each point {res.repeats_for(min_change)} times (as many `LABEL:` lines or CSV rows per label) to see steps of "
            f"{size(min_change)}, and run hourly detect again")


def _read(path: str | Path) -> str:
    p = Path(path)
    if not p.exists():
        raise UserError(f"{p}: no such file", "give the path of a grep output, a CSV or a workdir")
    if p.is_dir():
        raise UserError(f"{p} is a directory", "give a file, or a workdir holding a results store")
    try:
        return p.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise UserError(f"{p}: cannot read ({e.strerror})", "check the path and its permissions") from e


def load_grep_text(path: str | Path, metric_regex: str = DEFAULT_METRIC_REGEX) -> Series:
    return parse_grep_lines(_read(path).splitlines(), metric_regex, source=str(path))


def load_csv(path: str | Path) -> Series:
    return parse_csv_text(_read(path), source=str(path))


DEFAULT_SOURCE = "./hourly-work"


def stored_direction_of(source: str | None) -> bool | None:
    """The direction stored with a workdir's scan; None for files and stores without one."""
    path = Path(source if source is not None else DEFAULT_SOURCE)
    if not path.is_dir():
        return None
    return stored_direction(path)


#: ``hourly detect -``: the series is read from standard input
STDIN = "-"


def load_text(text: str, source: str = "<stdin>", metric_regex: str = DEFAULT_METRIC_REGEX) -> Series:
    """A series from text whose kind is told by its first line: a CSV when its header names the
    ``label`` and ``value`` columns, else grep output (``hourly detect -``)."""
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    if not first:
        raise UserError(f"{source}: no input", "pipe grep output (`grep -H MLUPS OUT* | hourly detect -`) "
                        "or a CSV with a label,value header")
    header = {c.strip().lower() for c in first.split(",")}
    if {"label", "value"} <= header:
        return parse_csv_text(text, source=source)
    return parse_grep_lines(text.splitlines(), metric_regex, source=source)


def load_series(source: str | None, metric_regex: str = DEFAULT_METRIC_REGEX) -> Series:
    """The series behind ``hourly detect``'s SOURCE: a workdir's store, a CSV or grep output."""
    path = Path(source if source is not None else DEFAULT_SOURCE)
    if path.is_dir() and not (path / STORE_NAME).exists():  # detect takes its workdir as SOURCE, not --workdir
        raise UserError(f"no results store in {path}", "run `hourly scan` into it first, or give detect the workdir"
                        " a scan used, a CSV with label,value columns, or `grep METRIC OUT*` output")
    if path.is_dir():
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
