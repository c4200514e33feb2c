"""The one error hierarchy of hourly.

Every error hourly raises on purpose derives from :class:`HourlyError`. The CLI's top-level
handler turns a :class:`UserError` into one line naming the fix (exit 1, or 2 for usage errors);
anything else is unexpected and exits 3 with the path of a log.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path


class HourlyError(Exception):
    """Base class of every error hourly raises on purpose."""

    exit_code = 3


class UserError(HourlyError):
    """Something the user can fix: bad input, a dirty tree, a missing command.

    ``message`` says what is wrong; ``fix`` says what to do about it; ``details`` (optional) are
    lines of evidence printed after that one line, verbatim (e.g. the end of a failing run's log).
    """

    exit_code = 1

    def __init__(self, message: str, fix: str | None = None, details: list[str] | None = None):
        self.message = message
        self.fix = fix
        self.details = list(details or [])
        super().__init__(self.one_line())

    def one_line(self) -> str:
        return f"{self.message} — {self.fix}" if self.fix else self.message


class UsageError(UserError):
    """The command line itself is wrong (exit 2, like click's usage errors)."""

    exit_code = 2


class ProcessError(HourlyError):
    """An external process failed: carries the command, its exit code and its output tail."""

    exit_code = 1

    def __init__(self, cmd: list[str], returncode: int | None, tail: str, cwd: str | None = None,
                 timed_out: bool = False, log_path: str | None = None):
        self.cmd = list(cmd)
        self.returncode = returncode
        self.tail = tail
        self.cwd = cwd
        self.timed_out = timed_out
        self.log_path = log_path
        what = "timed out" if timed_out else f"exited with {returncode}"
        where = f" in {cwd}" if cwd else ""
        last = tail.strip().splitlines()[-1] if tail.strip() else "(no output)"
        from hourly.text.privacy import redact_argv  # the message is printed: secret-looking values left out
        super().__init__(f"`{' '.join(redact_argv(self.cmd))}`{where} {what}: {last}")


def blocking_file(path: str | os.PathLike) -> Path | None:
    """The nearest of ``path`` and its parents that exists and is not a folder: what stops a folder
    being made there (``--out report.md/x``, a cache dir under a regular file), or None."""
    p = Path(path).absolute()
    for q in (p, *p.parents):
        if q.exists() or q.is_symlink():
            return None if q.is_dir() else q
    return None


def path_fault(e: OSError, what: str, where: str | os.PathLike, option: str) -> UserError:
    """A filesystem error under a folder hourly writes (``what``: "the report folder", ``option``:
    the flag that moves it) as one line naming the place and the fix."""
    where = Path(where)
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return UserError(f"no space left on the device of {what} {where}",
                         f"free space there, or pass {option} with a folder on another disk")
    blocker = blocking_file(where)
    if blocker is not None or e.errno in (errno.ENOTDIR, errno.EEXIST):
        under = ("a file, not a directory" if blocker is None or blocker == where.absolute() else
                 f"under {blocker}, which is a file, not a directory")
        return UserError(f"{what} {where} is {under}", f"pass {option} with a folder (or a path where one can be made)")
    if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return UserError(f"{what} {where} is not writable ({e.strerror})", f"pass {option} with a folder you can write to")
    return UserError(f"cannot write {what} {where} ({e.strerror or e})", f"pass {option} with a folder you can write to")
