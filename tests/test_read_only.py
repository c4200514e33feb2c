"""Commands that only read (``show``, ``report``, ``detect``) read a read-only workdir and write
nothing in it (issue 33; docs/faults.md): a real scan's store, made read-only the way it is met (a
read-only mount as root, permissions otherwise), real SQLite."""

from __future__ import annotations

import gc
import hashlib
import json
import os
import subprocess
from contextlib import contextmanager
from pathlib import Path

import pytest

from hourly.cli import main


def run_cli(capsys, argv):
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def files(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` by its digest."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@contextmanager
def read_only(folder: Path):
    """``folder`` read-only: a read-only bind mount of itself as root (root writes through
    permissions), its permissions otherwise."""
    if os.geteuid() == 0:
        bound = subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True, text=True)
        if bound.returncode:
            pytest.skip(f"root here cannot bind-mount, so nothing can be made read-only for root: {bound.stderr.strip()}")
        try:
            subprocess.run(["mount", "-o", "remount,bind,ro", str(folder)], check=True, capture_output=True)
            yield
        finally:
            gc.collect()  # a store a command left to the collector (hourly ran in this process) keeps the mount busy
            subprocess.run(["umount", str(folder)], check=True, capture_output=True)
        return
    modes = {p: p.stat().st_mode for p in [folder, *folder.rglob("*")]}
    for p in modes:
        p.chmod(modes[p] & ~0o222)
    try:
        yield
    finally:
        for p, mode in modes.items():
            p.chmod(mode)


def test_show_report_and_detect_read_a_read_only_workdir_and_write_nothing(capsys, scan_args, tmp_path, monkeypatch):
    work = tmp_path / "work"
    # a scan's store with a step: its edge not measured again, no warm-up runs (what the readers
    # read of them: test_scan's edge tests, test_bisect's warm-up test); three pairs of one run each
    # assume the noise, so every reader names the step and says it cannot tell (exit 1)
    code, _, err = run_cli(capsys, scan_args("Aug 24 2023 12:00", "Aug 24 2023 15:00", "--json", "--no-confirm-edges",
                                             "--warmup-runs", "0"))
    assert code == 1 and "cannot tell whether the step above is real" in err, err
    before = files(work)
    monkeypatch.setenv("COLUMNS", "200")

    def hourly(*argv: str) -> tuple[int, str, str]:  # in this process: the test is not about the process
        return run_cli(capsys, list(argv))
    with read_only(work):
        with pytest.raises(OSError):
            (work / "probe").write_text("")  # it is read-only
        code, out, err = hourly("show", "--workdir", str(work))
        assert code == 1 and "cannot tell whether the step above is real" in err, err
        assert "2023-08-24T14:00:00Z" in out and "1 step found" in out
        code, out, err = hourly("show", "--workdir", str(work), "--json")
        assert code == 1 and [p["status"] for p in json.loads(out)["points"]] == ["ok"] * 4
        code, out, err = hourly("detect", str(work), "--json")
        # three pairs of one run each, the edge not measured again: the step rests on an assumed
        # noise, said (with the scan that measures it, read from the read-only store), exit 1
        assert code == 1 and "cannot tell whether the 1 step above is real" in err, err
        assert [c["kind"] for c in json.loads(out)["changes"]] == ["regression"]
        code, out, err = hourly("report", "--workdir", str(work), "--out", str(tmp_path / "rep"))
        assert code == 0, err
        assert "Regression of" in (tmp_path / "rep" / "report.md").read_text()
        # its own folder cannot be written: one line naming --out
        code, _, err = hourly("report", "--workdir", str(work))
        assert code == 1 and "Traceback" not in err and "--out" in err and len(err.strip().splitlines()) == 1
    after = files(work)
    assert after == before


def test_a_store_read_while_a_scan_writes_sees_its_rows(capsys, scan_args, tmp_path):
    """Read-only opening reads the write-ahead log too: rows another process committed and has not
    checkpointed into the main file are shown."""
    import sqlite3
    work = tmp_path / "work"
    assert run_cli(capsys, scan_args("Aug 24 2023 12:00", "Aug 24 2023 13:00", "--json"))[0] == 0
    writer = sqlite3.connect(work / "hourly.sqlite", isolation_level=None)
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("INSERT INTO settings VALUES ('note', '\"written, not checkpointed\"')")
    try:
        from hourly.adapters.store import Store
        s = Store(work, create=False, read_only=True)
        assert s.load_settings("note") == "written, not checkpointed"
        s.close()
    finally:
        writer.close()
