"""``hourly config`` and ``hourly version``."""

from __future__ import annotations

import json
import os
from typing import Any, Optional

from .common import command, console

#: what an unset setting shows (TOML has no null)
UNSET = "(not set)"


def toml_value(v: Any) -> str:
    """A setting as it would be written in hourly.toml: true/false, numbers, strings quoted (a
    literal '...' string when it holds backslashes, as a regex does, so it reads as typed), arrays."""
    if v is None:
        return UNSET
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    text = str(getattr(v, "value", v))
    if "\\" in text and "'" not in text and "\n" not in text:
        return f"'{text}'"
    return json.dumps(text, ensure_ascii=False)


@command("config")
def config_cmd(*, flags: dict[str, Any], command: Optional[str], config: Optional[str], json_out: bool) -> None:
    """Print the effective settings and where each came from (default, the settings file, a flag);
    with --command, that command's own table."""
    from hourly.measure.settings import Settings, command_settings, effective
    from hourly.text.privacy import redact_assignments
    scan: Settings | None
    if command is None:
        scan, origin = effective(flags, config)
        values = scan.as_dict()
    else:
        from hourly import options
        from hourly.errors import UsageError
        given = {n: v for n, v in flags.items() if v is not None and v != options.option("config", n).default}
        stray = [options.option("config", n).flag for n in given if n not in options.TAKES[command]]
        if stray:
            raise UsageError(f"hourly {command} takes no {', '.join(stray)}",
                             f"leave {'it' if len(stray) == 1 else 'them'} out, or look at `hourly config` "
                             "(the shared settings)")
        values, origin, scan = command_settings(command, given, config)
    if "env" in values:
        values["env"] = redact_assignments(values["env"] or [])
    # an unset build folder is not "not set": the run uses a real one, which is what the user looks for
    # (a command that reads no scan settings has folders of its own: the release level's environments)
    for key, resolved in (("wheel_dir", scan and scan.resolved_wheel_dir), ("cache_dir", scan and scan.resolved_cache_dir)):
        if resolved and values.get(key) is None:
            values[key] = str(resolved().expanduser().absolute())
            if key == "cache_dir" and os.environ.get("HOURLY_CACHE_DIR"):
                origin[key] = "$HOURLY_CACHE_DIR"
    if json_out:
        out = {k: {"value": getattr(v, "value", v), "from": origin[k]} for k, v in values.items()}
        print(json.dumps(out if command is None else {"command": command, "settings": out}, indent=1))
        return
    from rich import box
    from rich.table import Table
    rows = [(k.rstrip("_"), toml_value(v), origin[k]) for k, v in values.items()]
    key_width = max(len(r[0]) for r in rows + [("setting", "", "")])
    from_width = max(len(r[2]) for r in rows + [("", "", "from")])
    title = "hourly settings" if command is None else f"hourly {command} settings"
    t = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, title=title)
    t.add_column("setting", no_wrap=True)
    # the value column takes what the others leave of the console, and wraps there (arrays at their
    # commas, a long string folded): the table never runs past the terminal (80 columns in a pipe)
    t.add_column("value", overflow="fold", max_width=max(console.width - key_width - from_width - 6, 20))
    t.add_column("from", no_wrap=True)
    for row in rows:
        t.add_row(*row)
    console.print(t)


@command("version")
def version() -> None:
    """Print hourly's version."""
    from .. import __version__
    print(__version__)
