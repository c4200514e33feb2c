"""What a workdir holds (issue 22, items 3 and 4): measurements keyed by the build too, and one
investigation per workdir. Real repositories, builds, benchmarks and SQLite through the CLI."""

from __future__ import annotations

import contextlib
import gc
import io
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from test_scan import run_cli, scan_json

from hourly.cli import main
from hourly.demo.repos import DEMO_CHANGES, Change, make_repos
from tests.argv import with_flags
from tests.conftest import copy_repos


def keys(workdir: Path) -> list[str]:
    with sqlite3.connect(workdir / "hourly.sqlite") as c:
        return [r[0] for r in c.execute("SELECT DISTINCT bench_key FROM measurements ORDER BY id")]


@pytest.fixture(scope="module")
def _first_scan(_pristine, venv_python, tmp_path_factory):
    """One scan of Aug 24 12:00-15:00 (two states) over a copy of the demo's repositories, made once
    for the file: its arguments, its JSON and its workdir. The tests that start from that scan take a
    copy of the workdir (``scanned``) and share the repositories (hourly gives the trees back as it
    found them); a workdir copied elsewhere is the same investigation (the copy test below)."""
    root = tmp_path_factory.mktemp("first-scan")
    made = copy_repos(_pristine, root / "repos")
    # the step at the window's edge is not measured again (test_scan's edge tests check that), and a
    # state just installed gets no warm-up run (test_bisect's warm-up test): measurements no check here
    # reads, under the same key, in every scan; two runs a pair measure the noise that two pairs of one
    # run each would only assume (a step on an assumed noise is no answer: exit 1)
    args = ["scan", "--from", "Aug 24 2023 12:00", "--to", "Aug 24 2023 15:00", "--xla-repo", str(made.xla),
            "--jax-repo", str(made.jax), "--build-cmd", str(made.build_script), "--python", venv_python,
            "--bench-cmd", f"python3 {made.bench_script}", "--workdir", str(root / "work"), "--no-confirm-edges",
            "--warmup-runs", "0", "--repeats", "2"]
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out):
        mp.chdir(root)  # as tests/conftest.py's _no_user_config sets each test up
        mp.setenv("HOURLY_LOG_DIR", str(root / "crash-logs"))
        mp.setenv("HOURLY_CACHE_DIR", str(root / "cache"))
        assert main([*args, "--json"]) == 0
    gc.collect()  # the stores the scan left to the collector: closed, the write-ahead log folded into the file
    return made, args, json.loads(out.getvalue()), root / "work"


@pytest.fixture
def scanned(_first_scan, tmp_path):
    """``(made, args, first, work)``: the first scan's repositories, its arguments with the test's own
    ``work`` as --workdir, its JSON, and ``work``: a copy of its workdir, the test's own; the test's
    build cache (``HOURLY_CACHE_DIR``) a copy of the one the scan filled, as if it had run the scan."""
    made, args, first, work = _first_scan
    shutil.copytree(work, tmp_path / "work")
    shutil.copytree(work.parent / "cache", tmp_path / "cache")
    return made, with_flags(args, "--workdir", str(tmp_path / "work")), first, tmp_path / "work"


def test_a_changed_build_command_builds_and_measures_again(capsys, scanned):
    made, args, first, work = scanned
    assert first["builds"] == 2
    # the same script, told to build for another GPU: another build, so other measurements
    i = args.index("--build-cmd")
    changed = args[:i + 1] + [f"env CUDA_ARCH=sm_90 {made.build_script}"] + args[i + 2:]
    second = scan_json(capsys, changed)
    assert second["builds"] == 2, "the old measurements were shown as the new build's"
    assert len(keys(work)) == 2
    # the environment a build sees is part of it too
    third = scan_json(capsys, args + ["--env", "XLA_FLAGS=--xla_gpu_enable_triton=false"])
    assert third["builds"] == 2
    # the first settings again reuse the first rows: nothing built or measured
    again = scan_json(capsys, args)
    assert again["builds"] == 0 and [p["value"] for p in again["points"]] == [p["value"] for p in first["points"]]
    # show reads the latest scan's rows
    code, out, err = run_cli(capsys, ["show", "--workdir", str(work), "--json"])
    assert code == 0, err
    assert [p["value"] for p in json.loads(out)["points"]] == [p["value"] for p in first["points"]]


def test_a_workdir_that_holds_another_benchmark_says_so(capsys, scanned):
    """A scan of another benchmark in a workdir measures afresh under its own key, and says at start
    what else the workdir holds and how to see it; `show` and `report` say it too (they read the newest
    scan's rows alone); the first scan's command again reuses its rows, as the line says."""
    made, args, first, work = scanned
    other = with_flags(args, "--bench-cmd", f"python3 -u {made.bench_script}")
    code, out, err = run_cli(capsys, other)
    assert code == 0, err
    said = [line for line in err.splitlines() if "also holds measurements" in line]
    assert said == [f"note: workdir {work} also holds measurements under another benchmark or build: benchmark "
                    f"python3 {made.bench_script} (2 states). This scan measures under its own key, apart from them; `hourly show` "
                    "and `hourly report` read the newest scan's alone: to see that one again, run its `hourly scan` "
                    "command again in this workdir (its stored measurements are reused, nothing is measured "
                    "again), or give each benchmark a --workdir of its own"], err
    assert err.index(said[0]) < err.index("building")  # at start, before any build
    assert len(keys(work)) == 2
    code, out, err = run_cli(capsys, ["show", "--workdir", str(work)])
    assert code == 0, err
    assert err.count("also holds measurements") == 1 and f"benchmark python3 {made.bench_script} (2 states)" in err
    assert "This scan" not in err and "also holds" not in out  # the table on stdout is this benchmark's alone
    code, out, err = run_cli(capsys, ["report", "--workdir", str(work)])
    assert code == 0, err
    md = (work / "report" / "report.md").read_text()
    assert "## Measurements of another benchmark or build in this workdir" in md
    assert f"- benchmark `python3 {made.bench_script}`: 2 states measured" in md
    # the first benchmark's command again: its rows, nothing measured; the line now names the other
    code, out, err = run_cli(capsys, args)
    assert code == 0, err
    assert "building" not in err and f"benchmark python3 -u {made.bench_script} (2 states)" in err, err
    code, out, err = run_cli(capsys, ["show", "--workdir", str(work), "--json"])
    assert code == 0 and "also holds" not in err + out, (out, err)  # JSON alone on stdout, and no note beside it
    assert [p["value"] for p in json.loads(out)["points"]] == [p["value"] for p in first["points"]]
    code, out, err = run_cli(capsys, ["bisect", "--workdir", str(work)])  # the newest scan's window
    assert code == 0, err
    assert err.splitlines()[0].startswith(f"note: workdir {work} also holds measurements under another benchmark "
                                          f"or build: benchmark python3 -u {made.bench_script} (2 states). This "
                                          "bisection measures under its own key, apart from them;"), err


def test_a_workdir_of_one_benchmark_says_nothing_of_others(capsys, scanned):
    """One scan's benchmark: nothing said. A bisection's rows under another build are not another
    scan (its answer is listed apart where it counts): nothing said of them either."""
    made, args, first, work = scanned
    from hourly.adapters.store import Store
    from hourly.adapters.store_tables.rows import Measurement
    store = Store(work)
    store.add_measurement("k-bisected-with-a-cherry-pick", Measurement("a" * 40, "b" * 40, "ok", 1.0, [1.0],
                                                                       origin="bisect"))
    store.close()
    code, out, err = run_cli(capsys, args)
    assert code == 0 and "also holds" not in err, err
    code, out, err = run_cli(capsys, ["show", "--workdir", str(work)])
    assert code == 0 and "also holds" not in err, err
    assert run_cli(capsys, ["report", "--workdir", str(work)])[0] == 0
    assert "another benchmark or build in this workdir" not in (work / "report" / "report.md").read_text()


def test_show_reads_the_scan_from_another_environment(capsys, scan_args, tmp_path, monkeypatch):
    """The key's environment part is the scan's: `show` from a shell without the scan's build
    variables reads its rows; `bisect`, which builds, says what differs instead of mixing."""
    monkeypatch.setenv("TF_CUDA_COMPUTE_CAPABILITIES", "sm_90")
    first = scan_json(capsys, scan_args("Aug 24 2023 12:00", "Aug 24 2023 15:00", "--no-confirm-edges",
                                            "--warmup-runs", "0", "--repeats", "2"))  # the noise measured
    monkeypatch.delenv("TF_CUDA_COMPUTE_CAPABILITIES")
    code, out, err = run_cli(capsys, ["show", "--workdir", str(tmp_path / "work"), "--json"])
    assert code == 0, err
    assert [p["value"] for p in json.loads(out)["points"]] == [p["value"] for p in first["points"]]
    code, out, err = run_cli(capsys, ["bisect", "--workdir", str(tmp_path / "work")])
    assert code == 1
    assert "build environment (TF_CUDA_COMPUTE_CAPABILITIES)" in err and len(err.strip().splitlines()) == 1


def test_a_store_written_before_keeps_its_rows_readable_and_unmixed(capsys, scanned):
    _, args, first, work = scanned
    from hourly.adapters.store import Store
    from hourly.measure.settings import stored_settings
    store = Store(work)
    s = stored_settings(store)
    old_key = s.legacy_bench_key()
    with sqlite3.connect(work / "hourly.sqlite") as c:  # as an older hourly left it
        c.execute("UPDATE measurements SET bench_key=?", (old_key,))
        c.execute("DELETE FROM settings WHERE name IN ('measure_key', 'investigation')")
    code, out, err = run_cli(capsys, ["show", "--workdir", str(work), "--json"])
    assert code == 0, err
    assert [p["value"] for p in json.loads(out)["points"]] == [p["value"] for p in first["points"]]
    code, out, err = run_cli(capsys, ["bisect", "--workdir", str(work)])
    assert code == 1 and "an older hourly" in err
    again = scan_json(capsys, args)  # measured again under the new key; the old rows stay as they were
    assert again["builds"] == 0 and all(p["status"] == "ok" for p in again["points"])
    assert keys(work)[0] == old_key and len(keys(work)) == 2


#: the demo's JAX history under other subjects: other commits at the same times (the test below
#: moves --jax-repo alone, so the other project's XLA side is left out)
OTHER_CHANGES = [Change(c.repo, c.when, c.subject + " (other project)", c.files, c.merged_at, c.author)
                 for c in DEMO_CHANGES if c.repo == "jax"]


def test_a_workdir_of_other_repositories_is_refused(capsys, scanned, tmp_path):
    _, args, _, work = scanned
    other = make_repos(tmp_path / "other", OTHER_CHANGES)
    i = args.index("--jax-repo")
    moved = args[:i + 1] + [str(other.jax)] + args[i + 2:]
    code, out, err = run_cli(capsys, moved)
    assert code == 1, out
    line = err.strip()
    assert "holds another investigation" in line and "jax repository" in line and "--workdir" in line
    assert len(line.splitlines()) == 1
    # bisect with an explicit window over the other repositories into this store: refused too
    code, out, err = run_cli(capsys, ["bisect", "--workdir", str(work), "--jax-repo", str(other.jax),
                                      "--good", "Aug 24 2023 12:00", "--bad", "Aug 24 2023 15:00"])
    assert code == 1 and "holds another investigation" in err


def test_a_copy_of_the_same_history_a_wider_window_and_a_rerun_are_the_same_investigation(
        capsys, scanned, tmp_path, repos_cache):
    _, args, _, _ = scanned  # a copy of the first scan's workdir, at another path
    assert scan_json(capsys, args)["builds"] == 0
    later = scan_json(capsys, with_flags(args, "--to", "Aug 24 2023 18:00"))
    assert len(later["points"]) == 7
    same = repos_cache(tmp_path / "copy", DEMO_CHANGES)  # the same commits at another path
    i = args.index("--jax-repo")
    scan_json(capsys, args[:i + 1] + [str(same.jax)] + args[i + 2:])


def test_a_window_that_does_not_meet_the_stored_one_is_refused(capsys, scanned):
    _, args, _, _ = scanned
    code, out, err = run_cli(capsys, with_flags(args, "--from", "Aug 25 2023 12:00", "--to", "Aug 25 2023 15:00"))
    assert code == 1
    assert "which this window does not meet" in err and "--workdir" in err


def test_two_runs_with_one_python_exclude_each_other(scan_args, made, tmp_path, repos_cache):
    """Two scans of separate trees into separate workdirs, one --python: the environment the builds
    are installed into is the one thing they share, and the second is refused at once."""
    import socket
    import subprocess
    import sys
    import time
    # the first run's benchmark waits until the second has been refused (it held a second per run
    # before: the first run's whole scan at a second a run, in the test's time)
    go = tmp_path / "go"
    made.bench_script.write_text(f"import os, time\nwhile not os.path.exists({str(go)!r}): time.sleep(0.02)\n"
                                 + made.bench_script.read_text())
    other = repos_cache(tmp_path / "copy", DEMO_CHANGES)  # its benchmark unheld: it runs after the first
    first = scan_args("Aug 24 2023 12:00", "Aug 24 2023 14:00", "--no-sync")
    second = list(first)
    for flag, value in (("--xla-repo", other.xla), ("--jax-repo", other.jax), ("--workdir", tmp_path / "work2"),
                        ("--bench-cmd", f"python3 {other.bench_script}"), ("--build-cmd", other.build_script)):
        second[second.index(flag) + 1] = str(value)
    holder = subprocess.Popen([sys.executable, "-m", "hourly", *first], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not list((tmp_path / "work" / "logs").glob("bench-*")) and time.monotonic() < deadline:
            time.sleep(0.1)  # the first run is measuring
        t0 = time.monotonic()
        late = subprocess.run([sys.executable, "-m", "hourly", *second], capture_output=True, text=True, timeout=120)
        assert late.returncode == 1, late.stdout + late.stderr
        line = late.stderr.strip()
        assert len(line.splitlines()) == 1 and time.monotonic() - t0 < 30
        assert "the Python environment" in line and f"pid {holder.pid} on {socket.gethostname()}" in line
        assert "--python" in line and "venv" in line
    finally:
        go.write_text("")
        out, err = holder.communicate(timeout=180)
    assert holder.returncode == 0, err
    # the holder is gone: the second run goes
    done = subprocess.run([sys.executable, "-m", "hourly", *second], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
