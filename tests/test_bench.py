"""The benchmark executor against real subprocesses."""

import sys
import textwrap

import pytest

from hourly.errors import UserError
from hourly.measure.benchmark import BenchSpec, Status, run_benchmark
from hourly.metric import parse_metric, read_metric
from hourly.model import spread


def script(tmp_path, body: str) -> list[str]:
    p = tmp_path / "b.py"
    p.write_text(textwrap.dedent(body))
    return [sys.executable, str(p)]


def test_parse_metric_last_match_wins_and_custom_regex():
    assert parse_metric("MLUPS: 1\nMLUPS: 577.1\n") == 577.1
    assert parse_metric("MLUPS: 5.7e2") == 570.0
    assert parse_metric('File "MLUPS3d.py", line 3') is None
    assert parse_metric("METRIC step_time_ms: 1.25", r"METRIC step_time_ms:\s*(?P<value>[0-9.]+)") == 1.25


def test_bad_regexes_are_user_errors():
    with pytest.raises(UserError, match="not a valid"):
        parse_metric("x", "MLUPS: (")
    with pytest.raises(UserError, match="captures nothing"):
        parse_metric("x", "MLUPS")


def test_outcomes(tmp_path):
    log = tmp_path / "logs"
    ok = run_benchmark(BenchSpec(script(tmp_path, "print('MLUPS: 577.1')")), 2, log, "ok")
    assert ok.status is Status.OK and ok.samples == [577.1, 577.1] and ok.value == 577.1
    assert len(list(log.glob("bench-ok-*.log"))) == 2
    again = run_benchmark(BenchSpec(script(tmp_path, "print('MLUPS: 577.1')")), 2, log, "ok")  # within the second
    assert len(list(log.glob("bench-ok-*.log"))) == 4  # every run's log kept
    assert {r.log_path for r in again.runs}.isdisjoint(r.log_path for r in ok.runs)

    crash = run_benchmark(BenchSpec(script(tmp_path, "import sys; print('MLUPS: 1'); sys.exit(3)")), 1, log, "c")
    assert crash.status is Status.CRASHED and crash.runs[0].returncode == 3 and crash.value is None

    none = run_benchmark(BenchSpec(script(tmp_path, "print('hello')")), 1, log, "n")
    assert none.status is Status.NO_METRIC and "metric never printed" in none.detail()

    slow = run_benchmark(BenchSpec(script(tmp_path, "import time; time.sleep(30)"), timeout=0.5), 1, log, "t")
    assert slow.status is Status.TIMEOUT and slow.runs[0].duration < 10


def test_env_and_cwd_reach_the_benchmark(tmp_path):
    cmd = script(tmp_path, "import os; print('MLUPS:', os.environ['FACTOR'], os.getcwd())")
    (tmp_path / "here").mkdir()
    res = run_benchmark(BenchSpec(cmd, cwd=str(tmp_path / "here"), env={"FACTOR": "2.5"}), 1, tmp_path, "e")
    assert res.value == 2.5
    assert str(tmp_path / "here") in open(res.runs[0].log_path).read()


def test_spread():
    assert spread([1.0]) is None
    assert spread([99.0, 101.0]) == pytest.approx(0.01)


def test_warmup_runs_are_recorded_but_not_counted(tmp_path):
    """The first run of a freshly installed state is slow: it is run, logged and marked, never a sample."""
    counter = tmp_path / "n"
    code = (f"import pathlib; p = pathlib.Path({str(counter)!r}); n = int(p.read_text()) if p.exists() else 0; "
            "p.write_text(str(n + 1)); print('MLUPS:', 300.0 if n == 0 else 577.0)")
    res = run_benchmark(BenchSpec(script(tmp_path, code)), 3, tmp_path / "logs", "w", warmup=1)
    assert len(res.runs) == 4 and [r.warmup for r in res.runs] == [True, False, False, False]
    assert res.samples == [577.0] * 3 and res.value == 577.0
    assert res.runs[0].as_dict()["warmup"] is True and "warmup" not in res.runs[1].as_dict()
    crash_first = run_benchmark(BenchSpec(script(tmp_path, "print('MLUPS: 1')")), 2, tmp_path / "logs", "x", warmup=0)
    assert len(crash_first.runs) == 2


# -- issue 33 item 5: a value that is not a finite number is no metric ------------------------------

@pytest.mark.parametrize("text,regex", [
    ("MLUPS: 1e400", None),                                   # overflows to infinity
    ("MLUPS: -1e999", None),
    ("MLUPS: inf", r"MLUPS:\s*(?P<value>\S+)"),               # a literal infinity
    ("MLUPS: nan", r"MLUPS:\s*(?P<value>\S+)"),
    ("time: Infinity ms", r"time: (?P<value>\S+) ms"),
])
def test_a_metric_that_is_not_a_finite_number_is_no_metric(text, regex):
    args = (text, regex) if regex else (text,)
    assert parse_metric(*args) is None
    reading = read_metric(*args)
    assert reading.value is None and reading.captured == text.split()[1]


def test_the_last_finite_value_wins_and_what_was_captured_is_kept():
    reading = read_metric("MLUPS: 577.1\nMLUPS: 1e400\n")
    assert reading.value == 577.1  # the last number that reads as one
    assert read_metric("MLUPS: fast", r"MLUPS: (?P<value>\w+)").captured == "fast"
    assert read_metric("hello").captured is None


def test_runs_that_print_an_overflowing_metric_are_no_metric_and_say_what_they_printed(tmp_path):
    res = run_benchmark(BenchSpec(script(tmp_path, "print('MLUPS: 1e400')")), 2, tmp_path / "logs", "inf")
    assert res.status is Status.NO_METRIC and res.samples == [] and res.value is None
    assert "'1e400'" in res.detail() and "not a finite number" in res.detail()
    assert res.runs[0].as_dict()["captured"] == "1e400"


# -- issue 44 case 4: `MLUPS: 1,234.5` was read as 1 ("no steps found") ------------------------------

@pytest.mark.parametrize("text,regex,value", [
    ("MLUPS: 1,234.5", None, 1234.5),                          # a thousands comma and a decimal point
    ("MLUPS: 1,234,567", None, 1234567.0),                     # two commas: no decimal comma
    ("MLUPS: 1.234,5", None, 1234.5),                          # a thousands point and a decimal comma
    ("MLUPS: 1'234.5", None, 1234.5),
    ("MLUPS: 1_000", None, 1000.0),                            # Python's own grouping
    ("MLUPS: 1.2e3", None, 1200.0),
    ("MLUPS: 12.3%", None, 12.3),                              # a unit after the number
    ("MLUPS: +5", None, 5.0),
    ("MLUPS: \u22125", None, -5.0),                            # a typographic minus is a minus
    ("MLUPS: 577.1, 3 runs", None, 577.1),                     # a comma and a space end the number
    ("MLUPS: 577.1 100 iterations", None, 577.1),              # a space after a point groups no digits
    ("MLUPS: 1,234.5 100", None, 1234.5),
    ("iter 1 5.0 MLUPS", r"(?P<value>[0-9.]+) MLUPS", 5.0),
    ("MLUPS: 1,234.5", r"MLUPS: (?P<value>[0-9.]+)", 1234.5),  # a regex that cuts the number short
    ("time: 1.5e3 us", r"time: (?P<value>[0-9.]+)", 1500.0),
])
def test_numbers_in_other_shapes_are_read_whole(text, regex, value):
    reading = read_metric(*((text, regex) if regex else (text,)))
    assert (reading.value, reading.unread) == (value, None)


def test_minus_zero_reads_as_zero():
    assert str(read_metric("MLUPS: -0").value) == "0.0"
    # a 0 before a word is a 0 (no base prefix and digits of that base after it)
    assert read_metric("MLUPS: 0 x").value == 0.0 and read_metric("MLUPS: 0xyz").value == 0.0
    assert read_metric("MLUPS: 2x").value == 2.0


@pytest.mark.parametrize("text,regex,said", [
    ("MLUPS: 1,234", None,
     "captured '1', followed by ',234': '1,234' reads as 1234 (a thousands comma) or 1.234 (a decimal comma)"),
    ("MLUPS: 1 234,5", None, "captured '1', followed by ' 234,5': '1 234,5' is one number with spaces between "
                             "its digit groups, or several numbers"),
    ("MLUPS: 1,5", None, "captured '1', followed by ',5': '1,5' is one number with a decimal comma, or two numbers"),
    ("MLUPS: 1.2.3", None, "captured '1.2', followed by '.3': '1.2.3' is not one number"),
    ("MLUPS: 1,234", r"MLUPS: (?P<value>[0-9,]+)", "captured '1,234', which reads as 1234 (a thousands comma) or "
                                                    "1.234 (a decimal comma)"),
    ("took 1,234 ms", r"(?P<value>\d+) ms", "captured '234' after 'took 1,': the number began before the capture"),
    ("took -5 ms", r"(?P<value>\d+) ms", "captured '5' after 'took -': the number began before the capture"),
    ("MLUPS: 5 100 iters", None, "captured '5', followed by ' 100': '5 100' is one number with spaces between its "
                                 "digit groups, or several numbers"),
    ("iter 12 577.1 MLUPS", r"(?P<value>[0-9.]+) MLUPS", "captured '577.1' after 'iter 12 ': the number began "
                                                          "before the capture"),  # 12 577.1 or 577.1
    # read as 0 ("regression -100%") before
    ("MLUPS: 0x1F", None, "captured '0', followed by 'x1F': '0x1F' is a hexadecimal number, not read as one"),
    ("MLUPS: 0b101", None, "captured '0', followed by 'b101': '0b101' is a binary number, not read as one"),
    ("MLUPS: -0o17", None, "captured '-0', followed by 'o17': '-0o17' is an octal number, not read as one"),
])
def test_a_number_read_two_ways_or_cut_short_is_refused_with_what_followed(text, regex, said):
    """Another line's value is no answer either: the last line printed is the one that counts."""
    args = ("MLUPS: 577.1\n" + text, regex) if regex else ("MLUPS: 577.1\n" + text,)
    reading = read_metric(*args)
    assert reading.value is None and reading.unread == said
    assert reading.why_none() == f"the metric regex {said} — print the number plainly (digits, one '.', e.g. 1234.5)"


def test_runs_that_print_a_number_read_two_ways_are_no_metric_and_say_what_followed(tmp_path):
    res = run_benchmark(BenchSpec(script(tmp_path, "print('MLUPS: 1,000')")), 1, tmp_path / "logs", "comma")
    assert res.status is Status.NO_METRIC and res.value is None
    assert "captured '1', followed by ',000': '1,000' reads as 1000" in res.detail()
    assert res.runs[0].as_dict()["unread"].startswith("captured '1', followed by ',000'")
    ok = run_benchmark(BenchSpec(script(tmp_path, "print('MLUPS: 1,234.5')")), 1, tmp_path / "logs", "read")
    assert ok.status is Status.OK and ok.value == 1234.5


def test_many_samples_with_one_number_read_two_ways_count_none(tmp_path):
    """999.5 read and 1,000 not would be a silent pick of the lower samples: no sample counts."""
    body = "print('MLUPS: 999.5'); print('MLUPS: 1,000'); print('MLUPS: 1,000.5')"
    res = run_benchmark(BenchSpec(script(tmp_path, body), samples="all"), 1, tmp_path / "logs", "all")
    assert res.status is Status.NO_METRIC and res.samples == []
    assert "'1,000' reads as 1000 (a thousands comma) or 1.000 (a decimal comma)" in res.detail()
