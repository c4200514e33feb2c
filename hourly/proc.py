"""The one wrapper every external process of hourly goes through.

``run`` takes an argument list (never a shell string), optionally writes the full output to a
log file, enforces a timeout by killing the whole process group, and returns a :class:`Result`.
With ``check=True`` a non-zero exit raises :class:`~hourly.errors.ProcessError`, which carries
the command, the exit code and the tail of the output.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import ProcessError, UserError

TAIL_LINES = 30


@dataclass
class Result:
    cmd: list[str]
    returncode: int | None  # None when it timed out
    output: str
    duration: float
    timed_out: bool = False
    log_path: str | None = None

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def tail(self, lines: int = TAIL_LINES) -> str:
        return "\n".join(self.output.splitlines()[-lines:])


def run(cmd: list[str], *, cwd: str | os.PathLike | None = None, env: dict[str, str] | None = None,
        timeout: float | None = None, log_path: str | os.PathLike | None = None,
        check: bool = True, input: str | None = None) -> Result:
    """Run ``cmd`` and capture stdout+stderr together.

    ``env`` replaces the environment when given (callers merge with ``os.environ`` themselves).
    """
    cmd = [str(c) for c in cmd]
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            text=True, errors="replace", start_new_session=True)
    except FileNotFoundError as e:
        raise UserError(f"command not found: {cmd[0]}",
                        "install it, put it on PATH, or pass the right command") from e
    except PermissionError as e:
        raise UserError(f"command not executable: {cmd[0]}", f"chmod +x {cmd[0]}") from e
    timed_out = False
    try:
        out, _ = proc.communicate(input=input, timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc)
        out, _ = proc.communicate()
    except BaseException:  # Ctrl-C: never leave the child running
        _kill_group(proc)
        proc.wait()
        raise
    duration = time.monotonic() - start
    if log_path is not None:
        log_path = Path(log_path)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.write_text(f"$ {' '.join(cmd)}\n# cwd: {cwd or os.getcwd()}\n{out}"
                            f"\n# exit: {'timeout' if timed_out else proc.returncode}"
                            f" after {duration:.2f}s\n")
    result = Result(cmd, None if timed_out else proc.returncode, out, duration, timed_out,
                    str(log_path) if log_path else None)
    if check and not result.ok:
        raise ProcessError(cmd, result.returncode, result.tail(), str(cwd) if cwd else None,
                           timed_out, result.log_path)
    return result


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
