"""The tools of the real-history bisection benchmarks (benchmarks/real_bisect.py, real_jax/tally.py,
benchmarks/real_history_2026.py): what they count, how they classify answers, how they skip.

The benchmarks themselves need a clone of jax-ml/jax and a jaxlib 0.10.2 (CI has neither); what
is checked here is that, given a real bisection, they count what it cost the same way hourly's
store does: a real `hourly bisect --only jax` on stand-in repositories, the benchmark wrapped in
tally.py, real subprocesses, real SQLite."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hourly.demo.repos import make_repos
from hourly.demo.split import jax_base_files, write_bench

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import real_bisect  # noqa: E402
from real_bisect import Load, bisect_once, classify, holds, row, store_counts, tallied  # noqa: E402


def test_an_answer_is_classified_by_what_it_names_and_never_called_exact_for_another_commit():
    culprit = {"culprit": {"sha": "03652b8bba" + "0" * 30, "subject": "Merge pull request #38415"}}
    assert classify(culprit, "03652b8bba")[0] == "exact"
    assert classify(culprit, "7e9ead3744")[0] == "wrong"
    assert classify(culprit, None)[0] == "wrong"  # a culprit where none is expected is wrong
    cand = {"candidate": {"sha": "7e9ead3744" + "0" * 30}}
    assert classify(cand, "7e9ead3744")[0] == "candidate" and holds(cand, "7e9ead3744") is True
    rng = {"range": ["a" * 40, "7e9ead3744" + "0" * 30], "reason": "2 untestable states"}
    cls, text = classify(rng, "7e9ead3744")
    assert cls == "range" and "range of 2 commits" in text and holds(rng, "7e9ead3744") is True
    assert holds(rng, "03652b8bba") is False and holds(rng, None) is None
    assert classify({"error": "the ends do not differ"}, None) == ("none", "no answer: the ends do not differ")
    assert classify({"reason": "no step"}, None)[0] == "none"


def test_tally_counts_every_process_however_it_ends_and_passes_its_output_through(tmp_path):
    tally = tmp_path / "tally.jsonl"
    bench = tmp_path / "b.py"
    bench.write_text("import sys\nprint('metric: 1.5', sys.argv[1:])\n"
                     "if sys.argv[1] == 'raise': raise RuntimeError('valid_dtypes is not set')\n"
                     "sys.exit(int(sys.argv[1]) if sys.argv[1].isdigit() else 0)\n")
    env = {**os.environ, real_bisect.TALLY_ENV: str(tally)}
    outs = [subprocess.run([sys.executable, str(real_bisect.TALLY), str(bench), arg], capture_output=True,
                           text=True, env=env) for arg in ("0", "3", "raise")]
    assert [p.returncode for p in outs] == [0, 3, 1]
    assert "metric: 1.5 ['3']" in outs[1].stdout
    assert "RuntimeError: valid_dtypes is not set" in outs[2].stderr
    lines = tallied(tally)
    assert [x["rc"] for x in lines] == [0, 3, 1]
    assert all(x["seconds"] >= 0 and x["pid"] > 0 for x in lines)
    # without the variable it only runs the benchmark
    plain = subprocess.run([sys.executable, str(real_bisect.TALLY), str(bench), "0"], capture_output=True, text=True,
                           env={k: v for k, v in os.environ.items() if k != real_bisect.TALLY_ENV})
    assert plain.returncode == 0 and len(tallied(tally)) == 3
    # a line cut by a killed process is left out, not a crash of the reader
    with open(tally, "a") as f:
        f.write('{"pid": 1, "sta')
    assert len(tallied(tally)) == 3 and tallied(tmp_path / "none.jsonl") == []


def test_store_counts_without_a_store_is_empty(tmp_path):
    assert store_counts(tmp_path) == {}


def test_the_load_processes_run_beside_and_end_on_exit():
    with Load(2) as load:
        assert len(load.procs) == 2 and all(p.poll() is None for p in load.procs)
    assert all(p.poll() is not None for p in load.procs)


def test_without_a_clone_or_a_python_the_2026_benchmark_skips_with_one_line(tmp_path):
    script = ROOT / "benchmarks" / "real_history_2026.py"
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 0 and p.stdout.startswith("real_history_2026: skipped — give --jax-clone")
    # a clone without the window's history skips too, naming what to fetch
    empty = tmp_path / "empty"
    subprocess.run(["git", "init", "-q", str(empty)], check=True)
    p = subprocess.run([sys.executable, str(script), "--jax-clone", str(empty), "--python", sys.executable],
                       capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 0 and "skipped" in p.stdout and "2026-06-17 14:00" in p.stdout
    assert not (tmp_path / "real-history-2026").exists()


@pytest.mark.slow
def test_one_bisection_is_counted_as_hourly_recorded_it(tmp_path):
    """A real `hourly bisect --only jax` (stand-in JAX history, a stand-in jaxlib in a real venv),
    its benchmark wrapped in tally.py: the process starts the tally counts are the runs hourly
    stored, warm-up runs included, and the culprit is classified exact."""
    from test_only import JAX_HISTORY, venv_with_jaxlib
    made = make_repos(tmp_path / "repos", JAX_HISTORY, base={"jax": jax_base_files()})
    python = venv_with_jaxlib(tmp_path / "env")
    bench = write_bench(tmp_path / "bench")
    culprit = made.shas["Remove trivial execution from jax (slower dispatch)"]
    args = ["--only", "jax", "--jax-repo", str(made.jax), "--python", python, "--good", "Aug 24 2023 00:00",
            "--bad", "Aug 24 2023 06:30", "--bench-cmd", f"python3 {real_bisect.TALLY} {bench}",
            "--cache-dir", str(tmp_path / "cache")]
    r = bisect_once(1, args, tmp_path, tmp_path / "run-1", culprit[:10])
    assert r.rc == 0, (tmp_path / "run-1.stderr").read_text()
    (answer,) = r.answers
    assert answer["class"] == "exact" and answer["confirmed"]
    assert r.process_starts == r.store["store_runs"] > 0  # every benchmark process, and only those
    assert r.store["probe_rows"] == answer["probes"]
    assert 0 < r.store["samples"] <= r.store["store_runs"]
    assert answer["runs"] <= r.process_starts  # hourly's own total leaves the warm-up runs out
    assert answer["probes"] >= 2 and r.crashed_starts == 0
    # bench seconds: the processes' own times together (the stand-in benchmark takes milliseconds)
    times = [x["seconds"] for x in tallied(tmp_path / "run-1" / "tally.jsonl")]
    assert len(times) == r.process_starts and r.bench_s == round(sum(times), 1) < r.wall_s
    assert json.loads((tmp_path / "run-1.json").read_text())["regressions"][0]["culprit"]["sha"] == culprit
    line = row(r)
    assert line.split()[:2] == ["1", str(answer["probes"])] and "yes" in line and "exact" in line


def test_a_run_past_its_deadline_is_stopped_with_its_whole_process_group(tmp_path):
    """hourly is stopped as Ctrl-C stops it (SIGINT to its group: its benchmark child too), so that
    a later call with --resume goes on; what it printed before is kept."""
    child = tmp_path / "child.pid"
    script = ("import subprocess, sys, time\n"
              f"c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
              f"open({str(child)!r}, 'w').write(str(c.pid))\n"
              "print('started', flush=True)\n"
              "time.sleep(300)\n")
    rc, out, err, stopped = real_bisect.run_hourly([sys.executable, "-c", script], dict(os.environ), deadline=1)
    assert stopped and rc != 0 and out == "started\n" and "KeyboardInterrupt" in err
    pid = int(child.read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists() and \
            Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z":
        time.sleep(0.1)
    assert not Path(f"/proc/{pid}").exists() or Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    rc, out, _, stopped = real_bisect.run_hourly([sys.executable, "-c", "print('done')"], dict(os.environ), deadline=30)
    assert (rc, out, stopped) == (0, "done\n", False)
