"""``hourly clean``: remove the containers of hourly runs that died."""

from __future__ import annotations

import json

from hourly.render.console import PlainPrint

from .common import command, console


@command("clean")
def clean(*, json_out: bool) -> None:
    """Remove containers whose hourly run is dead (killed, rebooted); live runs' are kept."""
    from hourly.adapters.stale_runs import remove_dead_runs
    removed = remove_dead_runs()
    if json_out:
        print(json.dumps({"removed": removed}, indent=1))
        return
    kw: PlainPrint = dict(highlight=False, markup=False, soft_wrap=True)
    if not removed:
        console.print("no container of a dead hourly run", **kw)
    for name in removed:
        console.print(f"removed {name}", **kw)
