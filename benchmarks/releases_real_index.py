"""The release level against the real package index (not run in CI: it needs the network).

Runs ``hourly releases --from 0.4.13 --to 0.4.20`` on the CPU with a trivial jit's dispatch time
(benchmarks/releases/dispatch.py, lower is better) and prints hourly's table, its steps and the
wall time. jaxlib 0.4.13 has CPython 3.11 wheels at most, so run it on Python 3.11 (or pass
``--python python3.11``). Old jaxlibs were built against NumPy 1 and the SciPy of their time
(with today's NumPy 2 every one of them crashes at import); the environments get their
dependencies as of each release day, hourly's default (uv's ``--exclude-newer``), with no flag.

    python benchmarks/releases_real_index.py [--workdir DIR] [--cache-dir DIR] [--python PY]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from hourly.cli import main

HERE = Path(__file__).resolve().parent


def run() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workdir", default=str(Path(tempfile.mkdtemp(prefix="hourly-releases-")) / "work"))
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--python", default=None)
    ap.add_argument("--from", dest="from_", default="0.4.13")
    ap.add_argument("--to", default="0.4.20")
    ap.add_argument("--repeats", default="3")
    ap.add_argument("--jax-repo", default=None)
    a = ap.parse_args()
    argv = ["releases", "--from", a.from_, "--to", a.to, "--bench-cmd", "python dispatch.py",
            "--bench-cwd", str(HERE / "releases"), "--metric-regex", r"dispatch_us:\s*(?P<value>[0-9.]+)",
            "--lower-is-better", "--repeats", a.repeats,
            "--workdir", a.workdir]
    for flag, value in (("--cache-dir", a.cache_dir), ("--python", a.python), ("--jax-repo", a.jax_repo)):
        if value:
            argv += [flag, value]
    start = time.monotonic()
    code = main(argv)
    print(f"\nwall time: {time.monotonic() - start:.0f} s (workdir {a.workdir})")
    return code


if __name__ == "__main__":
    sys.exit(run())
