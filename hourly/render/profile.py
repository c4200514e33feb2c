"""``hourly profile``'s part of the report: per regression, the captures, which events the op
table summed (device ops or host ops), the device's peak memory and the front-end diff
(:func:`hourly.profile.frontend.lines`) — from each target's ``profile.json``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hourly.profile.frontend import lines as front_end_lines
from hourly.render import markdown as esc
from hourly.render.console import escape_controls

if TYPE_CHECKING:
    from hourly.report.data import ProfileCapture


def _mib(n: int | None) -> str:
    return "?" if n is None else f"{n / 2**20:.3f} MiB"


def report_section(captures: list[ProfileCapture]) -> list[str]:
    """The report's "Traces and memory profiles" section; [] when ``hourly profile`` never ran."""
    if not captures:
        return []
    md = ["## Traces and memory profiles", ""]
    for cap in captures:
        comp = cap.comparison
        md.append(f"- {esc.text(cap.folder.name)}: {esc.code(cap.folder)} (comparison: {esc.code(comp)})")
        rec = cap.record
        if not rec:
            continue
        c = rec.get("comparison") or {}
        if c.get("op_reading"):
            md.append(f"  - op times: {esc.text(c['op_reading'])}")
        peaks = c.get("device_peak_bytes") or {}
        if any(v is not None for v in peaks.values()):
            md.append(f"  - peak device memory: good {_mib(peaks.get('good'))}, bad {_mib(peaks.get('bad'))}")
        fe = front_end_lines(rec.get("front_end"))
        if fe:
            md += ["", "```", *(escape_controls(line).replace("```", "'''") for line in fe), "```"]
    md.append("")
    return md
