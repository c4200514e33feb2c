"""Many samples from one process (issue 35 item 2), the parsing side: hourly.metric's pure readers
of every match and of named METRIC lines, and the one rule of which way a metric's unit is better.
Plain strings in, no process."""

from __future__ import annotations

import re

import pytest

from hourly import metric
from hourly.errors import UserError
from hourly.metric import Samples, higher_is_better, parse_samples, read_metric_samples, read_metrics

ITERATIONS = """\
starting
MLUPS: 90.5
MLUPS: 101.0
MLUPS: 99.5
MLUPS: 100.0
done
"""


def test_every_match_is_a_sample_not_only_the_last():
    s = parse_samples(ITERATIONS)
    assert s == Samples((90.5, 101.0, 99.5, 100.0), matched=4, warmup=0)
    assert metric.parse_metric(ITERATIONS) == s.values[-1]  # the last-match rule is left as it was


def test_the_first_k_matches_are_warm_up_whatever_they_print():
    assert parse_samples(ITERATIONS, warmup=1).values == (101.0, 99.5, 100.0)
    # a warm-up iteration that printed nan is dropped as warm-up, not reported as rejected
    s = parse_samples("T: nan\nT: 2\nT: 3\n", r"T: (?P<value>\S+)", warmup=1)
    assert s == Samples((2.0, 3.0), matched=3, warmup=1, rejected=())
    # more warm-up than lines: nothing counts, and matched says the metric was printed
    s = parse_samples(ITERATIONS, warmup=9)
    assert (s.values, s.matched, s.warmup) == ((), 4, 4)
    with pytest.raises(ValueError):
        parse_samples(ITERATIONS, warmup=-1)


@pytest.mark.parametrize("raw", ["nan", "NaN", "inf", "-inf", "Infinity", "1e999", "-1e400", "12abc"])
def test_a_value_that_is_no_finite_number_is_rejected_never_counted(raw):
    s = parse_samples(f"T: 1.5\nT: {raw}\nT: 2.5\n", r"T: (?P<value>\S+)")
    assert s.values == (1.5, 2.5) and s.rejected == (raw,) and s.matched == 3


def test_a_single_unnamed_group_works_and_a_pattern_is_checked_as_for_parse_metric():
    assert parse_samples("x=1 x=2 x=3", r"x=(\d+)").values == (1.0, 2.0, 3.0)
    assert parse_samples("x=1 x=2", re.compile(r"x=(?P<value>\d+)")).values == (1.0, 2.0)
    assert parse_samples("no metric here").matched == 0
    with pytest.raises(UserError, match="captures nothing"):
        parse_samples("x=1", r"x=\d")


HARNESS_OUTPUT = """\
# hourly-bench: make() in bench.py: jax 0.10.2 ...
METRIC trace_ms: 30.5
METRIC lower_ms: 15.25
METRIC trace_ms: 26
METRIC lower_ms: nan
METRIC trace_ms: 31.5
MEDIAN trace_ms: 30.5
UNAVAILABLE peak_memory_bytes: the cpu backend reports no device.memory_stats(); see live_array_bytes
METRIC live_array_bytes: 166208
step 3 METRIC step_ms: 1.5e-1
xMETRIC hidden_ms: 1
METRIC bad_ms: inf
"""


def test_named_lines_are_read_into_samples_per_name_in_order():
    found = read_metrics(HARNESS_OUTPUT)
    assert list(found) == ["trace_ms", "lower_ms", "live_array_bytes", "step_ms", "bad_ms"]
    assert found["trace_ms"] == [30.5, 26.0, 31.5]  # MEDIAN and UNAVAILABLE lines are no samples
    assert found["lower_ms"] == [15.25]              # nan rejected
    assert found["step_ms"] == [0.15]                # a METRIC line after a log prefix counts
    assert found["bad_ms"] == []                     # printed, but never a finite value
    assert "hidden_ms" not in found                  # METRIC inside a word is not a line of ours
    detail = read_metric_samples(HARNESS_OUTPUT, warmup=1)
    assert detail["trace_ms"] == Samples((26.0, 31.5), matched=3, warmup=1)
    assert detail["lower_ms"] == Samples((), matched=2, warmup=1, rejected=("nan",))


def test_unavailable_lines_carry_their_reason():
    assert metric.read_unavailable(HARNESS_OUTPUT) == {
        "peak_memory_bytes": "the cpu backend reports no device.memory_stats(); see live_array_bytes"}


def test_the_regex_of_one_named_line_picks_that_line_only():
    rx = metric.named_line_regex("trace_ms")
    assert parse_samples(HARNESS_OUTPUT, rx).values == (30.5, 26.0, 31.5)
    median = metric.named_line_regex("trace_ms", metric.MEDIAN_PREFIX)
    assert metric.parse_metric(HARNESS_OUTPUT, median) == 30.5
    assert metric.parse_metric("METRIC trace_msx: 3", rx) is None


@pytest.mark.parametrize("name,expected", [
    ("trace_ms", False), ("step_time_ms", False), ("dispatch_us", False), ("compile_s", False),
    ("latency_ns", False), ("peak_memory_bytes", False), ("rss_mib", False),
    ("tokens_per_s", True), ("samples_per_second", True), ("bytes_per_s", True),
    ("MLUPS", None), ("throughput", None), ("ms", None), ("accuracy_pct", None),
])
def test_which_way_is_better_is_read_from_the_unit(name, expected):
    assert higher_is_better(name) is expected


def test_named_lines_read_digit_groups_and_refuse_a_number_read_two_ways():
    """issue 44: every METRIC line is read as the regex's metric is (hourly.metric.read_number)."""
    s = read_metric_samples("METRIC step_ms: 1,234.5\nMETRIC step_ms: 1_000\nMETRIC peak_bytes: 1,024\n")
    assert s["step_ms"].values == (1234.5, 1000.0) and s["step_ms"].unread is None
    assert s["peak_bytes"].values == () and s["peak_bytes"].unread == (
        "captured '1,024', which reads as 1024 (a thousands comma) or 1.024 (a decimal comma)")
