"""The command line: the app assembled from hourly/commands/, and the one top-level error handler."""

from __future__ import annotations

import errno
import functools
import os
import signal
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from types import FrameType
from typing import Any, Callable, Protocol, cast

import typer

from hourly.errors import ProcessError, UserError
from hourly.options import join

from . import __version__
from .commands.bench import bench
from .commands.bisect import bisect
from .commands.clean import clean
from .commands.common import PanelledCommand, StoredAtStop, stored_at_stop
from .commands.config import config_cmd, version
from .commands.demo import demo
from .commands.detect import detect
from .commands.explain import explain
from .commands.hunt import hunt
from .commands.mark import mark
from .commands.nightly import container, nightly
from .commands.profile import profile
from .commands.releases import releases
from .commands.report import report
from .commands.scan import scan, show
from .commands.shell import shell
from .commands.trace import compare_profiles, trace
from .commands.watch import watch

# typer (>= 0.29) carries its own click: its exceptions are reached through typer, never click.
_CLICK_ERRORS = (typer.TyperException,)
_EXITS = (typer.Exit,)
_ABORTS = (typer.Abort, KeyboardInterrupt)


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP (``timeout``, ``docker stop``, a Slurm time limit, an ssh drop), raised where
    the run is, as Ctrl-C is: every ``finally`` restores the trees and keeps what is stored, and the
    run ends with the resume line and the conventional status 128 + the signal's number."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


#: the stop signal this process received, if any (typer/click may turn the exception into exit 130)
_stopped_by: list[int] = []


def _stop(signum: int, frame: FrameType | None) -> None:
    if _unsafe_to_raise(frame):  # an exception raised here would be printed and ignored: ask again
        threading.Timer(0.05, os.kill, (os.getpid(), signum)).start()
        return
    if signum == signal.SIGINT:  # Ctrl-C: as Python's own handler, but never lost in a fork callback
        raise KeyboardInterrupt
    _stopped_by.append(signum)
    raise Stopped(signum)


def _unsafe_to_raise(frame: FrameType | None) -> bool:
    """Whether the signal came while Python ran a fork callback (logging releases its lock in the
    parent after every fork of a subprocess): an exception there is ignored, and the run would go on
    as if nothing had been asked. Or while ``subprocess.Popen`` starts a child: an exception there
    leaves the child running with no ``Popen`` object to kill it by (a build stopped that way went on
    to rewrite a tracked file after the trees were restored); asked again 50 ms later, it lands
    where :func:`hourly.adapters.proc.run` kills the child's group. Or while a finalizer runs (an
    object's ``__del__``, a weakref callback: a Popen, a file or a cursor collected at any bytecode):
    an exception there is printed as "Exception ignored" and lost too."""
    while frame is not None:
        code = frame.f_code
        if code.co_name == "__del__" or code.co_filename.endswith(("weakref.py", "_weakrefset.py")):
            return True
        if code.co_name in ("_releaseLock", "_acquireLock", "_after_at_fork_child_reinit_locks") \
                and code.co_filename.endswith(("logging/__init__.py", "logging\\__init__.py")):
            return True
        if code.co_name in ("_execute_child", "__init__") and code.co_filename.endswith("subprocess.py"):
            return True
        frame = frame.f_back
    return False


#: the signals that stop a run like Ctrl-C, besides SIGINT itself
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class _ShownError(Protocol):
    """Every TyperException typer raises is one of its click's (ClickException and below): it shows
    itself on stderr."""

    def show(self) -> None: ...

# help is plain text (rich_markup_mode=None): "[default: UTC]" in a help string is shown, not read as markup
app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None,
                  context_settings={"help_option_names": ["-h", "--help"]},
                  help="Find the JAX or XLA commit that made a program slower or made it crash.")


def _print_version(value: bool) -> None:
    if value:
        print(f"hourly {__version__}")
        raise typer.Exit()


@app.callback()
def _top(version_: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                       help="Print hourly's version and exit.")) -> None:
    """Find the JAX or XLA commit that made a program slower or made it crash."""

def _command(fn: Callable[..., Any], **kw: Any) -> None:
    """Register ``fn`` (made by hourly.commands.common.command) under its name; its --help groups
    its options in panels (hourly.options.PANELS)."""
    name = fn.command_name  # type: ignore[attr-defined]  # set by hourly.commands.common.command
    app.command(name, cls=PanelledCommand, **kw)(fn)


# --help lists the commands in the order of a hunt
_IN_ORDER: tuple[Callable[..., Any], ...] = (demo, releases, nightly, container, hunt, watch, scan, show, detect, bisect,
                                             mark, shell, report, profile, explain, bench, trace,
                                             compare_profiles,
                                             clean, config_cmd, version)
for _fn in _IN_ORDER:  # trace passes what follows its own options to the benchmark
    _command(_fn, **({"context_settings": {"allow_extra_args": True, "ignore_unknown_options": True}}
                     if _fn is trace else {}))

#: --help lists each command with its whole first sentence (click would cut it to the width, ending in "..."),
#: its lines joined by one space (a docstring's indentation is no part of it)
for _c in app.registered_commands:
    _c.short_help = _c.short_help or " ".join((_c.help or _c.callback.__doc__ or "").strip().split("\n\n")[0].split())


# -- the one top-level handler ---------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    before = {}
    try:
        for s in (*STOP_SIGNALS, signal.SIGINT):  # a signal handler can only be set in the main thread
            if s == signal.SIGINT and signal.getsignal(s) is not signal.default_int_handler:
                continue  # SIGINT ignored or handled by a caller: left as it is
            before[s] = signal.signal(s, _stop)
    except ValueError:
        pass
    _stopped_by.clear()
    stored_at_stop.clear()  # what a stop finds stored, as the command says it
    try:
        code = _main(argv)
    finally:
        for s, h in before.items():
            signal.signal(s, h)
    if code == 130 and _stopped_by:
        code = 128 + _stopped_by[0]
    if code in (130, *(128 + s for s in STOP_SIGNALS)):
        _err(stopped_line(code, argv, stored_at_stop[0] if stored_at_stop else None))
    return code


def stopped_line(code: int, argv: list[str], stored: StoredAtStop | None = None) -> str:
    """What a run stopped by Ctrl-C (130) or a stop signal (128 + it) prints: the command that
    resumes it, as it was given, secret-looking values redacted (hourly.options.join); or, stopped
    once it had ``stored`` what it was run for, that and the command that prints it."""
    what = "interrupted" if code == 130 else f"stopped by {signal.Signals(code - 128).name}"
    if stored is not None:
        again = [w for w in argv if w not in stored.leave_out]
        return f"\n{what}. {stored.said}:\n  {join(['hourly', *again])}"
    if argv[:1] and argv[0] in STORES_NOTHING:
        return f"\n{what}. hourly {argv[0]} stores nothing; run it again with:\n  {join(['hourly', *argv])}"
    return f"\n{what}. Finished points are stored; resume with:\n  {join(['hourly', *argv])}"


#: commands that keep nothing to resume from: a stopped one starts again from the beginning
STORES_NOTHING = ("bench",)


@functools.cache
def _command_tree() -> Any:
    """The click command typer builds from ``app``, built once per process: building it reads every
    command's signature (~25 ms), which a process that calls :func:`main` many times (the tests call
    it in-process some 800 times) would otherwise pay on every call. Calling it is what
    ``app(...)`` does, less typer's pretty-exception hook, which ``app`` disables."""
    return typer.main.get_command(app)


def _main(argv: list[str]) -> int:
    try:
        rv = _command_tree()(args=argv, prog_name="hourly", standalone_mode=False)
        return rv if isinstance(rv, int) else 0  # typer returns Exit codes; 130 is its Ctrl-C
    except _EXITS as e:
        return e.exit_code
    except _ABORTS:  # Ctrl-C, or a stop signal (main() tells them apart)
        return 130
    except _CLICK_ERRORS as e:
        if e.exit_code == 2 and type(e).__name__ != "NoArgsIsHelpError":  # a usage error: one line, as ours
            ctx = getattr(e, "ctx", None)
            shown = e.format_message() if hasattr(e, "format_message") else str(e)
            message = " ".join(shown.split())
            _err(f"hourly: error: {message} — see `{ctx.command_path if ctx else 'hourly'} --help`")
            return 2
        cast(_ShownError, e).show()
        return e.exit_code
    except UserError as e:
        _err(f"hourly: error: {e.one_line()}")
        for line in e.details:
            _err(f"  | {line}")
        return e.exit_code
    except ProcessError as e:
        log = _crash_log(e)
        _err(f"hourly: error: {e}\n  full log: {e.log_path or log}")
        return e.exit_code
    except OSError as e:
        if e.errno in (errno.ENOSPC, errno.EDQUOT):  # a full disk, wherever it was met: the user's to fix
            where = f" of {e.filename}" if e.filename else ""
            _err(f"hourly: error: no space left on the device{where} ({e.strerror}) — free space there, or point "
                 "hourly at another disk (--workdir, --cache-dir, --out)")
            return 1
        return _unexpected(e)
    except Exception as e:
        return _unexpected(e)


def _unexpected(e: BaseException) -> int:
    log = _crash_log(e)
    _err(f"hourly: unexpected error: {type(e).__name__}: {e}\n"
         f"  details in {log}; please attach it to a bug report")
    return 3


def _err(text: str) -> None:
    from hourly.render.console import escape_controls  # a subject or path in an error: read, never acted on
    print(escape_controls(text), file=sys.stderr, flush=True)


def _crash_log(e: BaseException) -> str:
    d = Path(os.environ.get("HOURLY_LOG_DIR") or Path(tempfile.gettempdir()) / "hourly-logs")
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"error-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    path.write_text(f"hourly {__version__}\nargv: {sys.argv}\n\n" +
                    "".join(traceback.format_exception(type(e), e, e.__traceback__)))
    return str(path)


def entry() -> None:
    sys.exit(main())
