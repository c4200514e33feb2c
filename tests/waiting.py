"""Waiting on real processes from tests: a condition polled until it holds, and the store's
measurement count (0 while the store is being created or is locked; read-only, so polling never
makes the 0-byte file hourly refuses as an empty store)."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path


def wait_for(pred, timeout: float = 60, every: float = 0.1) -> bool:
    """Poll ``pred`` every ``every`` seconds; whether it held within ``timeout`` seconds."""
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(every)
    return False


def measurement_count(workdir: Path) -> int:
    path = workdir / "hourly.sqlite"
    if not path.exists():
        return 0
    try:  # read-only: a plain connect would create the file, 0 bytes, before hourly makes its store
        with sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=5) as c:
            return c.execute("SELECT count(*) FROM measurements").fetchone()[0]
    except sqlite3.Error:
        return 0


def wait_for_measurements(p, workdir: Path, n: int = 1, timeout: float = 240) -> None:
    """Wait until the hourly process ``p`` (started with stdout and stderr piped) has stored ``n``
    measurements in ``workdir``; fail at once with its output when it ends first, and with its
    output so far (after killing it) when the time runs out."""
    end = time.time() + timeout
    while time.time() < end:
        if measurement_count(workdir) >= n:
            return
        if p.poll() is not None:
            out, err = p.communicate()
            raise AssertionError(f"hourly ended with {p.returncode} before {n} measurement(s):\n{out}\n{err}")
        time.sleep(0.1)
    p.kill()
    out, err = p.communicate()
    raise AssertionError(f"no {n} measurement(s) in {timeout} s; hourly printed:\n{out}\n{err}")
