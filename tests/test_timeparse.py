from datetime import timedelta

import pytest

from hourly.errors import UserError
from hourly.timeparse import instants, iso_utc, parse_step, parse_time, window


@pytest.mark.parametrize("text,expected", [
    ("Aug 24 2023", "2023-08-24T00:00:00Z"),
    ("Aug 24 2023 12:00:00", "2023-08-24T12:00:00Z"),
    ("Aug 24 2023 12:00", "2023-08-24T12:00:00Z"),
    ("August 24 2023", "2023-08-24T00:00:00Z"),
    ("2023-08-24", "2023-08-24T00:00:00Z"),
    ("2023-08-24T12:00:00Z", "2023-08-24T12:00:00Z"),
    ("2023-08-24T05:00:00-07:00", "2023-08-24T12:00:00Z"),
    ("2023-08-24 12:00 America/Los_Angeles", "2023-08-24T19:00:00Z"),
    ("Aug 24 2023 12:00:00 UTC", "2023-08-24T12:00:00Z"),
    ("Aug 24 2023 24:00:00", "2023-08-25T00:00:00Z"),
])
def test_forms_read_in_utc_by_default(text, expected):
    assert iso_utc(parse_time(text).when) == expected


def test_zone_less_time_uses_tz_never_the_process_zone(monkeypatch):
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    assert iso_utc(parse_time("Aug 24 2023 12:00:00").when) == "2023-08-24T12:00:00Z"
    assert iso_utc(parse_time("Aug 24 2023 12:00:00", tz="America/Los_Angeles").when) == "2023-08-24T19:00:00Z"


def test_date_alone_as_end_means_end_of_day_without_duplicate_midnight():
    t0, t1 = window("Aug 24 2023", "Aug 26 2023")
    times = instants(t0, t1, parse_step("1h"))
    labels = [iso_utc(t) for t in times]
    assert labels[0] == "2023-08-24T00:00:00Z" and labels[-1] == "2023-08-27T00:00:00Z"
    assert len(labels) == len(set(labels)) == 73  # the guide's loop has 75 with two 24:00 duplicates


def test_end_of_day_is_a_calendar_day_across_dst():
    t0, t1 = window("2023-03-11", "2023-03-12", tz="America/Los_Angeles")
    assert iso_utc(t0) == "2023-03-11T08:00:00Z"
    assert iso_utc(t1) == "2023-03-13T07:00:00Z"  # 2023-03-12 had 23 hours there


@pytest.mark.parametrize("text,seconds", [("1h", 3600), ("30m", 1800), ("6h", 21600), ("1d", 86400), ("90s", 90)])
def test_steps(text, seconds):
    assert parse_step(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("bad", ["", "0h", "h", "1 fortnight", "-1h"])
def test_bad_steps(bad):
    with pytest.raises(UserError):
        parse_step(bad)


@pytest.mark.parametrize("bad", ["", "yesterday-ish", "Aug 32 2023", "2023-13-01"])
def test_bad_times(bad):
    with pytest.raises(UserError) as e:
        parse_time(bad)
    assert e.value.fix


def test_reversed_window_and_unknown_zone():
    with pytest.raises(UserError, match="reversed"):
        window("Aug 26 2023", "Aug 24 2023")
    with pytest.raises(UserError, match="time zone"):
        parse_time("Aug 24 2023", tz="Mars/Olympus")


def test_window_with_times_is_inclusive():
    t0, t1 = window("Aug 24 2023 12:00", "Aug 24 2023 15:00")
    assert [iso_utc(t) for t in instants(t0, t1, parse_step("1h"))][-1] == "2023-08-24T15:00:00Z"
