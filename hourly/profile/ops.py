"""An op table: time and calls per op of one trace, and where its events came from (which plane,
which lines, which file) — what :mod:`hourly.profile.xplane` and the Perfetto reader of
:mod:`hourly.profile.compare` both return."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

#: an HLO instruction written out whole, as a TPU's ``XLA Ops`` line names its events
#: (``%fusion.16 = (f32[8,128]{1,0}) fusion(f32[8,128]{1,0} %p.1), kind=kLoop, …``, ``ROOT`` marked
#: or not): the instruction's name is what stands before ``=``
_INSTRUCTION_TEXT = re.compile(r"^\s*(?:ROOT\s+)?%?(?P<name>[A-Za-z_][\w.\-]*)\s*=\s")

#: an instruction's name with its sigil alone (``%fusion.16``)
_SIGIL_NAME = re.compile(r"^%(?P<name>[A-Za-z_][\w.\-]*)$")


def instruction_name(op: str) -> str:
    """The HLO instruction name an op event stands for: ``fusion.16`` for the whole instruction
    text ``%fusion.16 = (f32[…]) fusion(…)`` (a TPU's device ops on the 2026-12-05 machine) and for
    ``%fusion.16``; any other name (a GPU kernel's, a CPU thunk's ``fusion.16``) as it is. The HLO
    diff names instructions without the ``%`` sigil, and the op-time join looks them up by it."""
    m = _INSTRUCTION_TEXT.match(op) or _SIGIL_NAME.match(op)
    return m["name"] if m else op


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
    plane: str = ""                  # where they were: "/device:TPU:0", "/host:CPU", a Perfetto process
    lines: list[str] = field(default_factory=list)  # the device lines read ("XLA Ops", "Stream #13")
    file: str = ""                   # the file read
    reader: str = "perfetto"         # "xplane" (the profiler's XSpace) or "perfetto" (its JSON)
    how: str = ""                    # how the events were chosen, for people
    notes: list[str] = field(default_factory=list)

    @property
    def total_us(self) -> float:
        return sum(op.total_us for op in self.ops.values())

    def describe(self) -> str:
        """Which events were summed, in words: ``device ops of /device:TPU:0 (the XLA Ops line, from
        vm.xplane.pb)``, ``host ops: XLA's thunks on /host:CPU (events carrying hlo_op, …)``."""
        where = f" of {self.plane}" if self.plane else ""
        src = Path(self.file).name if self.file else self.reader
        if self.source == "device":
            return f"device ops{where} ({self.how or 'device events'}, from {src})"
        if self.source == "hlo_op":
            return f"host ops: XLA's thunks{' on ' + self.plane if self.plane else ''} (no device timeline; " \
                   f"events carrying hlo_op, from {src})"
        return f"host events (no device timeline and no hlo_op: not ops; from {src})"

    def as_dict(self) -> dict:
        return {"source": self.source, "plane": self.plane, "lines": self.lines, "file": self.file,
                "reader": self.reader, "how": self.how, "notes": self.notes, "described": self.describe(),
                "ops": len(self.ops)}

    def top(self, n: int = 10) -> list[OpStat]:
        return sorted(self.ops.values(), key=lambda o: -o.total_us)[:n]


