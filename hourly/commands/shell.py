"""``hourly shell STATE [-- CMD ...]``: a subshell (or one command) at a state, built or reused and
installed into its own environment, the trees at it; leaving it restores the trees."""

from __future__ import annotations

from pathlib import Path
from typing import Any, List, Optional

import typer

from .common import command, err_console


@command("shell")
def shell(
    state: str = typer.Argument(..., help='A time ("Aug 24 2023 13:00"), xla@A,jax@B (that pair), xla@A or jax@B (the '
                                "state once it landed), good / bad (good:N, bad:N: of the N-th stored bisection answer under the scan's build, "
                                "else of the stored scan's window), probe (the one a manual bisection waits at) or probe:N."),
    cmd: Optional[List[str]] = typer.Argument(None, help="After --: one command to run there instead of a shell; "
                                              "hourly exits with its status."),
    *,
    tz: Optional[str],
    flags: dict[str, Any],
    config: Optional[str],
) -> None:
    """Open a shell at any state: built or reused, installed in its own environment, the trees at it."""
    from hourly.adapters.store import STORE_NAME, Store
    from hourly.measure.settings import effective, stored_settings, workdir_setting
    workdir = workdir_setting(flags["workdir"], config)
    if (Path(workdir).expanduser() / STORE_NAME).exists():
        store = Store(workdir, create=False)
        if state.split(":")[0] in ("good", "bad", "probe"):  # read from the stored scan or bisections
            from .common import require_a_scan
            require_a_scan(store, "shell")
        s = stored_settings(store, config, tz=tz, **flags)
    else:
        s = effective(dict(flags, tz=tz), config)[0]
        from hourly.shell.run import check_state
        check_state(s, state)  # a state refused leaves no new workdir behind
        store = Store(workdir)
    from hourly.events import Handler
    from hourly.render.shell import opened_lines
    from hourly.shell.run import open_state, run_in, shell_argv

    class Notes(Handler):
        def note(self, text: str) -> None:
            err_console.print(f"hourly shell: {text}", highlight=False, markup=False, soft_wrap=True)

    notes = Notes()
    with open_state(s, store, state, notes) as opened:
        for line in opened_lines(opened, one_command=bool(cmd)):
            notes.note(line)
        rc = run_in(opened, list(cmd) if cmd else shell_argv(opened, handler=notes))
    notes.note("trees restored: " + ", ".join(f"{n} at {ref}" for n, ref in opened.restore_to.items()))
    if rc:
        raise typer.Exit(rc)
