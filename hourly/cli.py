"""The command line: a thin layer over the stages, and the one top-level error handler."""

from __future__ import annotations

import json
import os
import shlex
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console

# typer (>= 0.29) carries its own click: its exceptions are reached through typer, never click.
_CLICK_ERRORS = (typer.TyperException,)
_EXITS = (typer.Exit,)
_ABORTS = (typer.Abort, KeyboardInterrupt)
from . import __version__
from .config import Settings, effective
from .errors import ProcessError, UserError
from .render import print_report, progress_bar
from .scan import dry_run, run_scan, show as show_stored
from .store import Store

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Find the JAX or XLA commit that made a program slower or made it crash.")
console = Console()
err_console = Console(stderr=True)

# -- shared options --------------------------------------------------------------------------
Opt = typer.Option
XlaRepo = Opt(None, "--xla-repo", help="XLA checkout [default: /opt/xla-source or /opt/xla]")
JaxRepo = Opt(None, "--jax-repo", help="JAX checkout [default: /opt/jax-source or /opt/jax]")
Workdir = Opt(None, "--workdir", help="Results store, logs and wheel cache [default: ./hourly-work]")
ConfigOpt = Opt(None, "--config", help="Settings file [default: ./hourly.toml when present]")
JsonOpt = Opt(False, "--json", help="Print one JSON object instead of tables.")


def _scan_flags(**kw) -> dict:
    return {k: v for k, v in kw.items()}


@app.command()
def scan(
    from_: Optional[str] = Opt(None, "--from", help='Start of the window, e.g. "Aug 24 2023" or ISO 8601.'),
    to: Optional[str] = Opt(None, "--to", help="End of the window; a date alone means the end of that day."),
    tz: Optional[str] = Opt(None, "--tz", help="Zone of times given without one [default: UTC]."),
    step: Optional[str] = Opt(None, "--step", help="Spacing of instants, e.g. 1h, 30m, 6h [default: 1h]."),
    xla_repo: Optional[str] = XlaRepo,
    jax_repo: Optional[str] = JaxRepo,
    ref: Optional[str] = Opt(None, "--ref", help="Ref to walk [default: origin/main]."),
    first_parent: Optional[bool] = Opt(None, "--first-parent/--no-first-parent",
                                       help="Walk merged history only [default: on]."),
    sync: Optional[bool] = Opt(None, "--sync/--no-sync", help="`git remote update` both repos first [default: on]."),
    build_cmd: Optional[str] = Opt(None, "--build-cmd", help="Build command, run in the JAX tree [default: build-jax.sh]."),
    build_timeout: Optional[float] = Opt(None, "--build-timeout", help="Seconds before a build is stopped."),
    wheel_dir: Optional[str] = Opt(None, "--wheel-dir", help="Where the build leaves wheels [default: <jax-repo>/dist]."),
    python: Optional[str] = Opt(None, "--python", help="Python that gets the builds and runs the benchmark."),
    bench_cmd: Optional[str] = Opt(None, "--bench-cmd", help="Benchmark command (split like a shell would)."),
    bench_cwd: Optional[str] = Opt(None, "--bench-cwd", help="Directory the benchmark runs in."),
    env: Optional[List[str]] = Opt(None, "--env", help="KEY=VALUE for the benchmark (repeatable)."),
    repeats: Optional[int] = Opt(None, "--repeats", help="Runs per pair [default: 1]."),
    bench_timeout: Optional[float] = Opt(None, "--bench-timeout", help="Seconds before a run counts as timed out."),
    metric_regex: Optional[str] = Opt(None, "--metric-regex", help="Regex with a (?P<value>...) group [default: MLUPS]."),
    higher_is_better: Optional[bool] = Opt(None, "--higher-is-better/--lower-is-better",
                                           help="Direction of the metric, stored with the scan for show, detect, "
                                                "bisect, report and profile: higher (rates, MLUPS) or lower "
                                                "(times) [default: higher]."),
    workdir: Optional[str] = Workdir,
    force: Optional[bool] = Opt(None, "--force", help="Run even with uncommitted changes (they are stashed and restored)."),
    rerun: Optional[bool] = Opt(None, "--rerun", help="Measure again pairs that are already stored."),
    dry_run_: bool = Opt(False, "--dry-run", help="Print the plan; touch nothing."),
    json_out: bool = JsonOpt,
    config: Optional[str] = ConfigOpt,
) -> None:
    """Build and benchmark every hour of a window; one build per distinct (xla, jax) pair."""
    flags = dict(from_=from_, to=to, tz=tz, step=step, xla_repo=xla_repo, jax_repo=jax_repo, ref=ref,
                 first_parent=first_parent, sync=sync, build_cmd=build_cmd, build_timeout=build_timeout,
                 wheel_dir=wheel_dir, python=python, bench_cmd=bench_cmd, bench_cwd=bench_cwd, env=env,
                 repeats=repeats, bench_timeout=bench_timeout, metric_regex=metric_regex, workdir=workdir,
                 force=force, rerun=rerun, higher_is_better=higher_is_better)
    s, _ = effective(flags, config)
    # the workdir is created only once the scan has checked its input and has something to store
    if dry_run_:
        report = dry_run(s, s.workdir)
    elif json_out:
        report = run_scan(s, s.workdir)
    else:
        report = _scan_with_progress(s, s.workdir)
    _emit(report, json_out, s)
    if not dry_run_ and report.points and all(p.status == "no_metric" for p in report.points):
        log = next((p.detail for p in report.points if p.detail), "")
        raise UserError(f"the metric was never printed by any run ({log})",
                        "check --metric-regex against the benchmark's output in that log")


def _scan_with_progress(s: Settings, store: Store | str):
    with progress_bar(err_console, "pairs", lambda pair: f"building + measuring {pair.short()}") as on_progress:
        return run_scan(s, store, on_progress)


def _emit(report, json_out: bool, s: Settings, store: Store | None = None) -> None:
    if json_out:
        print(json.dumps(report.as_json(), indent=1))
        return
    marks, lines = _step_marks(report, s)
    print_report(console, report, marks)
    for line in lines:
        console.print(line)


def _step_marks(report, s: Settings) -> tuple[dict[int, str], list[str]]:
    """Detection marks for the table, when the detection stage is available."""
    try:
        from .steps import marks_for_report
    except ImportError:
        return {}, []
    return marks_for_report(report, s)


@app.command()
def show(workdir: Optional[str] = Workdir, json_out: bool = JsonOpt, config: Optional[str] = ConfigOpt,
         nightly: bool = Opt(False, "--nightly", help="Show the daily results of `hourly nightly` instead.")) -> None:
    """Print the stored scan table again (the hourly scan's, or with --nightly the daily one)."""
    store = Store(_workdir(workdir, config), create=False,
                  made_by="hourly nightly --from ... --to ..." if nightly else "hourly scan")
    if nightly or (not store.points("hourly") and store.load_settings("nightly")):
        from . import nightly as N
        report = N.show(store)
        if json_out:
            print(json.dumps(report.as_json(), indent=1))
        else:
            N.print_report(console, report)
        return
    s = _stored_settings(store, config, workdir=workdir)
    _emit(show_stored(store, s), json_out, s, store)


def _workdir(workdir: Optional[str], config: Optional[str]) -> str:
    s, _ = effective({"workdir": workdir}, config)
    return s.workdir


def _stored_settings(store: Store, config: Optional[str], **flags) -> Settings:
    base = store.load_settings("scan") or {}
    s, _ = effective(flags, config, base=base)
    return s


@app.command()
def report(workdir: Optional[str] = Workdir, out: Optional[str] = Opt(None, "--out", help="Folder for report.md and plot.png [default: <workdir>/report]"),
           min_change: Optional[float] = Opt(None, "--min-change", help="Ignore steps smaller than this relative change; 0 keeps every significant step [default: 0.01]."),
           config: Optional[str] = ConfigOpt) -> None:
    """Write a markdown report (with a PNG plot) ready to paste into a JAX/XLA issue."""
    from .report import write_report
    store = Store(_workdir(workdir, config), create=False)
    s = _stored_settings(store, config, workdir=workdir)
    files = write_report(store, s, Path(out) if out else None, min_change)
    print(f"report: {files.markdown}")
    if files.plot:
        print(f"plot:   {files.plot}")


@app.command()
def profile(workdir: Optional[str] = Workdir,
            good: Optional[str] = Opt(None, "--good", help="Good state: a time, or xla@<sha>,jax@<sha>."),
            bad: Optional[str] = Opt(None, "--bad", help="Bad state: a time, or xla@<sha>,jax@<sha>."),
            python_tracer_level: Optional[int] = Opt(0, "--python-tracer-level", min=0, max=1,
                                                     help="Python tracer: 0 off (small traces), 1 on."),
            host_tracer_level: Optional[int] = Opt(None, "--host-tracer-level", min=0, max=3,
                                                   help="Host tracer: 0 off, 1 user, 2 default, 3 verbose."),
            top: int = Opt(10, "--top", min=1, help="Rows per comparison table."),
            config: Optional[str] = ConfigOpt) -> None:
    """Trace the last-good and first-bad states of each regression and compare them."""
    from .commands.trace import TraceOptions
    from .profile import Target, parse_state, run_profiles, targets_from_store
    store = Store(_workdir(workdir, config), create=False)
    s = _stored_settings(store, config, workdir=workdir)
    if bool(good) != bool(bad):
        raise UserError("--good and --bad go together", "pass both, or neither to use the stored regressions")
    targets = [Target("manual", parse_state(good, s), parse_state(bad, s))] if good else targets_from_store(store, s)
    options = TraceOptions(host_tracer_level=host_tracer_level, python_tracer_level=python_tracer_level)
    for r in run_profiles(store, s, targets, options, say=lambda t: err_console.print(t, highlight=False)):
        console.print(f"[bold]{r.target.name}[/]: good {r.good_dir}  bad {r.bad_dir}")
        print(r.text)
        print(f"comparison saved to {r.comparison_path}")
        print(f"memory diff with pprof: pprof -http=: --diff_base {r.good_dir / 'memory.prof'} {r.bad_dir / 'memory.prof'}")


@app.command("config")
def config_cmd(config: Optional[str] = ConfigOpt, json_out: bool = JsonOpt) -> None:
    """Print the effective settings and where each came from."""
    s, origin = effective({}, config)
    values = s.as_dict()
    if json_out:
        print(json.dumps({k: {"value": v, "from": origin[k]} for k, v in values.items()}, indent=1))
        return
    from rich.table import Table
    t = Table(title="hourly settings")
    t.add_column("setting")
    t.add_column("value")
    t.add_column("from")
    for k, v in values.items():
        t.add_row(k.rstrip("_"), repr(v), origin[k])
    console.print(t)


@app.command()
def demo(directory: Optional[str] = typer.Argument(None, help="Where to build the demo [default: a new temporary dir]."),
         json_out: bool = JsonOpt) -> None:
    """Make two small real repos with planted regressions, then find them."""
    from .demo import run_demo
    run_demo(directory, console=console, json_out=json_out)


def _register_stage_commands() -> None:
    """Commands that live with their stage, each in hourly/commands/."""
    from .commands.bisect import bisect
    from .commands.detect import detect
    from .commands.nightly import container, nightly
    from .commands.trace import compare_profiles, trace
    app.command()(nightly)
    app.command()(container)
    app.command()(detect)
    app.command()(bisect)
    app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(trace)
    app.command("compare-profiles")(compare_profiles)


_register_stage_commands()


@app.command()
def version() -> None:
    """Print hourly's version."""
    print(__version__)


#: --help lists the commands in the order of a hunt
_ORDER = ["demo", "nightly", "container", "scan", "show", "detect", "bisect", "report", "profile", "trace",
          "compare-profiles", "config", "version"]
app.registered_commands.sort(
    key=lambda c: _ORDER.index(c.name or c.callback.__name__.replace("_", "-")) if
    (c.name or c.callback.__name__.replace("_", "-")) in _ORDER else len(_ORDER))


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
        e.show()
        return e.exit_code
    except UserError as e:
        _err(f"hourly: error: {e.one_line()}")
        return e.exit_code
    except ProcessError as e:
        log = _crash_log(e)
        _err(f"hourly: error: {e}\n  full log: {e.log_path or log}")
        return e.exit_code
    except Exception as e:  # noqa: BLE001 - the one place that catches everything
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
