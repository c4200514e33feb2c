"""Measure a benchmark over JAX's first-parent history by hand: each commit's `jax/` on PYTHONPATH.

    python benchmarks/real_jax/sweep_history.py --jax-clone /work/jaxclone --python /work/jax2026/bin/python \\
        --from 071fd88c58 --to f08ec32a71 --points 40 --procs 2 --out /work/rh-sweep/coarse.csv \\
        -- python3 benchmarks/real_jax/frontend_step.py
    python benchmarks/real_jax/sweep_history.py ... --commits a1b2c3 d4e5f6 --procs 6 -- ...

How docs/real-history.md found its change, kept so that it can be done again. No build: each
commit's ``jax/`` directory is extracted with ``git archive`` (into ``--trees``, kept between runs)
and put on PYTHONPATH of ``--python`` (a Python with a jaxlib that fits the commits: 0.10.2 for
JAX of 2026-05-21 → 07-16). The version such a tree reports is a dev version of today (it has no
git to ask), which jaxlib 0.10.2 accepts.

Commits: ``--points`` evenly spaced first-parent commits of ``--from..--to`` (both ends included),
or ``--commits``. Each gets ``--procs`` benchmark processes, in rounds — every commit once, then
every commit again — so that the machine's drift spreads over all commits alike rather than
landing on some. Every metric the benchmark prints as ``name: number`` (the last of each name) is
kept. Prints, per commit, the median over its processes of each metric (``--spread``: and its
range); ``--out`` writes every
process as a CSV row; a process that fails keeps its last output line as ``error``.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

LINE = re.compile(r"^(?P<name>[A-Za-z_][\w]*):\s*(?P<value>[-+]?[0-9.]+(?:[eE][-+]?\d+)?)\s*$", re.M)


def git(clone: str, *args: str) -> str:
    return subprocess.run(["git", "-C", clone, *args], capture_output=True, text=True, check=True).stdout


def first_parent(clone: str, start: str, end: str) -> list[str]:
    """The first-parent commits from ``start`` to ``end``, oldest first, both included."""
    shas = git(clone, "rev-list", "--first-parent", "--reverse", f"{start}..{end}").split()
    return [git(clone, "rev-parse", start).strip(), *shas]


def spread(shas: list[str], points: int) -> list[str]:
    if points >= len(shas):
        return shas
    idx = sorted({round(i * (len(shas) - 1) / (points - 1)) for i in range(points)})
    return [shas[i] for i in idx]


def tree(clone: str, trees: Path, sha: str) -> Path:
    dest = trees / sha[:12]
    if not (dest / "jax").is_dir():
        dest.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", clone, "archive", sha, "jax"], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest


def measure(python: str, path: Path, bench: list[str], timeout: float) -> dict:
    cmd = [python if c in ("python", "python3") else c for c in bench]
    # the commit's tree first; a PYTHONPATH already set (a TPU machine's folder with jaxlib and libtpu) after it
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(path), os.environ.get("PYTHONPATH")]))}
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    found = {m["name"]: float(m["value"]) for m in LINE.finditer(p.stdout)}
    if p.returncode or not found:
        last = ((p.stderr or p.stdout).strip().splitlines() or ["(no output)"])[-1]
        return {"error": f"exit {p.returncode}: {last}"}
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jax-clone", required=True)
    ap.add_argument("--python", required=True, help="a Python with the jaxlib the commits need")
    ap.add_argument("--from", dest="start"), ap.add_argument("--to", dest="end")
    ap.add_argument("--points", type=int, default=30)
    ap.add_argument("--commits", nargs="*", help="these commits instead of --from/--to/--points")
    ap.add_argument("--procs", type=int, default=2, help="benchmark processes per commit")
    ap.add_argument("--trees", default="/work/rh-trees", help="where the extracted jax/ trees are kept")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--out", help="CSV of every process")
    ap.add_argument("--spread", action="store_true", help="print each median's [min–max] over the processes")
    ap.add_argument("bench", nargs="+", help="the benchmark command, after --")
    a = ap.parse_args()
    if a.commits:
        shas = [git(a.jax_clone, "rev-parse", c).strip() for c in a.commits]
    else:
        shas = spread(first_parent(a.jax_clone, a.start, a.end), a.points)
    trees = Path(a.trees)
    info = {s: git(a.jax_clone, "log", "-1", "--format=%cI %s", s).strip() for s in shas}
    rows: list[dict] = []
    for rnd in range(a.procs):
        for sha in shas:
            r = measure(a.python, tree(a.jax_clone, trees, sha), a.bench, a.timeout)
            rows.append({"round": rnd, "sha": sha[:10], **r})
            print(f"round {rnd} {sha[:10]} " + " ".join(f"{k}={v}" for k, v in r.items()), file=sys.stderr,
                  flush=True)
    names = sorted({k for r in rows for k in r if k not in ("round", "sha", "error")})
    print("sha        date                       " + " ".join(f"{n:>{26 if a.spread else 12}}" for n in names) + "  subject")
    for sha in shas:
        mine = [r for r in rows if r["sha"] == sha[:10]]
        errors = [r["error"] for r in mine if "error" in r]
        cells = []
        for n in names:
            vals = [r[n] for r in mine if n in r]
            cells.append((f"{statistics.median(vals):.3f}" + (f" [{min(vals):.1f}–{max(vals):.1f}]" if a.spread else "")
                          if vals else "-").rjust(26 if a.spread else 12))
        date, _, subject = info[sha].partition(" ")
        print(f"{sha[:10]} {date:26} " + " ".join(cells) + f"  {subject[:60]}"
              + (f"  [{len(errors)} failed: {errors[-1][:120]}]" if errors else ""))
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        with open(a.out, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["round", "sha", *names, "error"])
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
