"""A labelled series of measurements, and reading one from `grep METRIC OUT*` output or a CSV.

Each point has a label and zero or more samples; a point without samples is *failed* (the run
crashed, or printed a line the metric regex cannot read). A file's points keep the file's order
(commit SHAs listed oldest first stay so), except where the order is in the labels themselves:
labels that are all times are sorted by time, and numbered names alike but for their numbers with
a natural sort (``OUT-2`` before ``OUT-10``: the order a shell's ``OUT*`` does not give);
``Series.order`` says which was used. A workdir's results store gives them in time order.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Iterable

from hourly.errors import UserError
from hourly.metric import DEFAULT_METRIC_REGEX, PLAIN_NUMBER_FIX, Number, read_number, reading_regex
from hourly.model import Named, median


class PointStatus(Named):
    OK = "ok"
    FAILED = "failed"


@dataclass(frozen=True)
class SeriesPoint:
    label: str
    samples: tuple[float, ...] = ()
    #: For a point that stands for a run of instants (a store's pair measured once, shown at several
    #: hours): the run's last label, which is what a step's "before" side names. None: same as label.
    last_label: str | None = None

    @property
    def status(self) -> PointStatus:
        return PointStatus.OK if self.samples else PointStatus.FAILED

    @property
    def value(self) -> float | None:
        """The median of the samples; None for a failed point."""
        return float(median(self.samples)) if self.samples else None  # hourly.model's: no overflow


def _first_three(items: list[str], sep: str, more: str) -> str:
    """The first three of ``items`` joined by ``sep``, and how many more (``more``: the words before
    the count, " and" or "; and")."""
    return sep.join(items[:3]) + (f"{more} {len(items) - 3} more" if len(items) > 3 else "")


@dataclass(frozen=True)
class Series:
    points: tuple[SeriesPoint, ...]
    source: str = ""
    #: input left out, each as ``(line number, the line)``: rows or lines without a label (no point
    #: can be named by them); the command says so (:meth:`dropped_note`)
    dropped: tuple[tuple[int, str], ...] = ()
    #: what one entry of the input is called: "line" (grep output) or "row" (a CSV)
    unit: str = "line"
    #: what the input holds, or lacks, that its values do not show, each with the command that
    #: reads or fills it: a store's unmeasured pairs (an interrupted scan), its windows where runs
    #: start crashing or stop printing the metric (steps that "no step found" would hide)
    unread: tuple[tuple[str, str], ...] = ()
    #: values that read as no number, each as ``(label, what was captured and why)``: their points
    #: are failed, and the command says why (:meth:`unreadable_note`)
    unreadable: tuple[tuple[str, str], ...] = ()
    #: a store's edge steps measured again by its scan (hourly.analysis.detect.EdgeCheck), keyed by
    #: (the last label before, the first after): what measuring them again said (an outlier is no step)
    edge_checks: Any = None
    #: how the points were ordered, in words (one of the ORDER_* below)
    order: str = "in time order"

    def dropped_note(self) -> str | None:
        """One line naming what was left out of the input, or None."""
        if not self.dropped:
            return None
        n = len(self.dropped)
        shown = _first_three([f"line {i} {text.strip()[:40]!r}" for i, text in self.dropped], ", ", " and")
        return f"{self.source}: {n} {self.unit}{'s' if n != 1 else ''} without a label left out ({shown})"

    def unreadable_note(self) -> str | None:
        """One line naming the values that read as no number (their points are failed), or None."""
        if not self.unreadable:
            return None
        n = len(self.unreadable)
        shown = _first_three([f"{label}: {why}" for label, why in self.unreadable], "; ", "; and")
        return (f"{self.source}: {n} value{'s' if n != 1 else ''} read as no number, {'their points' if n != 1 else 'its point'} "
                f"failed ({shown}) — {PLAIN_NUMBER_FIX}")

    @property
    def labels(self) -> list[str]:
        return [p.label for p in self.points]

    @property
    def before_labels(self) -> list[str]:
        """The label a step names when this point is the last one before it."""
        return [p.last_label or p.label for p in self.points]

    def detector_input(self) -> list[list[float] | None]:
        """What :func:`hourly.analysis.detect.detect` takes: samples per point, None when failed."""
        return [list(p.samples) if p.samples else None for p in self.points]

    def __len__(self) -> int:
        return len(self.points)


def natural_key(label: str) -> tuple:
    """Sort key that orders digit runs by number: 'OUT-2' < 'OUT-10'."""
    parts = re.split(r"(\d+)", label)
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p.lower()) for p in parts if p != "")


def _read(text: str, start: int = 0, end: int | None = None) -> tuple[float | None, Number]:
    """A captured value: the finite number it reads as, else None, and how it was read."""
    n = read_number(text, start, end)
    if n.value is not None and not math.isfinite(n.value):
        return None, Number(None, f"captured {text[start:end]!r}, not a finite number")
    return n.value, n


#: ``Series.order`` of a file whose labels are all times (sorted by time).
ORDER_TIME = "sorted by time (the labels are times)"
#: ``Series.order`` of a file whose labels are names alike but for their numbers (natural sort).
ORDER_NUMBERED = "sorted by the numbers in the labels (numbered names: OUT-2 before OUT-10)"
#: ``Series.order`` of any other file: the file's own order (SHAs, names: no order in the labels).
ORDER_FILE = "in the order of the input (its labels are neither times nor numbered names)"

_SHA = re.compile(r"[0-9a-f]{7,40}", re.I)


def _time_of(label: str) -> datetime | None:
    """The instant an ISO 8601 label names (``2023-08-24``, ``2023-08-24T05:00``, with or without
    an offset; zone-less read as UTC), or None."""
    text = label.strip()
    if not re.match(r"\d{4}-?\d{2}-?\d{2}", text):
        return None
    try:
        t = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def ordered_labels(labels: list[str]) -> tuple[list[str], str]:
    """``labels`` (in the input's order) in the order their points are judged in, and that order in
    words: by time when every label is a time, naturally when every label is the same name but for
    its numbers (and not a commit SHA), else as given: the input's order is the only one there is."""
    times = [t for t in (_time_of(lab) for lab in labels) if t is not None]
    if labels and len(times) == len(labels):
        return [labels[i] for i in sorted(range(len(labels)), key=times.__getitem__)], ORDER_TIME
    shapes = {re.sub(r"\d+", "#", lab.lower()) for lab in labels}
    if len(shapes) == 1 and "#" in next(iter(shapes)) and not all(_SHA.fullmatch(lab) for lab in labels):
        return sorted(labels, key=natural_key), ORDER_NUMBERED
    return list(labels), ORDER_FILE


def _build(groups: dict[str, list[float]], source: str, dropped: list[tuple[int, str]] | None = None,
           unit: str = "line", unreadable: dict[str, str] | None = None) -> Series:
    labels, order = ordered_labels(list(groups))  # a dict keeps the input's order
    why = unreadable or {}
    return Series(tuple(SeriesPoint(lab, tuple(groups[lab])) for lab in labels), source, tuple(dropped or ()), unit,
                  order=order, unreadable=tuple((lab, why[lab]) for lab in labels if lab in why))


def parse_grep_lines(lines: Iterable[str], metric_regex: str = DEFAULT_METRIC_REGEX,
                     source: str = "<text>") -> Series:
    """Points from lines ``LABEL:<anything>`` as `grep METRIC OUT*` prints them.

    The label is the text before the first ':'. The metric regex is searched in the rest of the
    line; a line it cannot read (a traceback line caught because a path contains the metric's
    name) makes its label a failed point unless another line of the same label has a value.
    Lines of one label are repeated samples of one point. Lines without ':' are not grep output
    and are skipped (e.g. "Binary file OUT matches").
    """
    rx = reading_regex(metric_regex)  # the default's reads a NaN as a NaN
    groups: dict[str, list[float]] = {}
    dropped: list[tuple[int, str]] = []
    unreadable: dict[str, str] = {}
    poisoned: set[str] = set()
    unnamed = None  # a line whose metric reads only with the text before its ':' (no file name)
    for number, line in enumerate(lines, 1):
        line = line.rstrip("\r\n")
        if ":" not in line:
            continue
        label, rest = line.split(":", 1)
        label = label.strip()
        if not label:
            dropped.append((number, line))  # no point to name it by: said, never silently lost
            continue
        values = groups.setdefault(label, [])
        m = rx.search(rest)
        if m is None:
            if unnamed is None and rx.search(line):
                unnamed = line
            continue
        start, end = m.span("value" if "value" in rx.groupindex else 1)
        x, n = _read(rest, start, end) if start >= 0 else (None, Number(None))
        if x is not None:
            values.append(x)
        elif n.cut or (n.why and label not in unreadable):
            # a number hourly will not guess at fails its label whatever else it printed (another
            # line's value would be a silent pick); a word or a NaN fails it only when nothing reads
            unreadable[label] = n.why or ""
            if n.cut:
                poisoned.add(label)
    for label in poisoned:
        groups[label] = []
    unreadable = {label: why for label, why in unreadable.items() if not groups[label]}
    if not groups:
        raise UserError(f"{source}: no `LABEL:...` lines",
                        "give the output of `grep -H METRIC OUT*` over several files, "
                        "e.g. `grep -H MLUPS OUT* > runs.txt` (one 'OUT-08-24:MLUPS: 577.1' per line)")
    if unnamed is not None and not any(groups.values()):
        # `cat OUT* | grep MLUPS` (or grep over one file) prints 'MLUPS: 577.1': the metric's name
        # would become the one label and every point would be failed
        metric = "MLUPS" if metric_regex == DEFAULT_METRIC_REGEX else "METRIC"
        # into a new file (the source may be an output file itself: `> OUT-01` would empty it first)
        fix = (f"`grep -H {metric} OUT* | hourly detect -`" if source == "<stdin>" else
               f"`grep -H {metric} OUT* > runs.txt`, then `hourly detect runs.txt`")
        raise UserError(f"{source}: lines like {unnamed.strip()[:60]!r} carry no file name to label them",
                        f"grep with -H over the output files, e.g. {fix}")
    return _build(groups, source, dropped, unreadable=unreadable)


def parse_csv_text(text: str, source: str = "<csv>") -> Series:
    """Points from a CSV with ``label`` and ``value`` columns (other columns are ignored).

    An empty or unparsable value is a failed point; repeated labels are samples of one point.
    """
    reader = csv.DictReader(io.StringIO(text))
    fields = {(f or "").strip().lower(): f for f in (reader.fieldnames or [])}
    if "label" not in fields or "value" not in fields:
        raise UserError(f"{source}: the CSV needs 'label' and 'value' columns "
                        f"(found: {', '.join(f for f in fields if f) or 'none'})",
                        "add a header line `label,value`")
    groups: dict[str, list[float]] = {}
    dropped: list[tuple[int, str]] = []
    unreadable: dict[str, str] = {}
    poisoned: set[str] = set()
    lines = text.splitlines()
    start = reader.line_num + 1  # the line the next row starts on
    for row in reader:
        first, start = start, reader.line_num + 1
        if any("\n" in v or "\r" in v for v in row.values() if isinstance(v, str)):
            # a quote never closed reads every line after it as one field: those rows silently lost
            shown = lines[first - 1] if first <= len(lines) else ""
            raise UserError(f"{source}: the row of line {first} {shown!r} runs over lines {first}-{reader.line_num} "
                            "(a quote left open reads the lines after it as one field: their rows would be lost)",
                            "close the quote on the line it opens, or remove it")
        label = (row.get(fields["label"]) or "").strip()
        if not label:  # no point to name it by: said, never silently lost
            if any((v or "").strip() for k, v in row.items() if k is not None):
                dropped.append((reader.line_num, lines[reader.line_num - 1] if reader.line_num <= len(lines) else ""))
            continue
        values = groups.setdefault(label, [])
        raw = (row.get(fields["value"]) or "").strip()
        x, n = _read(raw) if raw else (None, Number(None))  # an empty value: a run that failed
        if row.get(None):  # more fields than the header: `1,234.5` unquoted is the fields 1 and 234.5
            line = lines[reader.line_num - 1] if reader.line_num <= len(lines) else ""
            x, n = None, Number(None, f"{line!r} has more fields than the header (quote a number with a comma: "
                                      '"1,234.5")', cut=True)
        if x is not None:
            values.append(x)
        elif n.why and (n.cut or label not in unreadable):
            unreadable[label] = f"row {reader.line_num}: {n.why.removeprefix('captured ')}"
            if n.cut:
                poisoned.add(label)
    if not groups:
        raise UserError(f"{source}: the CSV has no rows with a label",
                        "add one row per measurement: `label,value`")
    for label in poisoned:
        groups[label] = []
    return _build(groups, source, dropped, "row", {lab: why for lab, why in unreadable.items() if not groups[lab]})












