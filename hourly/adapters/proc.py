"""The one wrapper every external process of hourly goes through.

``run`` takes an argument list (never a shell string), optionally streams the full output to a
log file line by line while the process runs (``tail -f`` works, and a ``kill -9`` of hourly keeps
everything written so far), enforces a timeout by killing the whole process group, and returns a
:class:`Result`.
With ``check=True`` a non-zero exit raises :class:`~hourly.errors.ProcessError`, which carries
the command, the exit code and the tail of the output. No process started here gets
``PYTHONPYCACHEPREFIX`` (:data:`SHARED_BYTECODE`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Callable, Iterator, TextIO

from hourly.errors import UsageError, UserError
from hourly.text.privacy import REDACTED, looks_secret, redact_argv

if TYPE_CHECKING:
    pass

import ctypes
import signal
import subprocess
import threading
import time

from hourly.errors import ProcessError

TAIL_LINES = 30

#: never passed on to a process hourly starts. With it, Python keeps every module's bytecode in one
#: cache outside the sources, keyed by the source's path and checked only against its mtime (whole
#: seconds) and size; uv compiles nothing on install and git rewrites files in place, so a state
#: installed or checked out within the second of the last import, with files of the same sizes,
#: would run the bytecode of the state before it. Without it the bytecode lies beside the sources,
#: where the install (hourly.adapters.venvs.reinstall) and the checkout (Workspace.checkout) of the
#: next state remove it (docs/measuring.md)
SHARED_BYTECODE = "PYTHONPYCACHEPREFIX"

#: processes started by :func:`run` and :func:`run_until` in this process so far (tests and
#: benchmarks read how many a command spends; GitPython's own are not among them)
spawned = 0


@dataclass
class Result:
    cmd: list[str]
    returncode: int | None  # None when it timed out
    output: str
    duration: float
    timed_out: bool = False
    log_path: str | None = None
    #: when each line of ``output`` was read, in seconds since the process started (the cost of a
    #: benchmark process: its time to the first sample and per sample after it); empty where unread
    line_times: tuple[float, ...] = ()
    #: what hourly had to do past the process's own exit, in words (processes it left behind,
    #: killed); each also written to the log
    notes: tuple[str, ...] = ()

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
    The run ends when its process exits: what it printed is read to the end, and a process it left
    behind (its own process group, or one elsewhere still holding its output open) is killed and
    named in :attr:`Result.notes` and the log — never waited for. A log that cannot be written (a
    full disk) stops the run: its group is killed and the :class:`OSError` raised here.
    """
    global spawned
    cmd = [str(c) for c in cmd]
    env = child_env(env)
    start = time.monotonic()
    log = _open_log(log_path, cmd, cwd)
    lines: list[str] = []
    times: list[float] = []
    threads: list[threading.Thread] = []
    timer = None
    expired = threading.Event()
    notes: list[str] = []
    pump: _Pump | None = None
    spawned += 1
    proc = _start(cmd, cwd, env, subprocess.PIPE if input is not None else subprocess.DEVNULL, log)
    # from here on the child exists: every line is inside the try, so that a Ctrl-C anywhere (a
    # thread's start waits for the thread, and a signal's handler runs there) kills its group
    try:
        pump = _Pump(proc, lines, log, times, start)
        threads.append(threading.Thread(target=pump, daemon=True))
        if input is not None:
            threads.append(threading.Thread(target=_feed, args=(proc.stdin, input), daemon=True))
        for t in threads:
            t.start()
        # the timeout is a timer that kills the group, and the wait a blocking one: Popen.wait with
        # a timeout polls in sleeps of up to 50 ms, which every timed process (builds, benchmarks) paid
        timer = _group_timer(proc, timeout, expired)
        proc.wait()
        if timer is not None:
            timer.cancel()
        if expired.is_set():
            _wait_group_gone(proc.pid)
        notes = _end(proc, pump, threads)
    except BaseException:  # Ctrl-C: never leave the child running, and never wait long for it
        if timer is not None:
            timer.cancel()
        _stop_now(proc, pump, threads)
        _close_log(log, "interrupted", quiet=True)
        raise
    timed_out = expired.is_set()
    out = "".join(lines)
    duration = time.monotonic() - start
    if pump is not None and pump.error is not None:  # the log could not be written: the run was stopped there
        _close_log(log, "log write failed", quiet=True)
        raise pump.error
    for note in notes:
        _note_log(log, note)
    _close_log(log, f"{'timeout' if timed_out else proc.returncode} after {duration:.2f}s")
    result = Result(cmd, None if timed_out else proc.returncode, out, duration, timed_out,
                    str(log_path) if log_path else None, tuple(times), tuple(notes))
    if check and not result.ok:
        raise ProcessError(cmd, result.returncode, result.tail(), str(cwd) if cwd else None,
                           timed_out, result.log_path)
    return result


def run_until(cmd: list[str], stop: Callable[[str], bool], *, cwd: str | os.PathLike | None = None,
              timeout: float | None = None) -> Result:
    """Run ``cmd`` and read its output (stdout+stderr) line by line until ``stop(line)`` is true for
    a line; then the process group is killed and the lines read so far, that one included, are the
    result (``returncode`` 0: stopping early is no failure). A process that ends before any line
    stops it is a plain :func:`run`: its whole output, and :class:`~hourly.errors.ProcessError` on
    a non-zero exit. For long outputs of which only the head is needed (a history walk that reaches
    the window's bottom)."""
    global spawned
    cmd = [str(c) for c in cmd]
    start = time.monotonic()
    expired = threading.Event()
    timer = None
    lines: list[str] = []
    stopped = False
    spawned += 1
    proc = _start(cmd, cwd, child_env(None), subprocess.DEVNULL)
    try:  # from here on the child exists: a Ctrl-C anywhere kills its group
        timer = _group_timer(proc, timeout, expired)
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if stop(line):
                stopped = True
                break
        if stopped:
            _kill_group(proc)
        proc.wait()  # at the end of its output (or killed by the timer)
    except BaseException:  # Ctrl-C: never leave the child running, and never wait long for it
        _kill_group(proc)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=STOP_S)
        raise
    finally:
        if timer is not None:
            timer.cancel()
        if stopped or expired.is_set():
            _wait_group_gone(proc.pid)
        if proc.stdout is not None:
            proc.stdout.close()
    timed_out = expired.is_set() and not stopped
    rc = 0 if stopped else None if timed_out else proc.returncode
    result = Result(cmd, rc, "".join(lines), time.monotonic() - start, timed_out)
    if not result.ok:
        raise ProcessError(cmd, result.returncode, result.tail(), str(cwd) if cwd else None, timed_out, None)
    return result


def child_env(env: dict[str, str] | None) -> dict[str, str] | None:
    """The environment a process gets: ``env`` (None: this process's), less :data:`SHARED_BYTECODE`."""
    given = os.environ if env is None else env
    if SHARED_BYTECODE not in given:
        return env
    return {k: v for k, v in given.items() if k != SHARED_BYTECODE}


def _open_log(log_path: str | os.PathLike | None, cmd: list[str], cwd: str | os.PathLike | None) -> TextIO | None:
    if log_path is None:
        return None
    path = Path(log_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    log = open(path, "w", encoding="utf-8", errors="replace")
    log.write(f"$ {' '.join(redact_argv(cmd))}\n# cwd: {cwd or os.getcwd()}\n")  # logs are read by others
    log.flush()
    return log


def _close_log(log: TextIO | None, outcome: str, quiet: bool = False) -> None:
    """The log's last line; ``quiet``: a log that cannot be written (its disk full) is closed all
    the same, the first error being the one to say."""
    if log is None:
        return
    try:
        log.write(f"\n# exit: {outcome}\n")
        log.close()
    except OSError:
        if not quiet:
            raise
        with contextlib.suppress(OSError):
            log.close()


def _note_log(log: TextIO | None, note: str) -> None:
    if log is not None:
        log.write(f"\n# hourly: {note}")


class _Pump:
    """Reads a process's output line by line as it comes (in a thread of its own); each line
    reaches the log file at once, and its time (seconds since ``start``, on the monotonic clock)
    goes to ``times``. A log that cannot be written (a full disk) is never a traceback in this
    thread: the error is kept for :func:`run` to raise, the process group killed, and the output
    read on to its end, so the process is never blocked on a full pipe."""

    def __init__(self, proc: subprocess.Popen, lines: list[str], log: TextIO | None, times: list[float], start: float) -> None:
        self.proc, self.lines, self.log, self.times, self.start = proc, lines, log, times, start
        self.error: OSError | None = None
        #: the output pipe's inode: every process still holding its write end holds the run open
        self.pipe = _pipe_of(proc)

    def __call__(self) -> None:
        stream = self.proc.stdout
        assert stream is not None
        try:
            for line in stream:
                self.times.append(time.monotonic() - self.start)
                self.lines.append(line)
                if self.log is not None and self.error is None and not self.log.closed:
                    try:
                        self.log.write(line)
                        self.log.flush()
                    except OSError as e:
                        if e.filename is None:
                            e.filename = self.log.name
                        self.error = e
                        _kill_group(self.proc)
            stream.close()
        except (OSError, ValueError):  # the stream closed under it (a run given up on)
            pass


def _pipe_of(proc: subprocess.Popen) -> int | None:
    """The inode of ``proc``'s output pipe (None once closed)."""
    try:
        return os.fstat(proc.stdout.fileno()).st_ino  # type: ignore[union-attr]
    except (OSError, AttributeError, ValueError):
        return None


def _feed(stream: IO[str], text: str) -> None:
    try:
        stream.write(text)
        stream.close()
    except (BrokenPipeError, OSError):  # the process exited without reading all of it
        pass


_PR_SET_PDEATHSIG = 1


#: run between ``setpriv --pdeathsig KILL`` and the command: setpriv has set the parent-death
#: signal; a shell whose parent is no longer hourly (hourly died before that took effect) stops there
_PARENT_GUARD = '[ "$PPID" = "$1" ] || exit 1; shift; exec "$@"'


@functools.cache
def _setpriv() -> str | None:
    """util-linux's ``setpriv``, where it runs the guard (BusyBox's ``setpriv``, in many small
    images, has no ``--pdeathsig``: then the fallback). Tried once per process (~2 ms)."""
    path = shutil.which("setpriv") if sys.platform.startswith("linux") else None
    if path is None:
        return None
    try:
        probe = subprocess.run([path, "--pdeathsig", "KILL", "--", "/bin/sh", "-c", _PARENT_GUARD, "sh",
                                str(os.getpid()), "true"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return path if probe.returncode == 0 else None


def _spawn(cmd: list[str], cwd: str | os.PathLike | None, env: dict[str, str] | None, *,
           stdin: int | IO[Any] | None) -> subprocess.Popen:
    """Start ``cmd`` in a session of its own, its output (stdout+stderr) on one pipe, killed when
    hourly dies (even by ``kill -9``) on Linux: no orphaned build keeps checking out or writing in
    the trees while the next run takes them over.

    With util-linux's ``setpriv`` (Debian's and most distributions' base system has it) the child is
    started as ``setpriv --pdeathsig KILL -- /bin/sh -c GUARD sh <hourly's pid> cmd...``: two
    ``exec``s (about 1.5 ms) and no fork of hourly. A preexec function (the fallback) makes Python
    fork instead of vfork, which copies hourly's page tables: 12 ms per process from a process of
    a few hundred MB (a test worker, a long hunt), and unsafe once threads or JAX are in. ``cmd``
    is looked up on ``env``'s PATH first, so that a missing or non-executable command is the
    FileNotFoundError or PermissionError Popen raises, never the shell's exit status 127 or 126
    (which a benchmark script may return for its own reasons)."""
    setpriv = _setpriv()
    preexec = None
    argv = cmd
    if setpriv is not None:
        _check_command(cmd[0], cwd, env)
        argv = [setpriv, "--pdeathsig", "KILL", "--", "/bin/sh", "-c", _PARENT_GUARD, "sh", str(os.getpid()), *cmd]
    else:
        preexec = _die_with_parent()
    return subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=stdin,
                            text=True, errors="replace", start_new_session=True, preexec_fn=preexec)


def _start(cmd: list[str], cwd: str | os.PathLike | None, env: dict[str, str] | None, stdin: int | IO[Any] | None,
           log: TextIO | None = None) -> subprocess.Popen:
    """:func:`_spawn`, a command that cannot start said in one line (its log closed)."""
    try:
        return _spawn(cmd, cwd, env, stdin=stdin)
    except FileNotFoundError as e:
        _close_log(log, "not started")
        raise UserError(f"command not found: {cmd[0]}", "install it, put it on PATH, or pass the right command") from e
    except PermissionError as e:
        _close_log(log, "not started")
        raise UserError(f"command not executable: {cmd[0]}", f"chmod +x {cmd[0]}") from e


def _check_command(name: str, cwd: str | os.PathLike | None, env: dict[str, str] | None) -> None:
    """Raise what Popen would for a command it cannot start (the shell would only exit 127/126)."""
    if "/" not in name:
        dirs = os.get_exec_path(env)
        if shutil.which(name, path=os.pathsep.join(dirs)) is None:
            if any(os.path.exists(os.path.join(d, name)) for d in dirs):
                raise PermissionError(13, "Permission denied", name)
            raise FileNotFoundError(2, "No such file or directory", name)
        return
    full = os.path.join(cwd, name) if cwd is not None else name
    if cwd is not None and not os.path.isdir(cwd):
        raise FileNotFoundError(2, "No such file or directory", str(cwd))
    if not os.path.exists(full):
        raise FileNotFoundError(2, "No such file or directory", name)
    if os.path.isdir(full) or not os.access(full, os.X_OK):
        raise PermissionError(13, "Permission denied", name)


def _group_timer(proc: subprocess.Popen, timeout: float | None, expired: threading.Event) -> threading.Timer | None:
    """A started timer that kills ``proc``'s process group after ``timeout`` seconds and sets
    ``expired``; None without a timeout."""
    if timeout is None:
        return None

    def expire() -> None:
        expired.set()
        _kill_group(proc)
    timer = threading.Timer(timeout, expire)
    timer.daemon = True
    timer.start()
    return timer


def _die_with_parent() -> Callable[[], None] | None:
    """Where ``setpriv`` is missing: the same guarantee from a preexec function (Linux only)."""
    if not sys.platform.startswith("linux"):
        return None
    # a preexec function makes Python fork (not vfork): only safe in a single-threaded process, and
    # JAX (imported by in-process tracing) warns at every fork — then the child runs without it
    if threading.active_count() > 1 or "jax" in sys.modules:
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    parent = os.getpid()

    def preexec() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # hourly died before the line above took effect
            os._exit(1)
    return preexec


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


#: how long to wait for the rest of a killed process group (grandchildren) to be gone
GROUP_GONE_S = 2.0
#: how long, after a process exits, its output may go on arriving before hourly looks for who
#: still holds it open (a process reading a large output to its end is no such holder)
PIPE_GRACE_S = 0.1
#: how long an interrupted run (Ctrl-C, a stop signal) may take to be stopped, its group killed
#: and gone, before hourly goes on stopping without it: the whole of hourly stops within seconds
STOP_S = 2.5


def _wait_group_gone(pgid: int, limit: float = GROUP_GONE_S) -> None:
    """After the child is reaped, wait (bounded) until no process of its group is left, so that
    no grandchild still writes into a tree hourly is about to restore."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if not _live_members(pgid):
            return
        time.sleep(0.02)


def _live_members(pgid: int) -> list[tuple[int, str]]:
    """The processes of group ``pgid`` that still run, as (pid, command name): zombies, which only
    wait to be reaped by whoever adopted them, are none. Without ``/proc`` (macOS) the group, when
    it exists, is one entry of pid 0."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return []
    except OSError:
        return []
    if not os.path.isdir("/proc/self"):
        return [(0, "?")]
    found = []
    for pid, stat in _proc_stats():
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            found.append((pid, stat[stat.find("(") + 1:stat.rfind(")")]))
    return found


def _proc_stats() -> Iterator[tuple[int, str]]:
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as f:
                    yield int(name), f.read()
            except OSError:  # gone meanwhile
                continue


def _pipe_holders(pipe: int | None) -> list[tuple[int, str]] | None:
    """The processes other than this one that hold pipe ``pipe`` (an inode) open, as (pid, command
    name); None where hourly cannot tell (no ``/proc``)."""
    if pipe is None or not os.path.isdir("/proc/self/fd"):
        return None
    target, me, found = f"pipe:[{pipe}]", os.getpid(), []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            fds = os.listdir(f"/proc/{name}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{name}/fd/{fd}") == target:
                    found.append((int(name), _comm(int(name))))
                    break
            except OSError:
                continue
    return found


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return "?"


def _named(procs: list[tuple[int, str]]) -> str:
    shown = ", ".join(f"{name} (pid {pid})" if pid else "its group" for pid, name in procs[:5])
    return shown + (f" and {len(procs) - 5} more" if len(procs) > 5 else "")


def _kill_pids(procs: list[tuple[int, str]]) -> None:
    for pid, _ in procs:
        if pid > 0:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _end(proc: subprocess.Popen, pump: _Pump, threads: list[threading.Thread]) -> list[str]:
    """After the process exited (reaped): what it printed is read to the end, and whatever it left
    behind is killed, never waited for: the rest of its process group (a ``cmd &`` of its shell), and
    any process elsewhere still holding its output open (one that started a session of its own).
    Returns what was done, in words."""
    notes = []
    left = _live_members(proc.pid)
    if left:
        _kill_group(proc)
        _wait_group_gone(proc.pid)
        notes.append(f"the command exited and left {_named(left)} running in its process group: killed "
                     "(a run ends when its process exits)")
    reader = threads[0]
    reader.join(PIPE_GRACE_S)
    if reader.is_alive():
        holders = _pipe_holders(pump.pipe)
        if holders:
            _kill_pids(holders)
            notes.append(f"the command exited and left {_named(holders)}, outside its process group, holding "
                         "its output open: killed")
            reader.join(GROUP_GONE_S)
            if reader.is_alive():
                notes.append("its output was still held open after that: hourly stopped reading it")
        else:  # nobody else holds it (or hourly cannot tell): the rest is on its way
            reader.join()
    for t in threads[1:]:
        t.join(GROUP_GONE_S)
    return notes


def _stop_now(proc: subprocess.Popen, pump: _Pump | None, threads: list[threading.Thread]) -> None:
    """Ctrl-C or a stop signal while ``proc`` runs: kill its whole group (SIGKILL: a benchmark that
    traps SIGINT and SIGTERM stops too) and every process still holding its output, and wait for
    them at most :data:`STOP_S` in all (a process tearing down an accelerator can take longer to
    be gone; it is killed, and hourly does not wait for it)."""
    deadline = time.monotonic() + STOP_S
    _kill_group(proc)
    _kill_pids(_pipe_holders(pump.pipe if pump is not None else _pipe_of(proc)) or [])
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=max(0.0, deadline - time.monotonic() - 0.5))
    _wait_group_gone(proc.pid, max(0.0, deadline - time.monotonic() - 0.3))
    for t in threads:
        if t.ident is not None:  # started
            t.join(timeout=max(0.0, deadline - time.monotonic()))


def split_command(text: str, flag: str, hint_empty: str) -> list[str]:
    """A command given as one string, split like a shell would (never run through a shell)."""
    try:
        argv = shlex.split(text)
    except ValueError as e:
        raise UserError(f"cannot split {flag} ({e})", "check its quotes") from e
    if not argv:
        raise UserError(f"empty {flag}", hint_empty)
    return argv


def parse_env(items: list[str]) -> dict[str, str]:
    """``--env`` items as a dict: ``KEY=VALUE``, or ``KEY`` alone, whose value is ``KEY``'s in
    hourly's own environment (how a secret is passed without being written down: the scripts
    hourly writes pass it so, hourly.text.privacy). A usage error (exit 2) for anything else: a name
    that is not set, no name, or the word ``<redacted>`` that hourly prints for a secret's value
    (a printed line pasted as it is)."""
    out = {}
    for item in items:
        if "=" not in item:
            if not item or any(c.isspace() for c in item):
                raise UsageError(f"--env {item!r} is not KEY=VALUE", "write it as --env KEY=VALUE")
            if item not in os.environ:
                raise UsageError(f"--env {item} takes {item}'s value from hourly's environment, and {item} is not set",
                                 f"export {item}=... before running hourly, or pass --env {item}=VALUE")
            out[item] = os.environ[item]
            continue
        if item.startswith("="):
            raise UsageError(f"--env {item!r} is not KEY=VALUE", "write it as --env KEY=VALUE")
        k, v = item.split("=", 1)
        if v == REDACTED and looks_secret(k):
            raise pasted_env(k)
        out[k] = v
    # the samples hourly asks a process for (hourly.measure.sample_cost.SAMPLES_VAR): given, it fixes
    # them, and a value that is not a count would reach the benchmark while hourly counted another
    asked = out.get("HOURLY_SAMPLES")
    if asked is not None and not (asked.strip().isdigit() and int(asked) > 0):
        raise UsageError(f"--env HOURLY_SAMPLES={asked}: the samples each benchmark process is asked for must be a "
                         "whole number, 1 or more", "pass e.g. --env HOURLY_SAMPLES=12 (or --samples 12)")
    return out


def pasted_env(name: str) -> UsageError:
    """The usage error of ``--env NAME=<redacted>``: a line hourly printed, pasted as it is, would
    pass the benchmark the word, not the secret (said here, and for the whole command line by
    hourly.commands.common.refuse_redacted)."""
    return UsageError(f"--env {name}={REDACTED} passes the word {REDACTED}: hourly prints a secret's value so, "
                      "never the value itself",
                      f"export {name}=<its value> and pass --env {name} (the value is then taken from "
                      "hourly's environment)")


def attached(cmd: list[str], *, env: dict[str, str] | None = None, cwd: str | os.PathLike | None = None) -> int:
    """Run ``cmd`` on this process's terminal (stdin, stdout and stderr inherited: an interactive
    shell, a person's command) and wait for it; its exit status (128 + N when signal N ended it).
    While it runs, Ctrl-C and Ctrl-\\ are the child's alone: this process ignores them, so it is
    still there to clean up (restore the trees) when the child exits. A command that is not found
    is a :class:`~hourly.errors.UserError`."""
    old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGQUIT)}
    try:
        try:
            child = subprocess.Popen(cmd, env=child_env(env), cwd=cwd,
                                     preexec_fn=lambda: [signal.signal(s, signal.SIG_DFL) for s in old])
        except FileNotFoundError as e:
            raise UserError(f"command not found: {cmd[0]}", "check its name and PATH") from e
        try:
            rc = child.wait()
        except BaseException:  # hourly itself stopped (SIGTERM, SIGHUP): the child goes first
            child.terminate()
            try:
                child.wait(timeout=STOP_S)
            except subprocess.TimeoutExpired:  # it traps SIGTERM: hourly stops all the same
                child.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    child.wait(timeout=STOP_S)
            raise
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    return 128 - rc if rc < 0 else rc
