"""The named settings a workdir keeps: the last scan's settings, and what each measurement key is made of."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hourly.adapters.store_tables.base import Tables
from hourly.text.privacy import holds_secret, owner_only

#: the settings row of every measurement key's identity (:meth:`Store.note_measure_key`)
MEASURE_KEYS = "measure_keys"


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

