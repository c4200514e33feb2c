"""Time parsing: the guide's forms and ISO 8601, always in an explicit zone.

A time string without a zone is read in the zone the user names (``--tz``, default UTC), never in
the process's local zone: ``git rev-list --before="Aug 24 2023 12:00:00"`` reads it in local time,
which changed 68 of 75 (xla, jax) pairs between UTC and Los Angeles on the real histories.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .errors import UserError

_GUIDE_FORMATS = [
    "%b %d %Y %H:%M:%S", "%b %d %Y %H:%M", "%b %d %Y",
    "%B %d %Y %H:%M:%S", "%B %d %Y %H:%M", "%B %d %Y",
    "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d",
]

_ZONE_SUFFIX = re.compile(r"^(?P<body>.*?)(?:\s+(?P<name>UTC|GMT|Z|[A-Za-z_]+/[A-Za-z_/+-]+))$")


@dataclass(frozen=True)
class ParsedTime:
    """A parsed instant; ``date_only`` tells whether the user gave a date without a time."""

    when: datetime  # timezone-aware, in UTC
    date_only: bool
    zone: object  # the zone the text was read in


def get_zone(name: str):
    if name.upper() in ("UTC", "Z", "GMT"):
        return timezone.utc
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as e:
        raise UserError(f"unknown time zone {name!r}",
                        "use an IANA name such as UTC or America/Los_Angeles") from e


def parse_time(text: str, tz: str = "UTC") -> ParsedTime:
    """Parse ``text`` (guide form or ISO 8601); a time without a zone is in ``tz``."""
    raw = text.strip()
    if not raw:
        raise UserError("empty time", 'give a time such as "Aug 24 2023" or 2023-08-24T12:00Z')
    zone = get_zone(tz)
    body = raw
    m = _ZONE_SUFFIX.match(raw)
    if m and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", raw):
        body, zone = m.group("body"), get_zone(m.group("name"))
    # "24:00" is the next day's 00:00: accept it, but it names the same instant.
    extra = timedelta(0)
    m24 = re.search(r"\b24:00(:00)?$", body)
    if m24:
        body = body[:m24.start()] + "00:00" + (m24.group(1) or "")
        extra = timedelta(days=1)
    dt = _parse_body(body)
    if dt is None:
        raise UserError(f"cannot parse time {text!r}",
                        'use "Aug 24 2023", "Aug 24 2023 12:00:00" or ISO 8601 like 2023-08-24T12:00:00Z')
    date_only = _looks_date_only(body)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=zone)
    return ParsedTime((dt + extra).astimezone(timezone.utc), date_only and not extra, dt.tzinfo)


def _parse_body(body: str) -> datetime | None:
    body = re.sub(r"\s+", " ", body.strip())
    try:
        return datetime.fromisoformat(body.replace("Z", "+00:00") if body.endswith("Z") else body)
    except ValueError:
        pass
    for fmt in _GUIDE_FORMATS:
        try:
            return datetime.strptime(body, fmt)
        except ValueError:
            continue
    return None


def _looks_date_only(body: str) -> bool:
    return ":" not in body and "T" not in body.upper().replace("OCT", "").replace("SEPT", "")


_STEP = re.compile(r"^\s*(?P<n>\d+)\s*(?P<unit>s|sec|m|min|h|hr|hour|hours|d|day|days)?\s*$", re.I)
_UNITS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hr": 3600, "hour": 3600,
          "hours": 3600, "d": 86400, "day": 86400, "days": 86400}


def parse_step(text: str) -> timedelta:
    """``1h``, ``30m``, ``6h``, ``1d`` → a positive timedelta."""
    m = _STEP.match(text or "")
    if not m:
        raise UserError(f"cannot parse step {text!r}", "use a number and a unit, e.g. 1h, 30m or 6h")
    seconds = int(m.group("n")) * _UNITS[(m.group("unit") or "h").lower()]
    if seconds <= 0:
        raise UserError(f"step {text!r} is not positive", "use a step such as 1h")
    return timedelta(seconds=seconds)


def window(start: str, end: str, tz: str = "UTC") -> tuple[datetime, datetime]:
    """The scan window: ``end`` given as a date alone means the end of that day (next 00:00)."""
    a = parse_time(start, tz)
    b = parse_time(end, tz)
    t0 = a.when
    t1 = b.when
    if b.date_only:  # the end of that day in its own zone (a calendar day, DST-safe)
        local = b.when.astimezone(b.zone).replace(tzinfo=None) + timedelta(days=1)
        t1 = local.replace(tzinfo=b.zone).astimezone(timezone.utc)
    if t1 < t0:
        raise UserError(f"the window is reversed: --from {start!r} is after --to {end!r}",
                        "swap --from and --to")
    return t0, t1


def instants(t0: datetime, t1: datetime, step: timedelta) -> list[datetime]:
    """Every instant t0, t0+step, … ≤ t1, each once (no ``24:00`` duplicate of ``00:00``)."""
    if t1 < t0:
        raise UserError("the window is reversed", "swap --from and --to")
    out = []
    t = t0
    while t <= t1:
        out.append(t)
        t += step
    if not out:
        raise UserError("the window holds no instant", "widen --from/--to or shorten --step")
    return out


def iso_utc(t: datetime) -> str:
    """``2023-08-24T00:00:00Z``."""
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
