import re
from datetime import timedelta

import pytest

from hourly.errors import UserError
from hourly.text.timeparse import instant_count, instants, iso_utc, parse_step, parse_time, step_problem, window


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


# (text, --tz, instant in UTC, date alone?): the forms people write, each read once
FORMS = [
    ("Aug 24 2023", "UTC", "2023-08-24T00:00:00Z", True),
    ("August 24 2023", "UTC", "2023-08-24T00:00:00Z", True),  # was read as a time (T of AUGUST)
    ("Sept 3 2023", "UTC", "2023-09-03T00:00:00Z", True),  # did not parse at all
    ("Sep 3 2023", "UTC", "2023-09-03T00:00:00Z", True),
    ("September 3 2023", "UTC", "2023-09-03T00:00:00Z", True),
    ("October 2 2023", "UTC", "2023-10-02T00:00:00Z", True),
    ("24 Aug 2023", "UTC", "2023-08-24T00:00:00Z", True),
    ("Thu Aug 24 2023", "UTC", "2023-08-24T00:00:00Z", True),
    ("2023-08-24", "UTC", "2023-08-24T00:00:00Z", True),
    ("2023-08-24", "America/Los_Angeles", "2023-08-24T07:00:00Z", True),
    ("  Aug   24  2023 ", "UTC", "2023-08-24T00:00:00Z", True),
    ("2023-08-24 13:00", "UTC", "2023-08-24T13:00:00Z", False),
    ("2023-08-24 13:00", "America/Los_Angeles", "2023-08-24T20:00:00Z", False),
    ("Aug 24 2023 13:00", "UTC", "2023-08-24T13:00:00Z", False),
    ("August 24 2023 13:00", "Europe/Paris", "2023-08-24T11:00:00Z", False),
    ("24 Aug 2023 13:00:30", "UTC", "2023-08-24T13:00:30Z", False),
    ("Aug 24 2023 1pm", "UTC", "2023-08-24T13:00:00Z", False),
    ("Aug 24 2023 00:00", "UTC", "2023-08-24T00:00:00Z", False),  # midnight given is a time
    ("2023-08-24 00:00:00", "UTC", "2023-08-24T00:00:00Z", False),
    ("2023-08-24T00:00", "UTC", "2023-08-24T00:00:00Z", False),
    ("2023-08-24T13:00:00Z", "America/Los_Angeles", "2023-08-24T13:00:00Z", False),  # its zone wins
    ("2023-08-24T13:00:00+02:00", "UTC", "2023-08-24T11:00:00Z", False),
    ("2023-08-24T13:00-0700", "UTC", "2023-08-24T20:00:00Z", False),
    ("2023-08-24T13:00:00.5Z", "UTC", "2023-08-24T13:00:00Z", False),  # shown to the second
    ("Aug 24 2023 13:00 UTC", "America/Los_Angeles", "2023-08-24T13:00:00Z", False),
    ("Aug 24 2023 13:00 GMT", "UTC", "2023-08-24T13:00:00Z", False),
    ("Aug 24 2023 13:00 America/Los_Angeles", "UTC", "2023-08-24T20:00:00Z", False),
    ("2023-08-24 Europe/Paris", "UTC", "2023-08-23T22:00:00Z", True),
    ("Aug 24 2023 24:00", "UTC", "2023-08-25T00:00:00Z", False),
    ("2023-08-24T24:00Z", "UTC", "2023-08-25T00:00:00Z", False),
]


@pytest.mark.parametrize("text,tz,expected,date_only", FORMS)
def test_times_as_people_write_them(text, tz, expected, date_only):
    p = parse_time(text, tz=tz)
    assert (iso_utc(p.when), p.date_only) == (expected, date_only)


@pytest.mark.parametrize("end", ["August 26 2023", "Aug 26 2023", "26 Aug 2023", "2023-08-26", "Sept 3 2023"])
def test_a_date_alone_as_end_always_covers_the_whole_day(end):
    t0, t1 = window("Aug 24 2023", end)
    day = parse_time(end).when
    assert t1 == day + timedelta(days=1)  # the end of that day: none of its hours is dropped


@pytest.mark.parametrize("bad,says", [
    ("Aug 2023", "not a whole date"), ("2023", "not a whole date"), ("13:00", "not a whole date"),
    ("Aug 24 2023 13:00 PST", "which zone"),  # an abbreviation dateutil would read as local or drop
    ("Aug 24 2023 13:00 EST", "which zone"),
    ("Aug 24 2023 13:00+02:00 Europe/Paris", "two zones"),
    ("Aug 24 2023 13:00 Mars/Olympus", "time zone"),
    ("Augus 24 2023", "cannot parse"), ("Feb 30 2023", "cannot parse"), ("Aug 24 2023 25:00", "cannot parse"),
])
def test_unreadable_times_say_what_is_wrong(bad, says):
    with pytest.raises(UserError, match=says) as e:
        parse_time(bad)
    assert e.value.fix


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


@pytest.mark.parametrize("step,expected", [
    ("1h", ["11:00", "12:00", "13:00", "13:30"]),
    ("2h", ["11:00", "13:00", "13:30"]),
    ("1d", ["11:00", "13:30"]),
    ("30m", ["11:00", "11:30", "12:00", "12:30", "13:00", "13:30"]),  # on the grid: no extra instant
])
def test_an_end_off_the_step_grid_is_always_an_instant(step, expected):
    """issue 33: --to 13:30 with --step 1h planned 11:00, 12:00, 13:00 and dropped the window's end
    (a -7 % commit at 13:20 was "no steps found"); the end is always measured."""
    t0, t1 = window("2023-08-24 11:00", "2023-08-24 13:30")
    assert [iso_utc(t)[11:16] for t in instants(t0, t1, parse_step(step))] == expected
    assert instant_count(t0, t1, parse_step(step)) == len(expected)  # what --max-instants counts


def test_a_one_instant_window_is_its_one_instant():
    t0, t1 = window("2023-08-24 11:00", "2023-08-24 11:00")
    assert [iso_utc(t) for t in instants(t0, t1, parse_step("1h"))] == ["2023-08-24T11:00:00Z"]


# -- issue 44: the last silent answers of times and steps ------------------------------------------

@pytest.mark.parametrize("start,end", [("2023-08-25", "2023-08-24"), ("2023-08-25 00:00", "2023-08-24"),
                                       ("Aug 25 2023", "Aug 24 2023")])
def test_a_reversed_window_of_dates_is_refused_not_one_instant(start, end):
    """case 5: the day of --to ended where --from began: one instant, "no steps found", exit 0."""
    with pytest.raises(UserError, match=f"the window is reversed: --from '{start}' is after --to '{end}'"):
        window(start, end)
    assert window("2023-08-24 18:00", "2023-08-24")[1] == window("2023-08-24", "2023-08-24")[1]  # the rest of that day


def test_a_local_time_the_clocks_skipped_is_refused_with_both_readings():
    with pytest.raises(UserError) as e:
        parse_time("2023-03-12 02:30", tz="America/Los_Angeles")
    assert e.value.one_line() == (
        "'2023-03-12 02:30' is no time in America/Los_Angeles: its clocks skipped from -08:00 to -07:00 over it "
        "(it would be 2023-03-12T09:30:00Z (-07:00) or 2023-03-12T10:30:00Z (-08:00)) — give a time the clocks "
        "showed, or its offset, e.g. '2023-03-12 02:30 -08:00'")
    assert iso_utc(parse_time("2023-03-12 02:30 -08:00", tz="America/Los_Angeles").when) == "2023-03-12T10:30:00Z"
    assert iso_utc(parse_time("2023-03-12 03:30", tz="America/Los_Angeles").when) == "2023-03-12T10:30:00Z"


def test_a_local_time_shown_twice_is_refused_with_both_readings():
    for text, tz in (("2023-11-05 01:30", "America/Los_Angeles"), ("2023-11-05 01:30 America/Los_Angeles", "UTC")):
        with pytest.raises(UserError) as e:
            parse_time(text, tz=tz)
        assert e.value.one_line() == (
            f"{text!r} happened twice in America/Los_Angeles: its clocks went back over it (2023-11-05T08:30:00Z "
            "(-07:00) or 2023-11-05T09:30:00Z (-08:00)) — give the offset of the one meant, e.g. '2023-11-05 01:30 "
            "-07:00'")
    assert iso_utc(parse_time("2023-11-05 01:30 -08:00").when) == "2023-11-05T09:30:00Z"


def test_a_whole_day_starts_at_its_first_instant_whatever_the_clocks_did():
    # São Paulo's clocks went from 00:00 to 01:00 on 2018-11-04: the day began at 03:00Z
    assert iso_utc(parse_time("2018-11-04", tz="America/Sao_Paulo").when) == "2018-11-04T03:00:00Z"


@pytest.mark.parametrize("text,says", [
    ("03/04/2023", "'03/04/2023' reads as 2023-03-04 (month first) or 2023-04-03 (day first)"),
    ("03.04.23 12:00", "'03.04.23 12:00' reads as 2023-03-04 (month first) or 2023-04-03 (day first)")])
def test_a_date_read_month_or_day_first_is_refused(text, says):
    with pytest.raises(UserError, match=re.escape(says)):
        parse_time(text)
    assert iso_utc(parse_time("24/08/2023").when) == iso_utc(parse_time("08/24/2023").when) == "2023-08-24T00:00:00Z"


@pytest.mark.parametrize("text,problem", [
    ("0h", "must be longer than 0"), ("-1h", "must be a whole number and a unit (s, m, h or d)"),
    ("1.5h", "must be a whole number and a unit (s, m, h or d)"),
    ("10000000000d", "must be shorter than 10,000 years"),  # was an OverflowError's traceback
    ("90m", None)])
def test_a_step_says_what_is_wrong_with_it(text, problem):
    assert step_problem(text) == problem
    if problem:
        with pytest.raises(UserError):
            parse_step(text)


@pytest.mark.parametrize("text,said", [("2023-02-30", "day is out of range for month"),
                                       ("2023-13-01", "month must be in 1..12"),
                                       ("2023-08-24 12:61", "minute must be in 0..59")])
def test_a_field_out_of_its_range_is_named(text, said):
    with pytest.raises(UserError, match=re.escape(f"cannot parse time {text!r} ({said})")):
        parse_time(text)


@pytest.mark.parametrize("text,said", [
    # dateutil reads UTC+2 as POSIX does (two hours behind UTC): 13:00 UTC+2 was 15:00Z, not 11:00Z
    ("2023-08-25 13:00 UTC+2", "'2023-08-25 13:00 UTC+2': 'UTC+2' reads as 2 hours ahead of UTC or, as POSIX "
                               "writes zones, behind it — give the offset alone, e.g. '2023-08-25 13:00 +02:00'"),
    ("Aug 25 2023 13:00 GMT-05:30", "'GMT-05:30' reads as 5 hours behind UTC or, as POSIX writes zones, ahead of it "
                                    "— give the offset alone, e.g. 'Aug 25 2023 13:00 -05:30'"),
    # 'Aug 25 23' was 2023-08-25 at 00:00 (23 may be the hour); '23-08-25' was 2025-08-23
    ("Aug 25 23", "'Aug 25 23' gives the year in two digits (read as 2023-08-25; a two-digit number may be the day, "
                  "the year or the hour) — write the year with four digits, e.g. 2023-08-25 if that is the day meant"),
    ("23-08-25", "'23-08-25' gives the year in two digits (read as 2025-08-23;"),
    ("08/25/23 13:00", "gives the year in two digits"),
    # dateutil ignores the weekday: a date off by one was read silently
    ("Thu Aug 25 2023", "'Thu Aug 25 2023': 2023-08-25 is a Friday, not a Thursday — fix the day or the date"),
])
def test_a_time_read_two_ways_or_against_its_own_weekday_is_refused(text, said):
    with pytest.raises(UserError) as e:
        parse_time(text)
    assert said in e.value.one_line()


def test_offsets_and_weekdays_that_agree_still_read():
    assert iso_utc(parse_time("2023-08-25 13:00 +02:00").when) == "2023-08-25T11:00:00Z"
    assert iso_utc(parse_time("2023-08-25 13:00 UTC").when) == "2023-08-25T13:00:00Z"
    assert iso_utc(parse_time("Friday, August 25 2023 13:00").when) == "2023-08-25T13:00:00Z"
    assert iso_utc(parse_time("Sun Aug 27 2023").when) == "2023-08-27T00:00:00Z"
