"""The Slurm executor on a real single-node cluster (.ci/slurm-up.sh), and its pure parts.

Without a reachable Slurm the cluster tests skip with the reason, except in CI (CI=true), where
they fail: CI brings the cluster up itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from waiting import wait_for

from hourly.adapters.slurm import JobState, Slurm, SubmitOptions, transient
from hourly.cli import main
from hourly.errors import ProcessError


def run_cli(capsys, argv):
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="session")
def _cluster() -> Slurm:
    slurm = Slurm()
    why = slurm.reachable()
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI runs the Slurm tests on a real cluster, but none is reachable: {why} "
                        "(.ci/run starts one with .ci/slurm-up.sh)")
        pytest.skip(f"no Slurm reachable: {why} (bash .ci/slurm-up.sh starts a single-node one)")
    return slurm


@pytest.fixture
def cluster(_cluster, monkeypatch) -> Slurm:
    monkeypatch.setenv("HOURLY_SLURM_POLL", "0.2")
    return _cluster


def run_name(workdir: Path) -> str:
    """The job name of the run whose store is in ``workdir`` (hourly.execute.executors._Round)."""
    return "hourly-" + hashlib.sha256(str(workdir.absolute() / "hourly.sqlite").encode()).hexdigest()[:10]


def rows(workdir: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(workdir / "hourly.sqlite") as c:
        return [tuple(r) for r in c.execute(sql)]


def job_ids(workdir: Path) -> list[list[str]]:
    return sorted(json.loads(p.read_text())["jobs"] for p in (workdir / "jobs").glob("*/attempts.json"))


# -- pure parts ------------------------------------------------------------------------------------

def test_job_states_parse_and_classify():
    assert JobState.parse("CANCELLED by 0") is JobState.CANCELLED
    assert JobState.parse("OUT_OF_ME+") is JobState.OUT_OF_MEMORY
    assert JobState.parse("RUNNING") is JobState.RUNNING and JobState.RUNNING.active
    assert JobState.parse("gibberish") is JobState.UNKNOWN
    assert all(JobState(s).cluster_fault for s in ("NODE_FAIL", "PREEMPTED", "TIMEOUT", "CANCELLED"))
    assert not JobState.FAILED.cluster_fault and not JobState.COMPLETED.active


def test_controller_trouble_is_transient_anything_else_is_not():
    busy = ProcessError(["squeue"], 1, "squeue: error: Unable to contact slurm controller (connect failure)")
    bad = ProcessError(["sbatch"], 1, "sbatch: error: invalid partition specified: nope")
    assert transient(busy) and not transient(bad)
    assert SubmitOptions("gpu", "1:00:00", "gpu:1", ("--account=x",)).argv() == [
        "--partition=gpu", "--time=1:00:00", "--gres=gpu:1", "--account=x"]


def test_local_executor_with_workers_is_a_usage_error(capsys, scan_args, tmp_path):
    # flags that do not go together: exit 2, as every usage error (README, "Exit codes")
    code, _, err = run_cli(capsys, scan_args("Aug 24 2023 12:00", "Aug 24 2023 13:00", "--workers", "4"))
    assert code == 2
    assert "--workers 4 needs --executor slurm" in err and "add --executor slurm" in err
    code, _, err = run_cli(capsys, scan_args("Aug 24 2023 12:00", "Aug 24 2023 13:00", "--gres", "gpu:1"))
    assert code == 2 and "--gres apply to --executor slurm only" in err
    code, _, err = run_cli(capsys, ["profile", "--workdir", str(tmp_path / "work"), "--workers", "2"])
    assert code == 2 and "--workers 2 needs --executor slurm" in err


def test_two_runs_sharing_the_cache_never_build_one_key_at_once(made, venv_python, tmp_path):
    """Two scans of the same pair on their own worktrees and their own environments (one --python
    is one run's at a time), one cache, started together: the per-key lock makes the second wait
    and install the first one's wheels — one build, two measurements."""
    from conftest import make_venv_seeing_this_python

    from hourly.adapters.gitrepo import GitRepo
    log = tmp_path / "builds.log"
    build = tmp_path / "build-slow.sh"
    build.write_text(f"#!/bin/bash\necho start >> {log}\nsleep 1\nexec {made.build_script}\n")
    build.chmod(0o755)
    sha = {n: GitRepo(getattr(made, n), n).rev_parse("origin/main") for n in ("xla", "jax")}
    procs = []
    for run in ("a", "b"):
        trees = {n: GitRepo(getattr(made, n), n).add_worktree(tmp_path / run / n, sha[n]).path for n in ("xla", "jax")}
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "hourly", "scan", "--from", "Aug 24 2023 12:00", "--to", "Aug 24 2023 12:30",
             "--no-sync", "--xla-repo", str(trees["xla"]), "--jax-repo", str(trees["jax"]), "--build-cmd", str(build),
             "--python", make_venv_seeing_this_python(tmp_path / run / "venv"),
             "--bench-cmd", f"python3 {made.bench_script}", "--json",
             "--workdir", str(tmp_path / run / "work"), "--cache-dir", str(tmp_path / "cache")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    results = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    assert log.read_text().count("start") == 1
    assert all(json.loads(out)["points"][0]["status"] == "ok" for out, _ in results)
    assert sorted(json.loads(out)["builds"] for out, _ in results) == [0, 1]


def test_a_result_recorded_before_a_kill_is_not_recorded_twice(tmp_path):
    """A coordinator killed between recording a job's result and marking its folder: the next one
    adopts the result file and finds the row already there (no cluster needed: the result is in)."""
    from hourly.adapters.store import Store
    from hourly.execute.executors import SlurmExecutor, _Round
    from hourly.model import Pair

    class Host:  # the host protocol's names a recorded result reads (hourly.execute.host.Host)
        origin = "scan"
        gate = None

        def __init__(self, store):
            from hourly.execute.host import BuildSplit
            self.store, self.key, self.split = store, "k", BuildSplit()

    store = Store(tmp_path / "work")
    pair = Pair("a" * 40, "b" * 40)
    ex = SlurmExecutor(4, slurm=object())  # never asked: every result is already there
    run = {"status": "ok", "value": 1.0, "returncode": 0, "duration": 0.1, "log": str(tmp_path / "bench-1.log")}
    result = {"outcome": "measured", "builds": [], "builds_run": 1, "runs": 1,
              "measurement": {"xla": pair.xla, "jax": pair.jax, "status": "ok", "value": 1.0, "samples": [1.0],
                              "runs": [run], "detail": None, "origin": "scan"}}
    d = _Round(ex, Host(store))._folder(pair, 1)  # the folder the request gets, by the executor's own naming
    d.mkdir(parents=True)
    (d / "result.json").write_text(json.dumps(result))
    (first,) = ex.measure_many(Host(store), [(pair, 1)])
    (d / "recorded").unlink()  # killed before the mark
    (again,) = ex.measure_many(Host(store), [(pair, 1)])
    assert first.measurement.id == again.measurement.id and len(store.measurements("k", pair.xla, pair.jax)) == 1
    assert ex.adopted == 2 and ex.submitted == 0


def test_a_finished_profile_job_is_adopted_not_redone(tmp_path):
    """A profile job that finished while no coordinator watched (killed): the next coordinator
    records its build row and hands back its capture folder without submitting anything."""
    from hourly.adapters.store import Store
    from hourly.execute.executors import ProfileRequest, SlurmExecutor, _Round
    from hourly.model import Pair

    class Host:  # the host protocol's names a profile request reads (hourly.execute.host.Host)
        origin = "profile"
        gate = None

        def __init__(self, store):
            from hourly.execute.host import BuildSplit
            self.store, self.key, self.split = store, "k", BuildSplit()

    store = Store(tmp_path / "work")
    pair = Pair("a" * 40, "b" * 40)
    out = store.workdir / "profiles" / "step-1" / "bad"
    req = ProfileRequest(pair, out, {"python_tracer_level": 0}, "bad state of step-1")
    ex = SlurmExecutor(2, slurm=object())  # never asked: the result is already there
    d = _Round(ex, Host(store))._task(0, req).dir
    assert d.name.startswith(f"profile-{pair.key()}-")
    d.mkdir(parents=True)
    build = {"xla": pair.xla, "jax": pair.jax, "status": "built", "in_place": False, "wheels": [],
             "log_path": None, "tail": "", "duration": 1.0, "finished": 1.0}
    (d / "result.json").write_text(json.dumps({"outcome": "profiled", "out": str(out), "builds": [build]}))
    (r,) = ex.profile_stream(Host(store), [req])
    assert r["out"] == str(out) and store.build(pair.xla, pair.jax).status == "built"
    assert json.loads((d / "recorded").read_text()) == {"profile": str(out)}
    assert ex.adopted == 1 and ex.submitted == 0
    # profiling again later is a new request: a folder of its own
    assert _Round(ex, Host(store))._task(0, req).dir.name.endswith("-1")


# -- the real cluster ------------------------------------------------------------------------------

def test_adapter_submits_reads_and_cancels_a_real_job(cluster, tmp_path):
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\nsleep 60\n")
    name = f"hourly-test-{os.getpid()}"
    job = cluster.submit(script, name=name, comment="hourly:test:adapter", output=tmp_path / "out-%j.txt",
                         chdir=tmp_path)
    try:
        (only,) = [j for j in cluster.jobs(name) if j.id == job]
        assert only.comment == "hourly:test:adapter" and only.state.active
    finally:
        cluster.cancel([job])
    end = time.time() + 30
    while cluster.states(name, [job])[job].active and time.time() < end:
        time.sleep(0.2)
    assert cluster.states(name, [job])[job] is JobState.CANCELLED


def test_scan_on_slurm_stores_what_a_local_scan_stores(capsys, cluster, scan_args, tmp_path):
    """Four distinct pairs (a build failure and a crash among them), four jobs at once: the
    store's measurement rows (in order) and build outcomes equal a local scan's."""
    window = ("Aug 25 2023 06:00", "Aug 25 2023 18:00", "--step", "4h", "--json")
    local, remote = tmp_path / "local", tmp_path / "slurm"
    code, out_local, _ = run_cli(capsys, scan_args(*window, "--workdir", str(local),
                                                    "--cache-dir", str(tmp_path / "cache-local")))
    assert code == 0
    code, out_slurm, err = run_cli(capsys, scan_args(*window, "--workdir", str(remote),
                                                      "--cache-dir", str(tmp_path / "cache-slurm"),
                                                      "--executor", "slurm", "--workers", "4"))
    assert code == 0, err
    a, b = json.loads(out_local), json.loads(out_slurm)
    assert [(p["xla"], p["jax"], p["status"]) for p in a["points"]] == \
           [(p["xla"], p["jax"], p["status"]) for p in b["points"]]
    assert {p["status"] for p in b["points"]} >= {"ok", "build_failed", "crashed"}
    assert (a["distinct_pairs"], a["builds"]) == (b["distinct_pairs"], b["builds"]) == (4, 4)
    q = "SELECT xla, jax, status, origin, json_array_length(samples) FROM measurements ORDER BY id"
    assert rows(local, q) == rows(remote, q)
    q = "SELECT xla, jax, status FROM builds ORDER BY xla, jax"
    assert rows(local, q) == rows(remote, q)
    assert len(job_ids(remote)) == 4  # one job per pair, each on its first attempt
    assert all(len(jobs) == 1 for jobs in job_ids(remote))


def _running(cluster: Slurm, workdir: Path, n: int = 1, timeout: float = 60, exclude=frozenset()) -> list[str]:
    end = time.time() + timeout
    while time.time() < end:
        jobs = [j.id for j in cluster.jobs(run_name(workdir)) if j.state is JobState.RUNNING and j.id not in exclude]
        if len(jobs) >= n:
            return jobs
        time.sleep(0.2)
    raise AssertionError(f"no {n} running jobs of {workdir} after {timeout}s")


def _cancel_a_running_job(cluster: Slurm, workdir: Path) -> str:
    """scancel a running job of the run in ``workdir`` before it wrote its result; its id. (A job
    can finish between the look and the cancel: then another is tried.)"""
    tried: set[str] = set()
    for _ in range(5):
        victim = _running(cluster, workdir, exclude=tried)[0]
        tried.add(victim)
        subprocess.run(["scancel", victim], capture_output=True)
        assert wait_for(lambda v=victim: not cluster.states(run_name(workdir), [v])[v].active, timeout=30, every=0.2)
        results = [json.loads(p.read_text()) for p in (workdir / "jobs").glob("*/result*.json")]
        if not any(r.get("job_id") == victim for r in results):
            return victim
    raise AssertionError(f"every job finished before it could be cancelled: {sorted(tried)}")


def test_a_scan_whose_benchmark_never_works_stops_as_a_local_one(capsys, cluster, scan_args, tmp_path):
    """The first measured pair crashes: both executors stop with the same one line and store the
    same single row; the Slurm scan's other job is not recorded."""
    failing = ("Aug 24 2023 12:00", "Aug 24 2023 15:00", "--bench-cmd", "python3 -c 'import sys; sys.exit(3)'")
    out = {}
    for name, extra in (("local", []), ("slurm", ["--executor", "slurm", "--workers", "4"])):
        code, _, err = run_cli(capsys, scan_args(*failing, "--workdir", str(tmp_path / name), *extra))
        assert code == 1
        out[name] = next(line for line in err.splitlines() if line.startswith("hourly: error:")).split("(log")[0]
    assert out["local"] == out["slurm"] and "crashed with exit code 3" in out["slurm"]
    q = "SELECT xla, jax, status, origin FROM measurements ORDER BY id"
    assert rows(tmp_path / "local", q) == rows(tmp_path / "slurm", q) and len(rows(tmp_path / "slurm", q)) == 1


# -- bisect on the cluster -------------------------------------------------------------------------

def _bisect_args(made, venv_python, work: Path, bench: str | None = None) -> list[str]:
    from test_bisect import flags
    return ["bisect", "--json", "--good", "2023-08-24T00:00Z", "--bad", "2023-08-24T03:00Z",
            *flags(made, venv_python, work, **({"bench_cmd": bench} if bench else {}))]


def _culprit_repos(tmp_path, monkeypatch):
    """A busy three hours with one planted culprit; runs without noise (jobs see the same), so that
    no state needs more samples and the tests stay short."""
    monkeypatch.setenv("DEMO_NOISE", "0")
    from test_bisect import busy_day

    from hourly.demo.repos import Change, make_repos
    culprit = Change("xla", "2023-08-24T02:10:00Z", "Slower scatter", {"perf/scatter.txt": "0.9\n"})
    return make_repos(tmp_path / "repos", busy_day([culprit], hours=3)), culprit


def test_bisect_on_slurm_finds_the_local_culprit_in_fewer_rounds(capsys, cluster, venv_python, tmp_path, monkeypatch):
    made, culprit = _culprit_repos(tmp_path, monkeypatch)
    code, out, err = run_cli(capsys, _bisect_args(made, venv_python, tmp_path / "seq"))
    assert code == 0, err
    (seq,) = json.loads(out)["regressions"]
    code, out, err = run_cli(capsys, [*_bisect_args(made, venv_python, tmp_path / "par"),
                                      "--executor", "slurm", "--workers", "4"])
    assert code == 0, err
    (par,) = json.loads(out)["regressions"]
    assert seq["culprit"]["sha"] == par["culprit"]["sha"] == made.shas[culprit.subject]
    assert par["confirmed"] and par["rounds"] < seq["rounds"]
    # every request was one job, recorded once; no job was lost
    recorded = list((tmp_path / "par" / "jobs").glob("*/recorded"))
    assert len(recorded) == par["jobs"] == len(rows(tmp_path / "par", "SELECT id FROM measurements WHERE origin='bisect'"))
    assert all(len(jobs) == 1 for jobs in job_ids(tmp_path / "par"))


def test_bisect_on_slurm_survives_scancel_and_a_killed_coordinator(cluster, venv_python, tmp_path, monkeypatch):
    """scancel a running job (submitted again), then SIGKILL the coordinator mid-run; the same
    command again adopts what runs, submits nothing twice and names the planted culprit."""
    made, culprit = _culprit_repos(tmp_path, monkeypatch)
    work = tmp_path / "work"
    slow = tmp_path / "slow"  # runs take 1.5 s while it exists: time to cancel and to kill
    slow.touch()
    argv = [sys.executable, "-m", "hourly",
            *_bisect_args(made, venv_python, work, f"sh -c 'test -e {slow} && sleep 1.5; python3 {made.bench_script}'"),
            "--executor", "slurm", "--workers", "4"]
    first = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        victim = _cancel_a_running_job(cluster, work)
        assert wait_for(lambda: any(jobs[0] == victim and len(jobs) == 2 for jobs in job_ids(work)), every=0.2)
        _running(cluster, work, exclude={victim})
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    slow.unlink()
    again = subprocess.run(argv, capture_output=True, text=True, timeout=180)
    assert again.returncode == 0, again.stderr
    (r,) = json.loads(again.stdout)["regressions"]
    assert r["culprit"]["sha"] == made.shas[culprit.subject] and r["confirmed"]
    tried = job_ids(work)
    # one job per request, the cancelled one twice: nothing was submitted again after the kill
    assert sum(map(len, tried)) == len(tried) + 1


def test_a_job_that_never_leaves_a_result_is_tried_three_times(capsys, cluster, scan_args, tmp_path, monkeypatch):
    """Jobs that end without a result file (here the worker's Python is /bin/false) are submitted
    again up to the bound; then one line names the jobs and where their output is."""
    monkeypatch.setenv("HOURLY_WORKER_PYTHON", "/bin/false")
    code, _, err = run_cli(capsys, [*scan_args("Aug 24 2023 12:00", "Aug 24 2023 12:30"),
                                    "--executor", "slurm", "--workers", "2"])
    assert code == 1
    (jobs,) = job_ids(tmp_path / "work")
    assert len(jobs) == 3 and f"was lost 3 times (jobs {', '.join(jobs)}" in err and "FAILED" in err
    assert not rows(tmp_path / "work", "SELECT id FROM measurements")


# -- profile on the cluster ------------------------------------------------------------------------

def _memory_table(comparison: str) -> list[str]:
    """The comparison's memory-by-site rows (deterministic, unlike op times)."""
    lines = comparison.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("Live device memory"))
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


def test_profile_on_slurm_compares_as_a_local_profile(capsys, cluster, scan_args, made, tmp_path):
    """The good and bad state of a step, each captured by a job of its own (both submitted before
    either finished): the same findings as the local profile — the bad state's 4 MiB at the
    benchmark's line, its extra work in jit_slow_path."""
    pytest.importorskip("jax")
    from test_profile import JAX_BENCH
    made.bench_script.write_text(JAX_BENCH)
    work = tmp_path / "work"
    # the workdir's settings, stored by a scan of one instant, one run: the states come as
    # --good/--bad (a scan of both would re-measure its step's edges, a dozen more jax runs that
    # nothing here reads)
    code, _, err = run_cli(capsys, scan_args("Aug 24 2023 13:00", "Aug 24 2023 13:00", "--repeats", "1"))
    assert code == 0, err
    states = ["--good", "Aug 24 2023 13:00", "--bad", "Aug 24 2023 14:00"]
    texts = {}
    for name, extra in (("local", []), ("slurm", ["--executor", "slurm", "--workers", "2"])):
        code, out, err = run_cli(capsys, ["profile", "--workdir", str(work), *states, *extra])
        assert code == 0, err
        texts[name] = (work / "profiles" / "manual" / "comparison.txt").read_text()
        assert texts[name] in out
        (work / "profiles").rename(work / f"profiles-{name}")  # the jobs capture afresh
    line = JAX_BENCH.split("\n").index(next(x for x in JAX_BENCH.split("\n") if "keep.append" in x)) + 1
    for text in texts.values():
        site = next(x for x in text.splitlines() if f"MLUPS3d.py:{line})" in x)
        assert "+4.000" in site and "jit_slow_path" in text
    assert _memory_table(texts["local"]) == _memory_table(texts["slurm"])
    # one job per side, each on its first attempt, both submitted before either finished
    folders = sorted((work / "jobs").glob("profile-*"))
    assert len(folders) == 2 and all(len(json.loads((d / "attempts.json").read_text())["jobs"]) == 1 for d in folders)
    results = [json.loads((d / "result.json").read_text()) for d in folders]
    assert {r["outcome"] for r in results} == {"profiled"}
    assert sorted(Path(r["out"]).name for r in results) == ["bad", "good"]
    assert all((work / "profiles-slurm" / "manual" / side / "memory.prof").exists() for side in ("good", "bad"))
    assert max((d / "attempts.json").stat().st_mtime for d in folders) < min(
        (d / "result.json").stat().st_mtime for d in folders)
    assert all((d / "recorded").exists() for d in folders)
    # a state that does not build stops both with the same one line
    broken = ["--good", "Aug 25 2023 06:00", "--bad", "Aug 25 2023 07:00"]
    errs = {}
    for name, extra in (("local", []), ("slurm", ["--executor", "slurm", "--workers", "2"])):
        code, _, err = run_cli(capsys, ["profile", "--workdir", str(work), *broken, *extra])
        assert code == 1
        errs[name] = next(x for x in err.splitlines() if "error:" in x).split(" (")[0]
    assert errs["local"] == errs["slurm"] and "the good state of manual does not build" in errs["slurm"]
