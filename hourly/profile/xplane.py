"""Read the profiler's own trace, ``*.xplane.pb`` (an XSpace protobuf), and sum it by op.

The JAX profiler writes one XSpace per capture (``<dir>/plugins/profile/<time>/<host>.xplane.pb``):
planes (``/host:CPU``, ``/device:TPU:0``, ``/device:GPU:0``, …), each with lines (timelines) of
events, each event with a name (its metadata) and stats (``hlo_op``, ``hlo_module``,
``program_id``, …). The Perfetto JSON beside it is a conversion of the same data; reading the
XSpace directly keeps what the conversion may drop or rename, and lets the op table name which
plane and which line its events came from.

Which events are the ops (:func:`op_table`), most specific first:

* **device** — a device plane (``/device:…``) with events: its ``XLA Ops`` line when it has one
  (a TPU: one event per HLO op run on the chip), else its stream lines (a GPU: the kernels, one
  line per stream), else every line but the derived ones (``XLA Modules``, ``Steps``, ``Framework
  Ops``, …, which repeat the ops' time at a coarser grain). An op's module is its ``hlo_module``
  stat where the event carries one, else the ``XLA Modules`` event of the same plane with its
  ``program_id``, else the one whose time holds it (a module event's name without its ``(program
  id)`` suffix). The first device plane by ordinal that
  has op events is read; the others are named in ``notes``.
* **hlo_op** — no device timeline (the CPU): the events of any plane carrying an ``hlo_op`` stat,
  XLA's thunks as the CPU runtime reports them, keyed ``<hlo_module>/<hlo_op>``.
* **host** — neither: every event of the host planes, by name (no op-level answer; said so).

Pure: bytes in, records out (the wire format: :mod:`hourly.profile.wire`).
"""

from __future__ import annotations

import re
import struct
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path

from hourly.profile.ops import OpStat, TraceSummary, instruction_name
from hourly.profile.wire import ProfileFormatError, iter_fields

# Lines of a device plane that repeat the ops' time at a coarser grain, or carry no ops
# (tsl/profiler/utils/xplane_schema: kXlaModuleLineName, kStepLineName, kTensorFlowOpLineName …)
DERIVED_LINES = ("xla modules", "steps", "tensorflow ops", "framework ops", "framework name scope",
                 "tensorflow name scope", "source code", "xla traceme", "launch stats",
                 "sparse core steps", "sparse core modules", "_counters_", "tensor core sync flag",
                 "sparse core syncs", "host offload ops", "async xla ops")
XLA_OPS_LINE = "xla ops"
XLA_MODULES_LINE = "xla modules"
_PROGRAM_SUFFIX = re.compile(r"\(\d+\)$")


@dataclass
class XEvent:
    name: str
    start_ps: int          # since the epoch (the line's timestamp plus the event's offset)
    duration_ps: int
    stats: dict[str, object]

    display: str = ""      # the metadata's display name, where it has one


@dataclass
class XLine:
    id: int
    name: str
    timestamp_ns: int
    events: list[XEvent] = field(default_factory=list)


@dataclass
class XPlane:
    id: int
    name: str
    lines: list[XLine] = field(default_factory=list)
    stats: dict[str, object] = field(default_factory=dict)

    @property
    def is_device(self) -> bool:
        return self.name.startswith("/device:")

    def ordinal(self) -> tuple[int, str, int]:
        """(0, ``TPU``, 0) for ``/device:TPU:0``, for sorting device planes: the chips in order, any
        other device plane (``/device:CUSTOM:…``, a name with more after the number) after them."""
        kind, _, n = self.name.removeprefix("/device:").rpartition(":")
        return (0, kind, int(n)) if n.isdigit() else (1, self.name, 0)


@dataclass
class XSpace:
    planes: list[XPlane]
    errors: list[str]
    warnings: list[str]
    hostnames: list[str]

    def inventory(self) -> list[dict]:
        """Each plane with its lines and their event counts: what the trace holds, for people."""
        return [{"plane": p.name, "lines": [{"name": ln.name, "events": len(ln.events)} for ln in p.lines]}
                for p in self.planes]


def _int(v: int | bytes) -> int:
    if isinstance(v, bytes):
        raise ProfileFormatError("a length-delimited field where an integer was expected")
    return v - (1 << 64) if v >= 1 << 63 else v


def _bytes(v: int | bytes) -> bytes:
    if isinstance(v, int):
        raise ProfileFormatError("an integer field where a length-delimited one was expected")
    return v


def _str(v: int | bytes) -> str:
    return _bytes(v).decode("utf-8", "replace")


def _stat(raw: bytes, stat_names: dict[int, str]) -> tuple[str, object]:
    """An XStat: (its name, its value); a ``ref_value`` is the name of another stat metadata."""
    mid, value = 0, None
    for n, w, v in iter_fields(raw):
        if n == 1:
            mid = _int(v)
        elif n == 2 and w == 1 and isinstance(v, int):
            value = struct.unpack("<d", v.to_bytes(8, "little"))[0]
        elif n in (3, 4):
            value = v if n == 3 else _int(v)
        elif n == 5:
            value = _str(v)
        elif n == 6:
            value = _bytes(v)
        elif n == 7:
            value = stat_names.get(_int(v), str(_int(v)))
    return stat_names.get(mid, str(mid)), value


def _map_entry(raw: bytes) -> bytes | None:
    """The value of a ``map<int64, Message>`` entry."""
    for n, _w, v in iter_fields(raw):
        if n == 2:
            return _bytes(v)
    return None


def _plane(raw: bytes) -> XPlane:
    pid, name = 0, ""
    raw_lines: list[bytes] = []
    raw_stats: list[bytes] = []
    event_meta_raw: list[bytes] = []
    stat_names: dict[int, str] = {}
    for n, _w, v in iter_fields(raw):
        if n == 1:
            pid = _int(v)
        elif n == 2:
            name = _str(v)
        elif n == 3:
            raw_lines.append(_bytes(v))
        elif n == 4:
            entry = _map_entry(_bytes(v))
            if entry is not None:
                event_meta_raw.append(entry)
        elif n == 5:
            entry = _map_entry(_bytes(v))
            if entry is not None:
                sid, sname = 0, ""
                for fn, _fw, fv in iter_fields(entry):
                    if fn == 1:
                        sid = _int(fv)
                    elif fn == 2:
                        sname = _str(fv)
                stat_names[sid] = sname
        elif n == 6:
            raw_stats.append(_bytes(v))
    # event metadata: its name, its display name and the stats every event of it shares
    meta: dict[int, tuple[str, str, dict[str, object]]] = {}
    for entry in event_meta_raw:
        mid, mname, display = 0, "", ""
        mstats: dict[str, object] = {}
        for fn, _fw, fv in iter_fields(entry):
            if fn == 1:
                mid = _int(fv)
            elif fn == 2:
                mname = _str(fv)
            elif fn == 4:
                display = _str(fv)
            elif fn == 5:
                k, val = _stat(_bytes(fv), stat_names)
                mstats[k] = val
        meta[mid] = (mname or display, display, mstats)
    plane = XPlane(pid, name, stats=dict(_stat(s, stat_names) for s in raw_stats))
    for raw_line in raw_lines:
        plane.lines.append(_line(raw_line, meta, stat_names))
    return plane


def _line(raw: bytes, meta: dict[int, tuple[str, str, dict[str, object]]], stat_names: dict[int, str]) -> XLine:
    lid, name, display, ts = 0, "", "", 0
    raw_events: list[bytes] = []
    for n, _w, v in iter_fields(raw):
        if n == 1:
            lid = _int(v)
        elif n == 2:
            name = _str(v)
        elif n == 11:
            display = _str(v)
        elif n == 3:
            ts = _int(v)
        elif n == 4:
            raw_events.append(_bytes(v))
    line = XLine(lid, display or name, ts)
    for raw_event in raw_events:
        mid = offset = duration = 0
        own: dict[str, object] = {}
        for n, _w, v in iter_fields(raw_event):
            if n == 1:
                mid = _int(v)
            elif n == 2:
                offset = _int(v)
            elif n == 3:
                duration = _int(v)
            elif n == 4:
                k, val = _stat(_bytes(v), stat_names)
                own[k] = val
        ename, display, mstats = meta.get(mid, (str(mid), "", {}))
        line.events.append(XEvent(ename, ts * 1000 + offset, duration, {**mstats, **own}, display))
    return line


def parse_xspace(data: bytes | str | Path) -> XSpace:
    """Decode an ``.xplane.pb`` file (or its bytes)."""
    if not isinstance(data, (bytes, bytearray)):
        data = Path(data).read_bytes()
    planes: list[XPlane] = []
    errors: list[str] = []
    warnings: list[str] = []
    hosts: list[str] = []
    for n, _w, v in iter_fields(bytes(data)):
        if n == 1:
            planes.append(_plane(_bytes(v)))
        elif n == 2:
            errors.append(_str(v))
        elif n == 3:
            warnings.append(_str(v))
        elif n == 4:
            hosts.append(_str(v))
        else:
            raise ProfileFormatError(f"field {n} is not an XSpace's")
    return XSpace(planes, errors, warnings, hosts)


def _module_of(ev: XEvent, modules: list[XEvent], starts: list[int]) -> str | None:
    """The ``XLA Modules`` event whose time holds ``ev`` (``modules`` sorted by start, ``starts``
    their starts)."""
    last = bisect_right(starts, ev.start_ps) - 1
    for m in reversed(modules[max(last - 7, 0):last + 1]):  # the nearest few (modules rarely overlap)
        if m.start_ps <= ev.start_ps < m.start_ps + max(m.duration_ps, 1):
            return _PROGRAM_SUFFIX.sub("", m.name).strip()
    return None


def _op_lines(plane: XPlane) -> tuple[list[XLine], str]:
    """The lines of a device plane that hold its ops, and how they were chosen."""
    with_events = [ln for ln in plane.lines if ln.events]
    xla_ops = [ln for ln in with_events if ln.name.lower() == XLA_OPS_LINE]
    if xla_ops:
        return xla_ops, "the XLA Ops line"
    streams = [ln for ln in with_events if ln.name.lower().startswith("stream")]
    if streams:
        return streams, "the stream lines (kernels)"
    rest = [ln for ln in with_events if not ln.name.lower().startswith(DERIVED_LINES)]
    return rest, "every line but the derived ones"


def op_table(space: XSpace, path: str = "") -> TraceSummary:
    """Time and calls per op, from the most specific events the trace holds (module doc)."""
    notes: list[str] = []
    devices = sorted((p for p in space.planes if p.is_device), key=XPlane.ordinal)
    chosen: XPlane | None = None
    lines: list[XLine] = []
    how = ""
    for plane in devices:
        lines, how = _op_lines(plane)
        if lines:
            chosen = plane
            break
    if chosen is not None:
        others = [p.name for p in devices if p is not chosen and any(ln.events for ln in p.lines)]
        if others:
            notes.append(f"read {chosen.name} only; {len(others)} other device plane(s) with events: "
                         + ", ".join(others))
        modules_line = next((ln for ln in chosen.lines if ln.name.lower() == XLA_MODULES_LINE), None)
        summary = TraceSummary("device", plane=chosen.name, lines=[ln.name for ln in lines], file=path,
                               reader="xplane", how=how, notes=notes)
        modules = sorted(modules_line.events, key=lambda e: e.start_ps) if modules_line else []
        starts = [m.start_ps for m in modules]
        by_program = {m.stats["program_id"]: _PROGRAM_SUFFIX.sub("", m.name).strip()
                      for m in modules if m.stats.get("program_id") is not None}
        unplaced = 0
        for ev in sorted((ev for line in lines for ev in line.events), key=lambda e: e.start_ps):
            module = ev.stats.get("hlo_module") or by_program.get(ev.stats.get("program_id"))
            if not module and modules:
                module = _module_of(ev, modules, starts)
            op = instruction_name(str(ev.stats.get("hlo_op") or ev.name))
            if not module:
                unplaced += 1
            _add(summary, f"{module}/{op}" if module else op, ev.duration_ps / 1e6)
        if unplaced:
            notes.append(f"{unplaced} device event(s) with no module (no hlo_module stat, no XLA Modules "
                         "event around them): keyed by their name alone")
        return summary
    hlo = [(p, ev) for p in space.planes for ln in p.lines for ev in ln.events if ev.stats.get("hlo_op")]
    if hlo:
        summary = TraceSummary("hlo_op", plane=", ".join(sorted({p.name for p, _ in hlo})), file=path,
                               reader="xplane", how="events carrying hlo_op", notes=notes)
        for _p, ev in sorted(hlo, key=lambda pe: pe[1].start_ps):  # calls in time order: the first is warm-up
            module = ev.stats.get("hlo_module")
            op = instruction_name(str(ev.stats["hlo_op"]))
            key = f"{module}/{op}" if module else op
            _add(summary, key, ev.duration_ps / 1e6)
        return summary
    summary = TraceSummary("host", plane=", ".join(p.name for p in space.planes), file=path, reader="xplane",
                           how="every event (no device timeline, no hlo_op)", notes=notes)
    for p in space.planes:
        for ln in p.lines:
            for ev in ln.events:
                _add(summary, ev.name, ev.duration_ps / 1e6)
    return summary


def _add(summary: TraceSummary, key: str, us: float) -> None:
    stat = summary.ops.setdefault(key, OpStat(key))
    stat.total_us += us
    stat.count += 1
    stat.durations.append(us)
