"""Read JAX traces and device memory profiles, and compare a good capture with a bad one.

Pure parsing and arithmetic, no external tools:

* :func:`parse_memory_profile` decodes the gzip'd pprof protobuf written by
  ``jax.profiler.save_device_memory_profile`` (``profile.proto``) with a small wire-format
  decoder, into samples with their Python stacks, bytes and counts.
* :func:`parse_perfetto_trace` sums the Perfetto trace (``perfetto_trace.json.gz``) by op: device
  ops when the trace has a device timeline (GPU/TPU), else the XLA ops the CPU runtime reports
  (events carrying ``hlo_op``), else every host event.
* :func:`compare` sets two capture folders (as written by :mod:`hourly.trace`) side by side: the
  ops whose total time changed most and the allocation sites whose live bytes changed most, plus
  the ``pprof --diff_base`` command for users who have Go pprof.
"""

from __future__ import annotations

import gzip
import json
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from hourly.errors import UserError

# --------------------------------------------------------------------------- protobuf wire format


class ProfileFormatError(ValueError):
    """The bytes are not a (gzip'd) pprof profile or a trace we understand."""


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ProfileFormatError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ProfileFormatError("varint too long")


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def iter_fields(buf: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """Yield ``(field_number, wire_type, value)``; value is an int or the bytes of a LEN field."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = int.from_bytes(buf[pos:pos + 8], "little"), pos + 8
        elif wire == 2:
            length, pos = _varint(buf, pos)
            if pos + length > len(buf):
                raise ProfileFormatError("truncated length-delimited field")
            value, pos = buf[pos:pos + length], pos + length
        elif wire == 5:
            value, pos = int.from_bytes(buf[pos:pos + 4], "little"), pos + 4
        else:
            raise ProfileFormatError(f"unsupported wire type {wire}")
        yield number, wire, value


def _num(value: int | bytes) -> int:
    """An integer field's value; a length-delimited one in its place is no pprof profile."""
    if isinstance(value, bytes):
        raise ProfileFormatError("a length-delimited field where an integer was expected")
    return value


def _sub(value: int | bytes) -> bytes:
    """A length-delimited field's bytes; an integer in its place is no pprof profile."""
    if isinstance(value, int):
        raise ProfileFormatError("an integer field where a length-delimited one was expected")
    return value


def _ints(value: int | bytes) -> list[int]:
    """A repeated integer field: packed (LEN, bytes) or one unpacked value."""
    if isinstance(value, int):
        return [value]
    out: list[int] = []
    pos = 0
    while pos < len(value):
        v, pos = _varint(value, pos)
        out.append(v)
    return out


# --------------------------------------------------------------------------- memory profiles

@dataclass(frozen=True)
class Frame:
    function: str
    filename: str
    line: int

    def __str__(self) -> str:
        return f"{self.function} ({_short(self.filename)}:{self.line})"


@dataclass
class MemorySample:
    stack: list[Frame]          # innermost (allocating) frame first, as pprof stores it
    values: dict[str, int]      # e.g. {"allocations": 1, "space": 4096}
    labels: dict[str, str]      # e.g. {"kind": "buffer", "device": "cpu:0"}

    @property
    def bytes(self) -> int:
        return self.values.get("space", 0)

    @property
    def count(self) -> int:
        return self.values.get("allocations", 0)

    @property
    def kind(self) -> str:
        return self.labels.get("kind", "")

    @property
    def site(self) -> Frame | None:
        """The innermost frame outside JAX, runpy and hourly's wrappers: the user's line."""
        for frame in self.stack:
            if not _is_library_frame(frame.filename):
                return frame
        return self.stack[0] if self.stack else None


@dataclass
class SiteStat:
    site: str
    bytes: int = 0
    count: int = 0


@dataclass
class MemoryProfile:
    sample_types: list[tuple[str, str]]
    samples: list[MemorySample]

    def select(self, kind: str | None = "buffer") -> list[MemorySample]:
        """Samples of one kind (``buffer`` = live arrays, ``executable`` = compiled code)."""
        return [s for s in self.samples if kind is None or s.kind == kind]

    def total_bytes(self, kind: str | None = "buffer") -> int:
        return sum(s.bytes for s in self.select(kind))

    def total_count(self, kind: str | None = "buffer") -> int:
        return sum(s.count for s in self.select(kind))

    def by_site(self, kind: str | None = "buffer") -> dict[str, SiteStat]:
        """Bytes and allocation counts summed per allocation site (see :attr:`MemorySample.site`)."""
        sites: dict[str, SiteStat] = {}
        for sample in self.select(kind):
            key = str(sample.site) if sample.site else "(no stack)"
            stat = sites.setdefault(key, SiteStat(key))
            stat.bytes += sample.bytes
            stat.count += sample.count
        return sites


def parse_memory_profile(data: bytes | str | os.PathLike) -> MemoryProfile:
    """Decode a pprof profile (gzip'd or not) from bytes or a file path."""
    if not isinstance(data, (bytes, bytearray)):
        data = Path(data).read_bytes()
    data = bytes(data)
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    strings: list[str] = []
    raw_types: list[bytes] = []
    raw_samples: list[bytes] = []
    functions: dict[int, tuple[int, int]] = {}
    locations: dict[int, list[tuple[int, int]]] = {}
    for number, _wire, value in iter_fields(data):
        # a top-level message field is length-delimited: iter_fields gives bytes for wire type 2
        if not isinstance(value, bytes):
            continue
        if number == 6:
            strings.append(value.decode("utf-8", "replace"))
        elif number == 1:
            raw_types.append(value)
        elif number == 2:
            raw_samples.append(value)
        elif number == 5:
            fields: dict[int, int | bytes] = {}
            for n, _w, v in iter_fields(value):
                fields[n] = v
            functions[_num(fields.get(1, 0))] = (_num(fields.get(2, 0)), _num(fields.get(4, 0)))
        elif number == 4:
            loc_id = 0
            lines: list[tuple[int, int]] = []
            for n, _w, v in iter_fields(value):
                if n == 1:
                    loc_id = _num(v)
                elif n == 4:
                    line = {ln: lv for ln, _lw, lv in iter_fields(_sub(v))}
                    lines.append((_num(line.get(1, 0)), _signed64(_num(line.get(2, 0)))))
            locations[loc_id] = lines
    if not strings and (raw_samples or raw_types):
        raise ProfileFormatError("profile has no string table")

    def s(index: int) -> str:
        return strings[index] if 0 <= index < len(strings) else ""

    sample_types = []
    for raw in raw_types:
        f = {n: v for n, _w, v in iter_fields(raw)}
        sample_types.append((s(_num(f.get(1, 0))), s(_num(f.get(2, 0)))))
    samples = []
    for raw in raw_samples:
        loc_ids: list[int] = []
        values: list[int] = []
        labels: dict[str, str] = {}
        for n, _w, v in iter_fields(raw):
            if n == 1:
                loc_ids.extend(_ints(v))
            elif n == 2:
                values.extend(_signed64(x) for x in _ints(v))
            elif n == 3:
                f = {ln: lv for ln, _lw, lv in iter_fields(_sub(v))}
                labels[s(_num(f.get(1, 0)))] = (s(_num(f[2])) if 2 in f
                                                 else str(_signed64(_num(f.get(3, 0)))))
        stack = []
        for loc_id in loc_ids:
            # a location's lines run inlined-callee first; pprof keeps the same order
            for function_id, line_no in locations.get(loc_id, []):
                name_idx, file_idx = functions.get(function_id, (0, 0))
                stack.append(Frame(s(name_idx), s(file_idx), line_no))
        named = {sample_types[i][0] if i < len(sample_types) else f"value{i}": v
                 for i, v in enumerate(values)}
        samples.append(MemorySample(stack, named, labels))
    return MemoryProfile(sample_types, samples)


_LIBRARY_MARKERS = ("/jax/_src/", "/jax/experimental/", "/jaxlib/", "/flax/", "/equinox/",
                    "<frozen runpy>", "/runpy.py", "/hourly/trace.py", "/hourly/jaxbench.py")


def _is_library_frame(filename: str) -> bool:
    name = filename.replace("\\", "/")
    return (any(marker in name for marker in _LIBRARY_MARKERS)
            or name.endswith("/jax/numpy/__init__.py"))


def _short(filename: str, keep: int = 2) -> str:
    parts = filename.replace("\\", "/").split("/")
    return "/".join(parts[-keep:]) if len(parts) > keep else filename


# --------------------------------------------------------------------------- traces

@dataclass
class OpStat:
    name: str
    total_us: float = 0.0
    count: int = 0
    durations: list[float] = field(default_factory=list)  # each event's, in µs (the op-time join's noise)


@dataclass
class TraceSummary:
    source: str                      # "device", "hlo_op" or "host": which events were summed
    ops: dict[str, OpStat] = field(default_factory=dict)

    @property
    def total_us(self) -> float:
        return sum(op.total_us for op in self.ops.values())

    def top(self, n: int = 10) -> list[OpStat]:
        return sorted(self.ops.values(), key=lambda o: -o.total_us)[:n]


# Derived rows of a device timeline that repeat the kernels' time at a coarser grain.
_DERIVED_THREADS = ("xla modules", "steps", "tensorflow ops", "framework", "source code",
                    "xla traceme", "launch stats")


def parse_perfetto_trace(path: str | os.PathLike) -> TraceSummary:
    """Total time and count per op of a ``perfetto_trace.json(.gz)`` (Chrome trace JSON)."""
    path = Path(path)
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ProfileFormatError(f"{path} is not JSON: {e}") from e
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    processes, threads = {}, {}
    for ev in events:
        if ev.get("ph") != "M":
            continue
        name = (ev.get("args") or {}).get("name", "")
        if ev.get("name") == "process_name":
            processes[ev.get("pid")] = name
        elif ev.get("name") == "thread_name":
            threads[(ev.get("pid"), ev.get("tid"))] = name
    complete = [ev for ev in events if ev.get("ph") == "X" and "name" in ev]
    device_pids = {pid for pid, name in processes.items() if name.startswith("/device:")}

    def on_device(ev) -> bool:
        if ev.get("pid") not in device_pids:
            return False
        thread = threads.get((ev.get("pid"), ev.get("tid")), "").lower()
        return not thread.startswith(_DERIVED_THREADS)

    device_events = [ev for ev in complete if on_device(ev)]
    if device_events:
        # prefer the "XLA Ops" row (one event per HLO op) when the trace has it
        xla_ops = [ev for ev in device_events
                   if threads.get((ev["pid"], ev.get("tid")), "").lower() == "xla ops"]
        source, chosen = "device", xla_ops or device_events
    else:
        chosen = [ev for ev in complete if (ev.get("args") or {}).get("hlo_op")]
        source = "hlo_op"
        if not chosen:
            source, chosen = "host", complete
    summary = TraceSummary(source)
    for ev in chosen:
        args = ev.get("args") or {}
        name = ev["name"]
        module = args.get("hlo_module")
        key = f"{module}/{name}" if module and source != "host" else name
        stat = summary.ops.setdefault(key, OpStat(key))
        stat.total_us += float(ev.get("dur", 0.0))
        stat.count += 1
        stat.durations.append(float(ev.get("dur", 0.0)))
    return summary


# --------------------------------------------------------------------------- captures

@dataclass
class Capture:
    """The files of one capture folder written by :mod:`hourly.trace`."""

    folder: Path
    manifest: dict
    perfetto: Path | None
    memory_profile: Path | None
    checkpoints: dict[str, Path]


def load_capture(folder: str | os.PathLike) -> Capture:
    """Find the newest trace and the memory profiles of a capture folder."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no capture folder {folder}")
    manifest_path = folder / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    perfetto = sorted(folder.rglob("perfetto_trace.json.gz"), key=lambda p: p.stat().st_mtime)
    final = folder / "memory.prof"
    checkpoints = {p.stem[len("memory-"):]: p for p in sorted(folder.glob("memory-*.prof"))}
    return Capture(folder, manifest, perfetto[-1] if perfetto else None,
                   final if final.exists() else None, checkpoints)


@dataclass
class Change:
    name: str
    good: float
    bad: float
    good_count: int = 0
    bad_count: int = 0

    @property
    def delta(self) -> float:
        return self.bad - self.good

    @property
    def ratio(self) -> float | None:
        return self.bad / self.good if self.good else None


def diff_tables(good: dict[str, tuple[float, int]],
                bad: dict[str, tuple[float, int]]) -> list[Change]:
    """Join two ``name -> (amount, count)`` tables; biggest absolute change first."""
    changes = []
    for name in set(good) | set(bad):
        g, gc = good.get(name, (0.0, 0))
        b, bc = bad.get(name, (0.0, 0))
        changes.append(Change(name, g, b, gc, bc))
    changes.sort(key=lambda c: (-abs(c.delta), -max(c.good, c.bad), c.name))
    return changes


def pprof_diff_command(good_profile: str | os.PathLike, bad_profile: str | os.PathLike) -> str:
    """The Go pprof command that shows memory growth from good to bad in a browser."""
    return (f"pprof -http=: --diff_base {shlex.quote(str(good_profile))} "
            f"{shlex.quote(str(bad_profile))}")


@dataclass
class Comparison:
    good: Capture
    bad: Capture
    ops: list[Change]
    op_source: str | None
    memory: list[Change]
    good_memory_total: int | None
    bad_memory_total: int | None
    notes: list[str] = field(default_factory=list)

    @property
    def pprof_command(self) -> str | None:
        if self.good.memory_profile and self.bad.memory_profile:
            return pprof_diff_command(self.good.memory_profile, self.bad.memory_profile)
        return None

    def render(self, top: int = 10) -> str:
        lines = [f"good: {self.good.folder}", f"bad:  {self.bad.folder}", ""]
        if self.ops:
            lines.append(f"Op time (sum of {self.op_source} events), biggest changes first:")
            lines.append(_table(["op", "good ms", "bad ms", "change ms", "ratio", "calls g/b"],
                                [[c.name, f"{c.good / 1e3:.3f}", f"{c.bad / 1e3:.3f}",
                                  f"{c.delta / 1e3:+.3f}", _ratio(c),
                                  f"{c.good_count}/{c.bad_count}"] for c in self.ops[:top]]))
            lines.append("")
        if self.memory:
            lines.append(f"Live device memory by allocation site (end of program): good "
                         f"{_mib(self.good_memory_total)}, bad {_mib(self.bad_memory_total)}")
            lines.append(_table(["site", "good MiB", "bad MiB", "change MiB", "buffers g/b"],
                                [[c.name, f"{c.good / 2**20:.3f}", f"{c.bad / 2**20:.3f}",
                                  f"{c.delta / 2**20:+.3f}", f"{c.good_count}/{c.bad_count}"]
                                 for c in self.memory[:top]]))
            lines.append("")
        if self.pprof_command:
            lines.append("With Go pprof (go install github.com/google/pprof@latest):")
            lines.append(f"  {self.pprof_command}")
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines).rstrip() + "\n"


def require_captures(*folders: str | os.PathLike) -> None:
    """Refuse a folder that holds nothing to compare (no Perfetto trace, no memory profile), and two
    folders that hold nothing of the same kind: ``hourly compare-profiles`` has no answer then."""
    caps = []
    for folder in folders:
        if not Path(folder).is_dir():
            raise UserError(f"no capture folder {folder}", "give folders written by hourly trace")
        c = load_capture(folder)
        if c.perfetto is None and c.memory_profile is None:
            raise UserError(f"no trace or memory profile in {Path(folder).absolute()} (no perfetto_trace.json.gz, "
                            "no memory.prof)", "give capture folders written by hourly trace or hourly profile "
                            "(<workdir>/profiles/<name>/good and bad)")
        caps.append(c)
    if not (all(c.perfetto for c in caps) or all(c.memory_profile for c in caps)):
        raise UserError("nothing to compare: " + ", ".join(
            f"{c.folder} holds only {'a trace' if c.perfetto else 'a memory profile'}" for c in caps),
            "capture both states the same way (hourly trace, or hourly profile)")


def compare(good_dir: str | os.PathLike, bad_dir: str | os.PathLike) -> Comparison:
    """Compare two capture folders (good first): op times and live memory by site."""
    good, bad = load_capture(good_dir), load_capture(bad_dir)
    notes = []
    ops: list[Change] = []
    source = None
    if good.perfetto and bad.perfetto:
        g, b = parse_perfetto_trace(good.perfetto), parse_perfetto_trace(bad.perfetto)
        if g.source != b.source:
            notes.append(f"the traces differ in kind (good: {g.source}, bad: {b.source})")
        source = b.source
        ops = diff_tables({k: (v.total_us, v.count) for k, v in g.ops.items()},
                          {k: (v.total_us, v.count) for k, v in b.ops.items()})
    else:
        notes.append("no Perfetto trace in " + " and ".join(
            str(c.folder) for c in (good, bad) if not c.perfetto))
    memory: list[Change] = []
    totals: list[int | None] = [None, None]
    if good.memory_profile and bad.memory_profile:
        gm, bm = parse_memory_profile(good.memory_profile), parse_memory_profile(bad.memory_profile)
        totals = [gm.total_bytes(), bm.total_bytes()]
        memory = diff_tables({k: (float(v.bytes), v.count) for k, v in gm.by_site().items()},
                             {k: (float(v.bytes), v.count) for k, v in bm.by_site().items()})
    else:
        notes.append("no memory.prof in " + " and ".join(
            str(c.folder) for c in (good, bad) if not c.memory_profile))
    return Comparison(good, bad, ops, source, memory, totals[0], totals[1], notes)


def _ratio(c: Change) -> str:
    if c.ratio is None:
        return "new" if c.bad else "-"
    return f"{c.ratio:.2f}x"


def _mib(n: int | None) -> str:
    return "?" if n is None else f"{n / 2**20:.3f} MiB"


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    fmt = lambda row: "  ".join(
        str(x).ljust(w) if i == 0 else str(x).rjust(w) for i, (x, w) in enumerate(zip(row, widths, strict=True)))
    return "\n".join([fmt(header), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows])
