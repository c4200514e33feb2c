"""``python -c`` scripts that run hourly's CLI and stop it, by a real signal, at a chosen moment."""

from __future__ import annotations


def stop_after_first(module: str, method: str) -> str:
    """A script for ``python -c SCRIPT hourly-args...``: hourly's CLI with ``module``'s ``method``
    (``Class.name``) sending this process SIGTERM as its first call returns (handled before the
    next line: raised there), so the run stops just after that call stored what it stores."""
    cls, name = method.split(".")
    return f"""
import os, signal, sys
import {module} as target
from hourly.cli import main
first = target.{cls}.{name}
def then_stop(self, *args, **kwargs):
    out = first(self, *args, **kwargs)
    os.kill(os.getpid(), signal.SIGTERM)
    return out
target.{cls}.{name} = then_stop
sys.exit(main(sys.argv[1:]))
"""
