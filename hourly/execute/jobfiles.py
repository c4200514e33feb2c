"""The files of the coordinator/worker protocol: written whole or not at all."""

from __future__ import annotations

import json
import os
from pathlib import Path


def write_json(path: Path, data: dict) -> None:
    """Whole or not at all: a reader sees the old file, no file, or this one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)

