"""Store, filesystem and configuration faults (issue 23 items 2, 3, 7): a damaged or empty store, a
full disk, a path under a regular file, a config that is a directory — each one line naming the file
and the fix (exit 1), never a traceback (exit 3). Real SQLite files, real processes, a real tmpfs."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from hourly.cli import main


def run_cli(capsys, argv):
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _one_error_line(code: int, err: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if ln.startswith("hourly:")]  # not the progress lines
    assert code == 1 and len(lines) == 1 and lines[0].startswith("hourly: error: "), (code, err)
    return lines[0]


@pytest.fixture
def stored(capsys, scan_args, tmp_path) -> Path:
    """A real store of a one-instant scan, checkpointed into its one file."""
    code, _, err = run_cli(capsys, scan_args("Aug 24 2023 12:00", "Aug 24 2023 12:00", "--no-sync"))
    assert code == 0, err
    db = tmp_path / "work" / "hourly.sqlite"
    with sqlite3.connect(db) as c:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return db


def _damage(db: Path, how: str) -> None:
    size = db.stat().st_size
    if how == "garbage":
        db.write_bytes(os.urandom(size))
    elif how == "truncated":  # the header and schema page survive, the tables' pages do not
        with open(db, "r+b") as f:
            f.truncate(4096 + 100)
    elif how == "zero-bytes":
        db.write_bytes(b"")
    elif how in ("no-points-table", "no-measurements-table"):  # a whole file that lacks a table of its schema
        with sqlite3.connect(db) as c:
            c.execute(f"DROP TABLE {how.split('-')[1]}")
        with sqlite3.connect(db) as c:
            c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for side in ("-wal", "-shm"):
        Path(f"{db}{side}").unlink(missing_ok=True)


@pytest.mark.parametrize("how", ["garbage", "truncated", "zero-bytes", "no-points-table", "no-measurements-table"])
def test_a_damaged_or_empty_store_is_one_line_and_never_written(capsys, stored, scan_args, tmp_path, how):
    _damage(stored, how)
    before = hashlib.sha256(stored.read_bytes()).hexdigest()
    work = str(tmp_path / "work")
    for argv in (["show", "--workdir", work], ["report", "--workdir", work], ["bisect", "--workdir", work],
                 ["detect", work], scan_args("Aug 24 2023 12:00", "Aug 24 2023 13:00", "--no-sync")):
        line = _one_error_line(*run_cli(capsys, argv)[::2])
        assert str(stored) in line, (argv, line)
        assert ("empty" if how == "zero-bytes" else "damaged") in line, line
        assert "--workdir" in line and "move" in line and "--bench-cmd" not in line, line
        assert hashlib.sha256(stored.read_bytes()).hexdigest() == before, argv  # never written to
        assert not Path(f"{stored}-wal").exists() or Path(f"{stored}-wal").stat().st_size == 0


def test_a_damaged_store_is_exit_1_in_a_real_process(stored, tmp_path):
    _damage(stored, "garbage")
    p = subprocess.run([sys.executable, "-m", "hourly", "show", "--workdir", str(tmp_path / "work")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1 and "unexpected" not in p.stderr
    assert p.stderr.startswith(f"hourly: error: the results store {stored} is damaged"), p.stderr


# -- a full disk: a real tmpfs of 1 MiB ---------------------------------------------------------------

@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs (needs root and mount); skipped with the reason where it cannot be mounted."""
    mnt = tmp_path / "small-disk"
    mnt.mkdir()
    if shutil.which("mount") is None:
        pytest.skip("no mount(8) here")
    got = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if got.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({got.stderr.strip() or got.returncode}): needs root")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def _fill(folder: Path, leave: int = 0) -> None:
    """Fill the file system of ``folder`` up to ``leave`` bytes free."""
    st = os.statvfs(folder)
    free = st.f_bavail * st.f_frsize
    with open(folder / "filler", "wb") as f:
        try:
            f.write(b"\0" * max(0, free - leave))
            f.flush()
        except OSError:
            pass


def test_a_full_disk_under_the_workdir_is_one_line_naming_it(capsys, scan_args, small_disk):
    work = small_disk / "work"
    work.mkdir()
    _fill(small_disk)
    args = scan_args("Aug 24 2023 12:00", "Aug 24 2023 12:00", "--no-sync")
    args[args.index("--workdir") + 1] = str(work)
    line = _one_error_line(*run_cli(capsys, args)[::2])
    assert "no space left" in line and str(work) in line and "free space" in line, line


def test_a_full_disk_under_the_report_is_one_line_naming_it(capsys, stored, tmp_path, small_disk):
    _fill(small_disk)
    out = small_disk / "report"
    line = _one_error_line(*run_cli(capsys, ["report", "--workdir", str(tmp_path / "work"), "--out", str(out)])[::2])
    assert "no space left" in line and str(out) in line and "--out" in line, line


def test_a_full_disk_under_the_cache_is_one_line_naming_it(capsys, scan_args, small_disk):
    _fill(small_disk)
    line = _one_error_line(*run_cli(capsys, scan_args("Aug 24 2023 12:00", "Aug 24 2023 12:00", "--no-sync",
                                                      "--cache-dir", str(small_disk / "cache")))[::2])
    assert str(small_disk / "cache") in line and "--cache-dir" in line, line


# -- paths that cannot be what they name ------------------------------------------------------------------

def test_a_cache_dir_under_a_regular_file_is_one_line(capsys, scan_args, tmp_path):
    (tmp_path / "plain").write_text("a file, not a folder\n")
    line = _one_error_line(*run_cli(capsys, scan_args("Aug 24 2023 12:00", "Aug 24 2023 12:00", "--no-sync",
                                                      "--cache-dir", str(tmp_path / "plain" / "cache")))[::2])
    assert f"{tmp_path / 'plain'}" in line and "--cache-dir" in line and "not a directory" in line, line


def test_a_report_out_under_a_regular_file_is_one_line(capsys, stored, tmp_path):
    (tmp_path / "plain").write_text("a file, not a folder\n")
    out = tmp_path / "plain" / "report"
    line = _one_error_line(*run_cli(capsys, ["report", "--workdir", str(tmp_path / "work"), "--out", str(out)])[::2])
    assert str(out) in line and "--out" in line and "not a directory" in line, line


def test_a_config_that_is_a_directory_is_one_line(capsys, tmp_path):
    (tmp_path / "conf").mkdir()
    for argv in (["config", "--config", str(tmp_path / "conf")], ["show", "--config", str(tmp_path / "conf")]):
        line = _one_error_line(*run_cli(capsys, argv)[::2])
        assert f"{tmp_path / 'conf'}" in line and "is a directory" in line and "--config" in line, line
