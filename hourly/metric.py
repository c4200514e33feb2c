"""The metric a benchmark prints: the default pattern, its checks, and reading it from output."""

from __future__ import annotations

import re

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


def parse_metric(text: str, pattern: str | re.Pattern = DEFAULT_METRIC_REGEX) -> float | None:
    """The metric's value in ``text``: the last match wins; None when there is none."""
    rx = pattern if isinstance(pattern, re.Pattern) else compile_metric_regex(pattern)
    value = None
    for m in rx.finditer(text):
        raw = m.group("value") if "value" in rx.groupindex else m.group(1)
        try:
            value = float(raw)
        except (TypeError, ValueError):
            continue
    return value

