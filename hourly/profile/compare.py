"""Read JAX traces and device memory profiles, and compare a good capture with a bad one.

Pure parsing and arithmetic, no external tools:

* :func:`parse_memory_profile` decodes the gzip'd pprof protobuf written by
  ``jax.profiler.save_device_memory_profile`` (``profile.proto``) with a small wire-format
  decoder, into samples with their Python stacks, bytes and counts.
* :func:`read_trace` sums a capture's trace by op: from the profiler's XSpace (``*.xplane.pb``,
  :mod:`hourly.profile.xplane`) when the capture has one, else from the Perfetto trace
  (``perfetto_trace.json.gz``, :func:`parse_perfetto_trace`): device ops when the trace has a
  device timeline (TPU: the ``XLA Ops`` line of ``/device:TPU:0``; GPU: the kernels of the stream
  lines), else the XLA ops the CPU runtime reports (events carrying ``hlo_op``), else every host
  event — and says which (:meth:`~hourly.profile.ops.TraceSummary.describe`).
* :func:`compare` sets two capture folders (as written by :mod:`hourly.harness.trace`) side by side: the
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
from typing import Any

from hourly.errors import UserError
from hourly.profile.ops import OpStat, TraceSummary, instruction_name
from hourly.profile.wire import ProfileFormatError, _ints, _num, _signed64, _sub, iter_fields
from hourly.profile.xplane import op_table, parse_xspace

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
                    "<frozen runpy>", "/runpy.py", "/hourly/harness/trace.py", "/hourly/jaxbench.py")


def _is_library_frame(filename: str) -> bool:
    name = filename.replace("\\", "/")
    return (any(marker in name for marker in _LIBRARY_MARKERS)
            or name.endswith("/jax/numpy/__init__.py"))


def _short(filename: str, keep: int = 2) -> str:
    parts = filename.replace("\\", "/").split("/")
    return "/".join(parts[-keep:]) if len(parts) > keep else filename


# --------------------------------------------------------------------------- traces

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

    def on_device(ev: dict[str, Any]) -> bool:
        if ev.get("pid") not in device_pids:
            return False
        thread = threads.get((ev.get("pid"), ev.get("tid")), "").lower()
        return not thread.startswith(_DERIVED_THREADS)

    device_events = [ev for ev in complete if on_device(ev)]
    plane, lines, how = "", [], ""
    if device_events:
        # prefer the "XLA Ops" row (one event per HLO op) when the trace has it
        xla_ops = [ev for ev in device_events
                   if threads.get((ev["pid"], ev.get("tid")), "").lower() == "xla ops"]
        source, chosen = "device", xla_ops or device_events
        how = "the XLA Ops row" if xla_ops else "the device rows but the derived ones"
        plane = ", ".join(sorted({processes[ev["pid"]] for ev in chosen}))
        lines = sorted({threads.get((ev["pid"], ev.get("tid")), "") for ev in chosen})
    else:
        chosen = [ev for ev in complete if (ev.get("args") or {}).get("hlo_op")]
        source, how = "hlo_op", "events carrying hlo_op"
        if not chosen:
            source, chosen, how = "host", complete, "every event"
        plane = ", ".join(sorted({str(processes.get(ev.get("pid"), ev.get("pid"))) for ev in chosen}))
    summary = TraceSummary(source, plane=plane, lines=lines, file=str(path), reader="perfetto", how=how)
    for ev in chosen:
        args = ev.get("args") or {}
        name = ev["name"] if source == "host" else instruction_name(ev["name"])
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
    """The files of one capture folder written by :mod:`hourly.harness.trace`."""

    folder: Path
    manifest: dict
    perfetto: Path | None
    memory_profile: Path | None
    checkpoints: dict[str, Path]
    xplane: Path | None = None

    @property
    def has_trace(self) -> bool:
        return self.perfetto is not None or self.xplane is not None


def _files(folder: Path, pattern: str) -> list[tuple[Path, float]]:
    """The files under ``folder`` named like ``pattern``, each with its modification time; a folder or
    file that vanishes or cannot be read while they are listed (a busy shared folder such as /tmp
    given by mistake) is passed over, never a traceback."""
    import fnmatch
    out = []
    for root, _, names in os.walk(folder):  # os.walk passes over a folder it cannot list
        for name in fnmatch.filter(names, pattern):
            try:
                out.append((Path(root) / name, (Path(root) / name).stat().st_mtime))
            except OSError:
                continue
    return out


def load_capture(folder: str | os.PathLike) -> Capture:
    """Find the newest trace (XSpace and Perfetto) and the memory profiles of a capture folder."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no capture folder {folder}")
    manifest_path = folder / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    newest = lambda pattern: max(_files(folder, pattern), key=lambda p: p[1], default=(None, 0.0))[0]
    final = folder / "memory.prof"
    checkpoints = {p.stem[len("memory-"):]: p for p in sorted(folder.glob("memory-*.prof"))}
    return Capture(folder, manifest, newest("perfetto_trace.json.gz"),
                   final if final.exists() else None, checkpoints, newest("*.xplane.pb"))


def read_trace(capture: Capture) -> TraceSummary | None:
    """The capture's op table: from its XSpace when it has one (every plane and line, as the
    profiler wrote them), else from its Perfetto trace; None when it has neither. An XSpace that
    cannot be read falls back to the Perfetto trace, and the table's notes say so."""
    note = None
    if capture.xplane is not None:
        try:
            return op_table(parse_xspace(capture.xplane), str(capture.xplane))
        except (ProfileFormatError, OSError) as e:
            note = f"{capture.xplane} could not be read ({e}): the Perfetto trace was read instead"
    if capture.perfetto is None:
        if note:
            raise ProfileFormatError(note.split(":")[0] + " could not be read, and there is no Perfetto trace")
        return None
    summary = parse_perfetto_trace(capture.perfetto)
    if note:
        summary.notes.append(note)
    return summary


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
    traces: tuple[TraceSummary | None, TraceSummary | None] = (None, None)  # good, bad

    @property
    def pprof_command(self) -> str | None:
        if self.good.memory_profile and self.bad.memory_profile:
            return pprof_diff_command(self.good.memory_profile, self.bad.memory_profile)
        return None

    @property
    def op_reading(self) -> str | None:
        """Which events the op table summed, in words (the bad trace's; the notes say if the good
        one was read otherwise)."""
        t = self.traces[1] or self.traces[0]
        return t.describe() if t else None

    def peaks(self) -> tuple[int | None, int | None]:
        """The device's peak bytes in use at the end of each run (hourly.harness.trace's manifest, from
        ``device.memory_stats()``; None where the backend reports none: the CPU)."""
        return _peak(self.good.manifest), _peak(self.bad.manifest)

    def as_dict(self, top: int = 10) -> dict:
        change = lambda c: {"name": c.name, "good": c.good, "bad": c.bad, "delta": c.delta,
                            "good_count": c.good_count, "bad_count": c.bad_count}
        g, b = self.traces
        return {"good": str(self.good.folder), "bad": str(self.bad.folder),
                "op_source": self.op_source, "op_reading": self.op_reading,
                "traces": {"good": g.as_dict() if g else None, "bad": b.as_dict() if b else None},
                "ops_us": [change(c) for c in self.ops[:top]],
                "memory_bytes": [change(c) for c in self.memory[:top]],
                "memory_total_bytes": {"good": self.good_memory_total, "bad": self.bad_memory_total},
                "device_peak_bytes": dict(zip(("good", "bad"), self.peaks(), strict=True)),
                "backend": {"good": self.good.manifest.get("backend"), "bad": self.bad.manifest.get("backend")},
                "pprof_command": self.pprof_command, "notes": self.notes}

    def render(self, top: int = 10) -> str:
        lines = [f"good: {self.good.folder}", f"bad:  {self.bad.folder}", ""]
        if self.ops:
            lines.append(f"Op time (sum of {self.op_reading}), biggest changes first:")
            lines.append(_table(["op", "good ms", "bad ms", "change ms", "ratio", "calls g/b"],
                                [[c.name, f"{c.good / 1e3:.3f}", f"{c.bad / 1e3:.3f}",
                                  f"{c.delta / 1e3:+.3f}", _ratio(c),
                                  f"{c.good_count}/{c.bad_count}"] for c in self.ops[:top]]))
            lines.append("")
        peaks = self.peaks()
        if any(p is not None for p in peaks):
            lines.append(f"Peak device memory (device.memory_stats() at the end of the run): good {_mib(peaks[0])}, "
                         f"bad {_mib(peaks[1])}")
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


def _peak(manifest: dict) -> int | None:
    stats = manifest.get("device_memory") or {}
    first = next(iter(stats.values()), None) if isinstance(stats, dict) else None
    value = (first or {}).get("peak_bytes_in_use")
    return int(value) if isinstance(value, (int, float)) else None


def require_captures(*folders: str | os.PathLike) -> None:
    """Refuse a folder that holds nothing to compare (no trace, no memory profile), and two
    folders that hold nothing of the same kind: ``hourly compare-profiles`` has no answer then."""
    caps = []
    for folder in folders:
        if not Path(folder).is_dir():
            raise UserError(f"no capture folder {folder}", "give folders written by hourly trace")
        c = load_capture(folder)
        if not c.has_trace and c.memory_profile is None:
            raise UserError(f"no trace or memory profile in {Path(folder).absolute()} (no *.xplane.pb, no "
                            "perfetto_trace.json.gz, no memory.prof)", "give capture folders written by hourly "
                            "trace or hourly profile (<workdir>/profiles/<name>/good and bad)")
        caps.append(c)
    if not (all(c.has_trace for c in caps) or all(c.memory_profile for c in caps)):
        raise UserError("nothing to compare: " + ", ".join(
            f"{c.folder} holds only {'a trace' if c.has_trace else 'a memory profile'}" for c in caps),
            "capture both states the same way (hourly trace, or hourly profile)")


def compare(good_dir: str | os.PathLike, bad_dir: str | os.PathLike) -> Comparison:
    """Compare two capture folders (good first): op times (device ops where the traces have a
    device timeline, :func:`read_trace`) and live memory by site."""
    good, bad = load_capture(good_dir), load_capture(bad_dir)
    notes = []
    ops: list[Change] = []
    source = None
    g = read_trace(good) if good.has_trace else None
    b = read_trace(bad) if bad.has_trace else None
    if g is not None and b is not None:
        if g.source != b.source:
            notes.append(f"the traces differ in kind (good: {g.describe()}; bad: {b.describe()})")
        source = b.source
        notes += [f"good trace: {n}" for n in g.notes] + [f"bad trace: {n}" for n in b.notes]
        ops = diff_tables({k: (v.total_us, v.count) for k, v in g.ops.items()},
                          {k: (v.total_us, v.count) for k, v in b.ops.items()})
    else:
        notes.append("no trace (no *.xplane.pb, no perfetto_trace.json.gz) in " + " and ".join(
            str(c.folder) for c in (good, bad) if not c.has_trace))
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
    return Comparison(good, bad, ops, source, memory, totals[0], totals[1], notes, (g, b))


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
