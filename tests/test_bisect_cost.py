"""A real bisection's progress and figures (issue 43 items 2 and 4): a benchmark that prints many
samples a process and reads HOURLY_SAMPLES; a line per process while a verdict runs, also after a
resume; the answer's processes, samples, chip-seconds, samples per process and statistic."""

from __future__ import annotations

import json
import math
import os
import re

import pytest

from hourly.adapters.store import Store
from hourly.cli import main
from hourly.demo.repos import Change, make_repos
from tests.test_bisect import busy_day, flags

#: the start of each stand-in benchmark below: the process whose number is STOP_AT (counted in
#: COUNTER) interrupts hourly as Ctrl-C would
COUNTED = r'''import jax_demo
counter = os.environ.get("COUNTER")
if counter:
    n = int(open(counter).read() or 0) + 1 if os.path.exists(counter) else 1
    open(counter, "w").write(str(n))
    if n == int(os.environ.get("STOP_AT", "0")):
        os.kill(int(os.environ["HOURLY_PID"]), signal.SIGINT)
        time.sleep(5)
'''

#: the stand-in's build, sampled HOURLY_SAMPLES times a process (a fixed number when IGNORE is set)
BENCH = r'''
import os, random, signal, sys, time
''' + COUNTED + r'''k = int(os.environ["IGNORE"]) if os.environ.get("IGNORE") else int(os.environ["HOURLY_SAMPLES"])
time.sleep(0.05)
level = 577.1 * jax_demo.FACTOR * (1 + random.gauss(0, 0.002))
for _ in range(k):
    print(f"T: {level * (1 + random.gauss(0, 0.004)):.3f}", flush=True)
'''

PROCESS_LINE = re.compile(r"^  (ends|probe \d+ of ~\d+|step check|blame) \S.*: round \d+, "
                          r"(?:[+−]\d+\.\d % ± \d+\.\d %, )?\d+ chip-s so far")


def _setup(tmp_path, venv_python, **extra):
    slower = Change("xla", "2023-08-24T03:50:00Z", "[XLA] Slower", {"perf/slow.txt": "0.95\n"})
    made = make_repos(tmp_path / "repos", busy_day([slower]))
    bench = tmp_path / "sampled.py"
    bench.write_text(BENCH)
    args = ["--good", "2023-08-24T03:00Z", "--bad", "2023-08-24T04:30Z",
            *flags(made, venv_python, tmp_path / "work", warmup_runs=0, metric_samples="all",
                   metric_regex=r"T: (?P<value>\S+)", bench_cmd=f"python3 {bench}", **extra)]
    return made, slower, args


def _bisect(capsys, args) -> tuple[int, dict | None, str]:
    capsys.readouterr()
    rc = main(["bisect", "--json", "--progress", *args])
    out = capsys.readouterr()
    return rc, json.loads(out.out) if rc == 0 else None, out.err


def test_a_bisection_says_each_process_and_states_what_its_verdicts_cost(tmp_path, venv_python, capsys):
    made, slower, args = _setup(tmp_path, venv_python, samples=5)
    rc, got, err = _bisect(capsys, args)
    assert rc == 0, err
    a = got["regressions"][0]
    assert a["culprit"]["sha"] == made.shas[slower.subject] and a["measured"] == "interleaved"
    lines = [x for x in err.splitlines() if PROCESS_LINE.match(x)]
    # (the first probe may have ridden in the ends' rounds: "ends and probe 1 …", then "probe 2 of ~…")
    assert any(x.startswith("  ends ") for x in lines) and any(x.startswith("  probe ") for x in lines), err
    assert any(re.search(r", [+−]\d+\.\d % ± \d+\.\d %, ", x) for x in lines), err  # the change read so far
    s = a["sampling"]
    # stored with each run: what the process cost, and the count asked of it
    runs = [r for (raw,) in Store(tmp_path / "work").conn.execute(
        "SELECT runs FROM measurements WHERE origin='bisect'") for r in json.loads(raw)]
    assert runs and all(r["asked"] == 5 and r["timed_samples"] == 5 and r["first_sample_s"] > 0 for r in runs)
    # every process the bisection ran counts: the verdicts' own, and the interval's ends measured beside
    # each probe (which no verdict row counts as its runs)
    assert s["processes"] == len(runs) >= a["runs"] > 0 and s["samples"] == 5 * len(runs)
    assert a["run_samples"] == 5 * a["runs"] and "this_call_chip_s" not in s
    assert s["chip_s"] == pytest.approx(sum(r["duration"] for r in runs), abs=0.1)
    assert s["how"] == "fixed" and s["samples_per_process"] == 5 and s["asked"] == [5]
    assert s["statistic"] in ("median", "p10", "trimmed") and s["statistic_why"]
    assert s["first_sample_s"] > 0 and s["per_sample_s"] >= 0 and "not_followed" not in s
    # the text answer states the figures too
    capsys.readouterr()
    assert main(["bisect", *args]) == 0
    text = capsys.readouterr().out
    assert re.search(r"\d+ processes, \d+ samples, \d+ chip-s; 5 samples a process \(--samples\), "
                     r"per-process \w+", text), text
    # and so does the report
    capsys.readouterr()
    assert main(["report", "--workdir", str(tmp_path / "work"), "--out", str(tmp_path / "report")]) == 0
    md = (tmp_path / "report" / "report.md").read_text()
    assert re.search(r"^- cost: \d+ processes, \d+ samples, \d+ chip-s; 5 samples a process", md, re.M), md


# two real bisections; the count's logic: test_process_cost's SampleSize and ignored-count tests
@pytest.mark.slow
def test_the_count_is_chosen_then_a_benchmark_that_ignores_it_is_said(tmp_path, venv_python, capsys):
    made, slower, args = _setup(tmp_path, venv_python)
    rc, got, err = _bisect(capsys, args)
    assert rc == 0, err
    s = got["regressions"][0]["sampling"]
    assert s["asked"][0] == 12 and "not_followed" not in s  # the safe default first
    made, slower, args = _setup(tmp_path / "deaf", venv_python, env="IGNORE=4")
    rc, got, err = _bisect(capsys, args)
    assert rc == 0, err
    s = got["regressions"][0]["sampling"]
    assert "does not follow HOURLY_SAMPLES" in s["not_followed"] and s["samples"] == 4 * s["processes"]
    assert "does not follow HOURLY_SAMPLES" in err  # said while it runs, once


# a real bisection interrupted and resumed; the lines themselves: the first test of this file
@pytest.mark.slow
def test_the_lines_go_on_after_a_resume(tmp_path, venv_python, capsys):
    # the 15th process: past the ends (4 to 7 paired rounds at this noise under their 1 % rule), so
    # that the run stopped has a verdict stored to resume after
    made, slower, args = _setup(tmp_path, venv_python, env=[f"COUNTER={tmp_path / 'count'}", "STOP_AT=15",
                                                         f"HOURLY_PID={os.getpid()}"])
    rc, _, err = _bisect(capsys, args)
    assert rc == 130, err
    assert len([x for x in err.splitlines() if PROCESS_LINE.match(x)]) == 14  # the 15th was interrupted
    last_before = Store(tmp_path / "work").conn.execute("SELECT max(id) FROM measurements").fetchone()[0]
    rc, got, err = _bisect(capsys, args)
    assert rc == 0, err
    assert got["regressions"][0]["culprit"]["sha"] == made.shas[slower.subject]
    assert "resuming after" in err and [x for x in err.splitlines() if PROCESS_LINE.match(x)], err
    # the samples per process are chosen from what was measured, in the resumed run from its first
    # process on: seeded from the stored runs (whose microseconds a sample once stored as 0.0, so the
    # resumed run started from the default: test_process_cost's fast-benchmark test)
    resumed = [r["asked"] for (raw,) in Store(tmp_path / "work").conn.execute(
        "SELECT runs FROM measurements WHERE origin='bisect' AND id>?", (last_before,)) for r in json.loads(raw)]
    assert resumed and min(resumed) > 12, (got["regressions"][0]["sampling"], err)
    # the counts asked in every call are said, the first call's default too
    assert got["regressions"][0]["sampling"]["asked"][0] == 12 and max(resumed) in got["regressions"][0]["sampling"]["asked"]
    # what the chip time went to counts the call before the resume too, and says this call's apart
    s = got["regressions"][0]["sampling"]
    runs = [r for (raw,) in Store(tmp_path / "work").conn.execute(
        "SELECT runs FROM measurements WHERE origin='bisect'") for r in json.loads(raw)]
    assert s["processes"] == len(runs) >= 15 and s["chip_s"] > s["this_call_chip_s"] > 0, s


def test_the_cost_line_says_what_each_figure_is():
    from hourly.render.bisect import sampling_words
    chosen = {"processes": 22, "samples": 3015, "chip_s": 140.4, "samples_per_process": 111, "how": "chosen",
              "asked": [12, 24, 111], "statistic": "median", "statistic_why": "the default",
              "first_sample_s": 18.21, "per_sample_s": 0.331}
    assert sampling_words(chosen) == (
        "22 processes, 3015 samples, 140 chip-s; 111 samples a process (chosen from the measured cost and noise; "
        "12 to 111 asked on the way), per-process median (the default); a process: 18.2 s to its first sample, "
        "0.331 s a sample")
    # a process that holds the chip past its last sample (a TPU host letting it go) says so
    assert sampling_words({**chosen, "after_last_sample_s": 2.47}).endswith(
        "a process: 18.2 s to its first sample, 0.331 s a sample, 2.47 s from its last sample to its exit")
    one = {"processes": 1, "samples": 1, "chip_s": 2.0, "samples_per_process": 12, "how": "default", "asked": [12],
           "one_value": True, "statistic": "median", "statistic_why": "the default"}
    assert sampling_words(one) == ("1 process, 1 sample, 2 chip-s; one value read from each process (its last "
                                   "match), HOURLY_SAMPLES=12 set, per-process median (the default)")


def test_verdicts_that_are_not_paired_say_each_run_too(tmp_path, venv_python):
    """A real bisection whose metric verdicts are not paired (an executor that cannot interleave, an
    overlay --python: the metric judge, many runs a request): a line as each run ends."""
    from hourly.bisect.records import BisectRequest
    from hourly.bisect.search import Bisector, judge_for
    from hourly.bisect.windows import flags_window
    from hourly.measure.settings import effective, keyed
    from hourly.model import Mode
    from hourly.render.bisect import LineHandler

    slower = Change("xla", "2023-08-24T03:50:00Z", "[XLA] Slower", {"perf/slow.txt": "0.9\n"})
    made = make_repos(tmp_path / "repos", busy_day([slower]))
    work = tmp_path / "work"
    s, _ = effective(dict(xla_repo=str(made.xla), jax_repo=str(made.jax), build_cmd=str(made.build_script),
                          python=venv_python, bench_cmd=f"python3 {made.bench_script}", repeats=3, warmup_runs=0,
                          workdir=str(work)))
    s = keyed(s)
    req = BisectRequest("2023-08-24T03:00Z", "2023-08-24T04:30Z", Mode.METRIC)
    lines: list[str] = []
    with Bisector(s, Store(work, create=True), Mode.METRIC, req, LineHandler(lines.append),
                  judge=judge_for(Mode.METRIC, req, s.repeats, 10)) as b:
        (a,) = b.bisect(flags_window(b, req.good, req.bad, s.tz, False, Mode.METRIC))
    assert a.culprit is not None and a.culprit.sha == made.shas[slower.subject], a
    runs = [x for x in lines if re.match(r"^  measuring \S+: run \d+, \d+ chip-s so far$", x)]
    assert len(runs) == a.runs and any(x.split(": run ")[1].startswith("3,") for x in runs), lines
    assert a.sampling is not None and a.sampling["one_value"] and a.sampling["processes"] == a.runs


#: a benchmark whose samples are bimodal, each process a different share of them slow (a collector):
#: the median jumps between the modes, the 10th percentile does not — the ends choose it
BIMODAL = r'''
import os, random, signal, time
''' + COUNTED + r'''    random.seed(n)
time.sleep(float(os.environ.get("SLEEP", "0")))  # a process that costs something (the resume's chip-s)
level = 577.1 * jax_demo.FACTOR
slow = random.uniform(0.35, 0.65)
for _ in range(int(os.environ["HOURLY_SAMPLES"])):
    x = level * (1.12 if random.random() < slow else 1.0) * (1 + random.gauss(0, 0.002))
    print(f"T: {x:.3f}", flush=True)
'''


def test_a_resumed_search_holds_the_statistic_chosen_on_its_ends_and_its_answer_says_that_one(
        tmp_path, venv_python, capsys):
    made, slower, args = _setup(tmp_path, venv_python, samples=30,
                                env=[f"COUNTER={tmp_path / 'count'}", "STOP_AT=13", f"HOURLY_PID={os.getpid()}",
                                     "SLEEP=0.15"])
    (tmp_path / "sampled.py").write_text(BIMODAL)
    rc, _, err = _bisect(capsys, args)
    assert rc == 130, err
    store = Store(tmp_path / "work")
    ends = [json.loads(s) for (s,) in store.conn.execute(
        "SELECT statistic FROM bisect_probes WHERE role='end' AND statistic IS NOT NULL")]
    assert len(ends) == 2 and ends[0] == ends[1] and ends[0]["statistic"] != "median", ends  # chosen, stored
    chosen = ends[0]["statistic"]
    words = {"p10": "10th percentile", "trimmed": "trimmed mean"}[chosen]
    (seq,) = store.conn.execute("SELECT MAX(seq) FROM bisect_probes").fetchone()
    before = sum(r.get("duration") or 0.0 for (raw,) in store.conn.execute(
        "SELECT runs FROM measurements WHERE origin='bisect'") for r in json.loads(raw))  # the chip-s spent
    rc, got, err = _bisect(capsys, args)
    assert rc == 0, err
    assert "resuming after" in err
    # "so far" is the window's, the call before the stop too: the first line after the resume says
    # at least what that call spent (it said 0 chip-s, counting this call alone)
    so_far = [float(m) for m in re.findall(r"(\d+) chip-s so far", err)]
    assert so_far and so_far[0] >= math.floor(before) > 0, (before, so_far)
    # after the resume the progress lines, the verdicts and the answer all read the statistic chosen before
    lines = [x for x in err.splitlines() if PROCESS_LINE.match(x)]
    assert lines and all(x.endswith(f"each process by its {words}") for x in lines), err
    a = got["regressions"][0]
    assert a["culprit"]["sha"] == made.shas[slower.subject]
    assert a["sampling"]["statistic"] == chosen and a["sampling"]["statistic_why"] == ends[0]["why"]
    after = [r for (r,) in Store(tmp_path / "work").conn.execute(
        "SELECT reason FROM bisect_probes WHERE role='probe' AND seq>?", (seq,))]
    assert after and all(f"each process by its {words}" in r for r in after), after


def test_the_blames_mixed_states_are_judged_by_the_statistic_chosen_on_the_ends(tmp_path, venv_python, capsys):
    """A step that moves both repositories is blamed by rounds of its mixed states: their processes
    are reduced by the statistic the search holds, like its probes', and their verdicts say so."""
    made = make_repos(tmp_path / "repos", busy_day([
        Change("xla", "2023-08-24T02:30:00Z", "Slower collectives", {"perf/slow.txt": "0.95\n"}),
        Change("jax", "2023-08-24T02:30:00Z", "Harmless jax change", {"harmless.txt": "1\n"})]))
    bench = tmp_path / "sampled.py"
    bench.write_text(BIMODAL)
    args = ["--good", "2023-08-24T02:00Z", "--bad", "2023-08-24T03:00Z",
            *flags(made, venv_python, tmp_path / "work", warmup_runs=0, metric_samples="all", samples=30,
                   metric_regex=r"T: (?P<value>\S+)", bench_cmd=f"python3 {bench}", env=f"COUNTER={tmp_path / 'n'}")]
    rc, got, err = _bisect(capsys, args)
    assert rc == 0, err
    a = got["regressions"][0]
    assert a["blame"] == "xla" and a["culprit"]["sha"] == made.shas["Slower collectives"]
    chosen = a["sampling"]["statistic"]
    assert chosen != "median", a["sampling"]
    words = {"p10": "10th percentile", "trimmed": "trimmed mean"}[chosen]
    blamed = [r for (r,) in Store(tmp_path / "work").conn.execute("SELECT reason FROM bisect_probes WHERE role='blame'")]
    assert len(blamed) == 2 and all(f"each process by its {words}" in r for r in blamed), blamed
    lines = [x for x in err.splitlines() if PROCESS_LINE.match(x) and x.startswith("  blame ")]
    assert lines and all(x.endswith(f"each process by its {words}") for x in lines), err


def test_a_bisection_stopped_inside_its_ends_verdict_goes_on_from_the_rounds_it_kept(tmp_path, venv_python, capsys):
    """Ctrl-C during the 5th process, the ends' third round: the two rounds before it are kept as
    they ended (the store's ``bisect_rounds``), and the next call takes them up rather than running
    their four processes again — on an accelerator each held the chip for seconds."""
    made, slower, args = _setup(tmp_path, venv_python, samples=5,
                                env=[f"COUNTER={tmp_path / 'count'}", "STOP_AT=5", f"HOURLY_PID={os.getpid()}"])
    rc, _, err = _bisect(capsys, args)
    assert rc == 130, err
    store = Store(tmp_path / "work")
    kept = [json.loads(states) for (states,) in store.conn.execute("SELECT states FROM bisect_rounds")]
    assert len(kept) == 2 and kept[0] == kept[1] and len(kept[0]) == 2, kept  # the ends' two whole rounds
    rc, got, err = _bisect(capsys, args)
    assert rc == 0, err
    assert re.search(r"^ends: 2 rounds of \S+, \S+ measured before the stop taken up again$", err, re.M), err
    a = got["regressions"][0]
    assert a["culprit"]["sha"] == made.shas[slower.subject]
    # the window's ends' rows, its first two
    reason, decided = store.conn.execute("SELECT reason, created FROM bisect_probes WHERE role='end' ORDER BY seq").fetchone()
    rounds = int(re.search(r"paired over (\d+) rounds", reason)[1])
    # every round the ends' verdict rests on was measured once: the two kept, the rest in this call
    # (the 5th process, stopped, gave no value); measured again, they would be 4 processes more
    measured = sum(len(json.loads(runs)) for x, j, runs, c in store.conn.execute(
        "SELECT xla, jax, runs, created FROM measurements WHERE origin='bisect'") if [x, j] in kept[0] and c < decided)
    assert rounds >= 3 and 2 * rounds <= measured <= 2 * rounds + 1, (rounds, measured, reason)
    # --rerun bisects the window again from nothing: its kept rounds are forgotten with its verdicts
    rc, _, err = _bisect(capsys, [*args, "--rerun"])
    assert rc == 0, err
    assert "measured before the stop taken up again" not in err, err


def test_once_a_statistic_is_chosen_the_samples_a_process_gives_follow_its_noise(tmp_path, venv_python, capsys):
    """A benchmark whose samples are bimodal (the ends choose a statistic other than the median):
    after the choice, the noise the samples per process are chosen from is that of the processes'
    values by that statistic — the answer's within-process figure is that statistic's, read from the
    stored samples as hourly.analysis.process_stat reads it, not the samples' own variance."""
    import math

    from hourly.analysis.process_stat import variance_components
    made, slower, args = _setup(tmp_path, venv_python, env=[f"COUNTER={tmp_path / 'count'}"])
    (tmp_path / "sampled.py").write_text(BIMODAL)
    rc, got, err = _bisect(capsys, args)
    assert rc == 0, err
    s = got["regressions"][0]["sampling"]
    assert s["statistic"] in ("p10", "trimmed") and s["how"] == "chosen", s
    by_state: dict[tuple[str, str], list[list[float]]] = {}
    for x, j, raw in Store(tmp_path / "work").conn.execute("SELECT xla, jax, runs FROM measurements WHERE origin='bisect'"):
        for r in json.loads(raw):
            if len(r.get("samples") or []) >= 2:
                by_state.setdefault((x, j), []).append([math.log(v) for v in r["samples"]])
    def pooled(statistic):
        comps = [variance_components(g, statistic) for g in by_state.values() if len(g) >= 2]
        return sum(c[0] for c in comps) / len(comps)
    assert s["within_var"] == pytest.approx(pooled(s["statistic"]), rel=1e-3), (s, pooled(None))
    assert s["within_var"] != pytest.approx(pooled(None), rel=0.05)


def test_a_rerun_says_what_it_spent_not_what_the_run_it_replaces_did(tmp_path, venv_python, capsys):
    """``bisect --rerun`` of a finished window measures it again: its answer's processes and
    chip-seconds, and its lines' "chip-s so far", are the rerun's — they counted the first run's
    processes too ("in all its calls"), as if one search had taken both."""
    made, slower, args = _setup(tmp_path, venv_python, samples=5)
    rc, first, err = _bisect(capsys, args)
    assert rc == 0, err
    store = Store(tmp_path / "work")
    (before,) = store.conn.execute("SELECT MAX(id) FROM measurements").fetchone()
    rc, again, err = _bisect(capsys, [*args, "--rerun"])
    assert rc == 0, err
    runs = [r for (raw,) in store.conn.execute("SELECT runs FROM measurements WHERE origin='bisect' AND id>?",
                                               (before,)) for r in json.loads(raw)]
    s = again["regressions"][0]["sampling"]
    assert first["regressions"][0]["sampling"]["processes"] > 0 and s["processes"] == len(runs), s
    assert "this_call_chip_s" not in s, s  # one call: no earlier call to say apart
    so_far = [float(m) for m in re.findall(r"(\d+) chip-s so far", err)]
    assert so_far and so_far[0] <= math.ceil(runs[0]["duration"]), (so_far[:3], runs[0])
