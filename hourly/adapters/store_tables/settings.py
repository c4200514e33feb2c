"""The named settings a workdir keeps: the last scan's settings, what each measurement key is made
of, and each --rerun under way."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any, NamedTuple

from hourly.adapters.store_tables.base import Tables
from hourly.text.privacy import holds_secret, owner_only

#: the settings row of every measurement key's identity (:meth:`Store.note_measure_key`)
MEASURE_KEYS = "measure_keys"


class Rerun(NamedTuple):
    """A --rerun under way (:meth:`SettingsTables.rerun`): when it began, and whether an
    earlier run began it (this one goes on with it)."""
    since: float
    resumed: bool

    def began(self) -> str:
        """When it began, in words for a note (the local time, to the minute)."""
        return time.strftime("%Y-%m-%d %H:%M", time.localtime(self.since))

    def going_on(self, kept: str, again: str = "the others are measured again") -> str:
        """The note of a run that goes on with it: what it keeps (``kept``: "the dates it has
        measured") and what it does again."""
        return f"going on with the --rerun begun {self.began()}: {kept} are kept, {again}"


class SettingsTables(Tables):
    """The ``settings`` table: a JSON value per name."""

    path: Path

    def save_settings(self, name: str, value: dict[str, Any]) -> None:
        """Keep ``value`` as ``name``. Settings that hold a secret's value (``--env API_TOKEN=...``,
        hourly.text.privacy) make the store's files readable by their owner alone, the store first."""
        if holds_secret(value):
            self.keep_private()
        with self.transaction() as c:
            c.execute("INSERT OR REPLACE INTO settings VALUES (?, ?)", (name, json.dumps(value)))

    def keep_private(self) -> None:
        """The store's file and its write-ahead log (which SQLite makes again with the store's
        mode) readable and writable by their owner alone."""
        for p in (self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm")):
            if p.exists():
                owner_only(p)

    def load_settings(self, name: str) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT value FROM settings WHERE name=?", (name,)).fetchone()
        return json.loads(row[0]) if row else None

    def delete_settings(self, name: str) -> None:
        with self.transaction() as c:
            c.execute("DELETE FROM settings WHERE name=?", (name,))

    # -- a --rerun until it ends -------------------------------------------------------------------
    def rerun(self, scope: dict[str, Any], asked: bool) -> "Rerun | None":
        """When the --rerun of ``scope`` (a level and what it was asked: its benchmark key, its
        window) began: what that level stored before then is measured again, what it stored since
        is this rerun's own and kept. ``asked``: --rerun was given — a rerun begins now unless one
        of this scope is still under way (stopped before it ended: then this goes on with it).
        Without --rerun: the one still under way, if any, else None (nothing is measured again).
        So a stopped --rerun resumed with or without the flag measures nothing twice and leaves
        nothing it had not reached at its old value. Ended by :meth:`end_rerun`."""
        name = _rerun_name(scope)
        mark = self.load_settings(name)
        if mark is not None:
            return Rerun(float(mark["since"]), True)
        if not asked:
            return None
        since = time.time()
        self.save_settings(name, {"since": since, "scope": scope})
        return Rerun(since, False)

    def end_rerun(self, scope: dict[str, Any]) -> None:
        """The --rerun of ``scope`` reached its end: what a later run finds stored is its own."""
        self.delete_settings(_rerun_name(scope))

    def note_measure_key(self, key: str, identity: dict[str, Any]) -> None:
        """Remember what the measurement key ``key`` is made of (its public identity: the benchmark
        and the build, secrets redacted), so that an answer measured under it can be labelled with
        its build once another build is the current one (one transaction: runs may note at once)."""
        with self.transaction() as c:
            row = c.execute("SELECT value FROM settings WHERE name=?", (MEASURE_KEYS,)).fetchone()
            known = json.loads(row[0]) if row else {}
            if known.get(key) == identity:
                return
            known[key] = identity
            c.execute("INSERT OR REPLACE INTO settings VALUES (?, ?)", (MEASURE_KEYS, json.dumps(known)))

    def measure_keys(self) -> dict[str, dict[str, Any]]:
        """{measurement key: its public identity} for every key noted (:meth:`note_measure_key`)."""
        return self.load_settings(MEASURE_KEYS) or {}


def _rerun_name(scope: dict[str, Any]) -> str:
    return "rerun/" + hashlib.sha256(json.dumps(scope, sort_keys=True, default=str).encode()).hexdigest()[:20]
