"""``hourly mark good|bad|skip|unsure``: the verdict for the probe a manual bisection waits at,
from another shell (as ``git bisect good`` is)."""

from __future__ import annotations

import json
from typing import Optional

import typer

from hourly.errors import UsageError

from .common import command, console


@command("mark")
def mark(
    verdict: str = typer.Argument(..., help="good, bad, skip or unsure."),
    *,
    workdir: Optional[str],
    json_out: bool,
    config: Optional[str],
) -> None:
    """Give the verdict for the probe `hourly bisect --manual` waits at, from another shell."""
    from hourly.bisect.manual import mark as give
    from hourly.bisect.manual import parse_verdict
    v = parse_verdict(verdict)
    if v is None:
        raise UsageError(f"not a verdict: {verdict!r}", "pass good, bad, skip or unsure")
    from hourly.adapters.store import Store
    from hourly.measure.settings import workdir_setting
    store = Store(workdir_setting(workdir, config), create=False, made_by="hourly bisect --manual")
    got = give(store, v)
    if json_out:
        print(json.dumps(got, indent=1))
        return
    state = f"xla {got['xla'][:12]} jax {got['jax'][:12]}"
    if got["alive"] is False:
        tail = (f"the bisection that waited there (pid {got['waiting_pid']}) is not running: "
                "run the same `hourly bisect --manual` command again; it takes this verdict")
    else:
        tail = f"the bisection waiting there (pid {got['waiting_pid']}) goes on"
    console.print(f"marked {state} {got['verdict']}; {tail}", highlight=False, markup=False, soft_wrap=True)
