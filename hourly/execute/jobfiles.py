"""The files of the coordinator/worker protocol: written whole or not at all."""

from __future__ import annotations

import json
import os
from pathlib import Path

from hourly.text.privacy import holds_secret, write_private


def write_json(path: Path, data: dict) -> None:
    """Whole or not at all: a reader sees the old file, no file, or this one. A file that holds a
    secret's value (a request's settings with ``--env API_TOKEN=...``) is its owner's alone."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    if holds_secret(data):
        write_private(tmp, json.dumps(data, indent=1))
    else:
        tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)

