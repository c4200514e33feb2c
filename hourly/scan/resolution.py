"""The scan's resolution (hourly.analysis.resolution) in words, JSON and its exit: a scan that found
no step while steps of --min-change could not show through its noise is no "no steps found"."""

from __future__ import annotations

from dataclasses import replace

from hourly.analysis.detect import DEFAULT_MIN_CHANGE
from hourly.analysis.resolution import Resolution, repeats_fix, resolution, unresolved_words
from hourly.analysis.steps import find_steps, standing
from hourly.errors import UserError
from hourly.measure.settings import Settings
from hourly.model import PointResult, ScanReport, Status


def of_points(points: list[PointResult], higher_is_better: bool) -> tuple[Resolution | None, list]:
    """The resolution of a scan's table (None with under two measured pairs) and the steps it found."""
    if not any(p.status == Status.OK.value and p.value is not None for p in points):
        return None, []
    steps, detection, groups = find_steps(points, higher_is_better)
    return resolution(detection, [len(g.samples or []) for g in groups]), steps


def fix(r: Resolution, s: Settings, min_change: float = DEFAULT_MIN_CHANGE) -> str:
    """The scan again with the repeats that bring the resolution under ``min_change``."""
    from hourly.scan.table import scan_command
    return repeats_fix(r, min_change, "pair", lambda n: scan_command(replace(s, repeats=n)) + " --rerun")


def as_json(points: list[PointResult], s: Settings) -> dict | None:
    """The ``resolution`` field of a scan's JSON (None with under two measured pairs)."""
    r = of_points(points, s.higher_is_better)[0]
    if r is None:
        return None
    out = r.as_json(DEFAULT_MIN_CHANGE)
    out["fix"] = None if out["resolves"] else fix(r, s)
    return out


def unresolved_error(r: Resolution, floor: float, fix_text: str, who: str = "") -> UserError:
    """The error of a series that found no step where steps of ``floor`` could not show through its
    noise (scan, show and detect alike); ``who`` opens it ("the scan found ")."""
    return UserError(f"{who}{unresolved_words(r, floor)}", fix_text)


def require_resolved_report(report: ScanReport, s: Settings, found_anything: bool = False, then: str = "") -> None:
    """No step found where a step of the default --min-change could not have shown is no answer
    (exit 1, as a table too short to tell noise from steps): it says the resolution and the scan
    with the repeats that resolve it. An edge step that measuring again called an outlier is no
    step found (:func:`hourly.analysis.steps.standing`). ``then``: as
    :func:`hourly.scan.table.require_decided`'s. A scan of several named metrics says each
    metric's own bound instead ("unchanged (within ±1.2 %)", hourly.analysis.moved), which names
    the size it rules out already: this adds nothing to it."""
    if found_anything or report.metrics is not None:
        return
    r, steps = of_points(report.points, s.higher_is_better)
    if r is None or r.resolves(DEFAULT_MIN_CHANGE) or standing(steps, report.edge_checks):
        return
    raise unresolved_error(r, DEFAULT_MIN_CHANGE, fix(r, s) + then, "the scan found ")
