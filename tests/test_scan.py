"""The scan end to end: the real CLI over real repos, builds, benchmarks and SQLite."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import signal
import sqlite3
import subprocess
import sys
import sysconfig
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest
from waiting import measurement_count, wait_for_measurements

from hourly.adapters.gitrepo import GitRepo, transient_git_failure
from hourly.cli import main
from hourly.render.console import unwrap
from hourly.text.timeparse import iso_utc
from tests.argv import with_flags
from tests.conftest import make_venv_seeing_this_python
from tests.in_place import editable_build
from tests.stop_after import stop_after_first


def run_cli(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def scan_json(capsys, argv, code=0):
    got, out, err = run_cli(capsys, argv + ["--json"])
    assert got == code, err
    return json.loads(out)


#: A scan of under 4 pairs of one run each that finds no step: its noise is assumed, not measured,
#: so "no steps found" is no answer (exit 1 naming the scan that measures each pair 3 times).
ASSUMED_NOISE = 1


def measurements(workdir: Path) -> list[tuple]:
    with sqlite3.connect(workdir / "hourly.sqlite") as c:
        return c.execute("SELECT xla, jax, status, origin FROM measurements ORDER BY id").fetchall()


@pytest.fixture(scope="module")
def scanned(_pristine, venv_python, tmp_path_factory):
    """One scan of the demo's 12:00-15:00 (the fusion regression between its two pairs, measured
    twice each) for the tests that read it and change nothing: its repositories, arguments, workdir
    and terminal output. Its own copy of the repositories, workdir and build cache."""
    from tests.conftest import copy_repos
    root = tmp_path_factory.mktemp("scanned")
    made = copy_repos(_pristine, root / "repos")
    work = root / "work"
    args = ["scan", "--from", "Aug 24 2023 12:00", "--to", "Aug 24 2023 15:00", "--xla-repo", str(made.xla),
            "--jax-repo", str(made.jax), "--build-cmd", str(made.build_script), "--python", venv_python,
            "--bench-cmd", f"python3 {made.bench_script}", "--workdir", str(work), "--repeats", "2",
            "--no-confirm-edges"]  # its last pair is an edge step: test_an_edge_step_is_measured_again_and_confirmed
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        mp.chdir(root)
        mp.setenv("HOURLY_LOG_DIR", str(root / "crash-logs"))
        mp.setenv("HOURLY_CACHE_DIR", str(root / "cache"))
        mp.setenv("DEMO_NOISE", os.environ.get("DEMO_NOISE", "0.002"))
        code = main(args)
    assert code == 0, err.getvalue()
    return SimpleNamespace(made=made, args=args, work=work, out=out.getvalue())


def test_scan_json_dedupes_builds_and_measures_planted_step(capsys, scanned):
    # the shared scan's table as `show --json` reads it back (scan --json prints the same: the other tests)
    code, out, err = run_cli(capsys, ["show", "--workdir", str(scanned.work), "--json"])
    assert code == 0, err
    result = json.loads(out)
    pts = result["points"]
    assert [p["time"] for p in pts] == ["2023-08-24T12:00:00Z", "2023-08-24T13:00:00Z",
                                        "2023-08-24T14:00:00Z", "2023-08-24T15:00:00Z"]
    assert all(len(p["xla"]) == 40 and len(p["jax"]) == 40 for p in pts)
    assert result["distinct_pairs"] == 2 and result["builds"] == 2
    assert [p["status"] for p in pts] == ["ok"] * 4
    assert all(len(p["samples"]) == 2 for p in pts)
    before, after = pts[0]["value"], pts[2]["value"]
    assert after / before == pytest.approx(0.93, abs=0.01)  # the planted XLA fusion regression
    assert pts[2]["xla"] == scanned.made.shas["[XLA] Fix typo in comment"]


def test_rerun_reuses_everything_and_rerun_flag_measures_again(capsys, scan_args, tmp_path):
    args = scan_args("Aug 24 2023 09:00", "Aug 24 2023 11:00")  # two pairs, no step: nothing else measured
    first = scan_json(capsys, args, ASSUMED_NOISE)
    assert first["resolution"] is None and first["undecided"].startswith("too few pairs to measure the noise")
    assert first["undecided"].endswith("--repeats 3 --workdir " + str(tmp_path / "work") + " --rerun")
    n = len(measurements(tmp_path / "work"))
    again = scan_json(capsys, args, ASSUMED_NOISE)
    assert again["builds"] == 0 and again["points"] == first["points"]
    assert len(measurements(tmp_path / "work")) == n
    forced = scan_json(capsys, args + ["--rerun"], ASSUMED_NOISE)
    assert forced["builds"] == 0  # wheels come from the cache
    assert len(measurements(tmp_path / "work")) == 2 * n
    # the rerun ended with its last pair: the same scan again measures nothing
    scan_json(capsys, args, ASSUMED_NOISE)
    assert len(measurements(tmp_path / "work")) == 2 * n


#: ``python -m hourly`` that sends itself SIGTERM once the first measurement is stored
STOP_AFTER_ONE_PAIR = stop_after_first("hourly.adapters.store_tables.scan", "ScanTables.add_measurements")


def test_a_rerun_stopped_midway_goes_on_without_measuring_a_pair_twice(capsys, scan_args, tmp_path):
    """A --rerun stopped after its first pair, resumed with the line it printed (--rerun in it):
    that pair is not measured a third time, the other is measured again (not left at its value from
    before the rerun); then the rerun has ended and the same scan measures nothing. Before, the
    printed line began the rerun anew: every pair measured again, however many the stopped run had."""
    args = scan_args("Aug 24 2023 09:00", "Aug 24 2023 11:00")  # two pairs
    scan_json(capsys, args, ASSUMED_NOISE)
    assert list(Counter((x, j) for x, j, _, _ in measurements(tmp_path / "work")).values()) == [1, 1]
    p = subprocess.run([sys.executable, "-c", STOP_AFTER_ONE_PAIR, *args, "--rerun"], capture_output=True,
                       text=True, timeout=300, cwd=tmp_path)
    assert p.returncode == 143, p.stderr
    tail = p.stderr.rstrip("\n").splitlines()[-2:]
    assert tail[0] == "stopped by SIGTERM. Finished points are stored; resume with:", p.stderr
    printed = shlex.split(tail[1])
    assert printed[-1] == "--rerun"
    stopped = Counter((x, j) for x, j, _, _ in measurements(tmp_path / "work"))
    assert sorted(stopped.values()) == [1, 2]
    code, _, err = run_cli(capsys, printed[1:])
    assert code == ASSUMED_NOISE and "going on with the --rerun begun" in err and "1 pair measured again" in err, err
    assert sorted(Counter((x, j) for x, j, _, _ in measurements(tmp_path / "work")).values()) == [2, 2]
    code, _, err = run_cli(capsys, printed[1:-1])
    assert code == ASSUMED_NOISE and "--rerun begun" not in err
    assert sorted(Counter((x, j) for x, j, _, _ in measurements(tmp_path / "work")).values()) == [2, 2]



def test_a_rerun_under_way_is_kept_per_scope_until_it_ends(tmp_path):
    """The store's record of a --rerun (SettingsTables.rerun): begun when asked, gone on with by a
    later run of the same scope asked or not, never begun unasked, apart for another scope, gone
    once ended; it survives the store being opened again (a new process)."""
    from hourly.adapters.store import Store
    scope, other = {"level": "scan", "bench": "k", "from": 1, "to": 2}, {"level": "scan", "bench": "k", "from": 1, "to": 3}
    store = Store(tmp_path / "w")
    assert store.rerun(scope, asked=False) is None
    began = store.rerun(scope, asked=True)
    assert began is not None and not began.resumed
    again = Store(tmp_path / "w")
    assert again.rerun(scope, asked=False) == (began.since, True) == again.rerun(scope, asked=True)
    assert again.rerun(other, asked=False) is None
    again.end_rerun(scope)
    assert again.rerun(scope, asked=False) is None
    assert again.rerun(scope, asked=True).since >= began.since

def test_trees_restored_and_build_edits_never_block(capsys, scan_args, made):
    jax = GitRepo(made.jax, "jax")
    before = jax.head_state()
    scan_json(capsys, scan_args("Aug 24 2023 09:00", "Aug 24 2023 12:00"), ASSUMED_NOISE)  # three builds in a row
    assert jax.head_state() == before and before.branch == "main"
    assert jax.dirty_files() == []
    assert not (jax.git_dir / "hourly.lock").exists()


def test_failed_build_and_crash_are_recorded_and_the_scan_goes_on(capsys, scan_args):
    # its last valued pair (13:00-15:00, after the dispatch regression) is an edge step: not measured
    # again here (test_an_edge_step_is_measured_again_and_confirmed), so with three valued pairs of one
    # run each that step rests on an assumed noise: named, and no answer (exit 1)
    got, out, err = run_cli(capsys, scan_args("Aug 25 2023 05:00", "Aug 25 2023 17:00", "--no-confirm-edges", "--json"))
    assert got == ASSUMED_NOISE and "cannot tell whether the step above is real" in " ".join(err.split()), err
    pts = json.loads(out)["points"]
    statuses = {p["time"][11:13]: p["status"] for p in pts}
    assert statuses["06"] == "build_failed" and statuses["09"] == "ok"
    assert statuses["16"] == "crashed" and statuses["05"] == "ok"
    assert all(p["value"] is None for p in pts if p["status"] != "ok")


def test_table_output_and_show(capsys, scanned):
    out = scanned.out  # the scan's own table
    assert "2 builds for 4 instants" in out and "2023-08-24T14:00:00Z" in out
    code, shown, _ = run_cli(capsys, ["show", "--workdir", str(scanned.work)])
    assert code == 0 and "2023-08-24T14:00:00Z" in shown
    code, js, _ = run_cli(capsys, ["show", "--workdir", str(scanned.work), "--json"])
    assert [p["status"] for p in json.loads(js)["points"]] == ["ok"] * 4


def test_dry_run_touches_nothing(capsys, scan_args, made, tmp_path, scanned):
    jax = GitRepo(made.jax, "jax")
    before = jax.head_state()
    plan = scan_json(capsys, scan_args("Aug 24 2023", "Aug 24 2023", "--dry-run"))
    assert {p["status"] for p in plan["points"]} == {"planned"} and plan["builds"] == 0
    assert len(plan["points"]) == 25 and plan["distinct_pairs"] < 25
    assert jax.head_state() == before and not (tmp_path / "work" / "wheels").exists()
    # over a workdir that holds a scan of 12:00-15:00: those instants are cached
    plan = scan_json(capsys, with_flags(scanned.args, "--from", "Aug 24 2023", "--to", "Aug 24 2023", "--dry-run"))
    assert {p["status"] for p in plan["points"] if p["time"] == "2023-08-24T12:00:00Z"} == {"cached"}


def test_dirty_tree_is_refused_then_forced_changes_come_back(capsys, scan_args, made):
    readme = made.jax / "README"
    readme.write_text("my local edit\n")
    code, _, err = run_cli(capsys, scan_args())
    assert code == 1 and "uncommitted changes" in err and "--force" in err
    assert "Traceback" not in err
    result = scan_json(capsys, scan_args("Aug 24 2023 12:00", "Aug 24 2023 13:00", "--force"))
    assert result["points"][0]["status"] == "ok"
    assert readme.read_text() == "my local edit\n"


def test_locked_tree_is_refused(capsys, scan_args, made, monkeypatch):
    # a live hourly holds the tree's flock (a pid in a file alone no longer counts: pids are reused);
    # it has not written its name yet: the refused scan waits HOLDER_WAIT_S for one (2 s; a tenth
    # here: the wait's length is not what is tested), then says so
    from hourly.adapters import locks
    monkeypatch.setattr(locks, "HOLDER_WAIT_S", 0.1)
    lock = GitRepo(made.xla, "xla").git_dir / "hourly.run.lock"
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys, time; fd = os.open(sys.argv[1], "
                               "os.O_RDWR | os.O_CREAT); fcntl.flock(fd, fcntl.LOCK_EX); print('ok', flush=True); "
                               "time.sleep(60)", str(lock)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ok"
        code, _, err = run_cli(capsys, scan_args())
        assert code == 1 and "in use by another hourly" in err
        assert "it did not say who it is yet" in err
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("change,message", [
    (["--build-cmd", "no-such-build-jax.sh"], "build command not found"),
    (["--ref", "origin/nope"], "unknown ref"),
    (["--jax-repo", "/nonexistent/jax"], "does not exist"),
    (["--from", "Aug 26 2023", "--to", "Aug 24 2023"], "reversed"),
    (["--from", "someday"], "cannot parse time"),
    (["--metric-regex", "MLUPS: ("], "not a valid regular expression"),
])
def test_user_errors_are_one_line_exit_1(capsys, scan_args, change, message):
    code, _, err = run_cli(capsys, with_flags(scan_args(), *change))
    assert code == 1, err
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_not_a_git_repo_and_unwritable_workdir(capsys, scan_args, tmp_path):
    (tmp_path / "plain").mkdir()
    code, _, err = run_cli(capsys, scan_args("Aug 24 2023 12:00", "Aug 24 2023 15:00", "--xla-repo", str(tmp_path / "plain")))
    assert code == 1 and "not a git repository" in err
    (tmp_path / "afile").write_text("")
    code, _, err = run_cli(capsys, scan_args("Aug 24 2023 12:00", "Aug 24 2023 15:00", "--workdir", str(tmp_path / "afile" / "work")))
    assert code == 1 and "not writable" in err


def test_metric_never_printed_stops_at_the_first_pair_with_the_log(capsys, scan_args, tmp_path):
    # 05:00 builds, 06:00 and 07:00 fail to build (broken XLA), then more pairs: it stops after the first
    code, out, err = run_cli(capsys, scan_args("Aug 25 2023 05:00", "Aug 25 2023 12:00", "--metric-regex",
                                               r"GFLOPS:\s*(?P<value>[0-9.]+)", "--json"))
    pts = json.loads(out)["points"]
    assert pts[0]["status"] == "no_metric" and pts[0]["value"] is None
    assert {p["status"] for p in pts[1:]} == {"planned"}  # stopped before building the next pair
    first, *details = err.strip().splitlines()
    assert code == 1 and "never printed the metric" in first and "--metric-regex" in first
    assert "stopped before building the next pair" in first and "--keep-going" in first
    assert any("MLUPS" in line for line in details)  # the end of the run's log, verbatim
    assert len(measurements(tmp_path / "work")) == 1  # stored all the same: nothing is lost


def test_a_benchmark_that_never_works_stops_the_scan_keep_going_goes_on(capsys, scan_args, tmp_path):
    bench = tmp_path / "bench_missing.py"
    bench.write_text("import module_that_is_not_installed\n")
    args = scan_args("Aug 25 2023 05:00", "Aug 25 2023 12:00")
    args[args.index("--bench-cmd") + 1] = f"python3 {bench}"
    code, _, err = run_cli(capsys, args)
    assert code == 1 and "crashed with exit code 1" in err and "missing import" in err
    assert "ModuleNotFoundError" in err  # the log's last lines
    assert len(measurements(tmp_path / "work")) == 1
    # --keep-going measures every pair; a scan that ends with nothing measured still exits 1
    code, _, err = run_cli(capsys, args + ["--keep-going"])
    rows = measurements(tmp_path / "work")
    assert code == 1 and "every measured pair crashed" in err and "missing import" in err
    assert len(rows) == 3 and [r[2] for r in rows] == ["crashed", "build_failed", "crashed"]


def test_exit_mode_scan_passes_and_fails_by_exit_code(capsys, scan_args, tmp_path):
    # the demo's crash window: 16:00 .. 19:00 on Aug 25; no metric is expected
    # (with --metric-regex it is a usage error: tests/test_cli_edges.py)
    pts = scan_json(capsys, scan_args("Aug 25 2023 14:00", "Aug 25 2023 21:00", "--mode", "exit"))["points"]
    statuses = {p["time"][11:13]: p["status"] for p in pts}
    assert statuses["14"] == "ok" and statuses["17"] == "crashed" and statuses["20"] == "ok"
    assert all(p["value"] is None for p in pts)
    # a window that starts inside the crash holds no good state: stop at once
    code, _, err = run_cli(capsys, scan_args("Aug 25 2023 17:00", "Aug 25 2023 21:00", "--mode", "exit",
                                             "--workdir", str(tmp_path / "work2")))
    assert code == 1 and "holds no good state" in err and "--from" in err
    assert len(measurements(tmp_path / "work2")) == 1


def upload_pack_counter(tmp_path: Path, fail_first: int, message: str) -> tuple[Path, Path]:
    """A real upload-pack wrapper for a remote: logs each call, fails the first ``fail_first`` calls
    with ``message`` (as a network would), then serves the fetch with git's own upload-pack."""
    calls = tmp_path / "upload-pack-calls"
    script = tmp_path / "upload-pack"
    script.write_text(f"""#!/bin/sh
echo "$@" >> {calls}
if [ "$(wc -l < {calls})" -le {fail_first} ]; then
  echo "{message}" >&2
  exit 128
fi
exec git upload-pack "$@"
""")
    script.chmod(0o755)
    return script, calls


@pytest.mark.parametrize("output,transient", [
    ("fatal: unable to access 'https://github.com/openxla/xla/': Connection reset by peer", True),
    ("error: RPC failed; curl 56 GnuTLS recv error (-9)\nfatal: early EOF", True),
    ("fatal: unable to access 'https://github.com/openxla/xla/': The requested URL returned error: 502", True),
    ("fatal: unable to access 'https://github.com/openxla/xla/': Failed to connect to github.com port 443"
     " after 130000 ms: Connection timed out", True),
    ("ssh: connect to host github.com port 22: Operation timed out\nfatal: Could not read from remote repository.",
     True),
    ("fatal: the remote end hung up unexpectedly", True),
    # offline, or a wrong name: retrying only makes the user wait
    ("fatal: unable to access 'https://github.com/openxla/xla/': Could not resolve host: github.com", False),
    ("ssh: Could not resolve hostname github.com: Temporary failure in name resolution", False),
    ("fatal: '/nonexistent/upstream' does not appear to be a git repository\n"
     "fatal: Could not read from remote repository.", False),
    ("remote: Repository not found.\nfatal: repository 'https://github.com/openxla/nope/' not found", False),
    ("fatal: Authentication failed for 'https://github.com/openxla/xla/'", False),
    ("git@github.com: Permission denied (publickey).\nfatal: Could not read from remote repository.", False),
    ("fatal: could not read Username for 'https://github.com': terminal prompts disabled", False),
    ("fatal: unable to access 'https://github.com/openxla/xla/': The requested URL returned error: 403", False),
    ("error: could not fetch origin", False),
])
def test_which_git_failures_are_transient(output, transient):
    assert transient_git_failure(output) is transient


def test_sync_of_a_missing_remote_fails_at_once_naming_no_sync(capsys, scan_args, made, tmp_path):
    """A remote that does not exist is no network hiccup: one attempt, then one line naming --no-sync.
    (Before issue 9 every git failure was retried four times with back-off.)"""
    script, calls = upload_pack_counter(tmp_path, 0, "")
    subprocess.run(["git", "-C", str(made.jax), "remote", "set-url", "origin", "/nonexistent/upstream"], check=True)
    subprocess.run(["git", "-C", str(made.jax), "config", "remote.origin.uploadpack", str(script)], check=True)
    t0 = time.monotonic()
    code, _, err = run_cli(capsys, scan_args())
    assert code == 1, err
    assert len(calls.read_text().splitlines()) == 1 and time.monotonic() - t0 < 5
    assert "git remote update" in err and str(made.jax) in err and "--no-sync" in err
    assert "does not appear to be a git repository" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "work").exists()
    assert scan_json(capsys, scan_args("Aug 24 2023 12:00", "Aug 24 2023 12:00", "--no-sync"))["points"]


def test_sync_retries_a_connection_reset_and_goes_on(capsys, scan_args, made, tmp_path, monkeypatch):
    monkeypatch.setenv("HOURLY_SYNC_RETRY_WAIT", "0")  # retried at once: the waits are not what is tested
    script, calls = upload_pack_counter(
        tmp_path, 1, "fatal: unable to access 'https://github.com/jax-ml/jax/': Connection reset by peer")
    subprocess.run(["git", "-C", str(made.jax), "config", "remote.origin.uploadpack", str(script)], check=True)
    result = scan_json(capsys, scan_args("Aug 24 2023 12:00", "Aug 24 2023 12:00"))
    assert result["points"][0]["status"] == "ok"
    assert len(calls.read_text().splitlines()) == 2  # failed once, served the second time


def test_sync_gives_up_on_a_network_that_stays_down(capsys, scan_args, made, tmp_path, monkeypatch):
    monkeypatch.setenv("HOURLY_SYNC_RETRY_WAIT", "0")  # retried at once: the waits are not what is tested
    script, calls = upload_pack_counter(tmp_path, 99, "error: RPC failed; curl 56 Recv failure: Connection reset by peer")
    subprocess.run(["git", "-C", str(made.xla), "config", "remote.origin.uploadpack", str(script)], check=True)
    code, _, err = run_cli(capsys, scan_args())
    assert code == 1, err
    assert len(calls.read_text().splitlines()) == 4  # retried, with back-off, then stopped
    assert "git remote update" in err and str(made.xla) in err and "--no-sync" in err
    assert len(err.strip().splitlines()) == 1


def test_usage_error_exits_2_and_unexpected_exits_3_with_log(capsys, scan_args, tmp_path):
    code, _, _ = run_cli(capsys, ["scan", "--no-such-flag"])
    assert code == 2
    work = tmp_path / "work"
    work.mkdir()
    # a whole SQLite file with every table of its schema, one of them not as hourly made it (a damaged
    # file, or one that lacks a table, is one line: test_store_faults)
    from hourly.adapters import store as S
    with sqlite3.connect(work / "hourly.sqlite") as c:
        c.executescript("CREATE TABLE settings (x);" + S._SCHEMA)
        for v in range(2, S.SCHEMA_VERSION + 1):
            for stmt in S.MIGRATIONS[v]:
                c.execute(stmt)
        c.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(S.SCHEMA_VERSION),))
    code, _, err = run_cli(capsys, scan_args())
    assert code == 3 and "unexpected error" in err
    log = next((tmp_path / "crash-logs").glob("error-*.log"))
    assert "Traceback" in log.read_text() and str(log) in err


def test_in_place_builds_run_every_time(capsys, scan_args, tmp_path):
    """Newer build-jax.sh installs editable builds and leaves no wheels: nothing to cache."""
    marker = tmp_path / "builds.txt"
    build = editable_build(tmp_path / "build-inplace.sh", f"echo built >> {marker}\n")
    python = make_venv_seeing_this_python(tmp_path / "venv")  # the build writes into it
    bench = tmp_path / "b.py"
    bench.write_text("print('MLUPS: 100')\n")
    args = scan_args("Aug 24 2023 12:00", "Aug 24 2023 14:00", "--build-cmd", str(build), "--bench-cmd", f"python3 {bench}",
                     "--python", python)
    assert scan_json(capsys, args, ASSUMED_NOISE)["builds"] == 2
    assert scan_json(capsys, args + ["--rerun"], ASSUMED_NOISE)["builds"] == 2
    assert marker.read_text().count("built") == 4


@pytest.mark.parametrize("build", ["/bin/true", "echo"])
def test_a_build_that_leaves_no_wheel_and_installs_nothing_is_refused(capsys, scan_args, tmp_path, build):
    """Issue 44: a --build-cmd of /bin/true (or a script that only echoes) left no wheel and every pair
    measured the Python's old jax: "2 builds", "no steps found", exit 0."""
    if build == "echo":
        build = str(tmp_path / "echo-build.sh")
        Path(build).write_text("#!/bin/sh\necho building jax\n")
        Path(build).chmod(0o755)
    code, out, err = run_cli(capsys, scan_args("Aug 24 2023 12:00", "Aug 24 2023 14:00", "--build-cmd", build))
    assert code == 1, err
    line = err.strip().splitlines()[-1]
    assert line.startswith(f"hourly: error: the build ({build}) left no wheel in ") and "not in the JAX tree" in line
    assert "every pair would measure that same jax (build log " in line and "pip install -e" in line
    assert "no steps" not in out


def test_config_file_and_flags(capsys, scan_args, made, venv_python, tmp_path):
    Path("hourly.toml").write_text(
        f'[scan]\nfrom = "Aug 24 2023 12:00"\nto = "Aug 24 2023 13:00"\nxla-repo = "{made.xla}"\n'
        f'jax_repo = "{made.jax}"\nbuild_cmd = "{made.build_script}"\npython = "{venv_python}"\n'
        f'bench_cmd = "python3 {made.bench_script}"\nrepeats = 2\n')
    result = scan_json(capsys, ["scan", "--to", "Aug 24 2023 14:00"])  # a step: a stepless window's exit is its resolution's
    assert len(result["points"]) == 3 and len(result["points"][0]["samples"]) == 2
    code, out, _ = run_cli(capsys, ["config", "--json"])
    cfg = json.loads(out)
    assert cfg["repeats"] == {"value": 2, "from": "hourly.toml"}
    assert cfg["step"] == {"value": "1h", "from": "default"}
    Path("hourly.toml").write_text("no_such_setting = 1\n")
    code, _, err = run_cli(capsys, ["config"])
    assert code == 1 and "unknown setting" in err


# a scan killed with kill -9 and run again: test_faults.py::
# test_a_scan_killed_at_seeded_moments_again_and_again_loses_and_redoes_nothing kills one at ten
# moments (starting, inside builds, installs and runs, taking over the trees a kill left): nothing
# finished lost, every pair measured once, the trees back on main and unlocked; quick: the rerun
# tests of this file cover resuming from the store


def _signal_a_scan(sig: int, scan_args, made, tmp_path) -> tuple[list[str], int, str]:
    """Start a real scan of a slow benchmark, send ``sig`` once a pair is measured: (its args, its
    exit status, its stderr), after checking that the trees are restored and unlocked."""
    args = scan_args("Aug 24 2023 00:00", "Aug 24 2023 23:00")
    bench = made.bench_script
    bench.write_text("import time; time.sleep(0.5)\n" + bench.read_text())
    p = subprocess.Popen([sys.executable, "-m", "hourly", *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    wait_for_measurements(p, tmp_path / "work", 1, timeout=240)  # a loaded machine is slow
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    jax = GitRepo(made.jax, "jax")
    assert jax.head_state().branch == "main" and jax.dirty_files() == []
    assert not (jax.git_dir / "hourly.lock").exists()
    return args, p.returncode, err


def test_ctrl_c_exits_130_restores_trees_and_prints_resume_command(scan_args, made, tmp_path):
    _, code, err = _signal_a_scan(signal.SIGINT, scan_args, made, tmp_path)
    assert code == 130, err
    assert "resume with" in err and "hourly scan --from" in err


def test_console_script_runs(tmp_path):
    # the script pip installed for the Python running the tests (not whatever `hourly` PATH finds)
    script = Path(sysconfig.get_path("scripts")) / "hourly"
    out = subprocess.run([str(script), "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "scan" in out.stdout


def _cache_lines(workdir: Path) -> set[str]:
    return {line.strip() for log in (workdir / "logs").glob("bench-*.log")
            for line in log.read_text().splitlines() if line.startswith("JAX_ENABLE_COMPILATION_CACHE=")}


def test_runs_get_no_persistent_compilation_cache_unless_the_user_sets_it(capsys, scan_args, tmp_path, monkeypatch):
    # issue 11: builds at different commits can share a version string, so a persistent cache
    # could serve an executable compiled by another XLA
    from hourly.adapters.store import Store
    monkeypatch.delenv("JAX_ENABLE_COMPILATION_CACHE", raising=False)
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(tmp_path / "jax-cache"))
    scan_json(capsys, scan_args("Aug 24 2023 12:00", "Aug 24 2023 12:00"))
    work = tmp_path / "work"
    assert _cache_lines(work) == {"JAX_ENABLE_COMPILATION_CACHE=false"}
    env = Store(work, create=False).load_settings("environment")["env"]
    assert env["JAX_ENABLE_COMPILATION_CACHE"] == "false"
    assert "JAX_COMPILATION_CACHE_DIR" not in env
    code, out, err = run_cli(capsys, ["report", "--workdir", str(work)])
    assert code == 0, err
    assert "`JAX_ENABLE_COMPILATION_CACHE=false`" in (work / "report" / "report.md").read_text()

    # the user's own choice, in --env or in the environment, is kept
    scan_json(capsys, scan_args("Aug 24 2023 12:00", "Aug 24 2023 12:00", "--workdir", str(tmp_path / "w2"),
                                "--env", "JAX_ENABLE_COMPILATION_CACHE=true"))
    assert _cache_lines(tmp_path / "w2") == {"JAX_ENABLE_COMPILATION_CACHE=true"}
    assert Store(tmp_path / "w2", create=False).load_settings("environment")["env"]["JAX_ENABLE_COMPILATION_CACHE"] == "true"
    monkeypatch.setenv("JAX_ENABLE_COMPILATION_CACHE", "1")
    scan_json(capsys, scan_args("Aug 24 2023 12:00", "Aug 24 2023 12:00", "--workdir", str(tmp_path / "w3")))
    assert _cache_lines(tmp_path / "w3") == {"JAX_ENABLE_COMPILATION_CACHE=1"}
    env3 = Store(tmp_path / "w3", create=False).load_settings("environment")["env"]
    assert env3["JAX_ENABLE_COMPILATION_CACHE"] == "1" and "JAX_COMPILATION_CACHE_DIR" in env3


def test_direction_is_stored_with_the_scan_and_followed_by_later_commands(capsys, venv_python, tmp_path):
    # issue 11: a time metric's 60x speed-up (lower is better) is an improvement everywhere,
    # not "regression -98%", without telling each later command again
    from hourly.demo.repos import Change, make_repos
    made = make_repos(tmp_path / "repos", [
        Change("xla", "2023-08-24T10:30:00Z", "[XLA] Tidy", {"tidy.txt": "1\n"}),
        Change("xla", "2023-08-24T11:30:00Z", "[XLA:GPU] Sixty times faster", {"perf/fast.txt": "0.0166667\n"}),
        Change("xla", "2023-08-24T12:30:00Z", "[XLA] Tidy again", {"tidy.txt": "2\n"}),
    ])
    work = tmp_path / "work"
    code, out, err = run_cli(capsys, [
        "scan", "--from", "Aug 24 2023 10:00", "--to", "Aug 24 2023 13:00", "--xla-repo", str(made.xla),
        "--jax-repo", str(made.jax), "--build-cmd", str(made.build_script), "--python", venv_python,
        "--bench-cmd", f"python3 {made.bench_script}", "--workdir", str(work), "--lower-is-better"])
    assert code == 0, err
    assert "▲ improvement -98.3%" in out and "regression" not in out
    code, out, err = run_cli(capsys, ["show", "--workdir", str(work)])
    assert code == 0, err
    assert "▲ improvement -98.3%" in out and "regression" not in out
    code, out, err = run_cli(capsys, ["detect", str(work), "--json"])
    assert code == 0, err
    (change,) = json.loads(out)["changes"]
    assert change["kind"] == "improvement"
    assert change["relative_change"] == pytest.approx(-0.983, abs=0.002)
    code, out, err = run_cli(capsys, ["report", "--workdir", str(work)])
    assert code == 0, err
    md = (work / "report" / "report.md").read_text()
    assert "(lower is better)" in md and "| improvement |" in md and "regression" not in md.lower()
    # a flag still wins over the stored direction
    code, out, err = run_cli(capsys, ["detect", str(work), "--json", "--higher-is-better"])
    assert json.loads(out)["changes"][0]["kind"] == "regression"


# A benchmark whose first runs of one pair read 10 % slow (a cold cache, a noisy neighbour), or
# ONCE_FACTOR times their value: SLOW_FILE holds "<xla sha> <slow runs left>".
SLOW_ONCE = r'''
import os, random
from pathlib import Path
import jax_demo
slow = Path(os.environ["SLOW_FILE"])
sha, left = slow.read_text().split()
value = 577.1 * jax_demo.FACTOR * (1 + random.gauss(0, float(os.environ.get("DEMO_NOISE", "0.002"))))
if jax_demo.XLA_SHA.startswith(sha) and int(left) > 0:
    slow.write_text(f"{sha} {int(left) - 1}")
    value *= float(os.environ.get("ONCE_FACTOR", "0.9"))
print(f"MLUPS: {value:.2f}")
'''


def edge_scan(scan_args, made, tmp_path, frm: str, to: str, slow_sha: str = "none", *extra: str) -> list[str]:
    bench = tmp_path / "slow_once.py"
    bench.write_text(SLOW_ONCE)
    (tmp_path / "slow.txt").write_text(f"{slow_sha} 1")
    args = scan_args(frm, to, "--env", f"SLOW_FILE={tmp_path / 'slow.txt'}", *extra)
    args[args.index("--bench-cmd") + 1] = f"python3 {bench}"
    return args


def origins(workdir: Path) -> dict[str, int]:
    with sqlite3.connect(workdir / "hourly.sqlite") as c:
        return dict(c.execute("SELECT origin, COUNT(*) FROM measurements GROUP BY origin").fetchall())


def test_an_edge_step_is_measured_again_and_confirmed(capsys, scan_args, made, tmp_path):
    # the fusion heuristic (-7 %) lands at 13:20: the scan's last pair alone is at the new level (two
    # pairs before it)
    work = tmp_path / "work"
    args = edge_scan(scan_args, made, tmp_path, "Aug 24 2023 10:00", "Aug 24 2023 14:00")
    # --no-confirm-edges: reported, unconfirmed, nothing measured again; three pairs of one run each
    # only assume the noise, so the step is named and is no answer (exit 1 with the scan that tells),
    # as `hourly detect` says of the same table
    code, out, err = run_cli(capsys, args + ["--no-confirm-edges"])
    assert code == ASSUMED_NOISE and "edge step: one pair on its side, measure it again to confirm" in " ".join(out.split())
    said = " ".join(err.split())
    assert ("hourly: error: cannot tell whether the step above is real: too few pairs to measure "
            "the noise") in said and "is assumed, not measured" in said, err
    again = shlex.split(err[err.index("hourly scan "):].strip())
    assert again[-1] == "--rerun" and again[again.index("--repeats") + 1] == "3"
    assert origins(work) == {"scan": 3}
    code, shown, err = run_cli(capsys, ["show", "--workdir", str(work), "--json"])
    assert code == ASSUMED_NOISE and json.loads(shown)["edge_checks"] == [] and "cannot tell" in err
    assert run_cli(capsys, ["detect", str(work)])[0] == ASSUMED_NOISE  # detect's answer on the same table
    # the same scan without the flag measures the edge pair and its neighbour again, building nothing
    code, out, err = run_cli(capsys, args)
    assert code == 0, err
    assert "edge ✔" in out  # the table's mark
    line = next(ln for ln in unwrap(out) if "regression" in ln and "between" in ln)
    assert "edge step confirmed, measured again (5 / 5 samples)" in line
    assert "0 builds" in out
    # 5 runs each, as rows of their own
    assert origins(work) == {"scan": 3, "confirm": 2}
    shown = json.loads(run_cli(capsys, ["show", "--workdir", str(work), "--json"])[1])
    (check,) = shown["edge_checks"]
    assert check["verdict"] == "confirmed" and check["side"] == "last"
    assert check["samples_before"] == check["samples_after"] == 5
    assert check["relative_change"] == pytest.approx(-0.07, abs=0.01)
    assert check["after"] == shown["points"][-1]["time"]
    # the scan's own table is the scan's: one sample per point, as measured
    assert [len(p["samples"]) for p in shown["points"]] == [1] * len(shown["points"])
    # the same scan again measures nothing: the confirmation is stored
    result = scan_json(capsys, args)
    assert result["edge_checks"] == shown["edge_checks"] and origins(work) == {"scan": 3, "confirm": 2}
    run_cli(capsys, ["report", "--workdir", str(work)])
    md = (work / "report" / "report.md").read_text()
    assert "(edge, confirmed)" in md and "**confirmed**" in md


def test_an_edge_step_that_was_one_slow_run_is_called_an_outlier(capsys, scan_args, made, tmp_path):
    # no change lands in the window, but one run of its last pair (xla's autotuning commit) is slow;
    # without a warm-up run that slow run is the pair's only sample (with one, the warm-up is the
    # slow first run and nothing is seen: test_the_warm_up_run_hides_a_slow_first_run)
    work = tmp_path / "work"
    sha = made.shas["[XLA:GPU] Add autotuning cache key"]
    args = edge_scan(scan_args, made, tmp_path, "Aug 24 2023 09:00", "Aug 24 2023 13:00", sha[:12],
                     "--warmup-runs", "0")
    # three pairs of one run each: the outlier is told by measuring again, but the rest of the window
    # has only an assumed noise, so no "no steps found" (exit 1, the scan that measures each pair 3 times)
    result = scan_json(capsys, args, ASSUMED_NOISE)
    (check,) = result["edge_checks"]
    assert check["verdict"] == "outlier" and check["pairs"][1]["xla"] == sha
    assert abs(check["relative_change"]) < 0.01
    assert result["points"][-1]["value"] == pytest.approx(0.9 * 577.1, rel=0.01)  # the scan's value stays
    code, out, _ = run_cli(capsys, ["show", "--workdir", str(work)])
    assert code == ASSUMED_NOISE and re.search(r"│ [▼▲] [-+][\d.]+% outlier$", out, re.M), out  # the table's mark
    assert "edge step NOT confirmed" in " ".join(out.split()) and "nothing to bisect" in " ".join(out.split())
    # `hourly detect` on the workdir reads the same check (it named the outlier a step to confirm, exit 0)
    code, out, err = run_cli(capsys, ["detect", str(work)])
    said = " ".join(out.split())
    assert code == ASSUMED_NOISE and "no step found" not in said and "measure it again to confirm" not in said, out + err
    assert "too few points to measure the noise" in said and "--repeats 3" in " ".join(err.split())
    assert "edge step NOT confirmed" in said and "the scan's value was an outlier, nothing to bisect" in said
    code, out, _ = run_cli(capsys, ["detect", str(work), "--json"])
    assert code == ASSUMED_NOISE and [c["edge_check"] for c in json.loads(out)["changes"]] == ["outlier"]
    run_cli(capsys, ["report", "--workdir", str(work)])
    md = (work / "report" / "report.md").read_text()
    assert "(edge, outlier)" in md and "**not confirmed**" in md
    # plain `hourly bisect` leaves it alone (measured again, it is no regression), and says the rest
    # of the window cannot tell rather than "nothing to bisect"
    code, out, err = run_cli(capsys, ["bisect", "--workdir", str(work), "--json"])
    assert code == ASSUMED_NOISE and "too few pairs to measure the noise" in err and "nothing to bisect" not in out, err


def test_an_edge_step_measured_again_the_other_way_is_no_answer(capsys, scan_args, made, tmp_path):
    """The fusion heuristic (-7 %) lands at 13:20, and the one run of the last pair reads 20 % fast:
    the scan sees an edge improvement, measuring again reads the regression. Neither the step the
    scan reported nor an outlier (it said "outlier, nothing to bisect", exit 0): scan, show and
    bisect exit 1 naming what was read and the scan with more repeats."""
    work = tmp_path / "work"
    sha = made.shas["[XLA] Fix typo in comment"]  # 13:45: the last pair's xla
    args = edge_scan(scan_args, made, tmp_path, "Aug 24 2023 10:00", "Aug 24 2023 14:00", sha[:12],
                     "--warmup-runs", "0", "--env", "ONCE_FACTOR=1.2")
    code, out, err = run_cli(capsys, args)
    assert code == 1 and re.search(r"│ ▲ \+[\d.]+% reversed$", out, re.M), out  # the table's mark
    assert "nothing to bisect" not in " ".join(out.split())
    said = " ".join(err.split())
    assert "hourly: error: the edge step between 2023-08-24T13:00:00Z and 2023-08-24T14:00:00Z, measured again, " \
           "moved the other way" in said and "one run per pair is too noisy to read it" in said
    again = shlex.split(err[err.index("hourly scan "):].strip())
    assert again[-1] == "--rerun" and again[again.index("--repeats") + 1] == "3"
    code, _, err = run_cli(capsys, ["show", "--workdir", str(work)])
    assert code == 1 and "moved the other way" in err
    code, out, err = run_cli(capsys, ["bisect", "--workdir", str(work)])
    assert code == 1 and "moved the other way" in err and "then run hourly bisect again" in err
    assert "nothing to bisect" not in out + err
    run_cli(capsys, ["report", "--workdir", str(work)])
    md = (work / "report" / "report.md").read_text()
    assert "(edge, reversed)" in md and "**not confirmed, and not an outlier**" in md


def test_the_warm_up_run_hides_a_slow_first_run(capsys, scan_args, made, tmp_path):
    # the same slow first run of the last pair is the warm-up run by default: recorded, not counted
    sha = made.shas["[XLA:GPU] Add autotuning cache key"]
    args = edge_scan(scan_args, made, tmp_path, "Aug 24 2023 09:00", "Aug 24 2023 13:00", sha[:12])
    result = scan_json(capsys, args, ASSUMED_NOISE)  # three pairs of one run each
    assert result["edge_checks"] == [] and result["points"][-1]["value"] == pytest.approx(577.1, rel=0.01)
    rows = sqlite3.connect(tmp_path / "work" / "hourly.sqlite").execute(
        "SELECT runs FROM measurements WHERE xla = ?", (sha,)).fetchall()
    runs = json.loads(rows[0][0])
    assert runs[0]["warmup"] and runs[0]["value"] == pytest.approx(0.9 * 577.1, rel=0.01)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_and_sighup_stop_like_ctrl_c(sig, scan_args, made, tmp_path):
    """`timeout`, `docker stop`, a Slurm time limit (SIGTERM) and an ssh drop (SIGHUP) end a scan as
    Ctrl-C does: trees restored, finished pairs kept, the resume line, exit 128 + the signal."""
    args, code, err = _signal_a_scan(sig, scan_args, made, tmp_path)
    assert code == 128 + sig, err
    assert f"stopped by {signal.Signals(sig).name}" in err and "resume with" in err and "hourly scan --from" in err
    kept = measurement_count(tmp_path / "work")
    assert kept >= 1
    # the same command goes on from there: nothing finished is measured again (at full speed: the
    # benchmark's content is not part of the measurements' key, its command is)
    made.bench_script.write_text(made.bench_script.read_text().replace("import time; time.sleep(0.5)\n", "", 1))
    again = subprocess.run([sys.executable, "-m", "hourly", *args, "--json"], capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["builds"] <= json.loads(again.stdout)["distinct_pairs"] - kept + 1


# -- missing history is an error before anything is built (#22 item 1) ------------------------------

def test_instants_inside_a_shallow_clones_cut_off_stop_the_scan_with_the_fix(capsys, scan_args, made, tmp_path):
    """A shallow clone's history stops at its cut-off: the hours before it have no commit. Leaving
    them out would turn a regression there into "no steps found"; the scan stops instead."""
    shallow = tmp_path / "jax-shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "2", f"file://{made.upstream['jax']}", str(shallow)], check=True)
    assert GitRepo(shallow, "jax").is_shallow()
    cut = min(int(x) for x in subprocess.run(["git", "-C", str(shallow), "log", "--first-parent", "--format=%ct",
                                              "origin/main"], capture_output=True, text=True, check=True).stdout.split())
    args = scan_args("Aug 24 2023 12:00", "Aug 24 2023 15:00")
    args[args.index("--jax-repo") + 1] = str(shallow)
    for extra in ([], ["--dry-run"]):
        code, out, err = run_cli(capsys, args + extra)
        assert code == 1, err
        line = err.strip().splitlines()[-1]
        assert "4 of 4 instants" in line and "shallow clone" in line
        assert f"git -C {shallow} fetch --unshallow" in line
        assert f"--from at or after {iso_utc(datetime.fromtimestamp(cut, timezone.utc))}" in line
        assert "no steps" not in out
    assert not (tmp_path / "work").exists()  # stopped before anything was built or stored


def test_a_bisection_whose_earlier_end_lies_inside_a_shallow_cut_off_stops_with_the_fix(capsys, scan_args, made,
                                                                                       tmp_path):
    """`hourly bisect --good/--bad` over a shallow clone: the states began at the cut-off, and a
    regression in the hours before it went unsearched — the answer named a later commit, exit 0.
    Now it stops as the scan does, naming the end by the user's flag (--bad, finding a fix)."""
    shallow = tmp_path / "xla-shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "3", f"file://{made.upstream['xla']}", str(shallow)], check=True)
    cut = min(int(x) for x in subprocess.run(["git", "-C", str(shallow), "log", "--first-parent", "--format=%ct",
                                              "origin/main"], capture_output=True, text=True, check=True).stdout.split())
    since = iso_utc(datetime.fromtimestamp(cut, timezone.utc))
    args = scan_args()
    common = args[args.index("--xla-repo"):]
    common[common.index("--xla-repo") + 1] = str(shallow)
    for ends, flag in ((["--good", "Aug 24 2023 10:00", "--bad", "Aug 26 2023 12:00"], "--good"),
                       (["--bad", "Aug 24 2023 10:00", "--good", "Aug 26 2023 12:00", "--find-fix"], "--bad")):
        code, out, err = run_cli(capsys, ["bisect", *ends, *common])
        line = " ".join(err.split())
        assert code == 1 and out == "", err
        assert (f"the window's earlier end ({flag} 2023-08-24T10:00:00Z) lies before the history of the xla "
                f"repository {shallow}: the cut-off of the shallow clone ({since})") in line, line
        assert f"git -C {shallow} fetch --unshallow" in line and f"or pass {flag} at or after {since}" in line
    assert not (tmp_path / "work").exists()  # stopped before anything was built or stored


def test_from_before_the_first_commit_stops_the_scan_naming_the_first_commits_date(capsys, scan_args, tmp_path):
    # the demo's history starts at 2023-08-23T12:00:00Z: 09:00..11:00 have no commit
    code, out, err = run_cli(capsys, scan_args("Aug 23 2023 09:00", "Aug 23 2023 13:00"))
    assert code == 1
    line = err.strip().splitlines()[-1]
    assert "3 of 5 instants" in line and "2023-08-23T09:00:00Z .. 2023-08-23T11:00:00Z" in line
    assert "--from at or after 2023-08-23T12:00:00Z" in line and "unshallow" not in line
    assert measurements_or_none(tmp_path / "work") is None


def measurements_or_none(workdir: Path):
    return measurements(workdir) if (workdir / "hourly.sqlite").exists() else None


# -- an interrupted scan does not look finished (#22) -------------------------------------------------

def test_an_interrupted_scan_is_incomplete_in_show_json_bisect_and_report_until_resumed(capsys, scan_args, made, tmp_path):
    work = tmp_path / "work"
    args = scan_args("Aug 24 2023 00:00", "Aug 24 2023 23:00")
    bench = made.bench_script
    bench.write_text("import time; time.sleep(0.4)\n" + bench.read_text())
    p = subprocess.Popen([sys.executable, "-m", "hourly", *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    wait_for_measurements(p, work, 1, timeout=240)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    n = measurement_count(work)
    assert 1 <= n < 8  # the regression (13:20) lies in what was not measured

    code, out, err = run_cli(capsys, ["show", "--workdir", str(work)])
    assert code == 1
    assert "no steps found" not in out and "no step found in the part measured so far" in out
    note = next(ln for ln in unwrap(out) if ln.startswith("incomplete: "))  # lines wrap at the width
    assert "distinct pairs not measured yet" in note and "run the same scan again to resume: hourly scan " in note
    assert "the scan is incomplete" in err and "resume it: hourly scan --" in err and "--from" in err

    code, out, _ = run_cli(capsys, ["show", "--json", "--workdir", str(work)])
    got = json.loads(out)
    assert code == 1 and got["complete"] is False and got["gaps"] and got["gaps"][-1]["to"] == "2023-08-24T23:00:00Z"
    assert sum(g["pairs"] for g in got["gaps"]) == len({(q["xla"], q["jax"]) for q in got["points"]
                                                       if q["status"] == "planned"})

    code, out, err = run_cli(capsys, ["bisect", "--workdir", str(work)])
    assert code == 1 and "nothing to bisect" not in err + out
    assert "the scan is incomplete" in err and "resume the scan with the same command" in err

    assert main(["report", "--workdir", str(work), "--out", str(tmp_path / "report")]) == 0
    md = (tmp_path / "report" / "report.md").read_text()
    assert "## Incomplete scan" in md and "No step change was detected in the scanned window." not in md
    assert got["resume"] in md

    # the command it names resumes the scan: then the table is complete and the regression found
    bench.write_text(bench.read_text().replace("import time; time.sleep(0.4)\n", ""))
    code, out, err = run_cli(capsys, shlex.split(got["resume"])[1:])
    assert code == 0, err
    assert "incomplete" not in out and "1 step found:" in out.replace("2 steps", "1 step")
    assert measurement_count(work) > n
    code, out, _ = run_cli(capsys, ["show", "--json", "--workdir", str(work)])
    assert code == 0 and json.loads(out)["complete"] is True and json.loads(out)["gaps"] == []


# -- a second, smaller step after a large one (issue 24) ------------------------------------------------

# Run n of the scan draws its noise from Random("<seed>-<n>"): seeded, yet every run its own process.
SEEDED_NOISE = r'''
import os, pathlib, random
import jax_demo
counter = pathlib.Path(os.environ["BENCH_COUNTER"])
n = int(counter.read_text()) if counter.exists() else 0
counter.write_text(str(n + 1))
rng = random.Random(f"{os.environ['BENCH_SEED']}-{n}")
print(f"MLUPS: {577.1 * jax_demo.FACTOR * (1 + rng.gauss(0, 0.007)):.3f}")
'''


# quick: test_detect.py::test_a_smaller_step_after_a_large_one_is_found covers the re-test of each fitted
# segment on its own noise (200 seeds and the table); test_detect_on_a_workdir_never_says_no_step_where_its_values_cannot_show_one
# and test_table_output_and_show cover reading a scan's workdir with detect and show
@pytest.mark.slow
@pytest.mark.parametrize("seed", [1])
def test_a_smaller_step_after_a_large_one_is_a_step_of_its_own(capsys, venv_python, tmp_path, seed):
    """Issue 24: a 6-hourly scan of three days (3 repeats, 0.7 % noise per run) over an XLA step of
    -7 % and, a day later, a JAX step of -2 %. The -2 % step lay inside the -7 % step's new level,
    whose noise its own difference inflated, and was folded into it; it is a step of its own."""
    from hourly.demo.repos import Change, make_repos

    changes = []
    for day in (23, 24, 25, 26):   # a commit in each repository every 6 hours: each instant a new pair
        for hour in (1, 7, 13, 19):
            changes.append(Change("xla", f"2023-08-{day}T{hour:02d}:10:00Z", f"[XLA] change {day}-{hour}",
                                  {f"x/{day}-{hour}.txt": "1\n"}))
            changes.append(Change("jax", f"2023-08-{day}T{hour:02d}:40:00Z", f"jax change {day}-{hour}",
                                  {f"j/{day}-{hour}.txt": "1\n"}))
    changes = [c for c in changes if c.when > "2023-08-23T12:30"]
    large = Change("xla", "2023-08-24T14:20:00Z", "Slower fusion", {"perf/fusion.txt": "0.93\n"})
    small = Change("jax", "2023-08-25T15:00:00Z", "Slightly slower dispatch", {"perf/dispatch.txt": "0.98\n"})
    made = make_repos(tmp_path / "repos", changes + [large, small])
    bench = tmp_path / "seeded_noise.py"
    bench.write_text(SEEDED_NOISE)
    result = scan_json(capsys, [
        "scan", "--from", "2023-08-23T18:00Z", "--to", "2023-08-26T18:00Z", "--step", "6h", "--repeats", "3",
        "--xla-repo", str(made.xla), "--jax-repo", str(made.jax), "--build-cmd", str(made.build_script),
        "--python", venv_python, "--bench-cmd", f"python3 {bench}", "--workdir", str(tmp_path / "work"),
        "--env", f"BENCH_SEED={seed}", "--env", f"BENCH_COUNTER={tmp_path / 'runs'}"])
    assert len(result["points"]) == 13 and result["distinct_pairs"] == 13
    # the steps the scan found, as `hourly detect` reads them from its workdir, and as `show` prints them
    code, out, err = run_cli(capsys, ["detect", str(tmp_path / "work"), "--json"])
    assert code == 0, err
    found = json.loads(out)["changes"]
    assert [(c["before"], c["after"], c["kind"]) for c in found] == [
        ("2023-08-24T12:00:00Z", "2023-08-24T18:00:00Z", "regression"),
        ("2023-08-25T12:00:00Z", "2023-08-25T18:00:00Z", "regression")], found
    assert [round(c["relative_change"], 2) for c in found] == [-0.07, -0.02]
    code, out, err = run_cli(capsys, ["show", "--workdir", str(tmp_path / "work")])
    assert code == 0, err
    lines = [ln for ln in unwrap(out) if ln.startswith("▼ regression")]
    assert len(lines) == 2 and "between 2023-08-25T12:00:00Z and 2023-08-25T18:00:00Z" in lines[1], out


def test_detect_on_a_workdir_never_says_no_step_where_its_values_cannot_show_one(capsys, scan_args, tmp_path):
    """issue 33: detect read a workdir's values alone: a metric that stops printing (a window `show`
    names) and a scan stopped after its first pair (its unmeasured pair a "failed" point) were both
    "no step found", exit 0."""
    bench = tmp_path / "nan_later.py"
    bench.write_text("import jax_demo\nprint('MLUPS: nan' if jax_demo.FACTOR < 1 else 'MLUPS: 577')\n")
    args = scan_args("Aug 24 2023 12:00", "Aug 24 2023 15:00")
    args[args.index("--bench-cmd") + 1] = f"python3 {bench}"
    work = Path(args[args.index("--workdir") + 1])
    assert run_cli(capsys, args)[0] == 0
    for json_out in ([], ["--json"]):
        code, out, err = run_cli(capsys, ["detect", str(work), *json_out])
        said = " ".join(err.split())
        assert code == 1 and "no step found" not in out, out + err
        assert ("but its scan holds 1 window where the runs change how they end (metric_lost: 2023-08-24T13:00:00Z → "
                "2023-08-24T14:00:00Z), which detect does not read (it reads values) — hourly show --workdir "
                f"{work} lists them, hourly bisect --workdir {work} bisects them") in said

    bench.write_text("print('no metric here')\n")  # the scan stops after its first pair
    args = with_flags(args, "--workdir", str(tmp_path / "stopped"))
    assert run_cli(capsys, args)[0] == 1
    code, out, err = run_cli(capsys, ["detect", str(tmp_path / "stopped"), "--json"])
    assert code == 1 and [p["status"] for p in json.loads(out)["points"]] == ["failed"]  # planned is no failure
    said = " ".join(err.split())
    assert "but the scan is incomplete (1 of 2 pairs not measured): a step there is not seen — run the same scan " \
           "again to resume it: hourly scan --from" in said


def test_a_build_stopped_inside_git_leaves_no_changed_tree(capsys, scan_args, made, tmp_path):
    """A tree is handed back with no tracked file changed even when the last build left git's
    index.lock (as a git killed by a signal does) and an edit: hourly checks it out again."""
    jax = GitRepo(made.jax, "jax")
    wrapper = tmp_path / "build-then-lock.sh"
    wrapper.write_text(f"#!/bin/sh\n{made.build_script} \"$@\" || exit $?\n"
                       f"echo edited >> {made.jax}/build/requirements.in\n"
                       f"touch {jax.git_dir}/index.lock\n")
    wrapper.chmod(0o755)
    args = scan_args("Aug 24 2023 12:00", "Aug 24 2023 12:00", "--json")
    args[args.index("--build-cmd") + 1] = str(wrapper)
    code, out, err = run_cli(capsys, args)
    assert code == 0, err
    assert json.loads(out)["distinct_pairs"] == 1
    assert jax.head_state().branch == "main" and jax.dirty_files() == []
    assert not (jax.git_dir / "index.lock").exists()


def test_a_to_off_the_step_grid_is_measured_and_shown(capsys, scan_args, tmp_path):
    """issue 33 item 1: --to 13:30 with --step 1h planned 11:00-13:00 only and missed the -7 % XLA
    commit at 13:20 ("no steps found"); the window's end is an instant of its own, in the plan, the
    table and the JSON, and the step is there. (Its pair after the step is alone on its side: an
    edge step, not measured again here: test_an_edge_step_is_measured_again_and_confirmed.)"""
    args = scan_args("2023-08-24 11:00", "2023-08-24 13:30", "--repeats", "2", "--no-confirm-edges")
    plan = scan_json(capsys, args + ["--dry-run"])
    assert [p["time"][11:16] for p in plan["points"]] == ["11:00", "12:00", "13:00", "13:30"]
    result = scan_json(capsys, args)
    assert [p["time"][11:16] for p in result["points"]] == ["11:00", "12:00", "13:00", "13:30"]
    code, out, err = run_cli(capsys, ["detect", str(tmp_path / "work"), "--json"])
    assert code == 0, err
    (step,) = json.loads(out)["changes"]
    assert (step["kind"], step["before"], step["after"]) == ("regression", "2023-08-24T13:00:00Z", "2023-08-24T13:30:00Z")
    code, out, _ = run_cli(capsys, scan_args("2023-08-24 11:00", "2023-08-24 13:30", "--no-confirm-edges",
                                             "--step", "2h"))
    assert code == 0 and "2023-08-24T13:30:00Z" in out and "no steps found" not in out


def test_two_steps_in_four_single_run_pairs_are_not_no_steps_found(capsys, scan_args, tmp_path, monkeypatch):
    """issue 33 item 2: four pairs measured once each, 578, 537, 537, 509 (the -7 % XLA commit and
    the -5 % JAX merge): the differences between neighbours are the steps themselves, so the scan
    cannot say "no steps found", and the bisection cannot say "nothing to bisect"; both exit 1
    naming the scan that measures each pair three times, and that scan finds both steps.

    Without noise between runs ("±0.0 % per date", as the issue measured): with the demo's ±0.2 %
    the two middle pairs, the same level, read 0.2 % apart often enough (1 in 4–6 runs) that three
    repeats each call it noise the repeats do not see, and the second scan is rightly unsure."""
    monkeypatch.setenv("DEMO_NOISE", "0")
    # the last pair is alone after the second step: an edge step, not measured again here
    # (test_an_edge_step_is_measured_again_and_confirmed); the command it names keeps the flag
    args = scan_args("2023-08-24 12:00", "2023-08-25 13:00", "--step", "12h", "--no-confirm-edges")
    code, out, err = run_cli(capsys, args)
    assert code == 1 and "no steps found" not in out
    assert any(line.startswith("too few pairs to tell noise from steps") for line in unwrap(out))
    assert "hourly: error: the scan has too few pairs to tell noise from steps" in err
    again = shlex.split(err[err.index("hourly scan "):].strip())
    assert again[-1] == "--rerun" and again[again.index("--repeats") + 1] == "3"
    assert "--no-confirm-edges" in again, again
    code, out, err = run_cli(capsys, ["bisect", "--workdir", str(tmp_path / "work")])
    assert code == 1 and "nothing to bisect" not in out + err
    assert "too few pairs to tell noise from steps" in err and "then run hourly bisect again" in err
    code, out, err = run_cli(capsys, again[1:])
    assert code == 0, err
    assert "2 steps found" in out


@pytest.mark.parametrize("printed,regex", [("1e400", None), ("inf", r"MLUPS:\s*(?P<value>\S+)"),
                                           ("fast", r"MLUPS:\s*(?P<value>\S+)"),
                                           # issue 33: the default pattern reads a NaN as what it is
                                           ("nan", None), ("-inf", None)])
def test_a_metric_that_is_no_finite_number_is_no_metric_and_the_error_says_what_was_read(
        capsys, scan_args, tmp_path, printed, regex):
    """issue 33 item 5: `MLUPS: 1e400` overflowed to infinity and was stored as an ok value ("inf
    ±nan%", "no steps found"); any capture that is no finite number is no metric, and the scan's
    error names what the regex captured (not "never printed the metric")."""
    bench = tmp_path / "bench_inf.py"
    bench.write_text(f"print('MLUPS: {printed}')\n")
    args = scan_args("Aug 24 2023 12:00", "Aug 24 2023 13:00", *(["--metric-regex", regex] if regex else []))
    args[args.index("--bench-cmd") + 1] = f"python3 {bench}"
    code, out, err = run_cli(capsys, args + ["--json"])
    pts = json.loads(out)["points"]
    assert code == 1 and pts[0]["status"] == "no_metric" and pts[0]["value"] is None
    assert f"printed no finite number for the metric: --metric-regex captured '{printed}'" in err
    assert "never printed the metric" not in err


def test_a_metric_with_a_thousands_comma_is_read_whole_and_one_read_two_ways_is_refused(capsys, scan_args, tmp_path):
    """issue 44 case 4: `MLUPS: 1,234.5` was read as 1 ("no steps found"); it reads as 1234.5, and
    `MLUPS: 1,234` (1234 or 1.234) is refused with what was captured and what followed."""
    bench = tmp_path / "bench_comma.py"
    bench.write_text("print('MLUPS: 1,234.5')\n")
    args = scan_args("Aug 24 2023 12:00", "Aug 24 2023 13:00")
    args[args.index("--bench-cmd") + 1] = f"python3 {bench}"
    code, out, err = run_cli(capsys, args + ["--json"])
    assert code == 0, err
    assert {p["value"] for p in json.loads(out)["points"]} == {1234.5}
    bench.write_text("print('MLUPS: 1,234')\n")
    code, out, err = run_cli(capsys, args + ["--json", "--rerun"])
    assert code == 1 and {p["status"] for p in json.loads(out)["points"]} == {"no_metric"}
    assert ("printed a number hourly cannot read for the metric: the metric regex captured '1', followed by ',234': "
            "'1,234' reads as 1234 (a thousands comma) or 1.234 (a decimal comma) — print the number plainly") in err


@pytest.mark.parametrize("body,extra,said,fix", [
    ("print('MLUPS: nan')\n" * 3, ["--metric-samples", "all"],
     "printed no finite number for the metric: --metric-regex captured 'nan', 'nan', 'nan'", "check --metric-regex"),
    ("print('MLUPS: 5')\n" * 2, ["--metric-samples", "all", "--warmup-samples", "3"],
     "printed the metric only as warm-up samples: 2 of them, and --warmup-samples 3 drops each run's first ones",
     "pass a --warmup-samples below the times a run prints the metric (now 3 are dropped from each run)")])
def test_many_samples_that_count_none_say_what_was_printed(capsys, scan_args, tmp_path, body, extra, said, fix):
    """issue 33: with --metric-samples all, a run printing only NaN, or only warm-up samples, was
    said to have "never printed the metric"."""
    bench = tmp_path / "bench_samples.py"
    bench.write_text(body)
    args = scan_args("Aug 24 2023 12:00", "Aug 24 2023 13:00", *extra)
    args[args.index("--bench-cmd") + 1] = f"python3 {bench}"
    code, _, err = run_cli(capsys, args)
    flat = " ".join(err.split())
    assert code == 1 and re.search(rf"every run of the first measured pair \w+/\w+ {re.escape(said)} \(log ", flat)
    assert f"— {fix}" in flat and "never printed the metric" not in flat


def test_a_stored_window_that_cannot_be_bisected_is_no_answer_as_with_good_and_bad(capsys, scan_args, made, tmp_path):
    """cuDNN fused attention (+4 %, 03:10) lands in the window, and the scan's one run of the pair after
    it read 10 % slow: a regression on an assumed noise (exit 1). The bisection of that window reads
    its ends as they are (the later one better): "cannot bisect" is no answer (exit 1; the JSON's
    answer carries the error), as the same ends given as --good/--bad exit 1, whatever the judge's
    reason (ends that do not differ are refused the same way)."""
    work = tmp_path / "work"
    sha = made.shas["[XLA:GPU] Enable cuDNN fused attention"]
    args = edge_scan(scan_args, made, tmp_path, "Aug 26 2023 02:00", "Aug 26 2023 04:00", sha[:12],
                     "--warmup-runs", "0", "--no-confirm-edges")
    assert run_cli(capsys, args)[0] == ASSUMED_NOISE
    code, out, err = run_cli(capsys, ["bisect", "--workdir", str(work), "--max-repeats", "4", "--json"])
    (a,) = json.loads(out)["regressions"]
    assert "the bad end is not worse than the good end" in a["error"] and a["culprit"] is None
    said = " ".join(err.split())
    assert code == 1 and "hourly: error: the bad end is not worse than the good end" in said, err
    assert "pass --find-fix with --bad at this --good" in said  # the judge's fix, after the line
    code, out, err = run_cli(capsys, ["bisect", "--workdir", str(work), "--max-repeats", "4"])
    assert code == 1 and "cannot bisect: the bad end is not worse" in " ".join(out.split()), out + err
    ends = ["--good", a["window"]["good_time"], "--bad", a["window"]["bad_time"]]
    code, _, err2 = run_cli(capsys, ["bisect", *ends, "--workdir", str(work), "--max-repeats", "4"])
    first, again = (e.strip().splitlines()[-1] for e in (err, err2))
    assert code == 1 and again.split(" (")[0] == first.split(" (")[0], err2  # the same line, its own rounds
    assert again.split(" — ")[1] == first.split(" — ")[1]  # and the same fix


def test_an_incomplete_scan_whose_one_step_rests_on_an_assumed_noise_is_no_answer(capsys, scan_args, tmp_path):
    """A scan stopped before its last pair (its rows removed here, as an interrupted scan leaves
    them: test_an_interrupted_scan_is_incomplete_in_show_json_bisect_and_report_until_resumed) whose
    three measured pairs of one run each hold the fusion step: show printed the step, the incomplete
    line, the resume command and the assumed noise, and exited 0. Exit 1: incomplete and unresolved,
    the resume command first (its pairs measure the noise too), then the scan that repeats each pair."""
    work = tmp_path / "work"
    args = scan_args("Aug 24 2023 10:00", "Aug 24 2023 20:00", "--no-confirm-edges", "--warmup-runs", "0")
    run_cli(capsys, args)
    with sqlite3.connect(work / "hourly.sqlite") as c:  # the last pair (19:00-20:00: the jax bump) not measured
        (xla, jax_), = c.execute("SELECT xla, jax FROM measurements ORDER BY id DESC LIMIT 1").fetchall()
        c.execute("DELETE FROM measurements WHERE xla = ? AND jax = ?", (xla, jax_))
    for argv in (["show", "--workdir", str(work)], ["show", "--json", "--workdir", str(work)]):
        code, out, err = run_cli(capsys, argv)
        said = " ".join(err.split())
        assert code == 1, out + err
        assert ("hourly: error: the scan is incomplete (1 of 4 pairs not measured) and cannot tell whether the step "
                "above is real: too few pairs to measure the noise") in said, err
        resume, _, then = said.partition(" — ")[2].partition("; if the step still rests on an assumed noise, ")
        assert resume.startswith("run the same scan again to resume it: hourly scan --from") and "--rerun" not in resume
        assert then.startswith("measure each pair 3 times to tell: hourly scan") and then.endswith("--repeats 3 "
                               f"--warmup-runs 0 --workdir {work} --no-confirm-edges --rerun"), then
    got = json.loads(out)
    assert got["complete"] is False and got["resume"] in resume and "is assumed, not measured" in got["undecided"]
