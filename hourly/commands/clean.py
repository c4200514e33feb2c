"""``hourly clean``: register with ``app.command()(clean)`` in hourly/cli.py."""

from __future__ import annotations

import json

import typer
from rich.console import Console

from ..clean import remove_dead_runs

Opt = typer.Option
console = Console()


def clean(json_out: bool = Opt(False, "--json", help="Print one JSON object.")) -> None:
    """Remove containers whose hourly run is dead (killed, rebooted); live runs' are kept."""
    removed = remove_dead_runs()
    if json_out:
        print(json.dumps({"removed": removed}, indent=1))
        return
    kw = dict(highlight=False, markup=False, soft_wrap=True)
    if not removed:
        console.print("no container of a dead hourly run", **kw)
    for name in removed:
        console.print(f"removed {name}", **kw)
