"""Run a benchmark script in this process and append one line about it to a tally file.

    python3 tally.py BENCH.py [ARGS...]

With ``$REAL_BISECT_TALLY`` set, appends ``{"pid", "start", "seconds", "rc"}`` (JSON, one line) to
that file when the benchmark ends, however it ends (an exception at ``import jax`` included);
without it, only runs the benchmark. The script runs in this same process (``runpy``), so the
count is of benchmark processes, not of wrappers: benchmarks/real_bisect.py reads it as a
bisection's process starts and bench seconds, whatever hourly records itself.
"""

import json
import os
import runpy
import sys
import time


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: tally.py BENCH.py [ARGS...]")
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    start, rc = time.time(), 1
    try:
        runpy.run_path(script, run_name="__main__")
        rc = 0
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        raise
    finally:
        path = os.environ.get("REAL_BISECT_TALLY")
        if path:
            line = json.dumps({"pid": os.getpid(), "start": round(start, 3),
                               "seconds": round(time.time() - start, 3), "rc": rc})
            with open(path, "a") as f:
                f.write(line + "\n")


if __name__ == "__main__":
    main()
