"""How long resolution takes: ``hourly scan --dry-run`` versus the guide's git process per instant.

Two parts:

1. **The replayed real histories.** The first-parent histories of xla and jax (Jun–Oct 2023, from
   shared/data/history) replayed into git repositories; every hour (or every 10 minutes) of
   Aug 24–26 2023 resolved both ways in this process (``resolve_pairs`` against
   ``git rev-list -1 --first-parent --before``).
2. **40,000 commits each, the window deep below the tip.** The same real histories with filler
   commits before June and after October 2023 (one every 10 minutes, out to 40,000 first-parent
   commits per repository), the JAX commits touching the real paths of ``jax_paths_2023-06_10.csv``
   (so pricing a build's jaxlib reads real-sized trees). The whole CLI, ``hourly scan --dry-run``
   over Aug 24–26 2023 (73 instants), a fresh process each time (start-up included), against the
   guide's loop: two ``git rev-list -1 --first-parent --before=T origin/main`` per instant. Both are
   timed ``--repeats`` times; the medians are printed, with their ratio.

   Processes are counted with ``strace -f -e trace=execve`` on one extra, untimed dry run: every
   successful ``execve`` of the dry run's process tree (hourly's Python itself included; failed
   ``execve`` calls of a PATH search are not counted). Without strace the count is left out, and
   said so. The dry run prints the plan with ``--json`` (the SHAs per instant, what the guide's loop
   prints); the table without ``--json`` is timed beside it.

    python benchmarks/resolve_speed.py [--history ../shared/data/history] [--repeats 3]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hourly.adapters.gitrepo import GitRepo
from hourly.demo.repos import first_parent_chain, replay_history
from hourly.measure.resolve import distinct_pairs, resolve_pairs
from hourly.text.timeparse import instants, parse_step, window

TOTAL = 40_000
FILLER_STEP_S = 600
#: filler commits before the real history (the rest come after it: the window lies deep below the tip)
FILLER_BEFORE = 4_000


def big_repo(name: str, history: Path, dest: Path) -> int:
    """A repository of TOTAL first-parent commits: filler, the real history, more filler; returns
    how many commits lie above (after) the real history."""
    chain = first_parent_chain(history / f"{name}_2023-06_10.csv")
    paths: dict[str, list[str]] = {}
    if name == "jax":
        paths = {r["sha"]: [p for p in r["paths"].split(";") if p]
                 for r in csv.DictReader(open(history / "jax_paths_2023-06_10.csv", newline=""))}
    after = TOTAL - FILLER_BEFORE - len(chain)
    first_t = int(chain[0]["committer_time_unix"]) - FILLER_STEP_S * (FILLER_BEFORE + 1)
    last_t = max(int(r["committer_time_unix"]) for r in chain)
    commits: list[tuple[int, str, list[str]]] = []  # (committer time, subject, changed paths)
    for i in range(FILLER_BEFORE):
        commits.append((first_t + FILLER_STEP_S * i, f"filler before {i}", [f"{name}/filler/f{i % 97}.cc"]))
    for r in chain:
        commits.append((int(r["committer_time_unix"]), r["subject"],
                        paths.get(r["sha"]) or [f"{name}/real/r{len(commits) % 89}.cc"]))
    for i in range(after):
        commits.append((last_t + FILLER_STEP_S * (i + 1), f"filler after {i}", [f"{name}/filler/f{i % 97}.cc"]))
    base = sorted({p for ps in paths.values() for p in ps}) + ["README"]
    out = []
    for i, (t, subject, changed) in enumerate(commits, 1):
        msg = subject.encode()
        out.append(f"commit refs/heads/main\nmark :{i}\n"
                   f"author Real Author <author@example.com> {t} +0000\n"
                   f"committer Real Committer <committer@example.com> {t} +0000\n"
                   f"data {len(msg)}\n{subject}\n" + (f"from :{i - 1}\n" if i > 1 else ""))
        for p in (base if i == 1 else changed):
            body = f"{p} at commit {i}\n"
            out.append(f"M 100644 inline {p}\ndata {len(body)}\n{body}\n")
        out.append("\n")
    dest.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(dest)], check=True)
    subprocess.run(["git", "fast-import", "--quiet"], cwd=dest, input="".join(out).encode(), check=True)
    subprocess.run(["git", "update-ref", "refs/remotes/origin/main", "refs/heads/main"], cwd=dest, check=True)
    subprocess.run(["git", "checkout", "-q", "main"], cwd=dest, check=True)
    return after


def guide_loop(repos: list[Path], times) -> None:
    for t in times:
        for r in repos:
            subprocess.run(["git", "-C", str(r), "rev-list", "-1", "--first-parent",
                            f"--before=@{int(t.timestamp())}", "origin/main"], capture_output=True, check=True)


def dry_run_argv(root: Path) -> list[str]:
    return [sys.executable, "-m", "hourly", "scan", "--dry-run", "--json", "--no-sync",
            "--xla-repo", str(root / "xla"), "--jax-repo", str(root / "jax"),
            "--from", "Aug 24 2023", "--to", "Aug 26 2023", "--step", "1h", "--tz", "UTC",
            "--workdir", str(root / "work"), "--cache-dir", str(root / "cache")]


def count_processes(argv: list[str], env: dict[str, str]) -> int | None:
    """Successful execve calls of the dry run's whole process tree (strace -f), or None without strace."""
    if not shutil.which("strace"):
        return None
    log = Path(tempfile.mkdtemp(prefix="hourly-strace-")) / "execve.log"
    res = subprocess.run(["strace", "-f", "-qq", "-e", "trace=execve", "-e", "signal=none", "-o", str(log), *argv],
                         capture_output=True, env=env)
    if res.returncode != 0 or not log.exists():
        return None
    return sum(1 for line in log.read_text().splitlines() if "execve(" in line and line.rstrip().endswith("= 0"))


def real_part(history: Path) -> None:
    root = Path(tempfile.mkdtemp(prefix="hourly-resolve-bench-"))
    for name in ("xla", "jax"):
        replay_history(history / f"{name}_2023-06_10.csv", root / name)
    repos = GitRepo(root / "xla", "xla"), GitRepo(root / "jax", "jax")
    print("replayed real histories (Jun–Oct 2023), in-process resolution:")
    print(f"{'step':>5} {'instants':>8} {'pairs':>6} {'hourly (s)':>11} {'rev-list per instant (s)':>25}")
    for step in ("1h", "10m"):
        times = instants(*window("Aug 24 2023", "Aug 26 2023"), parse_step(step))
        t0 = time.perf_counter()
        points = resolve_pairs(*repos, times)
        ours = time.perf_counter() - t0
        t0 = time.perf_counter()
        guide_loop([r.path for r in repos], times)
        theirs = time.perf_counter() - t0
        print(f"{step:>5} {len(times):>8} {len(distinct_pairs(points)):>6} {ours:>11.3f} {theirs:>25.3f}")
    shutil.rmtree(root, ignore_errors=True)


def big_part(history: Path, repeats: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="hourly-resolve-big-"))
    above = {name: big_repo(name, history, root / name) for name in ("xla", "jax")}
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    times = instants(*window("Aug 24 2023", "Aug 26 2023"), parse_step("1h"))
    argv = dry_run_argv(root)
    text_argv = [a for a in argv if a != "--json"]
    ours, text, theirs = [], [], []
    report = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = subprocess.run(argv, capture_output=True, text=True, env=env)
        ours.append(time.perf_counter() - t0)
        if res.returncode != 0:
            raise SystemExit(f"the dry run failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
        report = json.loads(res.stdout)
        t0 = time.perf_counter()
        subprocess.run(text_argv, capture_output=True, text=True, env=env, check=True)
        text.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        guide_loop([root / "xla", root / "jax"], times)
        theirs.append(time.perf_counter() - t0)
    assert report is not None
    # the same answer as the guide's loop, every instant
    for p, t in zip(report["points"], times, strict=True):
        for name, sha in (("xla", p["xla"]), ("jax", p["jax"])):
            want = subprocess.run(["git", "-C", str(root / name), "rev-list", "-1", "--first-parent",
                                   f"--before=@{int(t.timestamp())}", "origin/main"],
                                  capture_output=True, text=True, check=True).stdout.strip()
            if want != sha:
                raise SystemExit(f"{p['time']}: {name} {sha} but the guide's loop picks {want}")
    procs = count_processes(argv, env)
    o, g = statistics.median(ours), statistics.median(theirs)
    print(f"\n{TOTAL:,} first-parent commits per repository, the window {above['xla']:,} (xla) and "
          f"{above['jax']:,} (jax) commits below the tip; {len(times)} instants, "
          f"{len(report['points'])} points, {report.get('distinct_pairs')} pairs; median of {repeats}:")
    print(f"  hourly scan --dry-run (CLI, fresh process): {o:.3f} s  (runs: {', '.join(f'{x:.2f}' for x in ours)})")
    print(f"  the same, the table (no --json): {statistics.median(text):.3f} s  "
          f"(runs: {', '.join(f'{x:.2f}' for x in text)}; ratio {g / statistics.median(text):.1f}x)")
    print(f"  guide's rev-list -1 --before loop ({2 * len(times)} processes): {g:.3f} s  "
          f"(runs: {', '.join(f'{x:.2f}' for x in theirs)})")
    print(f"  ratio: {g / o:.1f}x; every instant the guide's commits")
    print("  processes of one dry run (strace -f, successful execve): "
          + (str(procs) if procs is not None else "not counted (no strace here, or ptrace is not allowed)"))
    shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--history", default=str(Path(__file__).resolve().parents[2] / "shared" / "data" / "history"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", choices=("real", "big"), help="run one part")
    args = ap.parse_args()
    history = Path(args.history)
    if args.only != "big":
        real_part(history)
    if args.only != "real":
        big_part(history, args.repeats)


if __name__ == "__main__":
    main()
