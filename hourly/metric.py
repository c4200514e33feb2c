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

#: how the default pattern is read: as it says, and a NaN or an infinity where the number stands is
#: captured too (never a value: the run says it printed no finite number, not that it never printed
#: the metric). The pattern itself stays as it is: it is part of every measurement's key.
_DEFAULT_READING = re.compile(rf"MLUPS:\s*(?P<value>{NUMBER}|[-+]?(?i:nan|inf(?:inity)?)(?![\w.]))")


def _reading(pattern: str | re.Pattern) -> re.Pattern:
    """The compiled pattern a run's output is read with (the default's: :data:`_DEFAULT_READING`)."""
    if (pattern.pattern if isinstance(pattern, re.Pattern) else pattern) == DEFAULT_METRIC_REGEX:
        return _DEFAULT_READING
    return pattern if isinstance(pattern, re.Pattern) else compile_metric_regex(pattern)



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
    rx = _reading(pattern)
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


# -- many samples from one process ---------------------------------------------------------------

@dataclass(frozen=True)
class Samples:
    """Every value one run printed for one metric, in the order printed.

    ``values`` are the samples that count: the matches after the first ``warmup`` ones whose text
    is a finite number. ``matched`` counts every match (warm-up and rejected ones included), so a
    caller can tell "never printed" (0) from "printed, but only warm-up" or "printed only nan"."""

    values: tuple[float, ...]
    matched: int
    warmup: int
    rejected: tuple[str, ...] = ()  # counted matches whose text is no finite number: nan, inf, 1e999


def _finite(raw: str | None) -> float | None:
    if raw is None:  # an optional group that did not take part in the match
        return None
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _samples(raws: list[str | None], warmup: int) -> Samples:
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0, not {warmup}")
    counted = raws[warmup:]
    values = [_finite(raw) for raw in counted]
    return Samples(tuple(v for v in values if v is not None), len(raws), min(warmup, len(raws)),
                   tuple(str(raw) for raw, v in zip(counted, values, strict=True) if v is None))


def parse_samples(text: str, pattern: str | re.Pattern = DEFAULT_METRIC_REGEX, warmup: int = 0) -> Samples:
    """Every match of the metric's pattern in ``text`` as a sample (not only the last, as
    :func:`parse_metric` takes): a benchmark that prints its metric once per iteration gives many
    samples from one process. The first ``warmup`` matches are dropped (the process's warm-up
    iterations, whatever they printed); a value that is not a finite number (``nan``, ``inf``, an
    overflow such as ``1e999``) is rejected, never counted, and listed in ``rejected``."""
    rx = _reading(pattern)
    group = "value" if "value" in rx.groupindex else 1
    return _samples([m.group(group) for m in rx.finditer(text)], warmup)


#: The prefixes of the lines of a benchmark that prints named metrics (``hourly.jaxbench``,
#: ``hourly.jaxbench_phases``): ``METRIC name: value`` is one sample; ``MEDIAN name: value`` the
#: median of a run's samples, printed once after them (for a regex that takes one value per run);
#: ``UNAVAILABLE name: reason`` a metric this run cannot give (e.g. device memory on the CPU).
SAMPLE_PREFIX, MEDIAN_PREFIX, UNAVAILABLE_PREFIX = "METRIC", "MEDIAN", "UNAVAILABLE"
#: a metric's name in those lines: letters, digits, ``_``, ``.``, ``-``; its unit last (``step_ms``)
METRIC_NAME = r"[A-Za-z_][\w.-]*"
_NAMED_LINE = r"(?<![\w]){prefix}[ \t]+(?P<name>" + METRIC_NAME + r")[ \t]*:[ \t]*(?P<value>[^\r\n]*?)[ \t]*$"
_SAMPLE_LINE = re.compile(_NAMED_LINE.format(prefix=SAMPLE_PREFIX), re.MULTILINE)
_UNAVAILABLE_LINE = re.compile(_NAMED_LINE.format(prefix=UNAVAILABLE_PREFIX), re.MULTILINE)


def named_line_regex(name: str, prefix: str = SAMPLE_PREFIX) -> str:
    """The ``--metric-regex`` that picks the ``METRIC <name>:`` line (or the ``MEDIAN <name>:`` one)."""
    return rf"{prefix} {re.escape(name)}:\s*(?P<value>{NUMBER})"


def read_metric_samples(text: str, warmup: int = 0) -> dict[str, Samples]:
    """Every ``METRIC name: value`` line of ``text``, grouped by name (in the order each name first
    appears), each name's first ``warmup`` lines dropped and its non-finite values rejected."""
    raws: dict[str, list[str | None]] = {}
    for m in _SAMPLE_LINE.finditer(text):
        raws.setdefault(m.group("name"), []).append(m.group("value"))
    return {name: _samples(values, warmup) for name, values in raws.items()}


def read_metrics(text: str, warmup: int = 0) -> dict[str, list[float]]:
    """``{name: [samples]}`` from every ``METRIC name: value`` line (see :func:`read_metric_samples`;
    a name printed only with non-finite values maps to an empty list)."""
    return {name: list(s.values) for name, s in read_metric_samples(text, warmup).items()}


def read_unavailable(text: str) -> dict[str, str]:
    """``{name: reason}`` from every ``UNAVAILABLE name: reason`` line (the last reason of a name)."""
    return {m.group("name"): m.group("value") for m in _UNAVAILABLE_LINE.finditer(text)}


# -- which way is better, by the unit a metric's name ends with -----------------------------------

#: units that end a metric's name (``step_ms``, ``peak_memory_bytes``) for which lower is better:
#: times and sizes
LOWER_IS_BETTER_UNITS = ("s", "ms", "us", "ns", "min", "bytes", "kib", "mib", "gib")


def higher_is_better(name: str) -> bool | None:
    """The direction a metric's name implies: ``False`` for a time or a size (a name ending in a
    unit of :data:`LOWER_IS_BETTER_UNITS`: ``trace_ms``, ``peak_memory_bytes``), ``True`` for a rate
    (``..._per_<unit>``: ``tokens_per_s``), ``None`` when the name says nothing (``MLUPS``: the user
    says, with ``--higher-is-better`` or ``--lower-is-better``). The one place this rule is written."""
    parts = name.lower().split("_")
    if len(parts) >= 3 and parts[-2] == "per":
        return True
    if len(parts) >= 2 and parts[-1] in LOWER_IS_BETTER_UNITS:
        return False
    return None
