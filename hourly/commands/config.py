"""``hourly config`` and ``hourly version``."""

from __future__ import annotations

import json
from typing import Optional

from .common import ConfigOpt, JsonOpt, console


def config_cmd(config: Optional[str] = ConfigOpt, json_out: bool = JsonOpt) -> None:
    """Print the effective settings and where each came from."""
    from hourly.measure.settings import effective
    from hourly.privacy import redact_assignments
    s, origin = effective({}, config)
    values = s.as_dict()
    values["env"] = redact_assignments(values["env"])
    if json_out:
        print(json.dumps({k: {"value": v, "from": origin[k]} for k, v in values.items()}, indent=1))
        return
    from rich.table import Table
    t = Table(title="hourly settings")
    t.add_column("setting")
    t.add_column("value")
    t.add_column("from")
    for k, v in values.items():
        t.add_row(k.rstrip("_"), repr(v), origin[k])
    console.print(t)


def version() -> None:
    """Print hourly's version."""
    from .. import __version__
    print(__version__)
