"""jaxlib builds per regression window: the guide's hourly loop, hourly before build pricing, and
hourly with build pricing (jaxlib cached by XLA commit + JAX's native inputs, docs/builds.md).

    PYTHONPATH=. python benchmarks/build_cost.py [--windows N] [--seed S]

Replays day windows (00:00 → 24:00 UTC) of the real first-parent histories of xla and jax
(June–October 2023, ../shared/data/history/ or /work/shared/data/history/), with one or two
regressions planted at random first-parent commits inside the day — JAX commits only, XLA commits
only, or one of each — and oracle verdicts, as benchmarks/bisect_builds.py does. Which JAX commits
change a native input comes from ``jax_paths_2023-06_10.csv`` (the paths each commit changed),
matched with hourly.measure.native_inputs's default patterns.

Strategies (each: the 25 hourly instants of the day, then a bisection of every step they show):

- guide: the guide's bash loop rebuilds every instant, then ``git bisect`` inside each hour with a
  step; every build is a full build-jax.sh, i.e. one jaxlib build.
- hourly before: ``hourly scan`` (one build per distinct pair) + ``hourly bisect`` of every step
  (cost-aware probes, measured states free); every new pair is a full build: one jaxlib build.
- hourly bisect over the day (``--good <day start> --bad <day end>``, no scan), before and priced.
- hourly priced: the same, but a new pair whose (XLA commit, native-input state) was built before
  costs a jax package build, not a jaxlib build, and the bisection's probes are priced that way
  (hourly.analysis.bisection.COST_JAX_BUILD).
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bisect_builds import HISTORY, Oracle, exact, hourly_bisect, load_walks, plain_bisect

from hourly.analysis.bisection import COST_BUILD, COST_JAX_BUILD, COST_MEASURED, candidate_states
from hourly.measure.native_inputs import is_native_path

DAY = 86400


def native_states(walks) -> dict[str, int]:
    """Per JAX commit, the index of its native-input state (how many native changes came before)."""
    base = next(p for p in HISTORY if (p / "jax_paths_2023-06_10.csv").exists())
    changed = {r["sha"]: any(is_native_path(p) for p in r["paths"].split(";") if p)
               for r in csv.DictReader(open(base / "jax_paths_2023-06_10.csv", newline=""))}
    out, k = {}, 0
    for sha, _ in reversed(walks["jax"]):  # oldest first
        k += changed.get(sha, False)
        out[sha] = k
    return out


class Counter:
    """Builds of a strategy: ``priced`` counts a jaxlib build only for a new (xla, native state)."""

    def __init__(self, oracle: Oracle, native: dict[str, int], priced: bool):
        self.oracle, self.native, self.priced = oracle, native, priced
        self.built: set = set()
        self.jaxlibs: set = set()
        self.jaxlib_builds = 0
        self.jax_builds = 0

    def lib(self, pair) -> tuple:
        return (pair.xla, self.native[pair.jax]) if self.priced else (pair.xla, pair.jax)

    def cost(self, pair) -> float:
        if pair in self.built:
            return COST_MEASURED
        return COST_JAX_BUILD if self.lib(pair) in self.jaxlibs else COST_BUILD

    def test(self, pair, rebuild: bool = False) -> float | None:
        if rebuild or pair not in self.built:
            if not rebuild and self.lib(pair) in self.jaxlibs:
                self.jax_builds += 1
            else:
                self.jaxlib_builds += 1
            self.built.add(pair)
            self.jaxlibs.add(self.lib(pair))
        return self.oracle.level(pair)


def one_window(walks, native, oracle, day, planted) -> dict[str, tuple[int, int, int]]:
    hours = [day + h * 3600 for h in range(25)]
    hour_states = [candidate_states(walks, h - 1, h)[-1] for h in hours]
    out = {}
    # the guide: every hour rebuilt, then git bisect inside each hour that shows a step
    c = Counter(oracle, native, priced=False)
    levels = [c.test(s.pair, rebuild=True) for s in hour_states]
    scan = c.jaxlib_builds
    found = set()
    for a in range(24):
        if abs(levels[a] - levels[a + 1]) > 1e-12:
            found |= exact(walks, plain_bisect(c, candidate_states(walks, hours[a], hours[a + 1])), planted)
    out["guide"] = (c.jaxlib_builds, c.jax_builds, len(found), c.jaxlib_builds - scan)
    for name, priced in (("before", False), ("priced", True)):
        c = Counter(oracle, native, priced)
        levels = [c.test(s.pair) for s in hour_states]
        scan = c.jaxlib_builds
        found = set()
        for a in range(24):
            if abs(levels[a] - levels[a + 1]) > 1e-12:
                for rp in hourly_bisect(c, candidate_states(walks, hours[a], hours[a + 1])):
                    found |= exact(walks, rp, planted)
        out[name] = (c.jaxlib_builds, c.jax_builds, len(found), c.jaxlib_builds - scan)
    # hourly bisect --good <day start> --bad <day end>, no scan
    states = candidate_states(walks, day, day + DAY)
    for name, priced in (("bisect_before", False), ("bisect_priced", True)):
        c = Counter(oracle, native, priced)
        found = set()
        for rp in hourly_bisect(c, states):
            found |= exact(walks, rp, planted)
        out[name] = (c.jaxlib_builds, c.jax_builds, len(found), c.jaxlib_builds)
    return out


def run(windows: int, seed: int) -> None:
    walks = load_walks()
    native = native_states(walks)
    rng = np.random.default_rng(seed)
    t0 = max(min(t for _, t in w) for w in walks.values())
    t1 = min(max(t for _, t in w) for w in walks.values())
    days = list(range((t0 // DAY + 1) * DAY, (t1 // DAY) * DAY - DAY, DAY))
    names = {"guide": "guide's hourly loop + git bisect", "before": "hourly before pricing",
             "priced": "hourly with build pricing",
             "bisect_before": "hourly bisect over the day, before", "bisect_priced": "hourly bisect over the day, priced"}
    print(f"{windows} day windows per kind from the real Jun-Oct 2023 histories, seed {seed}\n")
    print("| culprits | strategy | jaxlib builds mean | median | max | of which bisecting (mean) "
          "| jax package builds mean | pinned exactly |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for kind in ("jax", "xla", "mix"):
        res = {k: [] for k in names}
        planted_total = 0
        done = 0
        while done < windows:
            day = int(rng.choice(days))
            inside = {n: [sha for sha, t in walks[n] if day < t <= day + DAY] for n in ("xla", "jax")}
            if len(candidate_states(walks, day, day + DAY)) < 8 or not inside["jax"] or not inside["xla"]:
                continue
            if kind == "mix":
                repos = ["jax", "xla"]
            else:
                repos = [kind] * int(rng.choice([1, 2]))
                if len(inside[kind]) < len(repos):
                    continue
            chosen = []
            for r in set(repos):
                for i in rng.choice(len(inside[r]), size=repos.count(r), replace=False):
                    chosen.append((r, inside[r][i]))
            planted = [(r, sha, float(rng.uniform(0.85, 0.97))) for r, sha in chosen]
            oracle = Oracle(walks, planted, set())
            done += 1
            planted_total += len(planted)
            for k, v in one_window(walks, native, oracle, day, planted).items():
                res[k].append(v)
        for k, label in names.items():
            libs = [v[0] for v in res[k]]
            jaxes = [v[1] for v in res[k]]
            pinned = sum(v[2] for v in res[k])
            bis = [v[3] for v in res[k]]
            print(f"| {kind} | {label} | {statistics.mean(libs):.1f} | {statistics.median(libs):.0f} | {max(libs)} "
                  f"| {statistics.mean(bis):.1f} | {statistics.mean(jaxes):.1f} | {pinned}/{planted_total} ({pinned / planted_total:.0%}) |")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--windows", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    run(a.windows, a.seed)
