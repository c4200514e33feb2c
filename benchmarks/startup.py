"""How long the command line takes to start: the median wall time of ``hourly --help``.

Each run is a fresh process (as a user's shell starts it). The target is under 0.3 s: the heavy
libraries (scipy, numpy, matplotlib, docker, GitPython, jax) are imported only by the commands that
use them (tests/test_layout.py checks that ``import hourly.cli`` leaves them out).

    python benchmarks/startup.py [--runs 20] [--command "version"]
"""

from __future__ import annotations

import argparse
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import time

TARGET_S = 0.3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--command", default="--help", help="arguments after `hourly` [default: --help]")
    args = ap.parse_args()
    exe = shutil.which("hourly")
    cmd = [exe] if exe else [sys.executable, "-m", "hourly"]
    cmd += shlex.split(args.command)
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)  # warm the file cache
    times, cpu = [], []
    for _ in range(args.runs):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - t0)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    median = statistics.median(times)
    # CPU time (user + system) is what the start costs; wall time also counts waiting for a busy CPU
    print(f"{shlex.join(cmd)}: median {median:.3f} s wall, {statistics.median(cpu):.3f} s CPU over "
          f"{args.runs} runs (wall min {min(times):.3f} s, max {max(times):.3f} s); "
          f"target < {TARGET_S} s wall: {'met' if median < TARGET_S else 'NOT met'}")


if __name__ == "__main__":
    main()
