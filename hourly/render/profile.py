"""``hourly profile``'s part of the report: per regression, the captures, which events the op
table summed (device ops or host ops), the device's peak memory and the front-end diff
(:func:`hourly.profile.frontend.lines`) — from each target's ``profile.json``."""

from __future__ import annotations

import json
from pathlib import Path

from hourly.profile.frontend import lines as front_end_lines
from hourly.profile.run import RECORD
from hourly.render import markdown as esc
from hourly.render.console import escape_controls


def _mib(n: int | None) -> str:
    return "?" if n is None else f"{n / 2**20:.3f} MiB"


def report_section(workdir: Path) -> list[str]:
    """The report's "Traces and memory profiles" section; [] when ``hourly profile`` never ran."""
    folder = workdir / "profiles"
    comparisons = sorted(folder.glob("*/comparison.txt")) if folder.is_dir() else []
    if not comparisons:
        return []
    md = ["## Traces and memory profiles", ""]
    for comp in comparisons:
        md.append(f"- {esc.text(comp.parent.name)}: {esc.code(comp.parent)} (comparison: {esc.code(comp)})")
        rec_path = comp.parent / RECORD
        try:
            rec = json.loads(rec_path.read_text()) if rec_path.is_file() else None
        except (OSError, ValueError):
            rec = None
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
