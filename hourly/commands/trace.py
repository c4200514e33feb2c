"""``hourly trace`` (a benchmark under the JAX profiler) and ``hourly compare-profiles``."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from hourly.render.console import command_line

from .common import command


@command("trace")
def trace(
    command: List[str] = typer.Argument(..., help="The benchmark command, after --: python bench.py args (or python -m module)."),
    *,
    out: Optional[str],
    host_tracer_level: Optional[int],
    python_tracer_level: Optional[int],
    device_tracer_level: Optional[int],
    memprof_at: Optional[List[str]],
) -> None:
    """Run a Python benchmark under the JAX profiler; save a trace and memory profiles."""
    from hourly.profile.capture import TraceOptions, capture, default_out_dir
    _require_script(command)
    out_dir = Path(out) if out else default_out_dir()
    try:  # made now: a file in the way or a place that cannot hold it is one line, never a traceback
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        from hourly.errors import path_fault
        raise path_fault(e, "the trace folder", out_dir, "--out") from None
    options = TraceOptions(host_tracer_level, python_tracer_level, device_tracer_level,
                           [n for part in (memprof_at or []) for n in part.split(",") if n])
    captured = capture(command, out_dir, options=options, check=False)
    typer.echo(captured.output, nl=False)
    files = captured.manifest.get("files", {})
    typer.echo(f"\ntrace folder: {captured.out_dir}")
    for kind in ("perfetto", "xplane", "memory_profiles"):
        for name in files.get(kind, []):
            typer.echo(f"  {name}")
    typer.echo(f"view: {command_line(['xprof', '--port', '8791', captured.out_dir])}   (or "
               f"{command_line(['tensorboard', '--logdir', captured.out_dir])}; "
               "or open the perfetto_trace.json.gz at ui.perfetto.dev)")
    if not captured.ok:
        code = captured.result.returncode
        if not captured.manifest.get("status"):  # the profiler stopped before it ran the program: not its exit
            from hourly.profile.run import profiler_failed
            raise profiler_failed("the profiler (python -m hourly.harness.trace) stopped before it ran the program",
                                  captured.out_dir / "run.log", "see the log's end above")
        typer.echo(f"the benchmark {'timed out' if code is None else f'exited with {code}'}",
                   err=True)
        raise typer.Exit(1 if code in (None, 0) else code)


def _require_script(command: List[str]) -> None:
    """A script the command names (``python bench.py``, ``bench.py``) that is not there: one line,
    before a trace folder of a run that never started is made and listed."""
    from hourly.errors import UserError
    for word in command:
        if word == "-m":
            return  # a module: Python finds it
        if word.endswith(".py") and not word.startswith("-"):
            if not Path(word).is_file():
                raise UserError(f"no such file: {word}", "give the benchmark script's path, e.g. "
                                "hourly trace -- python bench.py")
            return


@command("compare-profiles")
def compare_profiles(
    good_dir: Path = typer.Argument(..., help="Capture folder of the good build."),
    bad_dir: Path = typer.Argument(..., help="Capture folder of the bad build."),
    *,
    top: int,
) -> None:
    """Compare two captures: op times and live memory by allocation site."""
    from hourly.profile.compare import compare, require_captures
    require_captures(good_dir, bad_dir)  # a folder with no trace is an error, not a comparison of notes
    typer.echo(compare(good_dir, bad_dir).render(top), nl=False)
