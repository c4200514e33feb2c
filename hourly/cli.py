"""The command line: the app assembled from hourly/commands/, and the one top-level error handler."""

from __future__ import annotations

import os
import shlex
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Protocol, cast

import typer

# typer (>= 0.29) carries its own click: its exceptions are reached through typer, never click.
_CLICK_ERRORS = (typer.TyperException,)
_EXITS = (typer.Exit,)
_ABORTS = (typer.Abort, KeyboardInterrupt)
from hourly.errors import ProcessError, UserError

from . import __version__
from .commands.bisect import bisect
from .commands.clean import clean
from .commands.config import config_cmd, version
from .commands.demo import demo
from .commands.detect import detect
from .commands.hunt import hunt
from .commands.nightly import container, nightly
from .commands.profile import profile
from .commands.releases import releases
from .commands.report import report
from .commands.scan import scan, show
from .commands.trace import compare_profiles, trace


class _ShownError(Protocol):
    """Every TyperException typer raises is one of its click's (ClickException and below): it shows
    itself on stderr."""

    def show(self) -> None: ...

# help is plain text (rich_markup_mode=None): "[default: UTC]" in a help string is shown, not read as markup
app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None,
                  help="Find the JAX or XLA commit that made a program slower or made it crash.")

# --help lists the commands in the order of a hunt
app.command()(demo)
app.command()(releases)
app.command()(nightly)
app.command()(container)
app.command()(hunt)
app.command()(scan)
app.command()(show)
app.command()(detect)
app.command()(bisect)
app.command()(report)
app.command()(profile)
app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(trace)
app.command("compare-profiles")(compare_profiles)
app.command()(clean)
app.command("config")(config_cmd)
app.command()(version)

#: --help lists each command with its whole first sentence (click would cut it to the width, ending in "...")
for _c in app.registered_commands:
    _c.short_help = _c.short_help or (_c.help or _c.callback.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")


# -- the one top-level handler ---------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    code = _main(argv)
    if code == 130:
        _err(f"\ninterrupted. Finished points are stored; resume with:\n  {shlex.join(['hourly', *argv])}")
    return code


def _main(argv: list[str]) -> int:
    try:
        rv = app(args=argv, prog_name="hourly", standalone_mode=False)
        return rv if isinstance(rv, int) else 0  # typer returns Exit codes; 130 is its Ctrl-C
    except _EXITS as e:
        return e.exit_code
    except _ABORTS:
        return 130
    except _CLICK_ERRORS as e:
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
    except Exception as e:
        log = _crash_log(e)
        _err(f"hourly: unexpected error: {type(e).__name__}: {e}\n"
             f"  details in {log}; please attach it to a bug report")
        return 3


def _err(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _crash_log(e: BaseException) -> str:
    d = Path(os.environ.get("HOURLY_LOG_DIR") or Path(tempfile.gettempdir()) / "hourly-logs")
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"error-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    path.write_text(f"hourly {__version__}\nargv: {sys.argv}\n\n" +
                    "".join(traceback.format_exception(type(e), e, e.__traceback__)))
    return str(path)


def entry() -> None:
    sys.exit(main())
