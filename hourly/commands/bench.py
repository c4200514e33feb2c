"""``hourly bench TARGET``: a JAX function measured phase by phase (trace, lower, compile, first call,
dispatch, step, memory) in one process, by the harness ``hourly/jaxbench_phases.py``.

Its options are declared in hourly/options.py (TAKES["bench"]).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import List, Optional

import typer

from .common import command, err_console


@command("bench")
def bench(
    target: str = typer.Argument(..., help="bench.py (its make() returns (fn, args) or (fn, args, kwargs)), bench.py:NAME, "
                                           "or package.module:NAME."),
    *,
    python: Optional[str],
    repeats: int,
    iters: int,
    samples: Optional[int],
    warmup: int,
    x64: bool,
    phases: Optional[str],
    env: Optional[List[str]],
    timeout: Optional[float],
    out: Optional[str],
    json_out: bool,
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
    if samples is not None:  # the samples of every phase, as hourly asks any benchmark for them
        if (repeats, iters) != (HarnessOptions.repeats, HarnessOptions.iters):
            raise UsageError("--samples sets the samples of every phase: --repeats and --iters would disagree",
                             "pass --samples, or --repeats and --iters")
        repeats = iters = samples
    options = HarnessOptions(repeats, iters, warmup, x64, chosen)
    log = Path(out) if out else Path("hourly-work") / "bench" / f"{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}.log"
    _writable(log, given=out is not None)
    from .common import with_samples
    report = run_harness(target, options, python=python, env=parse_env(with_samples(env, samples)), timeout=timeout,
                         log_path=log)
    from hourly.render.console import print_text
    for text in report.warnings:  # on stderr, as the harness gives them (its stderr went to the log)
        print_text(err_console, f"hourly bench: warning: {text}")
    scan = scan_options(target, options, list(report.phases))
    if json_out:
        typer.echo(json.dumps(report_json(report, scan), indent=1))
        return
    print_report(console(), report, scan)


def _writable(log: Path, given: bool) -> None:
    """The harness's output file can be written (its folder made): else one line naming it and the
    fix, before the harness runs (a folder, a file in the way, /proc were a traceback after it)."""
    from hourly.errors import UserError, blocking_file
    what = f"--out {log}" if given else f"the output file {log}"
    fix = "pass --out with a file path you can write to (its folder is made)"
    if log.is_dir():
        raise UserError(f"{what} is a directory", fix + ", e.g. " + str(log / "bench.log"))
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a", encoding="utf-8"):
            pass
    except OSError as e:
        blocker = blocking_file(log.parent)
        why = f"{blocker} is a file, not a directory" if blocker else e.strerror or str(e)
        raise UserError(f"cannot write {what} ({why})", fix) from None
