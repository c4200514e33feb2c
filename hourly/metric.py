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
#: the metric), and a typographic minus (U+2212) is a minus. The pattern itself stays as it is: it is part of every measurement's key.
_DEFAULT_READING = re.compile(rf"MLUPS:\s*(?P<value>\u2212?{NUMBER}|[-+]?(?i:nan|inf(?:inity)?)(?![\w.]))")


def reading_regex(pattern: str | re.Pattern) -> re.Pattern:
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


# -- a captured number: read right, or refused with what was captured and what followed ----------

#: what, right after a capture, shows the number goes on (the capture cut it short): a digit, a
#: separator and a digit, a space-like separator and a group of three digits, an exponent
_GOES_ON = re.compile(r"\d|[.,_'](?=\d)|[ \u00a0\u2009\u202f](?=\d{3}(?!\d))|[eE][-+]?\d")
#: what, right before a capture, shows the number began earlier: a digit, a digit and a separator, a sign
_BEGAN_EARLIER = re.compile(r"(?:\d[.,_']?|[-+\u2212])$")
#: ... or a digit and a space before a capture of three digits (``1 234`` captured as ``234``)
_GROUP_EARLIER = re.compile(r"\d[ \u00a0\u2009\u202f]$")
_SPACE = " \u00a0\u2009\u202f"
#: after a captured 0, the rest of a hexadecimal, binary or octal number (0x1F, 0b101, 0o17)
_PREFIXED = re.compile(r"[xX][0-9a-fA-F]+|[bB][01]+|[oO][0-7]+")
_BASES = {"x": "a hexadecimal", "b": "a binary", "o": "an octal"}
#: the whole number that starts where a capture starts (separators only between digits)
_TOKEN = re.compile(r"[-+\u2212]?(?:\d|\.(?=\d)|[,_'](?<=\d.)(?=\d)|[ \u00a0\u2009\u202f](?<=\d.)(?=\d{3}(?!\d)))+"
                    r"(?:[eE][-+]?\d+)?")
_PLAIN = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_UNDERSCORES = re.compile(r"\d+(?:_\d+)+(?:\.\d+)?(?:[eE][-+]?\d+)?")  # Python's 1_000
_COMMAS = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d*)?(?:[eE][-+]?\d+)?")  # 1,234.5 and 1,234,567
_DOTS = re.compile(r"\d{1,3}(?:\.\d{3})+(?:,\d*)?")  # 1.234,5 and 1.234.567
_APOSTROPHES = re.compile(r"\d{1,3}(?:'\d{3})+(?:[.,]\d*)?")  # 1'234.5
#: 1 234,5: one number, or 1 and then 234,5 (a space is no sure digit group)
_SPACES = re.compile(r"\d{1,3}(?:[ \u00a0\u2009\u202f]\d{3})+(?:[.,]\d*)?")
#: the fix of a number hourly cannot read
PLAIN_NUMBER_FIX = "print the number plainly (digits, one '.', e.g. 1234.5)"


@dataclass(frozen=True)
class Number:
    """A capture read as a number: ``value`` (a float, finite or not), else None and ``why``
    (the capture, what followed it, and why it is no number hourly reads). ``cut`` tells a number
    hourly will not guess at (``1,234`` is 1234 or 1.234; a capture that cut a number short) from
    text that is no number at all (``fast``, ``5ms`` captured whole)."""

    value: float | None
    why: str | None = None
    cut: bool = False


def _grouped(body: str) -> float | str:
    """``body`` (no sign) as a number, its digit groups read the one way they can be; else why not
    (the words that follow the number in a sentence)."""
    if _PLAIN.fullmatch(body) or _UNDERSCORES.fullmatch(body):
        return float(body)
    if _COMMAS.fullmatch(body):
        if body.count(",") == 1 and "." not in body:
            whole = body.replace(",", "")
            return f"reads as {whole} (a thousands comma) or {body.replace(',', '.')} (a decimal comma)"
        return float(body.replace(",", ""))
    if _DOTS.fullmatch(body):
        return float(body.replace(".", "").replace(",", "."))
    if _APOSTROPHES.fullmatch(body):
        return float(body.replace("'", "").replace(",", "."))
    if _SPACES.fullmatch(body):
        return "is one number with spaces between its digit groups, or several numbers"
    if re.fullmatch(r"\d+,\d+", body):
        return "is one number with a decimal comma, or two numbers"
    return "is not one number"


def _token_end(token: str, start: int) -> int:
    """Where the number ``token`` (found at ``start``) ends: a space groups digits only before any
    point, comma or exponent (``1,234.5 100`` is 1,234.5 and then 100)."""
    for i, c in enumerate(token):
        if c in _SPACE and re.search(r"[.,_'eE]", token[:i]):
            return start + i
    return start + len(token)


def read_number(text: str, start: int = 0, end: int | None = None) -> Number:
    """The number ``text[start:end]`` captured (the whole text by default), read right or refused.

    A capture that cuts a number short reads the whole of it (``MLUPS: 1,234.5`` captured as ``1``
    is 1234.5), digit groups read the one way they can (``1,234.5``, ``1.234,5``, ``1'234.5``,
    ``1_000``); what could be read two ways (``1,234``; ``1 234,5``, a space being no sure digit
    group), or a number that began before the capture, is refused (``cut``), never guessed. A value
    that overflows reads as infinity (the caller refuses it)."""
    end = len(text) if end is None else end
    raw = text[start:end]
    just_before = text[max(0, start - 2):start]
    if ((raw[:1].isdigit() or raw[:1] == ".") and _BEGAN_EARLIER.search(just_before)
            or re.fullmatch(r"\d{3}(?:[.,]\d*)?", raw) and _GROUP_EARLIER.search(just_before)):
        before = text[max(0, start - 12, text.rfind("\n", 0, start) + 1):start]
        return Number(None, f"captured {raw!r} after {before!r}: the number began before the capture", cut=True)
    prefixed = _PREFIXED.match(text, end) if re.fullmatch(r"[-+\u2212]?0", raw) else None
    if prefixed:  # 0x1F, 0b101, 0o17: the capture's 0 is no value
        return Number(None, f"captured {raw!r}, followed by {prefixed.group()!r}: {raw + prefixed.group()!r} is "
                            f"{_BASES[prefixed.group()[0].lower()]} number, not read as one", cut=True)
    shown = raw
    token = _TOKEN.match(text, start, len(text))
    token_end = start if token is None else _token_end(token.group(), start)
    if token_end > end and _GOES_ON.match(text, end):
        shown = text[start:token_end]
    elif token is None or token_end != end:  # text that is no number, captured whole: as float() reads it
        try:
            return Number(float(raw.strip().replace("\u2212", "-")))
        except ValueError:
            return Number(None, f"captured {raw!r}, which is no number")
    sign, body = "", shown
    if body[:1] in "-+\u2212":
        sign, body = ("-" if body[0] in "-\u2212" else ""), body[1:]
    read = _grouped(body)
    if isinstance(read, float):
        return Number((-read if sign else read) + 0.0)  # + 0.0: -0 is 0
    if shown == raw:
        return Number(None, f"captured {raw!r}, which {read}", cut=True)
    return Number(None, f"captured {raw!r}, followed by {text[end:start + len(shown)]!r}: {shown!r} {read}", cut=True)


@dataclass(frozen=True)
class MetricReading:
    """What the metric regex read in a run's output: the value (the last match that is a finite
    number; None when there is none) and, when the regex matched text that is no finite number
    (``MLUPS: 1e400`` overflows to infinity, ``inf``, ``nan``, a word), the last such text. A
    number hourly will not guess at (``MLUPS: 1,234`` is 1234 or 1.234; :func:`read_number`) is no
    value at all, whatever else was printed: ``unread`` says what was captured and what followed."""

    value: float | None
    captured: str | None = None
    unread: str | None = None

    def why_none(self) -> str:
        """Why the run has no metric, in words ("metric never printed" when nothing matched)."""
        if self.unread is not None:
            return unread_words(self.unread)
        if self.captured is None:
            return "metric never printed"
        return f"the metric regex captured {self.captured!r}, not a finite number"


def unread_words(why: str) -> str:
    """A number the metric regex captured that hourly will not guess at, and the fix, in words."""
    return f"the metric regex {why} — {PLAIN_NUMBER_FIX}"


def _group_span(m: re.Match, rx: re.Pattern) -> tuple[int, int]:
    g = "value" if "value" in rx.groupindex else 1
    return m.span(g)


def read_metric(text: str, pattern: str | re.Pattern = DEFAULT_METRIC_REGEX) -> MetricReading:
    """The metric in ``text``: the last match that reads as a finite number wins. A capture that
    is not one (an overflow to infinity, a literal ``inf`` or ``nan``, a word) is no metric: it is
    kept as ``captured`` so that the run can say what it printed. A number hourly will not guess at
    (:func:`read_number`: ``1,234``, a capture that cut a number short where the rest cannot be read)
    makes the whole run unread: another match's value would be a silent pick."""
    rx = reading_regex(pattern)
    value = None
    captured = None
    for m in rx.finditer(text):
        start, end = _group_span(m, rx)
        if start < 0:  # the group took no part in this match
            continue
        n = read_number(text, start, end)
        if n.cut:
            return MetricReading(None, None, n.why)
        if n.value is not None and math.isfinite(n.value):
            value = n.value
        else:
            captured = text[start:end]
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
    caller can tell "never printed" (0) from "printed, but only warm-up" or "printed only nan".
    ``unread``: a counted match is a number hourly will not guess at (:func:`read_number`); then
    no sample counts (the others alone would be a silent pick: ``999.5`` read, ``1,000`` not)."""

    values: tuple[float, ...]
    matched: int
    warmup: int
    rejected: tuple[str, ...] = ()  # counted matches whose text is no finite number: nan, inf, 1e999
    unread: str | None = None


def _samples(read: list[tuple[str, Number]], warmup: int) -> Samples:
    """``read``: each match's text and its number, in the order printed."""
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0, not {warmup}")
    counted = read[warmup:]
    cut = next((n.why for _, n in counted if n.cut), None)
    if cut is not None:
        return Samples((), len(read), min(warmup, len(read)), (), cut)
    finite = [n.value if n.value is not None and math.isfinite(n.value) else None for _, n in counted]
    return Samples(tuple(v for v in finite if v is not None), len(read), min(warmup, len(read)),
                   tuple(raw for (raw, _), v in zip(counted, finite, strict=True) if v is None))


def parse_samples(text: str, pattern: str | re.Pattern = DEFAULT_METRIC_REGEX, warmup: int = 0) -> Samples:
    """Every match of the metric's pattern in ``text`` as a sample (not only the last, as
    :func:`parse_metric` takes): a benchmark that prints its metric once per iteration gives many
    samples from one process. The first ``warmup`` matches are dropped (the process's warm-up
    iterations, whatever they printed); a value that is not a finite number (``nan``, ``inf``, an
    overflow such as ``1e999``) is rejected, never counted, and listed in ``rejected``."""
    rx = reading_regex(pattern)
    read = []
    for m in rx.finditer(text):
        start, end = _group_span(m, rx)
        read.append(("None", Number(None)) if start < 0 else (text[start:end], read_number(text, start, end)))
    return _samples(read, warmup)


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
    read: dict[str, list[tuple[str, Number]]] = {}
    for m in _SAMPLE_LINE.finditer(text):
        read.setdefault(m.group("name"), []).append((m.group("value"), read_number(m.group("value"))))
    return {name: _samples(values, warmup) for name, values in read.items()}


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
