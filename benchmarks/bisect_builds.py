"""Builds used to pin regressions: hourly vs the guide's brute-force hourly loop vs one plain bisection.

    PYTHONPATH=. python benchmarks/bisect_builds.py [--windows N] [--seed S] [--skip-rate R]

Replays windows from the real first-parent histories of xla and jax (June–October 2023,
../shared/data/history/ or /work/shared/data/history/): each window is the day between two
nightlies (00:00 → 24:00 UTC) with one or two regressions planted at random first-parent
commits inside it (either repository, in proportion to its commits) and, optionally, states that
fail to build at a given rate. Nothing is built: an oracle says each state's level (the product of
the planted factors its xla and jax include), and a state is untestable when it fails to build.

Strategies, counting builds (one per distinct (xla, jax) pair first tested):

- guide: the guide's bash loop builds every hour of the day (25 instants, every one rebuilt),
  then the hour with the step is bisected with ``git bisect`` over that hour's states.
- hourly: ``hourly scan`` (one build per distinct pair of the 25 instants) + ``hourly bisect``
  of every detected step, reusing the scan's measured states (the code of hourly.analysis.bisection).
- hourly bisect alone: ``hourly bisect --good <day start> --bad <day end>``, no scan.
- plain bisection: one ``git bisect``-style midpoint bisection over the day's states, which
  finds only one of several regressions and stops at skipped states' neighbours like git.

Also reports how many planted regressions each strategy pinned to the exact commit.
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
from pathlib import Path

import numpy as np

from hourly.analysis.bisection import (
    COST_BUILD,
    COST_MEASURED,
    State,
    Verdict,
    bounds,
    candidate_states,
    next_probe,
    step_commits,
)

DAY = 86400
HISTORY = [Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "history",
           Path("/work/shared/data/history")]


def load_walks() -> dict[str, list[tuple[str, int]]]:
    base = next(p for p in HISTORY if (p / "xla_2023-06_10.csv").exists())
    walks = {}
    for name in ("xla", "jax"):
        rows = list(csv.DictReader(open(base / f"{name}_2023-06_10.csv")))
        walks[name] = [(r["sha"], int(r["committer_time_unix"])) for r in reversed(rows)]  # newest first
    return walks


class Oracle:
    """Level and buildability of any pair, from planted regressions and planted build failures."""

    def __init__(self, walks, planted: list[tuple[str, str, float]], broken: set[tuple[str, str]]):
        self.pos = {n: {sha: len(w) - i for i, (sha, _) in enumerate(w)} for n, w in walks.items()}
        self.planted = planted
        self.broken = broken

    def level(self, pair) -> float:
        v = 1.0
        for repo, sha, f in self.planted:
            if self.pos[repo][getattr(pair, repo)] >= self.pos[repo][sha]:
                v *= f
        return v

    def buildable(self, pair) -> bool:
        return (pair.xla, pair.jax) not in self.broken


class Counter:
    def __init__(self, oracle: Oracle):
        self.oracle = oracle
        self.built: set = set()
        self.builds = 0

    def cost(self, pair) -> float:
        return COST_MEASURED if pair in self.built else COST_BUILD

    def test(self, pair, rebuild: bool = False) -> float | None:
        if rebuild or pair not in self.built:
            self.builds += 1
            self.built.add(pair)
        return self.oracle.level(pair) if self.oracle.buildable(pair) else None


def verdict(level: float | None, good: float, bad: float) -> tuple[Verdict, bool]:
    if level is None:
        return Verdict.SKIP, False
    if abs(level - good) < 1e-12:
        return Verdict.GOOD, False
    if abs(level - bad) < 1e-12 or (level - good) * (bad - good) > 0 and abs(level - good) > abs(bad - good):
        return Verdict.BAD, False
    return Verdict.BAD, True  # between: another step comes later


def hourly_bisect(c: Counter, states: list[State]) -> list[tuple]:
    """hourly.bisect.search's search (cost-aware probes, skips, the rest of the window after a state
    between the ends), builds counted and priced by ``c`` (``c.cost(pair)``, ``c.test(pair)``)."""
    found = []
    start = 0
    while True:
        sub = states[start:]
        good, bad = c.test(sub[0].pair), c.test(sub[-1].pair)
        if good is None or bad is None or abs(good - bad) < 1e-12:
            return found
        verdicts: dict[int, Verdict] = {}
        between: dict[int, bool] = {}
        while True:
            costs = {i: c.cost(sub[i].pair) for i in range(1, len(sub) - 1)}
            i = next_probe(len(sub), verdicts, costs)
            if i is None:
                break
            verdicts[i], between[i] = verdict(c.test(sub[i].pair), good, bad)
        b = bounds(len(sub), verdicts)
        found.append((sub[b.lo].pair, sub[b.hi].pair))
        if not (between.get(b.hi) and b.hi < len(sub) - 1):
            return found
        start += b.hi


def plain_bisect(c: Counter, states: list[State]) -> tuple:
    """git bisect over the states: midpoint, and on a skip the nearest untested neighbour."""
    good = c.test(states[0].pair)
    c.test(states[-1].pair)  # the bad end is built too, as git bisect's user does
    lo, hi, skipped = 0, len(states) - 1, set()
    while True:
        cands = [i for i in range(lo + 1, hi) if i not in skipped]
        if not cands:
            return states[lo].pair, states[hi].pair
        mid = (lo + hi) // 2
        i = min(cands, key=lambda k: (abs(k - mid), k))
        lvl = c.test(states[i].pair)
        if lvl is None:
            skipped.add(i)
        elif abs(lvl - good) < 1e-12:
            lo = i
        else:
            hi = i


def exact(walks, pair_range: tuple, planted: list) -> set:
    """The planted commits a (last good, first bad) pair pins exactly."""
    moved = step_commits(walks, *pair_range)
    commits = [(n, s) for n in moved for s in moved[n]]
    return {p[1] for p in planted if len(commits) == 1 and commits[0][1] == p[1]}


def run(windows: int, seed: int, skip_rate: float) -> None:
    walks = load_walks()
    rng = np.random.default_rng(seed)
    t0 = max(min(t for _, t in w) for w in walks.values())
    t1 = min(max(t for _, t in w) for w in walks.values())
    first_day = (t0 // DAY + 1) * DAY
    days = list(range(first_day, (t1 // DAY) * DAY - DAY, DAY))
    results = {k: [] for k in ("guide", "hourly", "bisect_only", "plain")}
    scan_builds = []
    pinned = {k: 0 for k in results}
    planted_total = 0
    n_states = []
    done = 0
    while done < windows:
        day = int(rng.choice(days))
        states = candidate_states(walks, day, day + DAY)
        inside = [(n, sha) for n in ("xla", "jax") for sha, t in walks[n] if day < t <= day + DAY]
        if len(states) < 8:
            continue
        k = int(rng.choice([1, 2]))
        picks = rng.choice(len(inside), size=k, replace=False)
        planted = [(inside[i][0], inside[i][1], float(rng.uniform(0.85, 0.97))) for i in picks]
        # a regression at a commit two repos share a step with is not pinnable by anyone: keep it, it counts
        broken = {(s.pair.xla, s.pair.jax) for s in states[1:-1] if rng.random() < skip_rate}
        oracle = Oracle(walks, planted, broken)
        done += 1
        planted_total += k
        n_states.append(len(states))
        hours = [day + h * 3600 for h in range(25)]
        hour_states = [candidate_states(walks, h - 1, h)[-1] for h in hours]  # the pair at each instant

        # the guide: every hour built, then git bisect inside each hour that shows a step
        c = Counter(oracle)
        levels = [c.test(s.pair, rebuild=True) for s in hour_states]
        found = set()
        good_idx = [i for i, v in enumerate(levels) if v is not None]
        for a, b in zip(good_idx, good_idx[1:]):
            if abs(levels[a] - levels[b]) > 1e-12:
                sub = candidate_states(walks, hours[a], hours[b])
                rng_pair = plain_bisect(c, sub)
                found |= exact(walks, rng_pair, planted)
        results["guide"].append(c.builds)
        pinned["guide"] += len(found)

        # hourly: scan (distinct pairs once), then bisect each step between scan points
        c = Counter(oracle)
        levels = [c.test(s.pair) for s in hour_states]
        scan_builds.append(c.builds)
        found = set()
        good_idx = [i for i, v in enumerate(levels) if v is not None]
        for a, b in zip(good_idx, good_idx[1:]):
            if abs(levels[a] - levels[b]) > 1e-12:
                for rp in hourly_bisect(c, candidate_states(walks, hours[a], hours[b])):
                    found |= exact(walks, rp, planted)
        results["hourly"].append(c.builds)
        pinned["hourly"] += len(found)

        # hourly bisect over the whole day, no scan
        c = Counter(oracle)
        found = set()
        for rp in hourly_bisect(c, states):
            found |= exact(walks, rp, planted)
        results["bisect_only"].append(c.builds)
        pinned["bisect_only"] += len(found)

        # one plain bisection over the whole day
        c = Counter(oracle)
        found = exact(walks, plain_bisect(c, states), planted)
        results["plain"].append(c.builds)
        pinned["plain"] += len(found)

    print(f"{windows} day windows from the real Jun-Oct 2023 histories, seed {seed}, "
          f"build-failure rate {skip_rate:.0%}; {planted_total} planted regressions")
    print(f"states per day: median {statistics.median(n_states):.0f} "
          f"(log2 = {math.log2(statistics.median(n_states)):.1f}), range {min(n_states)}-{max(n_states)}")
    print(f"of which the scan: {statistics.mean(scan_builds):.1f} builds (distinct pairs of 25 instants); "
          f"regressions per window: {planted_total / windows:.2f}")
    names = {"guide": "guide's hourly loop + git bisect per hour", "hourly": "hourly scan + hourly bisect",
             "bisect_only": "hourly bisect over the day (no scan)", "plain": "one plain bisection over the day"}
    print(f"{'strategy':44} {'builds mean':>11} {'median':>7} {'max':>5} {'pinned exactly':>15}")
    for k, label in names.items():
        v = results[k]
        print(f"{label:44} {statistics.mean(v):11.1f} {statistics.median(v):7.0f} {max(v):5d} "
              f"{pinned[k]:>6}/{planted_total} ({pinned[k] / planted_total:.0%})")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--windows", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--skip-rate", type=float, default=0.0)
    a = ap.parse_args()
    run(a.windows, a.seed, a.skip_rate)
