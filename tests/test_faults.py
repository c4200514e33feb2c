"""Faults: concurrent runs, kills, interrupted builds, moved directories — real processes throughout."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from waiting import measurement_count, wait_for

from hourly.adapters.gitrepo import GitRepo
from hourly.cli import main
from tests.argv import with_flags


def run_cli(capsys, argv):
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


HOLD_FLOCK = ("import fcntl, os, sys, time\n"
              "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
              "fcntl.flock(fd, fcntl.LOCK_EX)\n"
              "os.ftruncate(fd, 0)\n"  # as hourly does: no earlier holder's longer name left behind it
              "os.write(fd, b'{\"pid\": %d, \"host\": \"h\", \"command\": \"hourly scan\", \"since\": \"t\"}' % os.getpid())\n"
              "print('locked', flush=True)\n"
              "time.sleep(60)\n")


# -- 1. exclusive locks ---------------------------------------------------------------------------

# quick: test_two_scans_started_together_exactly_one_runs[same-store] (two real scans race, the loser
# names the winner's pid, host and command) and test_a_held_tree_lock_refuses_at_once_naming_the_holder
# (a scan refused at once at a held tree lock, naming its holder) cover [other-store], which is slow
@pytest.mark.parametrize("same_workdir", [True, pytest.param(False, marks=pytest.mark.slow)],
                         ids=["same-store", "other-store"])
def test_two_scans_started_together_exactly_one_runs(scan_args, made, tmp_path, same_workdir):
    # the benchmark waits until one of the two has ended: the one that runs holds its locks until
    # the other has given up, however slowly either starts
    go = tmp_path / "go"
    made.bench_script.write_text(f"import os, time\nwhile not os.path.exists({str(go)!r}): time.sleep(0.02)\n"
                                 + made.bench_script.read_text())
    procs = []
    for i in range(2):
        args = scan_args("Aug 24 2023 12:00", "Aug 24 2023 12:00", "--json", "--no-sync")
        if not same_workdir:
            args[args.index("--workdir") + 1] = str(tmp_path / f"work{i}")
        procs.append(subprocess.Popen([sys.executable, "-m", "hourly", *args], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    wait_for(lambda: any(p.poll() is not None for p in procs), timeout=120, every=0.05)
    go.touch()  # both still running after 120 s: both measure now, and the codes below say so
    results = [p.communicate(timeout=120) + (p.returncode,) for p in procs]
    codes = sorted(rc for _, _, rc in results)
    assert codes == [0, 1], results
    winner = procs[[r[2] for r in results].index(0)]
    _, err, _ = next(r for r in results if r[2] == 1)
    assert "in use by another hourly" in err and f"pid {winner.pid} on {socket.gethostname()}" in err
    assert "hourly scan --from" in err and len(err.strip().splitlines()) == 1
    jax = GitRepo(made.jax, "jax")
    assert jax.head_state().branch == "main" and jax.dirty_files() == []
    assert not (jax.git_dir / "hourly.lock").exists()


def test_a_held_tree_lock_refuses_at_once_naming_the_holder(capsys, scan_args, made):
    lock = GitRepo(made.xla, "xla").git_dir / "hourly.run.lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLD_FLOCK, str(lock)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        t0 = time.monotonic()
        code, _, err = run_cli(capsys, scan_args())
        assert code == 1 and f"xla tree {made.xla} is in use by another hourly (pid {holder.pid} on h" in err
        assert time.monotonic() - t0 < 10
    finally:
        holder.kill()
        holder.wait()
    # the holder is gone: the kernel dropped its lock, and the next scan runs
    code, _, err = run_cli(capsys, scan_args("Aug 24 2023 12:00", "Aug 24 2023 12:00", "--no-sync"))
    assert code == 0, err


def test_a_run_killed_inside_git_leaves_an_index_lock_that_the_next_run_clears(capsys, scan_args, made):
    """kill -9 during a checkout leaves .git/index.lock: the next run (holding the tree's flock) removes it."""
    xla = GitRepo(made.xla, "xla")
    head = xla.head_state()
    (xla.git_dir / "hourly.lock").write_text(json.dumps(
        {"pid": 2 ** 22 + 1, "host": socket.gethostname(), "branch": head.branch, "sha": head.sha, "stash": None}))
    (xla.git_dir / "index.lock").write_text("")
    args = scan_args("Aug 24 2023 12:00", "Aug 24 2023 13:00", "--no-sync")
    code, _, err = run_cli(capsys, args)
    assert code == 0, err
    assert not (xla.git_dir / "index.lock").exists() and xla.head_state() == head
    # killed after its last measurement: the same command again has nothing left to measure, and
    # still gives the trees back
    xla.git("checkout", "--quiet", "--detach", "HEAD~1")
    (xla.git_dir / "hourly.lock").write_text(json.dumps(
        {"pid": 2 ** 22 + 1, "host": socket.gethostname(), "branch": head.branch, "sha": head.sha, "stash": None}))
    code, _, err = run_cli(capsys, args)
    assert code == 0, err
    assert xla.head_state() == head and not (xla.git_dir / "hourly.lock").exists()


def test_a_dead_runs_state_file_with_a_reused_pid_is_taken_over(capsys, scan_args, made):
    """A killed run's state names a pid that now belongs to someone else: no flock, so it is taken over."""
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        xla = GitRepo(made.xla, "xla")
        head = xla.head_state()
        (xla.git_dir / "hourly.lock").write_text(json.dumps(
            {"pid": other.pid, "host": socket.gethostname(), "branch": head.branch, "sha": head.sha, "stash": None}))
        code, _, err = run_cli(capsys, scan_args("Aug 24 2023 12:00", "Aug 24 2023 13:00", "--no-sync"))
        assert code == 0, err
        assert xla.head_state() == head and not (xla.git_dir / "hourly.lock").exists()
    finally:
        other.kill()
        other.wait()


def test_a_held_store_refuses_bisect(capsys, scan_args, made, tmp_path):
    code, _, err = run_cli(capsys, scan_args("Aug 24 2023 12:00", "Aug 24 2023 12:00", "--no-sync"))
    assert code == 0, err
    holder = subprocess.Popen([sys.executable, "-c", HOLD_FLOCK, str(tmp_path / "work" / "hourly.run.lock")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        code, _, err = run_cli(capsys, ["bisect", "--workdir", str(tmp_path / "work")])
        assert code == 1 and f"the results store in {tmp_path / 'work'} is in use" in err
        assert f"pid {holder.pid}" in err
    finally:
        holder.kill()
        holder.wait()


# -- 4. logs as they happen -------------------------------------------------------------------------

CHATTY = ("import os, sys, time\n"
          "print('pid', os.getpid(), flush=True)\n"
          "for i in range(1, 200):\n"
          "    print('line', i, flush=True)\n"
          "    time.sleep(0.05)\n")


def test_log_is_written_while_the_process_runs_and_survives_kill_9_of_hourly(tmp_path):
    log = tmp_path / "logs" / "build.log"
    driver = subprocess.Popen([sys.executable, "-c",
                               "import sys; from hourly.adapters.proc import run; "
                               "run([sys.executable, '-c', sys.argv[1]], log_path=sys.argv[2], check=False)",
                               CHATTY, str(log)])
    child = None
    try:
        assert wait_for(lambda: log.exists() and "line 5\n" in log.read_text(), timeout=30, every=0.05)
        assert driver.poll() is None  # read while the process runs, as tail -f would
        child = int(next(ln for ln in log.read_text().splitlines() if ln.startswith("pid ")).split()[1])
        driver.send_signal(signal.SIGKILL)
        driver.wait()
        text = log.read_text()
        assert text.startswith("$ ") and "# cwd: " in text
        got = [line for line in text.splitlines() if line.startswith("line ")]
        assert len(got) >= 5 and got == [f"line {i}" for i in range(1, len(got) + 1)]
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
        if child:
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_run_still_returns_output_and_tail_and_closes_the_log(tmp_path):
    from hourly.adapters import proc
    log = tmp_path / "x.log"
    res = proc.run([sys.executable, "-c", "import sys\nfor i in range(40): print(i)\n"
                    "print('err', file=sys.stderr); print(sys.stdin.read().upper(), end='')"],
                   log_path=log, check=False, input="fed")
    assert res.ok and res.output.splitlines()[:2] == ["0", "1"] and res.output.endswith("err\nFED")
    assert res.tail(2) == "err\nFED"
    text = log.read_text()
    assert "0\n1\n" in text and "FED\n# exit: 0 after" in text
    res = proc.run([sys.executable, "-u", "-c", "import time; print('started'); time.sleep(30)"],
                   log_path=log, check=False, timeout=1)
    assert res.timed_out and res.output == "started\n" and "# exit: timeout" in log.read_text()


# -- 6. keys that do not depend on where you stand --------------------------------------------------

def _answered(code: int, err: str) -> None:
    """A scan finished: exit 0, or exit 1 where its window is under 4 pairs of one run each (the noise
    only assumed, it says it cannot tell, not "no steps found"): these tests check something else."""
    assert code == 0 or (code == 1 and "too few pairs to measure the noise" in err), err


def _points(capsys, argv) -> list[dict]:
    code, out, err = run_cli(capsys, argv + ["--json"])
    _answered(code, err)
    return json.loads(out)["points"]


def test_relative_settings_read_the_same_from_any_directory(capsys, made, venv_python, tmp_path, monkeypatch):
    here = tmp_path / "here"
    (here / "bench").mkdir(parents=True)
    (here / "bench" / "b.py").write_text(made.bench_script.read_text())
    monkeypatch.chdir(here)
    rel = lambda p: os.path.relpath(p, here)
    scan = _points(capsys, ["scan", "--from", "Aug 24 2023 10:00", "--to", "Aug 24 2023 13:00", "--no-sync",
                            "--xla-repo", rel(made.xla), "--jax-repo", rel(made.jax),
                            "--build-cmd", rel(made.build_script), "--python", venv_python,
                            "--bench-cmd", "python3 b.py", "--bench-cwd", "bench", "--workdir", "work"])
    assert [p["status"] for p in scan] == ["ok"] * 4
    stored = json.loads(sqlite3.connect(here / "work" / "hourly.sqlite").execute(
        "SELECT value FROM settings WHERE name='scan'").fetchone()[0])
    for name in ("xla_repo", "jax_repo", "bench_cwd", "workdir"):
        assert Path(stored[name]).is_absolute(), (name, stored[name])
    assert stored["build_cmd"] == str(made.build_script)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    shown = _points(capsys, ["show", "--workdir", str(here / "work")])
    assert [p["status"] for p in shown] == ["ok"] * 4 and shown == scan


def test_a_store_written_with_relative_settings_still_reads(capsys, scan_args, made, tmp_path, monkeypatch):
    """Stores written before settings were stored absolute: relative values are resolved against the
    directory the scan ran in, inferred from its relative workdir."""
    here = tmp_path / "here"
    (here / "bench").mkdir(parents=True)
    monkeypatch.chdir(here)
    args = scan_args("Aug 24 2023 12:00", "Aug 24 2023 13:00", "--no-sync", "--bench-cwd", "bench")
    args[args.index("--workdir") + 1] = "work"
    assert [p["status"] for p in _points(capsys, args)] == ["ok"] * 2
    db = sqlite3.connect(here / "work" / "hourly.sqlite")
    stored = json.loads(db.execute("SELECT value FROM settings WHERE name='scan'").fetchone()[0])
    stored.update(bench_cwd="bench", workdir="work")  # as the older hourly stored them
    db.execute("UPDATE settings SET value=? WHERE name='scan'", (json.dumps(stored),))
    db.commit()
    db.close()
    monkeypatch.chdir(tmp_path)
    shown = _points(capsys, ["show", "--workdir", str(here / "work")])
    assert [p["status"] for p in shown] == ["ok"] * 2


def test_force_is_not_inherited_by_a_later_bisect(capsys, scan_args, made, tmp_path):
    readme = made.jax / "README"
    readme.write_text("my edit\n")
    assert _points(capsys, scan_args("Aug 24 2023 12:00", "Aug 24 2023 12:00", "--no-sync", "--force"))
    assert readme.read_text() == "my edit\n"
    code, _, err = run_cli(capsys, ["bisect", "--workdir", str(tmp_path / "work"),
                                    "--good", "2023-08-24T12:00Z", "--bad", "2023-08-24T15:00Z"])
    assert code == 1 and "uncommitted changes" in err and "--force" in err
    assert readme.read_text() == "my edit\n"


# -- 7. only hourly's own files are removed ----------------------------------------------------------

def test_the_users_wheels_in_the_wheel_dir_survive_and_the_builds_own_are_moved_to_the_cache(
        capsys, scan_args, made, tmp_path):
    dist = made.jax / "dist"
    dist.mkdir()
    mine = dist / "mine-1.0-py3-none-any.whl"
    mine.write_bytes(b"the user's own wheel")
    pts = _points(capsys, scan_args("Aug 24 2023 10:00", "Aug 24 2023 13:00", "--no-sync"))
    assert [p["status"] for p in pts] == ["ok"] * 4
    assert mine.read_bytes() == b"the user's own wheel"
    assert sorted(p.name for p in dist.iterdir()) == [mine.name]  # the builds' wheels went to the cache
    cached = sorted(w.name for w in (tmp_path / "cache").rglob("jax_demo-*.whl"))
    assert len(cached) == 2


def test_a_failed_copy_into_the_cache_leaves_no_temporary_folder(capsys, scan_args, made, tmp_path):
    build = tmp_path / "build-broken.sh"
    build.write_text(f"#!/bin/sh\nset -e\n{made.build_script}\n"
                     "ln -sf /nonexistent/wheel dist/zz-broken-1.0-py3-none-any.whl\n")
    build.chmod(0o755)
    code, _, err = run_cli(capsys, scan_args("Aug 24 2023 12:00", "Aug 24 2023 12:00", "--no-sync",
                                             "--build-cmd", str(build)))
    assert code == 1 and "cannot copy the build's wheels into the cache" in err, err
    assert list((tmp_path / "cache").rglob(".tmp-*")) == [] and list((tmp_path / "work").rglob(".tmp-*")) == []
    jax = GitRepo(made.jax, "jax")
    assert jax.head_state().branch == "main" and not (jax.git_dir / "hourly.lock").exists()


# -- 3. failures that can be retried ------------------------------------------------------------------

def _wrapped_build(tmp_path, made, before: str) -> Path:
    """A build command that runs ``before`` (shell) first, then the stand-in build."""
    build = tmp_path / "build-wrapped.sh"
    build.write_text(f"#!/bin/bash\necho attempt >> {tmp_path / 'attempts'}\n{before}\nexec {made.build_script}\n")
    build.chmod(0o755)
    return build


def _attempts(tmp_path) -> int:
    p = tmp_path / "attempts"
    return p.read_text().count("attempt") if p.exists() else 0


def _builds(workdir: Path) -> list[tuple]:
    with sqlite3.connect(workdir / "hourly.sqlite") as c:
        return c.execute("SELECT xla, jax, status FROM builds").fetchall()


def test_a_build_killed_by_a_signal_is_retried(capsys, scan_args, made, tmp_path, monkeypatch):
    monkeypatch.setenv("HOURLY_BUILD_RETRY_WAIT", "0")  # retried at once: the waits are not what is tested
    # the first attempt is killed (as the OOM killer would), the second runs through
    build = _wrapped_build(tmp_path, made, f"if [ ! -e {tmp_path / 'once'} ]; then touch {tmp_path / 'once'}; "
                                           "kill -9 $$; fi")
    pts = _points(capsys, scan_args("Aug 24 2023 12:00", "Aug 24 2023 12:00", "--no-sync",
                                    "--build-cmd", str(build)))
    assert [p["status"] for p in pts] == ["ok"] and _attempts(tmp_path) == 2


def test_a_build_interrupted_every_time_records_nothing_and_the_next_run_builds_it(
        capsys, scan_args, made, tmp_path, monkeypatch):
    monkeypatch.setenv("HOURLY_BUILD_RETRY_WAIT", "0")  # retried at once: the waits are not what is tested
    build = _wrapped_build(tmp_path, made, f"[ -e {tmp_path / 'fixed'} ] || kill -KILL $$")
    args = scan_args("Aug 24 2023 12:00", "Aug 24 2023 12:00", "--no-sync", "--build-cmd", str(build))
    code, _, err = run_cli(capsys, args)
    assert code == 1 and "was interrupted 3 times (killed by SIGKILL" in err and "run the same command again" in err
    assert _attempts(tmp_path) == 3
    assert _builds(tmp_path / "work") == [] and measurement_count(tmp_path / "work") == 0  # not the pair's verdict
    (tmp_path / "fixed").touch()
    assert [p["status"] for p in _points(capsys, args)] == ["ok"]
    assert [b[2] for b in _builds(tmp_path / "work")] == ["built"]


def test_a_failed_build_is_recorded_once_reused_then_rebuilt_with_retry_failed(capsys, scan_args, made, tmp_path):
    build = _wrapped_build(tmp_path, made, "")
    args = scan_args("Aug 25 2023 06:00", "Aug 25 2023 06:00", "--no-sync", "--build-cmd", str(build))

    def points(argv) -> list[str]:  # nothing measured: the points are printed, then exit 1 saying why
        code, out, err = run_cli(capsys, argv + ["--json"])
        assert code == 1 and "nothing was measured: every build failed" in err, err
        return [p["status"] for p in json.loads(out)["points"]]
    assert points(args) == ["build_failed"]  # the planted broken XLA commit
    assert _attempts(tmp_path) == 1  # an error of the build itself: not retried
    assert [b[2] for b in _builds(tmp_path / "work")] == ["failed"]
    n = _attempts(tmp_path)
    assert points(args) == ["build_failed"] and _attempts(tmp_path) == n
    assert points(args + ["--retry-failed"]) == ["build_failed"]
    assert _attempts(tmp_path) == n + 1


# -- 2. a cache that knows what it holds -------------------------------------------------------------

def _scan_json(capsys, argv) -> dict:
    code, out, err = run_cli(capsys, argv + ["--json"])
    _answered(code, err)
    return json.loads(out)


def test_a_changed_build_command_or_build_env_rebuilds_and_another_workdir_reuses(
        capsys, scan_args, made, tmp_path):
    args = scan_args("Aug 24 2023 12:00", "Aug 24 2023 12:00", "--no-sync")  # one pair
    assert _scan_json(capsys, args)["builds"] == 1
    other = list(args)
    other[other.index("--workdir") + 1] = str(tmp_path / "work2")
    assert _scan_json(capsys, other)["builds"] == 0  # same builds, another scenario: from the shared cache
    flagged = _wrapped_build(tmp_path, made, "")  # another build command: not the same wheels
    assert _scan_json(capsys, with_flags(args, "--rerun", "--build-cmd", str(flagged)))["builds"] == 1
    assert _scan_json(capsys, args + ["--rerun", "--env", "TF_CUDA_COMPUTE_CAPABILITIES=sm_90"])["builds"] == 1
    assert _scan_json(capsys, args + ["--rerun"])["builds"] == 0  # the first identity is still cached
    metas = [json.loads(m.read_text()) for m in (tmp_path / "cache" / "wheels").glob("*/meta.json")]
    assert len(metas) == 3 and all(m["identity"]["python_abi"].startswith("cpython-") for m in metas)
    with sqlite3.connect(tmp_path / "work" / "hourly.sqlite") as c:
        assert c.execute("SELECT COUNT(DISTINCT build_key), COUNT(DISTINCT xla || jax) FROM builds").fetchone() == (3, 1)


def test_the_cache_keeps_within_its_size_least_recently_used_first(capsys, scan_args, made, tmp_path):
    # three pairs, each entry 1.6K (a wheel and its meta.json): 3K holds one of them at a time
    args = scan_args("Aug 24 2023 09:00", "Aug 24 2023 12:00", "--no-sync", "--cache-size", "3K")
    result = _scan_json(capsys, args)
    assert result["distinct_pairs"] == 3 and all(p["status"] == "ok" for p in result["points"])
    entries = [d for d in (tmp_path / "cache" / "wheels").iterdir()]
    total = sum(f.stat().st_size for d in entries for f in d.iterdir())
    assert 1 <= len(entries) < result["distinct_pairs"] and total <= 3 * 1024
    last = result["points"][-1]
    assert any(d.name.startswith(f"{last['xla'][:12]}-{last['jax'][:12]}") for d in entries)  # the newest stays


def test_a_store_of_schema_3_is_migrated_and_keeps_its_builds(tmp_path):
    from hourly.adapters.store import SCHEMA_VERSION, Store
    work = tmp_path / "old"
    work.mkdir()
    db = sqlite3.connect(work / "hourly.sqlite")
    from hourly.adapters import store as S
    db.executescript(S._SCHEMA)
    for v in (2, 3):
        for stmt in S.MIGRATIONS[v]:
            db.execute(stmt)
    db.execute("INSERT INTO meta VALUES ('schema_version', '3')")
    db.execute("INSERT INTO builds VALUES ('x1', 'j1', 'failed', 0, '[]', '/log', 'boom', 1.0, 5.0)")
    db.commit()
    db.close()
    st = Store(work)
    assert st.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    old = st.build("x1", "j1")
    assert old.status == "failed" and old.tail == "boom" and old.build_key == "pair:x1-j1"
    assert st.build("x1", "j1", "x1-j1-someidentity") is None  # how it was built is unknown: not reused


# -- 8. privacy ---------------------------------------------------------------------------------------

def test_the_report_redacts_secret_values_and_can_leave_out_the_host(capsys, scan_args, tmp_path, monkeypatch):
    monkeypatch.setenv("XLA_PYTHON_CLIENT_API_KEY", "hunter2-from-the-shell")
    args = scan_args("Aug 24 2023 12:00", "Aug 24 2023 13:00", "--no-sync", "--env", "HF_TOKEN=supersecret-42",
                     "--env", "XLA_FLAGS=--xla_gpu_autotune_level=0")
    assert _points(capsys, args)
    code, _, err = run_cli(capsys, ["report", "--workdir", str(tmp_path / "work"), "--out", str(tmp_path / "r")])
    assert code == 0, err
    md = (tmp_path / "r" / "report.md").read_text()
    assert "supersecret-42" not in md and "hunter2" not in md
    assert "HF_TOKEN=<redacted>" in md and "XLA_PYTHON_CLIENT_API_KEY=<redacted>" in md
    assert "XLA_FLAGS=--xla_gpu_autotune_level=0" in md  # what is not secret stays
    assert socket.gethostname() in md
    code, _, err = run_cli(capsys, ["report", "--workdir", str(tmp_path / "work"), "--out", str(tmp_path / "a"),
                                    "--anonymous"])
    assert code == 0, err
    assert socket.gethostname() not in (tmp_path / "a" / "report.md").read_text()


def test_config_json_and_lock_files_redact_secret_values(capsys, tmp_path):
    Path("hourly.toml").write_text('env = ["GH_TOKEN=ghp_abc123", "JAX_PLATFORMS=cuda"]\n')
    code, out, _ = run_cli(capsys, ["config", "--json"])
    assert code == 0 and "ghp_abc123" not in out
    assert json.loads(out)["env"]["value"] == ["GH_TOKEN=<redacted>", "JAX_PLATFORMS=cuda"]
    from hourly.adapters.locks import RunLock
    saved = sys.argv
    sys.argv = ["hourly", "scan", "--env", "DB_PASSWORD=pw-1", "--env", "A=1"]
    try:
        with RunLock(tmp_path / "x.lock", "x") as lock:
            info = lock.holder()
    finally:
        sys.argv = saved
    assert "pw-1" not in info["command"] and "DB_PASSWORD=<redacted>" in info["command"] and "A=1" in info["command"]


@pytest.mark.parametrize("threads", [False, True], ids=["plain", "with-threads"])
def test_the_running_child_dies_with_hourly(tmp_path, threads):
    """After kill -9 of hourly, its build or benchmark does not run on in the trees. With threads
    too: the parent-death signal is set by setpriv, not by a preexec function (which Python can
    only run by forking, unsafe once threads are in; children of a threaded hourly were orphaned)."""
    log = tmp_path / "child.log"
    thread = "threading.Thread(target=time.sleep, args=(60,), daemon=True).start(); " if threads else ""
    driver = subprocess.Popen([sys.executable, "-c",
                               "import sys, threading, time; from hourly.adapters.proc import run; " + thread +
                               "run([sys.executable, '-c', sys.argv[1]], log_path=sys.argv[2], check=False)",
                               "import os, time\nprint('pid', os.getpid(), flush=True)\ntime.sleep(60)\n", str(log)])
    assert wait_for(lambda: log.exists() and "pid " in log.read_text(), timeout=30, every=0.05)
    child = int(next(ln for ln in log.read_text().splitlines() if ln.startswith("pid ")).split()[1])
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    try:
        assert wait_for(lambda: _gone(child), timeout=10, every=0.05)
    finally:
        if not _gone(child):
            os.kill(child, signal.SIGKILL)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:  # a zombie of an orphan: reaped by init soon
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    except OSError:
        return True


def _alive_with(marker: str) -> list[int]:
    """The live (not zombie) processes whose command line holds ``marker``."""
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and d.name != str(os.getpid()):
            try:
                if marker in (d / "cmdline").read_bytes().decode(errors="replace") and \
                        (d / "stat").read_text().split()[2] != "Z":
                    found.append(int(d.name))
            except OSError:
                pass
    return found


@pytest.mark.parametrize("timeout", [None, 60], ids=["plain", "timed"])
def test_a_ctrl_c_right_after_the_child_started_kills_it(monkeypatch, timeout):
    """A Ctrl-C lands where Python runs signal handlers: a thread's start waits for the thread, and
    run starts its output pump (and, for a timed process, its timer) right after the child. Raised
    there, before run's guard, it left the child running: a build went on to rewrite a tracked file
    after the trees were restored (CI, test_scan's Ctrl-C and SIGTERM tests, once)."""
    import threading

    from hourly.adapters import proc
    marker = f"{os.getpid()}.{timeout or 0}271828"

    def interrupted(self):
        raise KeyboardInterrupt
    monkeypatch.setattr(threading.Thread, "start", interrupted)
    with pytest.raises(KeyboardInterrupt):
        proc.run(["sleep", marker], timeout=timeout)
    monkeypatch.undo()
    assert _alive_with(marker) == []


def test_a_child_whose_parent_died_before_the_signal_was_set_does_not_run(tmp_path):
    """The guard between setpriv and the command: a parent that is no longer hourly (hourly died
    in the millisecond before the parent-death signal took effect) stops the command unrun."""
    from hourly.adapters import proc
    if proc._setpriv() is None:
        pytest.skip("no setpriv here: the preexec function checks the parent instead")
    marker = tmp_path / "ran"
    argv = ["/bin/sh", "-c", proc._PARENT_GUARD, "sh", "1", "touch", str(marker)]  # pid 1: never our parent
    assert subprocess.run(argv).returncode == 1 and not marker.exists()
    argv[4] = str(os.getpid())
    assert subprocess.run(argv).returncode == 0 and marker.exists()


def test_a_setpriv_without_pdeathsig_falls_back_and_commands_still_run(tmp_path):
    """BusyBox's setpriv (small images, the test containers) has no --pdeathsig: hourly must not
    wrap its commands in it (every git command failed with its usage text inside such images)."""
    fake = tmp_path / "bin" / "setpriv"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho \"setpriv: unrecognized option '--pdeathsig'\" >&2\nexit 1\n")
    fake.chmod(0o755)
    code = ("from hourly.adapters import proc; assert proc._setpriv() is None, proc._setpriv(); "
            "print(proc.run(['sh', '-c', 'echo ran']).output, end='')")
    env = {**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout == "ran\n", out.stderr


def test_a_missing_or_unexecutable_command_is_said_and_a_script_exiting_127_is_not(tmp_path):
    from hourly.adapters import proc
    from hourly.errors import UserError
    script = tmp_path / "bench.sh"
    script.write_text("#!/bin/sh\necho measured\nexit 127\n")
    with pytest.raises(UserError, match="command not executable"):
        proc.run(["./bench.sh"], cwd=tmp_path, check=False)
    with pytest.raises(UserError, match="command not executable"):
        proc.run_until([str(tmp_path)], lambda line: True)
    script.chmod(0o755)
    res = proc.run(["./bench.sh"], cwd=tmp_path, check=False)
    assert res.returncode == 127 and res.output == "measured\n"
    with pytest.raises(UserError, match="command not found: no-such-hourly-command"):
        proc.run(["no-such-hourly-command"], check=False)
    with pytest.raises(UserError, match="command not found"):
        proc.run(["./nope.sh"], cwd=tmp_path, check=False)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    assert proc.run(["bench.sh"], env=env, check=False).output == "measured\n"


# -- 10. kill -9 at seeded moments, again and again, then the same command to the end ----------------
#
# One chain per command: start it, kill -9 at a moment, start it again (it first takes over what the
# killed run left), kill it at the next moment, ... then a last run to the end. Each moment is an
# event of the run (a build or a benchmark run starting, a wheel install, a result stored) plus a
# seeded delay, or a seeded time after the start, so the kills fall in builds, installs, benchmark
# runs and between them however loaded the machine is. While a run is to be killed inside a build or
# a benchmark run, those hold (sleep) long enough for the kill to land inside; otherwise they run at
# full speed.

class _Marks:
    """The files a chain watches and steers: a line in ``attempts`` per build started (the wrapped
    build command), in ``runs`` per benchmark run started. While ``hold`` says ``build``, each build
    sleeps ``HOLD_S`` seconds after it has said so; while it holds a number, the benchmark run of
    that number does."""
    HOLD_S = 2.0

    def __init__(self, tmp_path: Path, made) -> None:
        self.attempts, self.runs, self.hold = tmp_path / "attempts", tmp_path / "bench-runs", tmp_path / "hold"
        runs, hold = str(self.runs), str(self.hold)
        made.bench_script.write_text(
            f"import os, time\nopen({runs!r}, 'a').write('run\\n')\n"
            f"if os.path.exists({hold!r}) and open({hold!r}).read() == str(open({runs!r}).read().count('\\n')):\n"
            f"    time.sleep({self.HOLD_S})\n" + made.bench_script.read_text())
        self.build = _wrapped_build(tmp_path, made, f'[ "$(cat {hold} 2>/dev/null)" != build ] || sleep {self.HOLD_S}')


def _tree_state_ok(made) -> None:
    from hourly.adapters.locks import RunLock
    for path, name in ((made.xla, "xla"), (made.jax, "jax")):
        repo = GitRepo(path, name)
        assert repo.head_state().branch == "main" and repo.dirty_files() == []
        assert not (repo.git_dir / "hourly.lock").exists()
        with RunLock(repo.git_dir / "hourly.run.lock", name):  # no stale lock: free at once
            pass


def _rows(db: Path, sql: str) -> list[tuple]:
    """``sql``'s rows from the store (read-only: polling never makes the empty file hourly refuses);
    none while it does not exist yet or cannot be read."""
    if not db.exists():
        return []
    try:
        with sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=10) as c:
            return c.execute(sql).fetchall()
    except sqlite3.Error:
        return []


def _lines(path: Path) -> int:
    return path.read_text().count("\n") if path.exists() else 0


def _phase(pid: int) -> str:
    """What ``pid`` is doing: the kind of its descendants (by command line), else hourly itself."""
    parents: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                parents[int(d)] = int(Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                pass
    below, grew = {pid}, True
    while grew:
        more = {c for c, p in parents.items() if p in below} - below
        below |= more
        grew = bool(more)
    cmds = []
    for c in below - {pid}:
        try:
            cmds.append(Path(f"/proc/{c}/cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            pass
    for kind, marks in (("bench", ("MLUPS3d",)), ("build", ("build-wrapped", "build-jax", "build_standin")),
                        ("install", ("uv pip", "pip install")), ("git", ("git ",))):
        if any(m in c for c in cmds for m in marks):
            return kind
    return "hourly"


def _run_until(cmd: list[str], moment: tuple, marks: _Marks, db: Path, stored_sql: str) -> str | None:
    """Run ``cmd``; kill -9 hourly itself (not its group) at ``moment``: ``("at", s)`` s seconds after
    the start; ``("build", s)`` s seconds after a build starts; ``("bench", n, s)`` s seconds after
    this run's n-th benchmark run starts; ``("install",)`` as soon as it installs wheels (``_phase``);
    ``("stored", n)`` as soon as this run has stored n more rows of ``stored_sql``. What it was doing
    when killed (``_phase``), or None when it finished first."""
    kind = moment[0]
    base = {"build": lambda: _lines(marks.attempts), "bench": lambda: _lines(marks.runs),
            "stored": lambda: len(_rows(db, stored_sql))}.get(kind, lambda: 0)()
    reached = {"at": lambda: time.monotonic() - t0 >= moment[1],
               "build": lambda: _lines(marks.attempts) > base,
               "bench": lambda: _lines(marks.runs) >= base + moment[1],
               "install": lambda: _phase(p.pid) == "install",
               "stored": lambda: len(_rows(db, stored_sql)) >= base + moment[1]}[kind]
    if kind == "build":
        marks.hold.write_text("build")
    elif kind == "bench":
        marks.hold.write_text(str(base + moment[1]))
    t0 = time.monotonic()
    err = _run_err(db)
    with open(err, "w") as f:  # what a run that ends before its moment said (_kill_chain shows it)
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=f)
    try:
        while not reached():
            if p.poll() is not None:
                return None
            if time.monotonic() - t0 > 120:
                raise AssertionError(f"{moment} not reached in 120 s")
            time.sleep(0.005)
        if kind in ("build", "bench"):
            time.sleep(moment[-1])
        phase = _phase(p.pid)
        if p.poll() is not None:
            return None
        p.send_signal(signal.SIGKILL)
        return phase
    finally:
        if p.poll() is None:
            p.kill()
        p.wait()
        marks.hold.unlink(missing_ok=True)


def _run_err(db: Path) -> Path:
    return db.parent.parent / "last-run.stderr"


def _kill_chain(cmd: list[str], moments: list[tuple], marks: _Marks, db: Path,
                stored_sql: str, kept_sqls: tuple[str, ...]) -> subprocess.CompletedProcess:
    """Run ``cmd`` killed at each of ``moments`` in turn (each run is killed: the moments follow the
    command's course), checking after every kill that nothing finished was lost (each of
    ``kept_sqls``' rows before a run are a prefix of those after it); then once more to the end,
    whose result it returns."""
    hits: list[str] = []
    kept = [_rows(db, q) for q in kept_sqls]
    for moment in moments:
        t0 = time.monotonic()
        phase = _run_until(cmd, moment, marks, db, stored_sql)
        said = _run_err(db).read_text(errors="replace")[-2000:] if _run_err(db).exists() else ""
        assert phase is not None, f"{cmd[3]} finished before {moment}; earlier kills hit {hits}; it said: {said}"
        hits.append(f"{moment[0]}->{phase}")
        print(f"{moment} -> {phase} after {time.monotonic() - t0:.1f} s")
        now = [_rows(db, q) for q in kept_sqls]
        assert all(n[:len(k)] == k for n, k in zip(now, kept, strict=True)), (moment, hits)  # nothing finished was lost
        kept = now
    # the chain stays one that reaches into builds, wheel installs and benchmark runs
    assert {"build", "install", "bench"} <= {h.split("->")[1] for h in hits}, hits
    t0 = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    print(f"the last run: {time.monotonic() - t0:.1f} s")
    assert done.returncode == 0, (hits, done.stderr)
    assert all(_rows(db, q)[:len(k)] == k for q, k in zip(kept_sqls, kept, strict=True)), hits
    return done


def test_a_scan_killed_at_seeded_moments_again_and_again_loses_and_redoes_nothing(scan_args, made, tmp_path):
    import random
    rnd = random.Random(1)
    marks = _Marks(tmp_path, made)
    args = scan_args("Aug 24 2023 11:00", "Aug 24 2023 15:00", "--no-sync", "--json", "--build-cmd", str(marks.build))
    # three pairs (a build, a warm-up and a measured run each), then the last one's edge measured
    # again: two pairs, six runs each; each moment falls where its comment says
    moments = [("at", rnd.uniform(0.4, 1.0)),                  # starting: the python, the trees, the store
               ("build", rnd.uniform(0.0, 0.5)),               # inside the first build
               ("install",),                                   # installing its wheel
               ("bench", 1, rnd.uniform(0.0, 0.5)),            # the first pair's warm-up run
               ("stored", 1),                                  # its result just stored: on to the next pair
               ("at", rnd.uniform(0.4, 1.0)),                  # taking over the trees the last kill left
               ("bench", 2, rnd.uniform(0.0, 0.5)),            # the second pair's measured run
               ("stored", 2),                                  # the third pair stored: before the edge check
               ("bench", rnd.randint(1, 6), rnd.uniform(0.0, 0.5)),  # a run of the edge check
               ("stored", 1)]                                  # between the edge's two pairs
    db = tmp_path / "work" / "hourly.sqlite"
    query = "SELECT id, xla, jax, status, origin FROM measurements"
    done = _kill_chain([sys.executable, "-m", "hourly", *args], moments, marks, db, query, (query,))
    result = json.loads(done.stdout)
    assert all(p["status"] == "ok" for p in result["points"])
    after = _rows(db, query)
    scan = [(x, j) for _, x, j, _, o in after if o == "scan"]
    assert len(set(scan)) == len(scan) == result["distinct_pairs"]  # nothing redone
    # the last pair alone is at a new level (the fusion heuristic): it and its neighbour were
    # measured again once each, however the kills fell
    confirm = [(x, j) for _, x, j, _, o in after if o == "confirm"]
    assert len(set(confirm)) == len(confirm) == 2 and result["edge_checks"][0]["verdict"] == "confirmed"
    _tree_state_ok(made)


def test_a_bisection_killed_at_seeded_moments_again_and_again_continues_to_the_same_culprit(
        tmp_path, repos_cache, venv_python):
    import random

    from hourly.demo.repos import Change
    rnd = random.Random(1)
    culprit = Change("xla", "2023-08-24T05:10:00Z", "Slower scatter", {"perf/scatter.txt": "0.9\n"})
    changes = [Change("xla", f"2023-08-24T{h:02d}:20:00Z", f"[XLA] change {h}", {f"x/{h}.txt": "1\n"})
               for h in range(8)] + [culprit]
    made = repos_cache(tmp_path / "repos", changes)
    marks = _Marks(tmp_path, made)
    cmd = [sys.executable, "-m", "hourly", "bisect", "--json", "--good", "2023-08-24T00:00Z",
           "--bad", "2023-08-24T08:00Z", "--xla-repo", str(made.xla), "--jax-repo", str(made.jax),
           "--build-cmd", str(marks.build), "--python", venv_python, "--repeats", "2",
           "--bench-cmd", f"python3 {made.bench_script}", "--workdir", str(tmp_path / "work")]
    # both ends, three probes (more samples of some where the noise asks), then the two sides of the
    # answer measured again: seven measurements at least, a build and a wheel install before each
    # new state's; the start and taking over a killed run's trees: the scan's chain above
    moments = [("build", rnd.uniform(0.0, 0.5)),               # inside the good end's build
               ("stored", 1),                                  # the good end just stored
               ("install",),                                   # installing the bad end's wheel
               ("stored", 2),                                  # the bad end and the first probe stored
               ("bench", rnd.randint(1, 3), rnd.uniform(0.0, 0.5)),  # a run of the next probe
               ("stored", 2),                                  # two more stored
               ("bench", rnd.randint(1, 3), rnd.uniform(0.0, 0.5)),  # a run of the next
               ("stored", 1)]                                  # one more: one at least is left
    db = tmp_path / "work" / "hourly.sqlite"
    probes = "SELECT xla, jax, verdict FROM bisect_probes WHERE role='probe' ORDER BY seq"
    done = _kill_chain(cmd, moments, marks, db, "SELECT id FROM measurements",
                       ("SELECT id, xla, jax, status, origin FROM measurements", probes))
    (r,) = json.loads(done.stdout)["regressions"]
    assert r["culprit"]["sha"] == made.shas[culprit.subject]
    after = _rows(db, probes)
    assert len({(x, j) for x, j, _ in after}) == len(after)  # no probe redone
    _tree_state_ok(made)


def test_run_lock_nests_in_one_process_and_frees_for_the_next(tmp_path):
    from hourly.adapters.locks import LockHeld, RunLock
    path = tmp_path / "l.lock"
    outer = RunLock(path, "thing").acquire()
    inner = RunLock(path, "thing").acquire()  # the same run taking it again: nests
    outer.release()
    other = subprocess.run([sys.executable, "-c", "import sys; from hourly.adapters.locks import RunLock; "
                            "RunLock(sys.argv[1], 'thing').acquire()", str(path)], capture_output=True, text=True)
    assert other.returncode != 0 and "in use by another hourly" in other.stderr  # still held by inner
    inner.release()
    other = subprocess.run([sys.executable, "-c", "import sys; from hourly.adapters.locks import RunLock; "
                            "RunLock(sys.argv[1], 'thing').acquire()", str(path)], capture_output=True, text=True)
    assert other.returncode == 0, other.stderr
    with pytest.raises(LockHeld):
        holder = subprocess.Popen([sys.executable, "-c", HOLD_FLOCK, str(path)], stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout.readline().strip() == "locked"
            RunLock(path, "thing").acquire()
        finally:
            holder.kill()
            holder.wait()


def test_a_cache_entry_written_meanwhile_by_another_run_is_kept(tmp_path):
    from hourly.measure.build_cache import WheelCache
    cache = WheelCache(tmp_path / "c")
    (tmp_path / "a.whl").write_bytes(b"first run's")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "a.whl").write_bytes(b"second run's")
    assert [w.read_bytes() for w in cache.put("k", [tmp_path / "a.whl"])] == [b"first run's"]
    assert [w.read_bytes() for w in cache.put("k", [tmp_path / "b" / "a.whl"])] == [b"first run's"]
    assert [p.name for p in (tmp_path / "c").iterdir()] == ["k"]  # and no temporary folder
