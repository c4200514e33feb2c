"""What a benchmark process costs (issue 43 item 1) and how many samples hourly asks it for (item 2):
real benchmark processes that sleep a known time before their first sample and print samples at a
known pace; one that obeys HOURLY_SAMPLES, one that ignores it; the count chosen from the costs and
the noise measured."""

from __future__ import annotations

import math
import random
import statistics
import sys

import pytest

from hourly.analysis.process_stat import DEFAULT_SAMPLES
from hourly.measure.benchmark import SAMPLES_ALL, BenchSpec, run_benchmark
from hourly.measure.sample_cost import SAMPLES_VAR, Timing
from hourly.measure.sample_size import SampleSize
from hourly.model import Status

#: sleeps FIRST seconds, then prints N samples PACE seconds apart: N is HOURLY_SAMPLES when OBEY
PACED = """\
import os, sys, time
first, pace, obey = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3] == "obey"
tail = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
n = int(os.environ.get("HOURLY_SAMPLES", "5")) if obey else 5
print("setting up", flush=True)
time.sleep(first)
for i in range(n):
    if i:
        time.sleep(pace)
    print(f"T: {100 + i % 2}", flush=True)
time.sleep(tail)  # letting the device go, after the last sample
"""


def _spec(tmp_path, first: float, pace: float, obey: bool, asked: int | None, tail: float = 0.0,
          **kw) -> BenchSpec:
    script = tmp_path / "paced.py"
    script.write_text(PACED)
    return BenchSpec([sys.executable, str(script), str(first), str(pace), "obey" if obey else "ignore", str(tail)],
                     metric_regex=r"T: (?P<value>\S+)", samples=SAMPLES_ALL, asked=asked, **kw)


def test_the_cost_of_a_process_is_read_off_when_its_samples_were_printed(tmp_path):
    res = run_benchmark(_spec(tmp_path, 0.6, 0.15, True, 4), 2, tmp_path / "logs", "paced")
    assert [r.status for r in res.runs] == [Status.OK, Status.OK]
    for r in res.runs:
        assert r.timing is not None and r.timing.samples == 4 and len(r.samples or []) == 4
        assert 0.6 <= r.timing.first < 0.6 + 0.5  # the sleep, plus Python's start
        assert r.timing.per_sample == pytest.approx(0.15, abs=0.05)
        d = r.as_dict()  # stored with the run, beside its samples
        assert d["first_sample_s"] == pytest.approx(r.timing.first, abs=1e-3)
        assert d["per_sample_s"] == pytest.approx(0.15, abs=0.05) and d["timed_samples"] == 4
        assert d["asked"] == 4 and "followed" not in d
        assert Timing.of(d) == Timing(d["first_sample_s"], d["per_sample_s"], 4, d["after_last_sample_s"])
    assert res.unfollowed() is None


def test_a_process_costs_its_exit_too(tmp_path):
    """The seconds after the last sample (on a TPU host the process lets the chip go, ≈2.5 s there)
    are the process's cost too: stored with the run, counted in the cost the count is chosen from,
    and said apart in the answer."""
    res = run_benchmark(_spec(tmp_path, 0.3, 0.05, True, 3, tail=0.8), 2, tmp_path / "logs", "tail")
    sizes = SampleSize()
    for r in res.runs:
        assert r.timing is not None and 0.8 <= r.timing.after < 0.8 + 0.5
        assert r.timing.besides_samples == pytest.approx(r.timing.first + r.timing.after)
        d = r.as_dict()
        assert d["after_last_sample_s"] == pytest.approx(r.timing.after, abs=1e-3)
        assert Timing.of(d) is not None and Timing.of(d).after == d["after_last_sample_s"]
        sizes.observe("a", [(r.timing, r.samples or [])])
    cost = sizes.cost()
    assert cost is not None and cost.after >= 0.8 and cost.fixed >= 0.3 + 0.8
    said = sizes.figures().as_dict()
    assert said["after_last_sample_s"] >= 0.8
    assert said["first_sample_s"] == pytest.approx(statistics.median(r.timing.first for r in res.runs), abs=1e-3)
    # the answer's seconds to the first sample are the processes' own median, not the difference of
    # two medians (besides-samples less after: 10 − 1 = 9 here, where no process took 9 s)
    apart = SampleSize()
    for t in (Timing(1.0, 0.1, 3, 10.0), Timing(5.0, 0.1, 3, 0.0), Timing(9.0, 0.1, 3, 1.0)):
        apart.observe("a", [(t, [1.0, 1.0, 1.0])])
    assert apart.figures().as_dict()["first_sample_s"] == 5.0
    # a run stored before the exit was kept reads back without it, its cost its first sample's
    old = Timing.of({"first_sample_s": 2.0, "per_sample_s": 0.1, "timed_samples": 3})
    assert old == Timing(2.0, 0.1, 3) and old.besides_samples == 2.0


def test_a_benchmark_that_ignores_the_count_still_counts_and_is_said(tmp_path):
    res = run_benchmark(_spec(tmp_path, 0.0, 0.0, False, 8), 2, tmp_path / "logs", "deaf")
    assert [len(r.samples or []) for r in res.runs] == [5, 5]  # every sample it printed counts
    assert all(r.as_dict()["followed"] is False for r in res.runs)
    said = res.unfollowed()
    assert said is not None and "8 samples" in said and "printed 5" in said and SAMPLES_VAR in said


def test_a_user_env_of_hourly_samples_wins_and_a_level_that_chooses_no_count_asks_the_default(tmp_path):
    res = run_benchmark(_spec(tmp_path, 0.0, 0.0, True, 8, env={SAMPLES_VAR: "3"}), 1, tmp_path / "logs", "env")
    assert len(res.runs[0].samples or []) == 3
    # a level that does not choose the count (watch, releases, explain, profile run their specs so):
    # every run still gets HOURLY_SAMPLES, the default, and is held to it
    res = run_benchmark(_spec(tmp_path, 0.0, 0.0, True, None), 1, tmp_path / "logs", "none")
    assert res.runs[0].asked == DEFAULT_SAMPLES and len(res.runs[0].samples or []) == DEFAULT_SAMPLES
    assert res.unfollowed() is None
    res = run_benchmark(_spec(tmp_path, 0.0, 0.0, True, None, env={SAMPLES_VAR: "4"}), 1, tmp_path / "logs", "user")
    assert res.runs[0].asked == 4 and len(res.runs[0].samples or []) == 4  # theirs, and held to it
    res = run_benchmark(_spec(tmp_path, 0.0, 0.0, False, None), 1, tmp_path / "logs", "deaf")
    assert "does not follow HOURLY_SAMPLES" in (res.unfollowed() or "")  # printed 5 of the 12 asked: said


def test_a_stored_run_without_timing_reads_as_none():
    assert Timing.of({"status": "ok", "value": 1.0, "duration": 2.0}) is None


def test_a_fast_benchmarks_cost_survives_its_storing_and_seeds_a_resumed_count():
    """A benchmark printing its samples microseconds apart: the per-sample cost stored with its runs
    (significant digits) reads back above zero, so a resumed bisection seeded from the stored runs
    revises its count as the first run did — with decimals it read 0.0, no cost was known, and the
    resumed run started again from the default (seen once in CI: asked [12, 24, 48])."""
    stored = Timing(0.4, 3e-6, 12).as_dict()
    back = Timing.of(stored)
    assert back is not None and back.per_sample == pytest.approx(3e-6)
    rng = random.Random(7)
    live, seeded = SampleSize(), SampleSize()
    for state in ("a", "b", "a", "b", "a", "b"):
        procs = _processes(rng, 100.0, 0.002, 0.004, 12, 1)
        live.observe(state, [(Timing(0.4, 3e-6, 12), s) for s in procs])
        seeded.observe(state, [(Timing.of(Timing(0.4, 3e-6, 12).as_dict()), s) for s in procs])
    assert live.n > DEFAULT_SAMPLES and seeded.n == live.n and seeded.how == "chosen"


def _processes(rng: random.Random, level: float, between: float, within: float, n: int, p: int) -> list[list[float]]:
    out = []
    for _ in range(p):
        mid = level * math.exp(rng.gauss(0, between))
        out.append([mid * math.exp(rng.gauss(0, within)) for _ in range(n)])
    return out


def test_the_count_starts_at_the_default_then_follows_the_costs_and_the_noise():
    sizes = SampleSize()
    assert sizes.next() == DEFAULT_SAMPLES and sizes.figures().how == "default"
    rng = random.Random(4)
    # an accelerator: 18 s to the first sample, 0.33 s a sample; within 6 %, between 0.5 %:
    # n* = sqrt(18 / 0.33 * 0.06² / 0.005²) ≈ 89, reached by at most doubling per revision
    for state in ("a", "b", "a", "b", "a", "b"):
        procs = _processes(rng, 100.0, 0.005, 0.06, sizes.next(), 3)
        sizes.observe(state, [(Timing(18.0, 0.33, len(s)), s) for s in procs])
    f = sizes.figures()
    assert f.how == "chosen" and f.cost is not None and f.cost.fixed == 18.0
    assert math.sqrt(f.within) == pytest.approx(0.06, rel=0.2)
    # once the verdicts hold a statistic (chosen on the window's ends), the noise is that of its
    # values: a median of n Gaussian samples varies as π/2 · 0.06² / n
    sizes.statistic = "median"
    assert math.sqrt(sizes.figures().within) == pytest.approx(0.06 * math.sqrt(math.pi / 2), rel=0.2)
    assert 40 <= f.n <= 200
    assert sizes.asked[0] == DEFAULT_SAMPLES and sizes.asked[1] <= 2 * DEFAULT_SAMPLES
    assert sizes.n >= 2 * DEFAULT_SAMPLES  # revised upwards as the rounds came in
    # a cheap process with a large spread between processes: few samples each
    cheap = SampleSize()
    for state in ("a", "b", "a", "b", "a", "b", "a", "b"):
        procs = _processes(rng, 100.0, 0.05, 0.01, cheap.next(), 3)
        cheap.observe(state, [(Timing(0.05, 0.01, len(s)), s) for s in procs])
    assert cheap.n == 3


def test_a_few_processes_that_happen_to_agree_do_not_send_the_count_to_its_bound():
    """Four processes (two states of two) whose levels agree: the between-process variance reads 0,
    which is no figure but the floor of what four processes can tell (between_floor): the count is
    the one that floor gives, not the upper bound."""
    sizes = SampleSize()
    base = [100.0 * (1 + 0.06 * math.sin(k)) for k in range(12)]  # every process the same samples, reordered
    for state in ("a", "b", "a", "b"):
        sizes.observe(state, [(Timing(18.0, 0.33, 12), base[::-1] if state == "a" else list(base))])
    f = sizes.figures()
    assert f.how == "chosen" and f.between == 0.0
    # the floor: within / 12 · sqrt(2 / (3 − 1)); n = sqrt(18 / 0.33 · within / floor) = sqrt(18 / 0.33 · 12)
    assert f.n == round(math.sqrt(18 / 0.33 * 12)) < 200


def test_samples_fixes_the_count():
    sizes = SampleSize(fixed=40)
    sizes.observe("a", [(Timing(18.0, 0.33, 3), [1.0, 1.1, 1.2]), (Timing(18.0, 0.33, 3), [1.0, 1.3, 1.2])])
    assert sizes.next() == 40 and sizes.figures().how == "fixed"


def test_hourlys_harness_takes_the_count_unless_told(monkeypatch):
    from hourly import jaxbench
    from hourly.jaxbench_phases import parse_args
    monkeypatch.delenv(SAMPLES_VAR, raising=False)
    ns = parse_args(["bench.py"])
    assert (ns.repeats, ns.iters) == (5, 50) and jaxbench.asked_samples(7) == 7
    monkeypatch.setenv(SAMPLES_VAR, "40")
    ns = parse_args(["bench.py"])
    assert (ns.repeats, ns.iters) == (40, 40) and jaxbench.asked_samples(7) == 40
    ns = parse_args(["bench.py", "--repeats", "3"])  # a flag of its own wins
    assert (ns.repeats, ns.iters) == (3, 40)
    monkeypatch.setenv(SAMPLES_VAR, "many")
    assert parse_args(["bench.py"]).repeats == 5


def test_a_hunts_samples_reach_the_bisection_inside_its_container(tmp_path):
    from hourly.hunt import run as H
    from hourly.model import NightlyPoint
    from hourly.nightly import plan as N

    def point(d: str, value: float) -> NightlyPoint:
        return NightlyPoint(d, f"img:{d}", Status.OK, value=value, xla=f"x{d}", jax=f"j{d}")
    s = N.NightlySettings("2023-08-20", "2023-08-26", mounts=[f"{tmp_path}:/dir"], gpus="none",
                          bench_cmd="python3 /dir/b.py", workdir=str(tmp_path / "w"))
    w = H.HuntWindow(point("2023-08-22", 100.0), point("2023-08-23", 90.0), "regression")
    argv = H.bisect_argv(w, H.HuntSettings(s, samples=40), "/hourly-work/bisect/x")
    assert argv[argv.index("--samples") + 1] == "40"
    assert "--samples" not in H.bisect_argv(w, H.HuntSettings(s), "/hourly-work/bisect/x")  # it chooses
    assert "--samples" in H.scanned_bisect_argv(H.HuntSettings(s, samples=40), "/x")
