"""``hourly demo``: a complete hunt on two small real repositories with planted regressions."""

from __future__ import annotations

from typing import Optional

import typer

from .common import command, console


@command("demo")
def demo(
    directory: Optional[str] = typer.Argument(None, help="Where to build the demo [default: a new temporary dir]."),
    *,
    json_out: bool,
) -> None:
    """Make two small real repos with planted regressions, then find them."""
    from ..demo.hunt import run_demo
    run_demo(directory, console=console, json_out=json_out)
