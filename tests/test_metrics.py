"""Many samples from one run, and every named metric a run prints (issues 35 item 2, 36 item 3):
the runner, the store (rows per metric, samples grouped by process, a migrated old store), what
each metric did, and the scan, bisection, daily and release levels and report over them — real
processes, real git repositories (the demo's), real SQLite."""

from __future__ import annotations

import json
import re
import sqlite3
import statistics
import sys
import textwrap
from pathlib import Path

import pytest
from test_slurm import _cluster, cluster  # noqa: F401  (fixtures: a reachable Slurm, for the job test)

from hourly.adapters.store import _SCHEMA, MIGRATIONS, SCHEMA_VERSION, Store
from hourly.analysis.moved import Verdict, what_moved
from hourly.cli import main
from hourly.measure.benchmark import BenchSpec, run_benchmark
from hourly.measure.measurer import measurement_rows, primary_row
from hourly.measure.settings import effective, is_phase_harness
from hourly.model import NightlyPoint, Pair, PointResult, ReleasePoint, Status
from hourly.render.console import unwrap

#: a stand-in per-phase benchmark: every process prints 12 samples of two named metrics, the first
#: two of each slow (its warm-up); lower_ms follows the build's factor (the demo's planted fusion
#: regression at 13:20, factor 0.93: +7.5 %), step_ms does not
PHASES = """
import os, random
import jax_demo
noise = float(os.environ.get("DEMO_NOISE", "0.002"))
for i in range(12):
    slow = 3.0 if i < 2 else 1.0
    print(f"METRIC lower_ms: {40.0 / jax_demo.FACTOR * slow * (1 + random.gauss(0, noise)):.4f}")
    print(f"METRIC step_ms: {2.5 * slow * (1 + random.gauss(0, noise)):.5f}")
print("UNAVAILABLE peak_memory_bytes: the stand-in has no device")
"""


def script(tmp_path: Path, body: str, name: str = "b.py") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(body))
    return p


def run_cli(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def scan_argv(made, venv_python, tmp_path, bench: Path, frm: str, to: str, *extra: str) -> list[str]:
    return ["scan", "--from", frm, "--to", to, "--xla-repo", str(made.xla), "--jax-repo", str(made.jax),
            "--build-cmd", str(made.build_script), "--python", venv_python, "--bench-cmd", f"python3 {bench}",
            "--workdir", str(tmp_path / "work"), "--no-sync", *extra]


# -- the runner: many samples from one process -------------------------------------------------

def test_every_match_is_a_sample_and_each_run_keeps_its_own(tmp_path):
    bench = script(tmp_path, """
        for i in range(8):
            print(f"MLUPS: {900 if i < 3 else 500 + i}")
    """)
    spec = BenchSpec([sys.executable, str(bench)], samples="all", warmup_samples=3)
    res = run_benchmark(spec, 3, tmp_path / "logs", "t")
    assert res.status is Status.OK
    assert res.process_samples == [[503, 504, 505, 506, 507]] * 3  # the 900s were each run's warm-up
    assert res.samples == [505, 505, 505]  # one value per run (process): the median of its samples
    run = res.runs[0].as_dict()
    assert run["samples"] == [503, 504, 505, 506, 507] and run["matched"] == 8 and run["warmup_samples"] == 3
    [m] = measurement_rows(Pair("x", "j"), res, "scan", None, [], "")
    assert m.metric == "" and m.by_process() == res.process_samples
    assert m.processes == 3 and m.sample_count == 15 and m.samples == [505, 505, 505]

    last = run_benchmark(BenchSpec([sys.executable, str(bench)]), 1, tmp_path / "logs", "l")
    assert last.samples == [507] and "samples" not in last.runs[0].as_dict()  # today's rows, unchanged


def test_printed_but_only_warm_up_or_no_finite_number_says_so(tmp_path):
    log = tmp_path / "logs"
    warm = script(tmp_path, "print('MLUPS: 1'); print('MLUPS: 2')", "w.py")
    res = run_benchmark(BenchSpec([sys.executable, str(warm)], samples="all", warmup_samples=2), 1, log, "w")
    assert res.status is Status.NO_METRIC
    assert "metric printed 2 times, every one a warm-up sample (--warmup-samples 2" in res.detail()
    nan = script(tmp_path, "print('MLUPS: 1'); print('MLUPS: nan'); print('MLUPS: inf')", "n.py")
    res = run_benchmark(BenchSpec([sys.executable, str(nan)], samples="all", warmup_samples=1,
                                  metric_regex=r"MLUPS: (?P<value>\S+)"), 1, log, "n")
    assert res.status is Status.NO_METRIC
    assert "metric printed 2 times after the warm-up samples, never a finite number (nan, inf)" in res.detail()
    none = run_benchmark(BenchSpec([sys.executable, str(warm)], samples="all", metric_regex=r"X: (?P<value>\d+)"),
                         1, log, "x")
    assert "metric never printed" in none.detail()


def test_named_metrics_each_get_their_rows_from_the_same_runs(tmp_path):
    bench = script(tmp_path, """
        for i in range(5):
            print(f"METRIC trace_ms: {10 + i}")
            print(f"METRIC step_us: {7.5}")
        print("METRIC odd_ms: 1"); print("METRIC odd_ms: nan")
        print("UNAVAILABLE peak_memory_bytes: the cpu backend reports no memory_stats()")
    """)
    spec = BenchSpec([sys.executable, str(bench)], metrics=("all",), warmup_samples=1)
    res = run_benchmark(spec, 2, tmp_path / "logs", "n")
    rows = measurement_rows(Pair("x", "j"), res, "scan", spec.metrics, ["gone_ms"], None)
    by = {m.metric: m for m in rows}
    assert list(by) == ["trace_ms", "step_us", "odd_ms", "peak_memory_bytes", "gone_ms"]
    assert by["trace_ms"].by_process() == [[11, 12, 13, 14]] * 2 and by["trace_ms"].samples == [12.5, 12.5]
    assert by["step_us"].status == "ok" and by["step_us"].sample_count == 8
    assert by["odd_ms"].status == "no_metric" and "never a finite number (nan)" in by["odd_ms"].detail
    assert "unavailable: the cpu backend reports no memory_stats()" in by["peak_memory_bytes"].detail
    assert by["gone_ms"].status == "no_metric" and "metric never printed" in by["gone_ms"].detail
    assert primary_row(rows, "step_us") is by["step_us"] and primary_row(rows, None) is by["trace_ms"]

    listed = BenchSpec([sys.executable, str(bench)], metrics=("step_us", "lower_ms"))
    rows = measurement_rows(Pair("x", "j"), run_benchmark(listed, 1, tmp_path / "logs", "l"), "scan",
                            listed.metrics, [], None)
    assert [(m.metric, m.status) for m in rows] == [("step_us", "ok"), ("lower_ms", "no_metric")]

    crash = script(tmp_path, "import sys; print('METRIC trace_ms: 1'); sys.exit(3)", "c.py")
    spec = BenchSpec([sys.executable, str(crash)], metrics=("all",))
    [m] = measurement_rows(Pair("x", "j"), run_benchmark(spec, 1, tmp_path / "logs", "c"), "scan", spec.metrics,
                           ["trace_ms"], None)
    assert (m.metric, m.status) == ("", "crashed")  # a run that crashed holds for every metric
    silent = script(tmp_path, "print('hello')", "s.py")
    spec = BenchSpec([sys.executable, str(silent)], metrics=("all",))
    [m] = measurement_rows(Pair("x", "j"), run_benchmark(spec, 1, tmp_path / "logs", "s"), "scan", spec.metrics,
                           [], None)
    assert (m.metric, m.status) == ("", "no_metric") and "no METRIC line with a finite value printed" in m.detail


# -- settings -------------------------------------------------------------------------------------

def test_the_harness_records_every_phase_and_a_named_primary_takes_its_units_direction(tmp_path):
    assert is_phase_harness("python3 /x/hourly/jaxbench_phases.py bench.py --repeats 3")
    assert is_phase_harness("python -m hourly.jaxbench_phases bench.py") and not is_phase_harness("python3 b.py")
    harness = "python3 /x/hourly/jaxbench_phases.py bench.py"
    s, _ = effective({"bench_cmd": harness})
    assert s.named_metrics() == ["all"] and s.primary_metric() is None
    assert s.direction_of("lower_ms") is False and s.direction_of("tokens_per_s") is True
    s, _ = effective({"bench_cmd": harness, "metric_regex": r"MEDIAN step_ms:\s*(?P<value>\S+)"})
    assert s.named_metrics() is None and s.primary_metric() == ""  # a regex of its own: one metric
    s, _ = effective({"bench_cmd": "python3 b.py", "metric": "lower_ms"})
    assert s.named_metrics() == ["all"] and s.primary_metric() == "lower_ms" and s.higher_is_better is False
    s, _ = effective({"bench_cmd": "python3 b.py", "metric": "lower_ms", "higher_is_better": True})
    assert s.higher_is_better is True  # the user's direction for the primary wins
    plain, _ = effective({"bench_cmd": "python3 b.py"})
    assert plain.bench_identity() == {k: v for k, v in plain.bench_identity().items()
                                      if k in ("cmd", "cwd", "env", "regex", "python")}  # today's key
    with pytest.raises(Exception, match="--metric lower_ms is not one of --metrics step_ms"):
        effective({"bench_cmd": "python3 b.py", "metrics": "step_ms", "metric": "lower_ms"})
    with pytest.raises(Exception, match="is not all or a list of metric names"):
        effective({"bench_cmd": "python3 b.py", "metrics": "step ms"})
    with pytest.raises(Exception, match="--metric-samples must be last or all, not some"):
        effective({"metric_samples": "some"})


def test_settings_follow_a_metric_frozen_and_keyed():
    """Settings are frozen and keyed (hourly.measure.settings.keyed): following another named metric
    of the same reading keeps the key (a run records every metric either way); a change of what a run
    records (here: from the regex's one metric to every named one) carries no usable key until keyed
    again, and keyed again it is another key; a bad value given by a flag is a usage error (exit 2)."""
    from dataclasses import FrozenInstanceError

    from hourly.errors import UsageError
    from hourly.measure.settings import keyed, with_metric
    s = keyed(effective({"bench_cmd": "python3 b.py", "metrics": "all"})[0])
    lower = with_metric(s, "lower_ms")
    assert lower.bench_key() == s.bench_key() and lower.primary_metric() == "lower_ms"
    assert lower.higher_is_better is False and with_metric(s, "tokens_per_s").higher_is_better is True
    with pytest.raises(FrozenInstanceError):
        s.metric = "step_ms"  # type: ignore[misc]
    plain = keyed(effective({"bench_cmd": "python3 b.py"})[0])
    named = with_metric(plain, "lower_ms")
    assert named.named_metrics() == ["all"] and plain.named_metrics() is None
    with pytest.raises(RuntimeError, match="without their key"):
        named.bench_key()
    assert keyed(named).bench_key() != plain.bench_key()
    with pytest.raises(UsageError):
        effective({"bench_cmd": "python3 b.py", "warmup_samples": -1})


# -- what each metric did (pure) --------------------------------------------------------------

def _points(values, status="ok"):
    return [PointResult(f"t{i:02d}", f"x{i}", "j", status, v, [v * 0.999, v, v * 1.001]) for i, v in enumerate(values)]


def test_unchanged_only_when_the_evidence_carries_it():
    flat = _points([100.0 + 0.1 * (i % 3) for i in range(12)])
    moved, _ = what_moved("step_ms", flat, False)
    assert moved.verdict == Verdict.UNCHANGED and moved.bound is not None and 0.01 <= moved.bound < 0.05
    assert moved.short().startswith("step_ms unchanged (within ±")

    step = _points([100.0] * 6 + [131.0] * 6)
    moved, _ = what_moved("lower_ms", step, False)
    assert moved.verdict == Verdict.MOVED and moved.short() == "lower_ms +31.0%"

    short = _points([100.0, 100.1, 99.9])
    moved, _ = what_moved("trace_ms", short, False)
    assert moved.verdict == Verdict.UNSURE and "3 measured points: too few" in moved.why

    moved, _ = what_moved("trace_ms", flat, False, incomplete=True)
    assert moved.verdict == Verdict.UNSURE and "not measured yet" in moved.why

    lost = flat[:8] + [PointResult(f"u{i}", f"y{i}", "j", "no_metric") for i in range(3)]
    moved, _ = what_moved("trace_ms", lost, False)
    assert moved.verdict == Verdict.UNSURE and "stops being printed" in moved.why

    none = [PointResult("t", "x", "j", "no_metric", detail="unavailable: cpu")]
    moved, detection = what_moved("peak_memory_bytes", none, False)
    assert moved.verdict == Verdict.UNMEASURED and "unavailable: cpu" in moved.why and detection is None


# -- the store ------------------------------------------------------------------------------------

@pytest.mark.parametrize("version", [6, 7])
def test_an_older_store_opens_and_its_rows_are_the_regex_metrics(tmp_path, version):
    """A store written before named metrics migrates: schema 6 (before hourly watch) and schema 7
    (hourly watch's tables, as main wrote it before named metrics). Its rows are the one metric the
    regex read, every reader finds them, a bisection's probes read with no samples counted apart,
    and the watch's rows are as they were."""
    work = tmp_path / "old"
    work.mkdir()
    with sqlite3.connect(work / "hourly.sqlite") as c:
        c.executescript(_SCHEMA)
        for v in range(1, version + 1):
            for stmt in MIGRATIONS[v]:
                c.execute(stmt)
        c.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(version),))
        c.execute("INSERT INTO bisections (key, bench_key, mode, status, good_time, bad_time, good_xla, good_jax,"
                  " bad_xla, bad_jax, result, created, updated) VALUES ('b', 'k', 'metric', 'running', 0, 1,"
                  " 'x0', 'j0', 'x1', 'j1', NULL, 1, 1)")
        c.execute("INSERT INTO bisect_probes (bisection, seq, role, xla, jax, verdict, partial, reason, samples,"
                  " returncodes, builds, runs, created) VALUES (1, 1, 'end', 'x0', 'j0', 'good', 0, 'r', '[1.0]',"
                  " '[0]', 1, 2, 1)")
        if version >= 7:
            c.execute("INSERT INTO watch_builds (watch, build, seq, time, ident, status, detail, decision, created,"
                      " updated) VALUES ('w', '2023-08-24', 1, NULL, '{}', 'ok', NULL, NULL, 1, 1)")
            c.execute("INSERT INTO watch_values (watch, build, metric, value, samples, runs, created)"
                      " VALUES ('w', '2023-08-24', 'MLUPS', 5.0, '[5.0]', '[]', 1)")
        c.execute("INSERT INTO measurements (bench_key, xla, jax, status, value, samples, runs, detail, origin,"
                  " created) VALUES ('k', 'x1', 'j1', 'ok', 577.0, '[576.0, 578.0]', ?, NULL, 'scan', 1.0)",
                  (json.dumps([{"status": "ok", "value": 576.0, "returncode": 0, "duration": 1, "log": "a"},
                               {"status": "ok", "value": 578.0, "returncode": 0, "duration": 1, "log": "b"}]),))
        c.execute("INSERT INTO nightly (bench_key, date, image, digest, status, value, samples, runs, xla, jax,"
                  " detail, created) VALUES ('n', '2023-08-24', 'img', NULL, 'ok', 5.0, '[5.0]', '[]', 'x', 'j', NULL, 1)")
        c.execute("INSERT INTO releases (bench_key, version, jaxlib, released, status, value, samples, runs,"
                  " installer, env, detail, created) VALUES ('r', '0.4.14', '0.4.14', NULL, 'ok', 3.0, '[3.0]', '[]',"
                  " 'uv', NULL, NULL, 1)")
    store = Store(work)
    assert store.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    [m] = store.measurements("k", "x1", "j1")
    assert m.metric == "" and m.by_process() == [[576.0], [578.0]] and m.sample_count == 2
    assert store.all_latest("k", metric="")[("x1", "j1")].value == 577.0
    assert store.latest("k", "x1", "j1", metric="lower_ms").value == 577.0  # an '' row holds for every metric
    assert store.metric_names("k") == []
    assert store.nightly_points("n")["2023-08-24"].value == 5.0
    assert store.releases("r")["0.4.14"].metric == ""
    [probe] = store.probes(1)
    assert probe["runs"] == 2 and probe["run_samples"] == 0
    if version >= 7:
        assert store.watch_values("w") == {"2023-08-24": {"MLUPS": {"value": 5.0, "samples": [5.0], "runs": []}}}
        assert [b.build for b in store.watch_builds("w")] == ["2023-08-24"]
    store.close()
    Store(work).close()  # opening again changes nothing
    ro = Store(work, create=False, read_only=True)  # and read-only, as show and report read it
    assert ro.measurements("k", "x1", "j1")[0].value == 577.0
    ro.close()


# -- the scan, the bisection and the report over named metrics ------------------------------------

def test_a_scan_of_named_metrics_finds_the_step_in_one_and_says_the_other_did_not_move(
        capsys, made, venv_python, tmp_path):
    bench = script(tmp_path, PHASES, "phases.py")
    # five states (ten points): enough for step_ms's noise to be measured and called unchanged
    argv = scan_argv(made, venv_python, tmp_path, bench, "Aug 24 2023 06:00", "Aug 24 2023 15:00",
                     "--metrics", "all", "--warmup-samples", "2", "--repeats", "2")
    code, out, err = run_cli(capsys, argv)
    assert code == 0, err
    lines = unwrap(out)
    summary = next(ln for ln in lines if ln.startswith("per metric: "))
    assert summary.startswith("per metric: lower_ms +7.") and "step_ms unchanged (within ±" in summary
    assert "peak_memory_bytes not measured (no state measured it: no_metric, the benchmark says the metric is " \
           "unavailable: the stand-in has no device" in summary
    step = next(ln for ln in lines if ln.startswith("lower_ms: ▼ regression"))
    assert "between 2023-08-24T13:00:00Z and 2023-08-24T14:00:00Z" in step
    assert step.endswith("bisect it: hourly bisect --metric lower_ms --good 2023-08-24T13:00:00Z --bad "
                         f"2023-08-24T14:00:00Z --workdir {tmp_path / 'work'}")
    assert any(ln.startswith("step_ms: unchanged: no step of ±") for ln in lines)
    assert "runs, not samples, are what detection and bisection count" in " ".join(lines)

    code, out, _ = run_cli(capsys, ["show", "--workdir", str(tmp_path / "work"), "--json"])
    shown = json.loads(out)
    assert list(shown["metrics"]) == ["lower_ms", "step_ms", "peak_memory_bytes"]
    lower, flat = shown["metrics"]["lower_ms"], shown["metrics"]["step_ms"]
    assert lower["verdict"] == "moved" and lower["higher_is_better"] is False
    assert [(s["before"], s["after"]) for s in lower["steps"]] == [("2023-08-24T13:00:00Z", "2023-08-24T14:00:00Z")]
    assert lower["steps"][0]["bisect"].startswith("hourly bisect --metric lower_ms --good")
    assert flat["verdict"] == "unchanged" and flat["steps"] == [] and flat["within"] < 0.05
    assert all(p["runs"] == 2 and p["run_samples"] == 20 for p in flat["points"])  # runs are processes
    assert shown["moved"].startswith("lower_ms +7.")

    store = Store(tmp_path / "work")
    key = store.load_settings("measure_key")["key"]
    x, j = shown["points"][0]["xla"], shown["points"][0]["jax"]
    rows = store.measurements(key, x, j)
    assert sorted(m.metric for m in rows) == ["lower_ms", "peak_memory_bytes", "step_ms"]
    for m in rows[:2]:  # the samples of each process, apart: 10 after the 2 warm-up ones
        assert len(m.by_process()) == 2 and all(len(p) == 10 for p in m.by_process())
        assert m.samples == [statistics.median(p) for p in m.by_process()]  # one value per run
    store.close()

    code, out, err = run_cli(capsys, ["report", "--workdir", str(tmp_path / "work")])
    assert code == 0, err
    md = (tmp_path / "work" / "report" / "report.md").read_text()
    assert "| `lower_ms` | lower | regression +7." in md and "| `step_ms` | lower | unchanged: no step of ±" in md
    assert "## lower_ms: lower is better" in md and "## step_ms: lower is better" in md
    assert "hourly bisect --metric lower_ms --good 2023-08-24T13:00:00Z" in md
    assert (tmp_path / "work" / "report" / "plot-lower_ms.png").exists()

    code, _, err = run_cli(capsys, ["bisect", "--workdir", str(tmp_path / "work")])
    assert code == 1 and "follows one metric, and this benchmark records several (lower_ms, step_ms" in err
    code, out, err = run_cli(capsys, ["bisect", "--metric", "lower", "--workdir", str(tmp_path / "work")])
    assert (code, out) == (1, "")  # never "nothing to bisect" (no window of a metric never measured)
    assert (f"no metric named `lower` was recorded in {tmp_path / 'work'}: its scan recorded `lower_ms`, `step_ms`, "
            "`peak_memory_bytes` — pass --metric with one of those names") in " ".join(unwrap(err))
    # a name every state recorded without a value: "not measured", with why, never "nothing to bisect"
    code, out, err = run_cli(capsys, ["bisect", "--metric", "peak_memory_bytes", "--workdir", str(tmp_path / "work")])
    assert (code, out) == (1, ""), err
    assert (f"`peak_memory_bytes` was not measured in {tmp_path / 'work'}: no state of its scan has a value of it (the "
            "benchmark says the metric is unavailable: the stand-in has no device") in " ".join(unwrap(err))
    assert "— pass --metric with one it measured: `lower_ms`, `step_ms`" in " ".join(unwrap(err))
    code, out, err = run_cli(capsys, ["bisect", "--metric", "lower_ms", "--good", "2023-08-24T13:00:00Z",
                                      "--bad", "2023-08-24T14:00:00Z", "--workdir", str(tmp_path / "work"), "--json"])
    assert code == 0, err
    [answer] = json.loads(out)["regressions"]
    assert answer["culprit"]["sha"] == made.shas["[XLA:GPU] Change priority fusion heuristic"]
    assert answer["metric"] == "lower_ms"
    # the verdicts took one value per run; the runs (process starts) and the samples they printed
    # (10 each after the 2 warm-up ones) are counted apart, in the answer and in each probe's row
    measured = [p for p in answer["probes"] if p["runs"]]
    assert measured and answer["runs"] == sum(p["runs"] for p in answer["probes"])
    assert answer["run_samples"] == sum(p["run_samples"] for p in answer["probes"]) > answer["runs"]
    assert all(p["run_samples"] >= 10 * (p["runs"] - 1) for p in measured)  # a fresh state's warm-up run counts no samples
    # the lab read lower_ms's rows: every sample its verdicts compared is a per-run median of lower_ms
    store = Store(tmp_path / "work")
    bisected = [m for m in store.measurements(key, answer["first_bad"]["xla"], answer["first_bad"]["jax"], "lower_ms")]
    assert bisected and all(m.metric in ("lower_ms", "") for m in bisected)
    assert all(v > 30 for m in bisected for v in m.samples)  # lower_ms (~40 ms), never step_ms (~2.5 ms)
    store.close()


def test_many_samples_of_the_regex_metric_through_a_scan(capsys, made, venv_python, tmp_path):
    bench = script(tmp_path, """
        import jax_demo
        for i in range(6):
            print(f"MLUPS: {(300.0 if i == 0 else 577.1) * jax_demo.FACTOR:.2f}")
    """)
    argv = scan_argv(made, venv_python, tmp_path, bench, "Aug 24 2023 12:00", "Aug 24 2023 15:00",
                     "--metric-samples", "all", "--warmup-samples", "1", "--json",
                     "--no-confirm-edges")  # the edge step measured again: test_scan's edge tests
    code, out, err = run_cli(capsys, argv)
    # two pairs of one run each: the step rests on an assumed noise (exit 1)
    assert code == 1 and "cannot tell whether the step above is real" in err, err
    got = json.loads(out)
    assert got["measuring"]["metric_samples"] == "all" and got["measuring"]["warmup_samples"] == 1
    assert "metrics" not in got  # the regex's one metric
    assert [(p["runs"], p["run_samples"]) for p in got["points"]] == [(1, 5)] * 4
    assert got["points"][0]["value"] == pytest.approx(577.1) and got["points"][2]["value"] == pytest.approx(536.7, abs=0.1)


def test_a_metric_name_the_regex_scan_never_recorded_is_said_with_the_fix(capsys, made, venv_python, tmp_path):
    bench = script(tmp_path, """
        import jax_demo
        print(f"T: {577.1 * jax_demo.FACTOR:.2f}")
    """)
    argv = scan_argv(made, venv_python, tmp_path, bench, "Aug 24 2023 13:00", "Aug 24 2023 14:00",
                     "--metric-regex", r"T: (?P<value>\S+)",
                     "--no-confirm-edges")  # the edge step measured again: test_scan's edge tests
    code, _, err = run_cli(capsys, argv)
    assert code == 1 and "cannot tell whether the step above is real" in err, err  # two pairs of one run each
    code, out, err = run_cli(capsys, ["bisect", "--workdir", str(tmp_path / "work"), "--metric", "nosuch"])
    assert (code, out) == (1, "")
    said = " ".join(unwrap(err))
    assert "another benchmark" not in said  # the key differs only because of the name: not another benchmark
    assert (f"no metric named `nosuch` was recorded in {tmp_path / 'work'}: its scan read one unnamed metric with "
            r"--metric-regex `T: (?P<value>\S+)`, and no named ones — leave out --metric to follow that metric; to "
            "follow named metrics, scan again with --metrics all and a benchmark that prints `METRIC name: value` "
            "lines") in said


# -- the daily and release levels, from their stored rows -------------------------------------------

def test_the_daily_level_finds_each_metrics_steps_and_hands_over_the_regression(tmp_path):
    from hourly.nightly.plan import NightlySettings, stored_nightly
    from hourly.render.console import console
    from hourly.render.nightly import print_report
    s = NightlySettings(from_="2023-08-01", to="2023-08-12", metrics="all", workdir=str(tmp_path),
                        mounts=[f"{tmp_path}:/dir"])
    store = Store(tmp_path)
    for i in range(12):
        day = f"2023-08-{i + 1:02d}"
        common = dict(digest=f"sha256:{i}", xla=f"x{i}", jax=f"j{i}")
        lower = 40.0 * (1.3 if i >= 7 else 1.0)
        store.add_nightlies(s.key(), [
            NightlyPoint(day, f"img:{day}", Status.OK, value=lower, samples=[lower * 0.999, lower * 1.001],
                         metric="lower_ms", **common),
            NightlyPoint(day, f"img:{day}", Status.OK, value=2.5 + 0.001 * (i % 3), samples=[2.5, 2.501],
                         metric="step_ms", **common)])
    report = stored_nightly(store, s)
    assert [m.name for m in report.metrics] == ["lower_ms", "step_ms"]
    assert report.boundary is not None and (report.boundary.good.date, report.boundary.bad.date) == \
        ("2023-08-07", "2023-08-08")
    # the hour-by-hour scan records them too, following the metric that regressed
    assert report.next_commands()[1].endswith("--metrics all --metric lower_ms")
    assert report.boundary.metric == "lower_ms" and report.as_json()["boundary"]["metric"] == "lower_ms"
    got = report.as_json()
    assert got["moved"].startswith("lower_ms +30.0%, step_ms unchanged (within ±")
    assert got["metrics"]["step_ms"]["verdict"] == "unchanged"
    con = console(record=True, width=200)
    print_report(con, report)
    text = con.export_text()
    assert "per metric: lower_ms +30.0%, step_ms unchanged" in text and "lower_ms ↓" in text
    store.close()


def test_the_release_level_finds_each_metrics_steps_with_commands_for_that_metric(tmp_path):
    from hourly.releases.plan import ReleaseSettings, stored_releases
    from hourly.render.releases import release_markdown
    s = ReleaseSettings(from_="0.4.10", to="0.4.21", bench_cmd="python3 bench.py", metrics="all",
                        workdir=str(tmp_path), deps_as_of_release=False)
    store = Store(tmp_path)
    key = "rk"
    for i in range(10, 22):
        v = f"0.4.{i}"
        trace = 100.0 * (1.5 if i >= 16 else 1.0)
        store.add_releases(key, [
            ReleasePoint(v, v, f"2023-0{1 + (i - 10) // 3}-{10 + i}T00:00:00Z", Status.OK, trace,
                         [trace * 0.999, trace * 1.001], metric="trace_ms"),
            ReleasePoint(v, v, f"2023-0{1 + (i - 10) // 3}-{10 + i}T00:00:00Z", Status.OK, 1.0 + 0.0005 * (i % 2),
                         [1.0, 1.001], metric="step_ms")])
    store.save_settings("releases", {"settings": s.as_dict(), "key": key})
    report = stored_releases(store, s, key)
    assert [m.name for m in report.metrics] == ["trace_ms", "step_ms"]
    [trace_step] = report.metrics[0].steps
    assert (trace_step.before.version, trace_step.after.version) == ("0.4.15", "0.4.16")
    assert any("--metric trace_ms" in c and c.startswith("hourly bisect") for c in trace_step.commands)
    assert not any("--lower-is-better" in c for c in trace_step.commands)  # its unit says it
    assert report.as_json()["metrics"]["step_ms"]["verdict"] == "unchanged"
    md = "\n".join(release_markdown(store))
    assert "`trace_ms` (lower)" in md and "step_ms unchanged (within ±" in md
    store.close()


# -- the per-phase harness on CPU jax over two states ------------------------------------------------

TARGET = """
import jax.numpy as jnp
import jax_demo

OPS = 40 if jax_demo.FACTOR > 0.95 else 160  # the fusion change (factor 0.93): four times the ops to trace

def make():
    def f(x):
        for _ in range(OPS):
            x = jnp.sin(x) * 0.5 + x
        return x
    return f, (jnp.ones(8, jnp.float32),)
"""


@pytest.mark.slow  # jax imported by every run; the logic: the scan test above with a stand-in
def test_the_per_phase_harness_is_recorded_phase_by_phase_over_two_states(capsys, made, venv_python, tmp_path):
    from hourly.measure.phases import HARNESS
    target = script(tmp_path, TARGET, "target.py")
    bench = f"python3 {HARNESS} {target} --phases trace,lower,step --repeats 4 --iters 20 --warmup 1"
    argv = ["scan", "--from", "Aug 24 2023 12:00", "--to", "Aug 24 2023 15:00", "--xla-repo", str(made.xla),
            "--jax-repo", str(made.jax), "--build-cmd", str(made.build_script), "--python", venv_python,
            "--bench-cmd", bench, "--workdir", str(tmp_path / "work"), "--no-sync", "--warmup-runs", "0", "--json",
            "--no-confirm-edges"]  # the phases recorded, not the edge (test_scan measures edges again: 10 more jax runs)
    code, out, err = run_cli(capsys, argv)
    # four pairs of one run each, the edge not measured again: the step stands on an assumed noise, so
    # the scan names it and exits 1 with the command that measures the noise (test_scan's rule)
    assert code == 1 and "cannot tell whether the step of trace_ms above is real" in " ".join(err.split()), err
    got = json.loads(out)
    assert got["measuring"]["metrics"] == ["all"]  # the harness: every phase, by itself
    metrics = got["metrics"]
    assert {"trace_ms", "lower_ms", "step_ms"} <= set(metrics)
    trace = metrics["trace_ms"]["points"]
    assert [p["run_samples"] for p in trace] == [4] * 4 and [p["run_samples"] for p in metrics["step_ms"]["points"]] \
        == [20] * 4
    assert trace[2]["value"] > 2 * trace[0]["value"]  # four times the ops traced after the change
    assert all(m["higher_is_better"] is False for m in metrics.values())


NAMED_RELEASE_BENCH = """\
import random
import jax
for i in range(5):
    print("METRIC dispatch_us:", jax.DISPATCH_US * (1 + random.uniform(-0.002, 0.002)))
    print("METRIC step_ms:", 2.0 * (1 + random.uniform(-0.002, 0.002)))
"""


def test_the_release_level_runs_and_records_every_named_metric(tmp_path, capsys):
    """Real environments per release from a local index (test_releases' wheels), a benchmark
    printing two named metrics: each release stores a row per metric, the crash holds for both."""
    import test_releases as TR  # its stand-in jax and jaxlib wheels: 0.2.0 dispatches 50 % slower, 0.2.2 crashes
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for version, value, req, when in TR.JAX:
        body = ('raise RuntimeError("stand-in jax crashes at import")\n' if value == "crash" else
                f'import jaxlib\n__version__ = "{version}"\nDISPATCH_US = {value}\n')
        TR.write_wheel(wheels, "jax", version, {"jax/__init__.py": body}, [f'{req}; extra == "cpu"'], when=when)
    for version, tag in TR.JAXLIB.items():
        TR.write_wheel(wheels, "jaxlib", version, {"jaxlib/__init__.py": f'__version__ = "{version}"\n'}, tag=tag)
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "bench.py").write_text(NAMED_RELEASE_BENCH)
    argv = ["releases", "--from", "0.1.0", "--to", "0.2.2", "--find-links", str(wheels), "--bench-cmd",
            "python bench.py", "--bench-cwd", str(tmp_path / "bench"), "--metrics", "all", "--repeats", "2",
            "--warmup-samples", "1", "--cache-dir", str(tmp_path / "cache"), "--workdir", str(tmp_path / "work"),
            "--deps-as-of-release", "--json"]
    code, out, err = run_cli(capsys, argv)
    assert code == 0, err
    got = json.loads(out)
    dispatch, step = got["metrics"]["dispatch_us"], got["metrics"]["step_ms"]
    assert dispatch["higher_is_better"] is False and dispatch["verdict"] == "moved"
    [reg] = [st for st in dispatch["steps"] if st["kind"] == "regression"]
    assert (reg["last_good"]["version"], reg["first_bad"]["version"]) == ("0.1.1", "0.2.0")
    bisect = next(c for c in reg["next_commands"] if c.startswith("hourly bisect"))
    assert "--metric dispatch_us" in bisect and "--metrics all" in bisect and "--lower-is-better" not in bisect
    assert step["verdict"] != "moved" and not [st for st in step["steps"] if st["kind"] != "crash"]
    ok = [p for p in dispatch["points"] if p["status"] == "ok"]
    assert ok and all((p["runs"], p["run_samples"]) == (2, 8) for p in ok)
    crashed = {p["version"]: p["status"] for p in step["points"]}
    assert crashed["0.2.2"] == "crashed"  # the crash at import holds for every metric
    assert re.match(r"dispatch_us \+(49|50)\.\d%, step_ms ", got["moved"]), got["moved"]


def test_a_slurm_job_records_every_named_metrics_row(capsys, cluster, made, venv_python, tmp_path):  # noqa: F811
    """A Slurm job measures as a local scan does: the coordinator records each named metric's row,
    with the samples of each run, in one transaction (needs a Slurm cluster, like tests/test_slurm.py)."""
    bench = script(tmp_path, PHASES, "phases.py")
    rows = {}
    for where, extra in (("local", []), ("slurm", ["--executor", "slurm", "--workers", "2"])):
        argv = scan_argv(made, venv_python, tmp_path, bench, "Aug 24 2023 12:00", "Aug 24 2023 15:00", "--metrics",
                         "all", "--warmup-samples", "2", "--json", *extra)
        argv[argv.index("--workdir") + 1] = str(tmp_path / where)
        code, out, err = run_cli(capsys, [*argv, "--cache-dir", str(tmp_path / f"cache-{where}")])
        assert code == 0, err
        with sqlite3.connect(tmp_path / where / "hourly.sqlite") as c:
            rows[where] = c.execute("SELECT xla, jax, metric, status, json_array_length(samples) FROM measurements"
                                    " WHERE origin = 'scan' ORDER BY xla, jax, metric").fetchall()
    assert rows["local"] == rows["slurm"]
    assert {r[2] for r in rows["slurm"]} == {"lower_ms", "step_ms", "peak_memory_bytes"}
