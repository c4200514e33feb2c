"""Waiting on real processes from tests: a condition polled until it holds, and the store's
measurement count (0 while the store is being created or is locked)."""

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
    try:
        with sqlite3.connect(workdir / "hourly.sqlite", timeout=5) as c:
            return c.execute("SELECT count(*) FROM measurements").fetchone()[0]
    except sqlite3.Error:
        return 0
