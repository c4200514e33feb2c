"""What every group of the store's tables works through: the connection and its transactions."""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from typing import Iterator

from hourly.errors import UserError

#: The rows of one metric (two parameters: the metric twice; None: every row). A named metric's
#: rows and the ``''`` rows of the same key: with named metrics, a measurement that measured no
#: name (a failed build, runs that all failed) is one ``''`` row and holds for every metric; with
#: the regex's one metric every row is ``''``.
METRIC_FILTER = "(? IS NULL OR metric IN (?, ''))"


class Tables:
    """The base of each group of tables (hourly/adapters/store_tables/): the store's open
    connection, set by :class:`hourly.adapters.store.Store` when it opens the file, and one
    transaction at a time over it."""

    conn: sqlite3.Connection

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            if self.conn.in_transaction:  # SQLite itself may have rolled back (a full disk)
                try:
                    self.conn.execute("ROLLBACK")
                except (sqlite3.Error, UserError):
                    pass
            raise
        else:
            self.conn.execute("COMMIT")


def inserted_id(cur: sqlite3.Cursor) -> int:
    """The rowid of the row the cursor's INSERT just made."""
    assert cur.lastrowid is not None  # sqlite3 sets it on every INSERT
    return cur.lastrowid
