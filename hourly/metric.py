"""The metric a benchmark prints: the default pattern, its checks, and reading it from output.

A value is a finite number: a capture that overflows (``1e400``), reads as infinity or NaN, or is
no number at all is no metric (the run is ``no_metric``, and says what was captured)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from hourly.errors import UserError

NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"



DEFAULT_METRIC_REGEX = rf"MLUPS:\s*(?P<value>{NUMBER})"



def compile_metric_regex(pattern: str) -> re.Pattern:
    try:
        rx = re.compile(pattern)
    except re.error as e:
        raise UserError(f"--metric-regex {pattern!r} is not a valid regular expression ({e})",
                        r"fix the pattern, e.g. 'MLUPS:\s*(?P<value>[0-9.]+)'") from e
    if "value" not in rx.groupindex and rx.groups < 1:
        raise UserError(f"--metric-regex {pattern!r} captures nothing",
                        "add a named group (?P<value>...) around the number")
    if "value" not in rx.groupindex and rx.groups > 1:
        # which of several groups is the number is a guess (the first may be a commit hash's digits)
        raise UserError(f"--metric-regex {pattern!r} has {rx.groups} groups and none is named value",
                        "name the number's group (?P<value>...), or make the others (?:...)")
    return rx


@dataclass(frozen=True)
class MetricReading:
    """What the metric regex read in a run's output: the value (the last match that is a finite
    number; None when there is none) and, when the regex matched text that is no finite number
    (``MLUPS: 1e400`` overflows to infinity, ``inf``, ``nan``, a word), the last such text."""

    value: float | None
    captured: str | None = None

    def why_none(self) -> str:
        """Why the run has no metric, in words ("metric never printed" when nothing matched)."""
        if self.captured is None:
            return "metric never printed"
        return f"the metric regex captured {self.captured!r}, not a finite number"


def read_metric(text: str, pattern: str | re.Pattern = DEFAULT_METRIC_REGEX) -> MetricReading:
    """The metric in ``text``: the last match that reads as a finite number wins. A capture that
    is not one (an overflow to infinity, a literal ``inf`` or ``nan``, a word) is no metric: it is
    kept as ``captured`` so that the run can say what it printed."""
    rx = pattern if isinstance(pattern, re.Pattern) else compile_metric_regex(pattern)
    value = None
    captured = None
    for m in rx.finditer(text):
        raw = m.group("value") if "value" in rx.groupindex else m.group(1)
        if raw is None:  # the group took no part in this match
            continue
        try:
            x = float(raw)
        except ValueError:
            captured = raw
            continue
        if math.isfinite(x):
            value = x
        else:
            captured = raw
    return MetricReading(value, None if value is not None else captured)


def parse_metric(text: str, pattern: str | re.Pattern = DEFAULT_METRIC_REGEX) -> float | None:
    """The metric's value in ``text``: the last match that is a finite number; None when there is
    none (:func:`read_metric` also says what the regex captured instead)."""
    return read_metric(text, pattern).value
