"""``hourly trace`` (a benchmark under the JAX profiler) and ``hourly compare-profiles``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from hourly.render.console import command_line


def trace(
    command: Annotated[list[str], typer.Argument(
        help="The benchmark command, after --: python bench.py args (or python -m module).")],
    out: Annotated[Optional[Path], typer.Option(
        "--out", help="Folder for the trace and memory profiles [default: ./hourly-work/traces/<UTC time>]")
    ] = None,
    host_tracer_level: Annotated[Optional[int], typer.Option(
        min=0, max=3, help="Host tracer: 0 off, 1 user TraceMe, 2 default, 3 verbose [default: JAX's, 2].")] = None,
    python_tracer_level: Annotated[Optional[int], typer.Option(
        min=0, max=1, help="Python tracer: 0 off, 1 on [default: JAX's].")] = None,
    device_tracer_level: Annotated[Optional[int], typer.Option(
        min=0, max=1, help="Device tracer: 0 off, 1 on [default: JAX's]")] = None,
    memprof_at: Annotated[Optional[list[str]], typer.Option(
        "--memprof-at", help="Save memory-<NAME>.prof at jaxbench.memory_checkpoint(NAME); "
                             "repeat for several, * for all [default: none].")] = None,
) -> None:
    """Run a Python benchmark under the JAX profiler; save a trace and memory profiles."""
    from hourly.profile.capture import TraceOptions, capture, default_out_dir
    out_dir = out or default_out_dir()
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
        typer.echo(f"the benchmark {'timed out' if code is None else f'exited with {code}'}",
                   err=True)
        raise typer.Exit(1 if code in (None, 0) else code)


def compare_profiles(
    good_dir: Annotated[Path, typer.Argument(help="Capture folder of the good build.")],
    bad_dir: Annotated[Path, typer.Argument(help="Capture folder of the bad build.")],
    top: Annotated[int, typer.Option(min=1, help="Rows per table.")] = 15,
) -> None:
    """Compare two captures: op times and live memory by allocation site."""
    from hourly.profile.compare import compare, require_captures
    require_captures(good_dir, bad_dir)  # a folder with no trace is an error, not a comparison of notes
    typer.echo(compare(good_dir, bad_dir).render(top), nl=False)
