"""``hourly shell``'s lines: the state (both commits, subjects verbatim), the trees, the environment."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hourly.shell.run import Opened


def opened_lines(o: Opened, one_command: bool = False) -> list[str]:
    lines = [f"{o.said}"]
    for name, c in o.commits.items():
        lines.append(f"  {name} {c['sha']}  {c['subject']}")
    for name, path in o.trees.items():
        lines.append(f"  {name} tree {path} at this state (goes back to {o.restore_to.get(name, '?')} on exit)")
    lines.append(f"  build: {o.build}, in {o.env_dir} (active: {o.python})")
    if not one_command:
        lines.append("  exit the shell (exit, Ctrl-D) to restore the trees and release their locks")
    return lines
