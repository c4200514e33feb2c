"""A manual bisection's verdicts (``hourly bisect --manual``, ``hourly mark``): the probe it waits
at, the verdicts given."""

from __future__ import annotations

import os
import socket
import time
from typing import Any

from hourly.adapters.store_tables.base import Tables


class ManualTables(Tables):
    """The ``manual_waiting`` and ``manual_marks`` tables (made on opening, no schema step)."""

    def set_waiting(self, bid: int, role: str, xla: str, jax: str) -> None:
        """The probe a manual bisection waits at (one per store: a bisection holds the store's lock)."""
        with self.transaction() as c:
            c.execute("INSERT OR REPLACE INTO manual_waiting VALUES (1, ?, ?, ?, ?, ?, ?, ?)",
                      (bid, role, xla, jax, os.getpid(), socket.gethostname(), time.time()))

    def clear_waiting(self) -> None:
        with self.transaction() as c:
            c.execute("DELETE FROM manual_waiting")

    def waiting(self) -> dict[str, Any] | None:
        """The probe a manual bisection waits at (or waited at, when it was killed there)."""
        r = self.conn.execute("SELECT * FROM manual_waiting WHERE slot=1").fetchone()
        return dict(r) if r else None

    def mark_waiting(self, verdict: str, source: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """A verdict (``hourly mark``) for the probe a manual bisection waits at, in one transaction:
        (the waiting row or None, the verdict already given there and not taken yet or None — then
        nothing is added)."""
        with self.transaction() as c:
            w = c.execute("SELECT * FROM manual_waiting WHERE slot=1").fetchone()
            if w is None:
                return None, None
            pending = c.execute("SELECT * FROM manual_marks WHERE bisection=? AND role=? AND xla=? AND jax=?"
                                " AND taken=0 ORDER BY id LIMIT 1", (w["bisection"], w["role"], w["xla"], w["jax"])
                                ).fetchone()
            if pending is not None:
                return dict(w), dict(pending)
            c.execute("INSERT INTO manual_marks (bisection, role, xla, jax, verdict, source, created)"
                      " VALUES (?, ?, ?, ?, ?, ?, ?)", (w["bisection"], w["role"], w["xla"], w["jax"], verdict, source,
                                                        time.time()))
            return dict(w), None

    def given_mark(self, bid: int, role: str, xla: str, jax: str) -> dict[str, Any] | None:
        """The oldest verdict ``hourly mark`` gave for that probe and not taken yet (it stays there
        until :meth:`took_mark`: a bisection killed in between takes it again when it resumes)."""
        r = self.conn.execute("SELECT * FROM manual_marks WHERE bisection=? AND role=? AND xla=? AND jax=? AND taken=0"
                              " ORDER BY id LIMIT 1", (bid, role, xla, jax)).fetchone()
        return dict(r) if r else None

    def took_mark(self, mark_id: int) -> None:
        """The verdict is in a probe row now: taken, and the probe no longer waited at."""
        with self.transaction() as c:
            c.execute("UPDATE manual_marks SET taken=1 WHERE id=?", (mark_id,))
            c.execute("DELETE FROM manual_waiting")

