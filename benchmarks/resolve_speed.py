"""How long resolution takes: one history walk per repo versus the guide's git process per instant.

Replays the real first-parent histories of xla and jax (Jun–Oct 2023, from shared/data/history)
into git repositories, then resolves every hour (or every 10 minutes) of Aug 24–26 2023 both ways.

    python benchmarks/resolve_speed.py [--history ../shared/data/history]
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from pathlib import Path

from hourly.adapters.gitrepo import GitRepo
from hourly.demo.repos import replay_history
from hourly.measure.resolve import distinct_pairs, resolve_pairs
from hourly.timeparse import instants, parse_step, window


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--history", default=str(Path(__file__).resolve().parents[2] / "shared" / "data" / "history"))
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="hourly-resolve-bench-"))
    for name in ("xla", "jax"):
        replay_history(Path(args.history) / f"{name}_2023-06_10.csv", root / name)
    repos = GitRepo(root / "xla", "xla"), GitRepo(root / "jax", "jax")
    print(f"{'step':>5} {'instants':>8} {'pairs':>6} {'hourly (s)':>11} {'rev-list per instant (s)':>25}")
    for step in ("1h", "10m"):
        times = instants(*window("Aug 24 2023", "Aug 26 2023"), parse_step(step))
        t0 = time.perf_counter()
        points = resolve_pairs(*repos, times)
        ours = time.perf_counter() - t0
        t0 = time.perf_counter()
        for t in times:
            for r in repos:
                subprocess.run(["git", "-C", str(r.path), "rev-list", "-1", "--first-parent",
                                f"--before=@{int(t.timestamp())}", "origin/main"], capture_output=True, check=True)
        theirs = time.perf_counter() - t0
        print(f"{step:>5} {len(times):>8} {len(distinct_pairs(points)):>6} {ours:>11.3f} {theirs:>25.3f}")


if __name__ == "__main__":
    main()
