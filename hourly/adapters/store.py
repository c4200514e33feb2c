"""The results store: one SQLite file per workdir, versioned, committed point by point.

Every finished measurement is written in its own transaction, so a scan killed at any moment
(Ctrl-C or ``kill -9``) keeps everything finished before it; rerunning the command measures only
what is missing.

Tables:
- ``meta``: the schema version.
- ``settings``: the settings of the last scan (JSON), which later commands (bisect) reuse.
- ``points``: the instants a scan planned, per level ("hourly"), with the pair each resolved to.
- ``builds``: one row per build identity (schema 4; before: per pair): the pair, status, whether it
  installs in place, wheels, log, and how it was built (hourly/measure/build_cache.py's identity, secrets redacted).
- ``measurements``: every measurement of a pair under one benchmark key (the command, its
  directory, environment, metric regex and Python): status, value (median), samples (one value per
  counted run: a run that prints many samples keeps them in its entry of ``runs``), per-run
  detail, its ``origin`` (``scan``, ``bisect``) and (schema 8) its ``metric``: ``''`` for the one
  metric the regex reads (every row of an older store), else the name of a ``METRIC name:`` line
  (``--metrics``: one row per name per measurement, all written in one transaction; a measurement
  that measured no name at all, a failed build or runs that all failed, is one ``''`` row). A row
  is never updated: the scan's table reads the ``scan`` rows alone, so later commands'
  measurements never change it.
- ``bisections`` (schema 2): one row per bisected window (its identity, status, final answer).
- ``bisect_probes`` (schema 2; 6 adds jaxlib and jax package builds apart; 8 the samples its runs printed,
  ``run_samples``, apart from the runs, process starts): every verdict a bisection reached, with the builds and runs it cost.
- ``nightly`` (schema 3): every date ``hourly nightly`` measured: image, digest, status, value,
  samples, runs, and the JAX/XLA commits found in the image; (schema 8) its ``metric``, as above.
- ``manual_waiting``, ``manual_marks`` (made on opening, no schema step: tables an older hourly
  never reads): the probe a manual bisection (``hourly bisect --manual``) waits at, and the
  verdicts ``hourly mark`` gave from another shell, each taken once by the waiting bisection.
- ``releases`` (schema 5): the release level, every jax release ``hourly releases`` measured from
  the package index: the jaxlib paired with it, release time, status (a measurement's, or
  ``missing`` / ``install_failed``), value, samples, runs, installer and environment; (schema 8)
  its ``metric``, as above.
- ``watch_builds``, ``watch_values``, ``watch_checks``, ``watch_runs``, ``watch_alerts`` (schema 7):
  ``hourly watch`` (hourly/watch/): every build a watch found (nightly date, wheel version or
  instant of the history) with what measured it and the decision on its arrival, its values per
  metric, each suspected step and its confirmation (the interleaved runs of the two builds, one
  row per pair), and the alerts (their confirmed steps, the hunt started, the recovery, the
  events not yet delivered). Kept apart from ``measurements``: a series per metric name.

Every SQL statement of hourly is in this module (opening, schema, migrations) and the modules of
hourly/adapters/store_tables/ (each group of tables: the methods of :class:`Store`).
"""

from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path
from typing import Any, Callable
from urllib.parse import quote

from hourly.adapters.store_tables.bisections import BisectionTables
from hourly.adapters.store_tables.levels import LevelTables
from hourly.adapters.store_tables.manual import ManualTables
from hourly.adapters.store_tables.rows import BuildRecord, Measurement, Records, metric_rows
from hourly.adapters.store_tables.scan import ScanTables
from hourly.adapters.store_tables.settings import MEASURE_KEYS, SettingsTables
from hourly.adapters.store_tables.watch import WatchTables
from hourly.errors import UserError

#: what callers import from here; the records and tables live in hourly/adapters/store_tables/
__all__ = ["LOGS", "MEASURE_KEYS", "MIGRATIONS", "SCHEMA_VERSION", "STORE_NAME", "BuildRecord", "Measurement",
           "Records", "Store", "log_dir", "metric_rows", "schema_tables", "store_fault"]

SCHEMA_VERSION = 10
STORE_NAME = "hourly.sqlite"
#: the folder of a workdir that holds every log (builds, runs, containers, hunts)
LOGS = "logs"


def log_dir(workdir: str | Path, kind: str | None = None) -> Path:
    """Where a workdir keeps its logs (of one ``kind``: ``nightly``, ``releases``, ``hunt``): the
    one place these paths are made. Not created."""
    base = Path(workdir).expanduser().absolute() / LOGS
    return base / kind if kind else base


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS settings (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS points (
    level TEXT NOT NULL, time TEXT NOT NULL, xla TEXT NOT NULL, jax TEXT NOT NULL,
    PRIMARY KEY (level, time));
CREATE TABLE IF NOT EXISTS builds (
    xla TEXT NOT NULL, jax TEXT NOT NULL, status TEXT NOT NULL, in_place INTEGER NOT NULL,
    wheels TEXT NOT NULL, log_path TEXT, tail TEXT, duration REAL, finished REAL NOT NULL,
    PRIMARY KEY (xla, jax));
CREATE TABLE IF NOT EXISTS measurements (
    id INTEGER PRIMARY KEY AUTOINCREMENT, bench_key TEXT NOT NULL, xla TEXT NOT NULL,
    jax TEXT NOT NULL, status TEXT NOT NULL, value REAL, samples TEXT NOT NULL,
    runs TEXT NOT NULL, detail TEXT, origin TEXT NOT NULL, created REAL NOT NULL);
CREATE INDEX IF NOT EXISTS measurements_pair ON measurements (bench_key, xla, jax);
CREATE TABLE IF NOT EXISTS manual_waiting (
    slot INTEGER PRIMARY KEY CHECK (slot = 1), bisection INTEGER NOT NULL, role TEXT NOT NULL,
    xla TEXT NOT NULL, jax TEXT NOT NULL, pid INTEGER, host TEXT, since REAL NOT NULL);
CREATE TABLE IF NOT EXISTS manual_marks (
    id INTEGER PRIMARY KEY AUTOINCREMENT, bisection INTEGER NOT NULL, role TEXT NOT NULL,
    xla TEXT NOT NULL, jax TEXT NOT NULL, verdict TEXT NOT NULL, source TEXT NOT NULL,
    taken INTEGER NOT NULL DEFAULT 0, created REAL NOT NULL);
"""


class Store(SettingsTables, ScanTables, BisectionTables, ManualTables, LevelTables, WatchTables):
    """A workdir's results store, opened (made, checked whole, upgraded by :data:`MIGRATIONS`), with
    the SQL of every table: each group of tables is a class of hourly/adapters/store_tables/ that
    the store is made of (the scan's points, builds and measurements; the bisections; a manual
    bisection's verdicts; the daily and release levels; ``hourly watch``; the named settings),
    all over this one connection and its transactions (``transaction``)."""

    def __init__(self, workdir: str | os.PathLike, create: bool = True, made_by: str = "hourly scan",
                 read_only: bool = False):
        """``made_by``: the command that fills this store, named when there is none.

        ``read_only`` (``show``, ``report``, ``detect``: they only read): the store is opened
        read-only and nothing in the workdir is written, so a read-only workdir (a colleague's, a
        mounted copy) can be read; a store an older hourly wrote is upgraded first where the
        workdir can be written, and refused with one line where it cannot."""
        self.workdir = Path(workdir).expanduser().absolute()
        self.path = self.workdir / STORE_NAME
        #: the workdir's logs (:func:`log_dir`)
        self.logs = log_dir(self.workdir)
        self.read_only = read_only
        if (not create or read_only) and not self.path.exists():
            raise UserError(f"no results store in {self.workdir}",
                            f"run `{made_by}` first, or pass --workdir with the workdir it used")
        if read_only and self._open_read_only():
            return
        self.read_only = False
        try:
            self.workdir.mkdir(parents=True, exist_ok=True)
            # one probe per process: two runs starting together on one workdir must not unlink each other's
            probe = self.workdir / f".hourly-write-test-{os.getpid()}"
            probe.write_text("")
            probe.unlink(missing_ok=True)
        except OSError as e:
            raise UserError(f"workdir {self.workdir} is not writable ({e.strerror})",
                            "pass --workdir with a directory you can write to") from e
        if not self.path.exists():
            _create(self.path)
        _check_whole(self.path)  # a damaged or empty store is refused before anything writes to it
        self.conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, factory=_Connection)
        self.conn.store_path = self.path
        self.conn.row_factory = sqlite3.Row
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self._migrate()

    def _open_read_only(self) -> bool:
        """Open the store read-only (SQLite's ``mode=ro``; ``immutable`` where a read-only folder
        holds no write-ahead log to read, which SQLite's read-only WAL mode needs a ``-shm`` file
        for). False: its schema is older than this hourly's and the workdir can be written, so it
        is opened as usual and upgraded; refused in one line where it cannot be."""
        wal = Path(f"{self.path}-wal")
        uri = f"file:{quote(str(self.path))}?mode=ro"
        if not os.access(self.workdir, os.W_OK) and not Path(f"{self.path}-shm").exists() \
                and not (wal.exists() and wal.stat().st_size):
            uri = f"file:{quote(str(self.path))}?immutable=1"  # nothing unwritten: the main file is the store
        _check_empty(self.path)
        try:
            conn = sqlite3.connect(uri, uri=True, timeout=30, isolation_level=None, factory=_Connection)
        except sqlite3.Error as e:
            fault = store_fault(self.path, e)
            raise (fault if fault is not e else UserError(f"cannot open the results store {self.path} read-only ({e})",
                                                          "check the file and its folder")) from e
        conn.store_path = self.path
        conn.row_factory = sqlite3.Row
        try:
            _check_whole(self.path, conn)
            _check_tables(conn, self.path)  # a whole file that lacks a table of its schema is damaged
            row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() \
                if conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone() else None
        except BaseException:
            conn.close()
            raise
        version = int(row[0]) if row else 0
        if version > SCHEMA_VERSION:
            conn.close()
            raise UserError(f"{self.path} was written by a newer hourly (schema {version})",
                            "upgrade hourly, or use another --workdir")
        if version < SCHEMA_VERSION:
            conn.close()
            if os.access(self.workdir, os.W_OK) and os.access(self.path, os.W_OK):
                return False  # upgraded by the usual opening
            raise UserError(f"the results store {self.path} was written by an older hourly (schema {version}) and "
                            "its workdir is read-only: it cannot be upgraded to be read",
                            "copy the workdir somewhere writable and pass --workdir with the copy")
        self.conn = conn
        return True

    # -- schema -----------------------------------------------------------------------------
    def _migrate(self) -> None:
        _check_tables(self.conn, self.path)  # a store missing a table of its schema is never written to
        self.conn.executescript(_SCHEMA)
        row = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        version = int(row[0]) if row else 0
        if version > SCHEMA_VERSION:
            raise UserError(f"{self.path} was written by a newer hourly (schema {version})",
                            "upgrade hourly, or use another --workdir")
        for v in range(version + 1, SCHEMA_VERSION + 1):
            with self.transaction() as c:
                for stmt in MIGRATIONS.get(v, []):
                    m = re.match(r"ALTER TABLE (\w+) ADD COLUMN (\w+)", stmt)
                    if m and any(r[1] == m[2] for r in c.execute(f"PRAGMA table_info({m[1]})")):
                        continue  # a store whose version was set back already has it: migrations stay idempotent
                    c.execute(stmt)
                c.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(v),))

    def close(self) -> None:
        self.conn.close()


#: how to start afresh, for a store that cannot be used
_NEW_STORE = "start a new one with another --workdir, or move the file away (mv {path} {path}.bad) and run again"


def _create(path: Path) -> None:
    """A new, empty store, made under a temporary name and linked into place whole: a run starting
    at the same moment sees no store or a whole one, never a file of 0 bytes (which is refused)."""
    tmp = path.with_name(f".{path.name}.new-{os.getpid()}")
    conn = None
    try:
        conn = sqlite3.connect(tmp, isolation_level=None, factory=_Connection)
        conn.store_path = path
        conn.execute("PRAGMA journal_mode=WAL")  # writes the header: the file is a store from now on
        conn.close()
        conn = None
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another run made it meanwhile: theirs is used
        except OSError:  # a file system without hard links
            if not path.exists():
                os.replace(tmp, path)
    finally:
        if conn is not None:
            conn.close()
        for name in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
            name.unlink(missing_ok=True)


def _check_empty(path: Path) -> None:
    """Refuse a store that is empty (0 bytes: SQLite would silently write a new schema into it)."""
    wal = Path(f"{path}-wal")
    if path.stat().st_size == 0 and not (wal.exists() and wal.stat().st_size):
        raise UserError(f"the results store {path} is empty (0 bytes)",
                        _NEW_STORE.format(path=path))


def _check_whole(path: Path, conn: sqlite3.Connection | None = None) -> None:
    """Refuse a store that is empty (0 bytes: SQLite would silently write a new schema into it) or
    damaged (garbage, truncated), reading only (through ``conn`` when given: a read-only one)."""
    _check_empty(path)
    own = conn is None
    if conn is None:
        conn = sqlite3.connect(path, timeout=30)
    try:
        row = conn.execute("PRAGMA quick_check(1)").fetchone()
    except sqlite3.DatabaseError as e:
        fault = store_fault(path, e)
        if fault is e:
            raise
        raise fault from e
    finally:
        if own:
            conn.close()
    if row and row[0] != "ok":  # SQLite's report can span lines ("*** in database main ***", then the fault)
        what = " ".join(ln.strip() for ln in str(row[0]).splitlines() if ln.strip() and not ln.startswith("***"))
        raise UserError(f"the results store {path} is damaged ({what or 'integrity check failed'})",
                        _NEW_STORE.format(path=path))


#: The tables every store of schema version 1 has (the tables _SCHEMA gained later without a
#: migration, manual_waiting and manual_marks, may be missing from an older store: it gets them).
_V1_TABLES = ("meta", "settings", "points", "builds", "measurements")


def schema_tables(version: int) -> set[str]:
    """The tables a store of schema ``version`` has: version 1's, then each migration's creations,
    renames and drops."""
    tables = set(_V1_TABLES)
    for v in range(2, version + 1):
        for stmt in MIGRATIONS.get(v, []):
            if m := re.match(r"\s*CREATE TABLE (?:IF NOT EXISTS )?(\w+)", stmt):
                tables.add(m[1])
            elif m := re.match(r"\s*ALTER TABLE (\w+) RENAME TO (\w+)", stmt):
                tables.discard(m[1])
                tables.add(m[2])
            elif m := re.match(r"\s*DROP TABLE (?:IF EXISTS )?(\w+)", stmt):
                tables.discard(m[1])
    return tables


def _check_tables(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse, reading only, a store whose file is whole but lacks a table of its schema version
    (a dropped ``points`` table read as an empty scan, and was created again): it is damaged."""
    have = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if not have:
        return  # a new store: the schema is made next
    if "meta" in have:
        row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if not row or not str(row[0]).isdigit():
            return  # another run is making it right now (its version is written once _SCHEMA is whole)
        lost = sorted(schema_tables(min(int(row[0]), SCHEMA_VERSION)) - have)
    else:
        lost = ["meta"]  # _SCHEMA makes meta first: tables without it are what is left of a store
    if lost:
        raise UserError(f"the results store {path} is damaged (its table{'s' if len(lost) > 1 else ''} "
                        f"{', '.join(lost)} {'are' if len(lost) > 1 else 'is'} missing)",
                        _NEW_STORE.format(path=path))


def _sqlite_kind(e: sqlite3.Error) -> str:
    name = getattr(e, "sqlite_errorname", None)  # Python 3.11+
    if name:
        return name
    text = str(e).lower()
    for words, kind in (("not a database", "SQLITE_NOTADB"), ("malformed", "SQLITE_CORRUPT"),
                        ("disk is full", "SQLITE_FULL"), ("disk i/o error", "SQLITE_IOERR"),
                        ("readonly", "SQLITE_READONLY"), ("unable to open", "SQLITE_CANTOPEN")):
        if words in text:
            return kind
    return ""


def store_fault(path: str | os.PathLike, e: sqlite3.Error) -> UserError | sqlite3.Error:
    """The SQLite error as one line naming the store and the fix, when it is the file's or the
    disk's fault (damage, a full disk, a read-only file); else ``e`` itself."""
    kind = _sqlite_kind(e)
    if kind.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        return UserError(f"the results store {path} is damaged ({e})", _NEW_STORE.format(path=path))
    if kind == "SQLITE_FULL":
        return UserError(f"no space left on the device of the results store {path}",
                         "free space there, or pass --workdir with a folder on another disk")
    if kind.startswith("SQLITE_READONLY"):
        return UserError(f"the results store {path} is read-only ({e})",
                         "make it and its folder writable, or pass another --workdir")
    if kind.startswith(("SQLITE_IOERR", "SQLITE_CANTOPEN")):
        return UserError(f"cannot read or write the results store {path} ({e})",
                         "check the disk and free space there, or pass another --workdir")
    return e


class _Connection(sqlite3.Connection):
    """A connection whose file and disk faults (:func:`store_fault`) name the store."""

    store_path: Path

    def _call(self, run: Callable[[], sqlite3.Cursor]) -> sqlite3.Cursor:
        """``run()``, its file and disk faults raised as :func:`store_fault`'s one line."""
        try:
            return run()
        except sqlite3.Error as e:
            fault = store_fault(getattr(self, "store_path", "?"), e)
            if fault is e:
                raise
            raise fault from e

    def execute(self, *args: Any, **kwargs: Any) -> sqlite3.Cursor:
        return self._call(lambda: super(_Connection, self).execute(*args, **kwargs))

    def executemany(self, *args: Any, **kwargs: Any) -> sqlite3.Cursor:
        return self._call(lambda: super(_Connection, self).executemany(*args, **kwargs))

    def executescript(self, *args: Any, **kwargs: Any) -> sqlite3.Cursor:
        return self._call(lambda: super(_Connection, self).executescript(*args, **kwargs))


#: Schema changes after version 1: {version: [statements]}. Version 1 is _SCHEMA itself.
MIGRATIONS: dict[int, list[str]] = {
    1: [],
    # 2: bisections and their probes, so a killed `hourly bisect` continues where it stopped
    2: [
        """CREATE TABLE IF NOT EXISTS bisections (
            id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL UNIQUE, bench_key TEXT NOT NULL,
            mode TEXT NOT NULL, good_time INTEGER NOT NULL, bad_time INTEGER NOT NULL,
            good_xla TEXT NOT NULL, good_jax TEXT NOT NULL, bad_xla TEXT NOT NULL, bad_jax TEXT NOT NULL,
            status TEXT NOT NULL, result TEXT, created REAL NOT NULL, updated REAL NOT NULL)""",
        """CREATE TABLE IF NOT EXISTS bisect_probes (
            bisection INTEGER NOT NULL REFERENCES bisections (id), seq INTEGER NOT NULL,
            role TEXT NOT NULL, xla TEXT NOT NULL, jax TEXT NOT NULL, verdict TEXT NOT NULL,
            partial INTEGER NOT NULL, reason TEXT, samples TEXT NOT NULL, returncodes TEXT NOT NULL, builds INTEGER NOT NULL,
            runs INTEGER NOT NULL, created REAL NOT NULL, PRIMARY KEY (bisection, seq))""",
    ],
    # 3: results of `hourly nightly`, one row per (benchmark key, date) attempt; see hourly/nightly/plan.py
    3: ["""CREATE TABLE IF NOT EXISTS nightly (
            id INTEGER PRIMARY KEY AUTOINCREMENT, bench_key TEXT NOT NULL, date TEXT NOT NULL,
            image TEXT NOT NULL, digest TEXT, status TEXT NOT NULL, value REAL,
            samples TEXT NOT NULL, runs TEXT NOT NULL, xla TEXT, jax TEXT, detail TEXT,
            created REAL NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS nightly_date ON nightly (bench_key, date)"],
    # 4: builds keyed by the build's identity (pair + command + environment + Python ABI), not the
    # pair alone. Rows of older stores keep their pair under a key no identity has ("pair:<xla>-<jax>"):
    # how they were built is unknown, so they are never reused as a verdict for a build identity.
    4: ["ALTER TABLE builds RENAME TO builds_v3",
        """CREATE TABLE builds (
            build_key TEXT PRIMARY KEY, xla TEXT NOT NULL, jax TEXT NOT NULL, status TEXT NOT NULL,
            in_place INTEGER NOT NULL, wheels TEXT NOT NULL, log_path TEXT, tail TEXT, duration REAL,
            finished REAL NOT NULL, identity TEXT)""",
        """INSERT INTO builds SELECT 'pair:' || xla || '-' || jax, xla, jax, status, in_place, wheels,
            log_path, tail, duration, finished, NULL FROM builds_v3""",
        "DROP TABLE builds_v3",
        "CREATE INDEX IF NOT EXISTS builds_pair ON builds (xla, jax)"],
    # 5: the release level: one row per (benchmark key, jax release) attempt; see hourly/releases/plan.py
    5: ["""CREATE TABLE IF NOT EXISTS releases (
            id INTEGER PRIMARY KEY AUTOINCREMENT, bench_key TEXT NOT NULL, version TEXT NOT NULL,
            jaxlib TEXT, released TEXT, status TEXT NOT NULL, value REAL, samples TEXT NOT NULL,
            runs TEXT NOT NULL, installer TEXT, env TEXT, detail TEXT, created REAL NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS releases_version ON releases (bench_key, version)"],
    # 6: builds priced by their inputs (docs/builds.md): a probe's jaxlib builds and jax package builds apart
    6: ["ALTER TABLE bisect_probes ADD COLUMN jaxlib_builds INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE bisect_probes ADD COLUMN jax_builds INTEGER NOT NULL DEFAULT 0"],
    # 7: `hourly watch` (hourly/watch/): its builds, their values per metric, the checks of suspected steps with
    # their interleaved runs, and the alerts; tables of its own, apart from `measurements`
    7: ["""CREATE TABLE IF NOT EXISTS watch_builds (
            watch TEXT NOT NULL, build TEXT NOT NULL, seq INTEGER NOT NULL, time TEXT, ident TEXT NOT NULL,
            status TEXT NOT NULL, detail TEXT, decision TEXT, created REAL NOT NULL, updated REAL NOT NULL,
            PRIMARY KEY (watch, build))""",
        """CREATE TABLE IF NOT EXISTS watch_values (
            watch TEXT NOT NULL, build TEXT NOT NULL, metric TEXT NOT NULL, value REAL, samples TEXT NOT NULL,
            runs TEXT NOT NULL, created REAL NOT NULL, PRIMARY KEY (watch, build, metric))""",
        """CREATE TABLE IF NOT EXISTS watch_checks (
            id INTEGER PRIMARY KEY AUTOINCREMENT, watch TEXT NOT NULL, metric TEXT NOT NULL, arrived TEXT NOT NULL,
            before TEXT NOT NULL, after TEXT NOT NULL, suspect TEXT NOT NULL, verdict TEXT NOT NULL, result TEXT,
            created REAL NOT NULL, updated REAL NOT NULL)""",
        """CREATE TABLE IF NOT EXISTS watch_runs (
            check_id INTEGER NOT NULL REFERENCES watch_checks (id), seq INTEGER NOT NULL, old REAL, new REAL,
            created REAL NOT NULL, PRIMARY KEY (check_id, seq))""",
        """CREATE TABLE IF NOT EXISTS watch_alerts (
            id INTEGER PRIMARY KEY AUTOINCREMENT, watch TEXT NOT NULL, arrived TEXT NOT NULL, before TEXT NOT NULL,
            after TEXT NOT NULL, checks TEXT NOT NULL, hunt TEXT, recovery TEXT, events TEXT NOT NULL,
            created REAL NOT NULL, updated REAL NOT NULL)"""],
    # 8: every metric a run prints, named (--metrics): the metric of each row. Rows of older stores
    # are the one metric the regex read: '' (hourly.adapters.store.Measurement.metric)
    8: ["ALTER TABLE measurements ADD COLUMN metric TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE nightly ADD COLUMN metric TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE releases ADD COLUMN metric TEXT NOT NULL DEFAULT ''",
        "CREATE INDEX IF NOT EXISTS measurements_metric ON measurements (bench_key, metric, xla, jax)",
        # and a probe's samples counted apart from its runs (process starts): many per run with
        # --metric-samples all or named metrics; 0 in the rows of an older store
        "ALTER TABLE bisect_probes ADD COLUMN run_samples INTEGER NOT NULL DEFAULT 0"],
    # 9: the per-process statistic a paired search chose on its window's ends (JSON: statistic, why,
    # candidates), on the ends' rows: a resumed search holds it without measuring the ends again
    9: ["ALTER TABLE bisect_probes ADD COLUMN statistic TEXT"],
    # 10: each round of a paired verdict as it is measured (the states it compares, each process's value
    # and samples): a bisection stopped in the middle of a verdict goes on from its rounds when resumed
    10: ["""CREATE TABLE IF NOT EXISTS bisect_rounds (
            bisection INTEGER NOT NULL REFERENCES bisections (id), states TEXT NOT NULL, seq INTEGER NOT NULL,
            block TEXT NOT NULL, created REAL NOT NULL, PRIMARY KEY (bisection, states, seq))"""],
}
