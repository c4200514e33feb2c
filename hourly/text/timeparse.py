"""Time parsing: dates and times as people write them, always in an explicit zone.

The text is read by python-dateutil's parser ("Aug 24 2023", "Sept 3 2023", "24 Aug 2023",
"2023-08-24 13:00", ISO 8601 with an offset, …), with a trailing IANA zone name accepted on top. A
time string without a zone is read in the zone the user names (``--tz``, default UTC), never in
the process's local zone: ``git rev-list --before="Aug 24 2023 12:00:00"`` reads it in local time,
which changed 68 of 75 (xla, jax) pairs between UTC and Los Angeles on the real histories. Zone
abbreviations other than UTC/GMT/Z are refused (dateutil would read one that matches the machine's
own zone as local time, and ignore any other).
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from hourly.errors import UserError

_ZONE_SUFFIX = re.compile(r"^(?P<body>.*?)(?:\s+(?P<name>[A-Za-z_]+/[A-Za-z_/+-]+))$")
_UTC_NAMES = ("UTC", "Z", "GMT")
_FORMS = '"Aug 24 2023", "24 Aug 2023 13:00", 2023-08-24 or ISO 8601 like 2023-08-24T12:00:00Z'

# Two defaults that differ in every field: a field the text gives is the same in both parses, a
# field it leaves out comes from the default and differs. (Comparing the parses, not looking for
# ":" in the text, is what tells "Aug 24 2023 00:00" (a time) from "Aug 24 2023" (a whole day).)
_DEFAULT_A = datetime(2001, 1, 1, 0, 0, 0, 0)
_DEFAULT_B = datetime(2002, 2, 2, 1, 1, 1, 1)


@dataclass(frozen=True)
class ParsedTime:
    """A parsed instant; ``date_only`` tells whether the user gave a date without a time."""

    when: datetime  # timezone-aware, in UTC
    date_only: bool
    zone: tzinfo  # the zone the text was read in


def get_zone(name: str) -> tzinfo:
    if name.upper() in _UTC_NAMES:
        return timezone.utc
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as e:
        raise UserError(f"unknown time zone {name!r}",
                        "use an IANA name such as UTC or America/Los_Angeles") from e


class _ZoneAbbreviation(Exception):
    pass


def _tzinfos(name: str | None, offset: int | None) -> tzinfo | None:
    """dateutil's hook (called for every text, with or without a zone): offsets and UTC only."""
    if name is None and offset is None:
        return None  # no zone in the text: read it in --tz
    if name is None or name.upper() in _UTC_NAMES:
        return timezone(timedelta(seconds=offset or 0))
    raise _ZoneAbbreviation(name)


def _parse(body: str, default: datetime) -> datetime:
    from dateutil import parser  # where it is used: commands that read no time start faster
    with warnings.catch_warnings():
        warnings.simplefilter("error", parser.UnknownTimezoneWarning)
        return parser.parse(body, default=default, tzinfos=_tzinfos)


def parse_time(text: str, tz: str = "UTC") -> ParsedTime:
    """Parse ``text`` (a date, a date and time, ISO 8601); a time without a zone is in ``tz``."""
    raw = re.sub(r"\s+", " ", text.strip())
    if not raw:
        raise UserError("empty time", f"give a time such as {_FORMS}")
    posix = _NAMED_OFFSET.search(raw)
    if posix:  # dateutil reads UTC+2 as POSIX does, two hours behind UTC: 13:00 UTC+2 was 15:00Z
        ahead, behind = ("ahead of", "behind") if posix["sign"] == "+" else ("behind", "ahead of")
        offset = f"{posix['sign']}{int(posix['h']):02d}:{posix['m'] or '00'}"
        raise UserError(f"{text!r}: {posix.group()!r} reads as {int(posix['h'])} hours {ahead} UTC or, as POSIX "
                        f"writes zones, {behind} it",
                        f"give the offset alone, e.g. '{raw.replace(posix.group(), offset)}'")
    zone = get_zone(tz)
    body = raw
    m = _ZONE_SUFFIX.match(raw)
    if m:
        body, zone = m.group("body"), get_zone(m.group("name"))
    # "24:00" is the next day's 00:00: accept it, but it names the same instant.
    extra = timedelta(0)
    m24 = re.search(r"(?<![\d:])24:00(:00)?(?=\s*(?:[A-Za-z]+|[+-]\d\d:?\d\d)?$)", body)
    if m24:
        body = body[:m24.start()] + "00:00" + (m24.group(1) or "") + body[m24.end():]
        extra = timedelta(days=1)
    try:
        a, b = _parse(body, _DEFAULT_A), _parse(body, _DEFAULT_B)
    except _ZoneAbbreviation as e:
        raise UserError(f"cannot tell which zone {e.args[0]!r} in {text!r} is",
                        "give an offset (-07:00), an IANA name (America/Los_Angeles) or --tz") from None
    except (ValueError, OverflowError, RuntimeWarning) as e:  # RuntimeWarning: dateutil's UnknownTimezoneWarning
        # a field out of its range says which ("day is out of range for month", "month must be in 1..12")
        said = str(e).split(":")[0] if re.search(r"range|must be in", str(e)) else ""
        raise UserError(f"cannot parse time {text!r}" + (f" ({said})" if said else ""), f"use {_FORMS}") from None
    if (a.year, a.month, a.day) != (b.year, b.month, b.day):
        raise UserError(f"{text!r} is not a whole date", f"give the year, month and day, e.g. {_FORMS}")
    date_only = a.hour != b.hour and a.minute != b.minute
    _refuse_two_readings(body, text)
    if not re.search(rf"(?<!\d){a.year}(?!\d)", body):
        # 'Aug 25 23' was 2023-08-25 (not 23:00), '23-08-25' was 2025-08-23
        raise UserError(f"{text!r} gives the year in two digits (read as {a.year:04d}-{a.month:02d}-{a.day:02d}; "
                        "a two-digit number may be the day, the year or the hour)",
                        f"write the year with four digits, e.g. {a:%Y-%m-%d} if that is the day meant")
    day = _WEEKDAY.search(body)
    if day and _WEEKDAYS.index(day.group(1).lower()[:3]) != a.weekday():
        named = datetime(2023, 8, 21 + _WEEKDAYS.index(day.group(1).lower()[:3]))  # a Monday, then its week
        raise UserError(f"{text!r}: {a:%Y-%m-%d} is a {a:%A}, not a {named:%A}",
                        "fix the day or the date, or leave the weekday out")
    dt = a  # missing time fields are 0
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=zone)
        if not date_only:  # a whole day starts at its first instant, whatever the clocks did
            _refuse_clock_change(dt, text)
    elif m:
        raise UserError(f"{text!r} names two zones", "give either an offset or a zone name")
    else:
        zone = dt.tzinfo  # the text's own offset
    return ParsedTime((dt + extra).astimezone(timezone.utc), date_only and not extra, zone)


#: UTC+2, GMT-05:00: ahead of UTC (ISO 8601) or behind it (POSIX TZ, which dateutil follows)
_NAMED_OFFSET = re.compile(r"\b(?:UTC|GMT)\s*(?P<sign>[+-])\s*(?P<h>\d{1,2})(?::?(?P<m>\d{2}))?\b", re.I)
_WEEKDAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
#: a weekday named in a date (dateutil ignores it): Thu, Thursday, Thurs
_WEEKDAY = re.compile(r"\b(mon|tue|wed|thu|fri|sat|sun)(?:day|sday|nesday|rsday|urday|s|r|rs)?\b", re.I)

#: 03/04/2023: March 4 or April 3 (dateutil takes the month first, silently)
_SLASHED = re.compile(r"(?<![\d/.-])(?P<a>\d{1,2})(?P<sep>[/.-])(?P<b>\d{1,2})(?P=sep)(?P<y>\d{4}|\d{2})(?![\d/.-])")


def _refuse_two_readings(body: str, text: str) -> None:
    """A date whose day and month could be either number (``03/04/2023``) is refused, never read
    as the parser's guess (the month first)."""
    m = _SLASHED.search(body)
    if m and m["a"] != m["b"] and int(m["a"]) <= 12 and int(m["b"]) <= 12:
        year = m["y"] if len(m["y"]) == 4 else f"20{m['y']}"
        a, b = int(m["a"]), int(m["b"])
        month_first, day_first = (f"{year}-{x:02d}-{y:02d}" for x, y in ((a, b), (b, a)))
        raise UserError(f"{text!r} reads as {month_first} (month first) or {day_first} (day first)",
                        f"write the date as year-month-day, e.g. {month_first}")


def _refuse_clock_change(dt: datetime, text: str) -> None:
    """A local time the clocks skipped (a spring-forward gap) or showed twice (a fall-back hour) is
    refused with both readings: which instant was meant is a guess."""
    zone = dt.tzinfo
    early, late = dt.replace(fold=0), dt.replace(fold=1)
    if zone is None or early.utcoffset() == late.utcoffset():
        return
    name = getattr(zone, "key", str(zone))
    readings = " or ".join(f"{iso_utc(t)} ({_offset(t)})" for t in sorted((early, late),
                                                                               key=lambda t: t.astimezone(timezone.utc)))
    at = dt.replace(tzinfo=None).isoformat(" ", "minutes")
    if early.astimezone(timezone.utc).astimezone(zone).replace(tzinfo=None) != dt.replace(tzinfo=None):
        raise UserError(f"{text!r} is no time in {name}: its clocks skipped from {_offset(early)} to {_offset(late)} "
                        f"over it (it would be {readings})",
                        f"give a time the clocks showed, or its offset, e.g. '{at} {_offset(early)}'")
    raise UserError(f"{text!r} happened twice in {name}: its clocks went back over it ({readings})",
                    f"give the offset of the one meant, e.g. '{at} {_offset(early)}'")


def _offset(t: datetime) -> str:
    """``-07:00``."""
    off = t.utcoffset() or timedelta(0)
    sign = "-" if off < timedelta(0) else "+"
    minutes = abs(int(off.total_seconds())) // 60
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"


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
    if seconds > _LONGEST_STEP:
        raise UserError(f"step {text!r} is longer than any window", "use a step such as 1h or 1d")
    return timedelta(seconds=seconds)


#: a step longer than this (about 10,000 years) spans any window; a longer one overflows timedelta
_LONGEST_STEP = 10_000 * 366 * 86400


def step_problem(text: str) -> str | None:
    """What is wrong with ``text`` as a step (``--step``, ``--scan-step``), in the words of a rule
    (hourly.options), or None."""
    try:
        parse_step(text)
    except UserError as e:
        if "not positive" in e.message:
            return "must be longer than 0"
        if "longer than any window" in e.message:
            return "must be shorter than 10,000 years"
        return "must be a whole number and a unit (s, m, h or d)"
    return None


def window(start: str, end: str, tz: str = "UTC") -> tuple[datetime, datetime]:
    """The scan window: ``end`` given as a date alone means the end of that day (next 00:00)."""
    a = parse_time(start, tz)
    b = parse_time(end, tz)
    t0 = a.when
    t1 = b.when
    if b.date_only:  # the end of that day in its own zone (a calendar day, DST-safe)
        local = b.when.astimezone(b.zone).replace(tzinfo=None) + timedelta(days=1)
        t1 = local.replace(tzinfo=b.zone).astimezone(timezone.utc)
    # a date alone as end: its day must end after --from (--from 2023-08-25 --to 2023-08-24 was the
    # one instant 2023-08-25T00:00Z, "no steps found")
    if t1 < t0 or (b.date_only and t1 <= t0):
        raise UserError(f"the window is reversed: --from {start!r} is after --to {end!r}",
                        "swap --from and --to")
    return t0, t1


def instants(t0: datetime, t1: datetime, step: timedelta) -> list[datetime]:
    """Every instant t0, t0+step, … before t1, and t1 itself: the window's end is always an instant,
    on the step's grid or not (``--to 13:30 --step 1h`` is 11:00, 12:00, 13:00 and 13:30; a grid
    that stopped at 13:00 lost a change committed at 13:20). Each instant once (no ``24:00``
    duplicate of ``00:00``)."""
    if t1 < t0:
        raise UserError("the window is reversed", "swap --from and --to")
    out = []
    t = t0
    while t < t1:
        out.append(t)
        t += step
    out.append(t1)
    return out


def instant_count(t0: datetime, t1: datetime, step: timedelta) -> int:
    """``len(instants(t0, t1, step))`` without making them (a plan is sized before it is made)."""
    whole, rest = divmod(t1 - t0, step)
    return whole + 1 + (1 if rest else 0)


def iso_utc(t: datetime) -> str:
    """``2023-08-24T00:00:00Z``."""
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
