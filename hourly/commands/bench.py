"""``hourly bench TARGET``: a JAX function measured phase by phase (trace, lower, compile, first call,
dispatch, step, memory) in one process, by the harness ``hourly/jaxbench_phases.py``.

Its options are declared here, in the current style; the lead ports them to commands/common.py.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, List, Optional

import typer


def bench(
    target: Annotated[str, typer.Argument(
        help="bench.py (its make() returns (fn, args) or (fn, args, kwargs)), bench.py:NAME, or "
             "package.module:NAME.")],
    python: Annotated[Optional[str], typer.Option(
        "--python", help="Python that runs the harness: its JAX is measured; hourly need not be installed "
                         "there [default: the Python running hourly].")] = None,
    repeats: Annotated[int, typer.Option(
        min=1, help="Samples of trace, lower, compile, compile_cached and first_call.")] = 5,
    iters: Annotated[int, typer.Option(min=1, help="Samples of step, step_dispatch and dispatch.")] = 50,
    warmup: Annotated[int, typer.Option(min=0, help="Untimed rounds before the samples of each kind.")] = 3,
    x64: Annotated[bool, typer.Option("--x64", help="Turn jax_enable_x64 on (off: JAX's float32 default).")] = False,
    phases: Annotated[Optional[str], typer.Option(
        "--phases", help="Comma-separated phases to measure, from trace, lower, compile, compile_cached, "
                         "first_call, dispatch, step_dispatch, step, memory [default: all].")] = None,
    env: Annotated[Optional[List[str]], typer.Option(
        "--env", help="KEY=VALUE for the harness's environment (repeatable) [default: none].")] = None,
    timeout: Annotated[Optional[float], typer.Option(
        min=1, help="Seconds before the harness is stopped [default: no limit].")] = None,
    out: Annotated[Optional[Path], typer.Option(
        "--out", help="File for the harness's full output [default: ./hourly-work/bench/<UTC time>.log].")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of tables.")] = False,
) -> None:
    """Measure a JAX function phase by phase in one process: trace, lower, compile, dispatch, step, memory."""
    from hourly.adapters.proc import parse_env
    from hourly.errors import UsageError
    from hourly.jaxbench_phases import GROUPS  # the harness's phases (standard library only at import)
    from hourly.measure.phases import HarnessOptions, run_harness, scan_options
    from hourly.render.bench import print_report, report_json
    from hourly.render.console import console

    chosen = tuple(p.strip() for p in (phases or "").split(",") if p.strip())
    unknown = [p for p in chosen if p not in GROUPS]
    if unknown or (phases is not None and not chosen):
        raise UsageError(f"--phases {phases!r} names no phase of the harness" if not unknown else
                         f"--phases {phases!r}: {', '.join(unknown)} is no phase", f"choose from {','.join(GROUPS)}")
    options = HarnessOptions(repeats, iters, warmup, x64, chosen)
    log = out or Path("hourly-work") / "bench" / f"{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    report = run_harness(target, options, python=python, env=parse_env(env or []), timeout=timeout,
                         log_path=log)
    scan = scan_options(target, options, list(report.phases))
    if json_out:
        typer.echo(json.dumps(report_json(report, scan), indent=1))
        return
    print_report(console(), report, scan)
