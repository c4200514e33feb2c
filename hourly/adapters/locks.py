"""Exclusive locks that die with their holder.

A :class:`RunLock` is an ``fcntl.flock`` on a small file that is never removed. The kernel
releases it when the holding process ends, however it ends (``kill -9``, OOM killer, reboot), so
"is someone running?" is answered by trying the lock — never by guessing from a PID that may have
been reused. After taking the lock, the holder writes who it is (pid, host, command, start time)
into the file; that text is for people and error messages only and decides nothing.

Two processes on one host, or on hosts sharing the file over NFS (where Linux maps ``flock`` to
byte-range locks), exclude each other.
"""

from __future__ import annotations

import fcntl
import functools
import inspect
import json
import os
import shlex
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, TypeVar, cast

from hourly.errors import UserError
from hourly.text.privacy import redact_argv

F = TypeVar("F", bound=Callable[..., Any])


def holder_info(command: str | None = None) -> dict:
    return {"pid": os.getpid(), "host": socket.gethostname(),
            "command": command or shlex.join(["hourly", *redact_argv(sys.argv[1:])]),
            "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def describe(info: dict) -> str:
    if not info:
        return "another hourly (it did not say who it is yet)"
    return (f"pid {info.get('pid')} on {info.get('host')} since {info.get('since')}: "
            f"{info.get('command')}")


#: seconds a refused process waits for the holder to write its name (it does so at once; under load
#: the two may start within that moment)
HOLDER_WAIT_S = 2.0

#: locks this process holds, by path: taking one again nests instead of locking against itself
_HELD: dict[Path, list] = {}


class LockHeld(UserError):
    """Another process holds the lock."""


class RunLock:
    """``with RunLock(path, what):`` — exclusive for the ``with`` block, or :class:`LockHeld` at once."""

    def __init__(self, path: str | os.PathLike, what: str, command: str | None = None, fix: str | None = None):
        self.path = Path(path)
        self.what = what
        self.command = command
        self.fix = fix or "wait for that run to finish, or stop it; its lock goes away with its process"
        self._fd: int | None = None

    def acquire(self) -> "RunLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        key = self.path.absolute()
        if key in _HELD:
            _HELD[key][1] += 1
            self._fd = -1  # nested: the outer holder releases
            return self
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise LockHeld(f"{self.what} is in use by another hourly ({describe(self.holder(wait=HOLDER_WAIT_S))})",
                           self.fix) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(holder_info(self.command)) + "\n").encode(), 0)
        self._fd = fd
        _HELD[key] = [fd, 1]
        return self

    def holder(self, wait: float = 0.0) -> dict:
        """Who holds the lock, as its holder wrote it; with ``wait``, read again for up to that
        many seconds while it says nothing (a holder writes its name just after taking the lock)."""
        end = time.monotonic() + wait
        while True:
            try:
                info = json.loads(self.path.read_text() or "{}")
            except (OSError, ValueError):
                info = {}
            if info or time.monotonic() >= end:
                return info
            time.sleep(0.02)

    def release(self) -> None:
        if self._fd is None:
            return
        self._fd = None
        key = self.path.absolute()
        entry = _HELD.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] > 0:  # nested: the lock stays until its last holder in this process lets go
            return
        del _HELD[key]
        fd = entry[0]
        try:
            os.ftruncate(fd, 0)  # nobody holds it now: no stale name to read
        except OSError:
            pass
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> "RunLock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def store_lock(workdir: str | os.PathLike) -> RunLock:
    """The lock of one results store (scan, bisect and profile write to it)."""
    return RunLock(Path(workdir) / "hourly.run.lock", f"the results store in {workdir}")


def holds_store_lock(fn: F) -> F:
    """Decorate a stage function with a ``store`` argument: it runs holding that store's lock."""
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        store = sig.bind(*args, **kwargs).arguments["store"]
        with store_lock(store.workdir):
            return fn(*args, **kwargs)
    return cast(F, wrapper)


# -- the Python environment builds are installed into ------------------------------------------

#: one lock file per Python environment (its resolved prefix) that receives builds
ENVS_DIR = Path(tempfile.gettempdir()) / "hourly-envs"


@functools.lru_cache(maxsize=None)
def python_prefix(python: str) -> str:
    """The environment ``python`` installs into: its ``sys.prefix``, symlinks resolved (a venv's
    ``bin/python`` and ``bin/python3`` are one environment); the interpreter's folder when it does
    not answer."""
    import subprocess
    try:
        res = subprocess.run([python, "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True,
                             timeout=60, check=False)
        prefix = res.stdout.strip() if res.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        prefix = ""
    return os.path.realpath(prefix or os.path.dirname(os.path.abspath(python)))


def python_env_lock(python: str) -> RunLock:
    """The lock of the Python environment a run installs its builds into and benchmarks with: two
    runs sharing it would measure each other's builds. Held for the whole run, on this host."""
    import hashlib
    prefix = python_prefix(python)
    name = hashlib.sha256(prefix.encode()).hexdigest()[:16]
    return RunLock(ENVS_DIR / f"{name}.lock", f"the Python environment {prefix} (--python {python})",
                   fix="wait for that run to finish, or pass another --python: a venv of this run's own "
                       "(python3 -m venv DIR, then --python DIR/bin/python)")


# -- the owner of a run's containers ---------------------------------------------------------------

#: one lock file per run that starts containers; labels on its containers name it
RUNS_DIR = Path(tempfile.gettempdir()) / "hourly-runs"
#: how often a held owner lock is tried before its owner counts as alive
OWNER_CHECK_TRIES = 5


def run_lock(run_id: str) -> RunLock:
    return RunLock(RUNS_DIR / f"{run_id}.lock", f"run {run_id}")


def owner_labels(run_id: str) -> dict[str, str]:
    """Labels that let a later hourly tell whether the run that made a container still lives."""
    return {"hourly.owner.host": socket.gethostname(), "hourly.owner.pid": str(os.getpid()),
            "hourly.owner.lock": str(RUNS_DIR / f"{run_id}.lock")}


def owner_dead(labels: dict[str, str]) -> bool:
    """True only when the owner is known dead: same host, and its run lock is free (or gone, after a
    reboot). Containers without owner labels, or of another host, are never judged dead."""
    path = labels.get("hourly.owner.lock")
    if not path or labels.get("hourly.owner.host") != socket.gethostname():
        return False
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    try:
        # Another hourly checking the same owner holds the lock for an instant too: only a lock
        # held through a few tries means the owner lives (perhaps this very process).
        for attempt in range(OWNER_CHECK_TRIES):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if attempt + 1 < OWNER_CHECK_TRIES:
                    time.sleep(0.05)
        return False
    finally:
        os.close(fd)  # closing drops a lock taken just now


# -- waiting locks: one holder at a time, the others wait their turn ------------------------------

class WaitLock:
    """``with WaitLock(path):`` — an exclusive ``flock`` that waits for the holder instead of failing.

    For short critical sections shared by the jobs of one run (a cache key being built, a
    repository's worktree list being changed): the second job waits, then finds the first one's work
    done. The file is never removed; the kernel drops the lock when its holder dies."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._fd: int | None = None

    def __enter__(self) -> "WaitLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
