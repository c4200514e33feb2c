"""Every regression of a window, under noise: recall, wrong culprits, builds and runs.

    PYTHONPATH=. python benchmarks/window_hunt.py [--windows N] [--seed S] [--noise 0.007] [--days 3]

Replays windows of ``--days`` days (like Aug 24-26) from the real first-parent histories of xla and
jax (June–October 2023, ../shared/data/history/ or /work/shared/data/history/), with 1–3
regressions of 1–8 % planted at random commits inside (either repository, in proportion to its
commits; only commits that make a state of their own, so that a culprit is nameable), and a
benchmark whose every run has a Gaussian noise of ``--noise`` (relative). Nothing is built: a
simulated measurer draws samples of each state's planted level. The decisions are hourly's own:
``hourly.analysis.bisection.StepSearch`` (probe choice, sequential verdicts, the rest of the window),
driven exactly as ``hourly.bisect.search.Bisector`` drives it (ends until they separate, one search per
regression, confirmation by fresh runs, the rest of the window in turn).

Strategies, counting builds (one per distinct (xla, jax) pair first measured; the guide rebuilds
every time) and benchmark runs:

- bisect: ``hourly bisect --good <start> --bad <end>`` over the whole window, no scan.
- scan + bisect: ``hourly scan --step 1h --repeats 3`` (a build per distinct pair of the hourly
  instants), detection (``hourly.analysis.detect``), then ``hourly bisect`` of every regression it found,
  reusing the scan's samples.
- ``--kinds compensate``: the second planted step is an improvement that wins back 30–80 % of the
  first regression (the window's ends show only what is left of it).

- before: ``hourly bisect`` over the window as it was before issue 17 (one good/bad verdict per
  probe against the window's ends; the rest searched only when a state lay between them).
- guide: the guide's loop (a build and a run every hour), detection on that series (generous: the
  guide's user eyeballs it), then ``git bisect`` inside each hour with a regression, one build and
  one run per probe, each verdict the nearer of the hour's two values.

A planted regression is *found* when an answer's last good and first bad states differ by exactly
its commit; an answer naming any other single commit is a *wrong culprit*. The limit for a window
with k planted steps among N states is ceil(log2 C(N, k)) + k + 2 builds.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bisect_builds import load_walks

from hourly.analysis.bisection import (
    COST_BUILD,
    COST_MEASURED,
    DEFAULT_MIN_CHANGE,
    State,
    Verdict,
    bounds,
    candidate_states,
    next_probe,
    step_commits,
)
from hourly.analysis.detect import ChangeKind, detect
from hourly.analysis.judges.metric import MIN_END_SAMPLES, SEPARATION_MIN, MetricJudge  # as the Bisector's judge
from hourly.analysis.samples import separation
from hourly.analysis.step_search import StepSearch

DAY, HOUR = 86400, 3600


class Bench:
    """Simulated measurements of planted levels: the store (samples per pair), builds and runs."""

    def __init__(self, walks, planted: list[tuple[str, str, float]], noise: float, rng):
        self.pos = {n: {sha: len(w) - i for i, (sha, _) in enumerate(w)} for n, w in walks.items()}
        self.planted, self.noise, self.rng = planted, noise, rng
        self.store: dict = {}
        self.builds = self.runs = 0

    def level(self, pair) -> float:
        v = 1000.0
        for repo, sha, f in self.planted:
            if self.pos[repo][getattr(pair, repo)] >= self.pos[repo][sha]:
                v *= f
        return v

    def draw(self, pair, count: int) -> list[float]:
        self.runs += count
        return list(self.level(pair) * (1 + self.noise * self.rng.standard_normal(count)))

    def measure(self, pair, count: int, rebuild: bool = False) -> list[float]:
        if rebuild or pair not in self.store:
            self.builds += 1
        new = self.draw(pair, count)
        self.store.setdefault(pair, []).extend(new)
        return new

    def samples(self, pair, want: int) -> list[float]:
        have = self.store.get(pair, [])
        if len(have) < want:
            self.measure(pair, want - len(have))
        return self.store[pair]


def hourly_bisect(bench: Bench, states: list[State], max_repeats: int, repeats: int, min_change: float) -> list[tuple]:
    """What ``Bisector.bisect`` does over a window: answers as (last good pair, first bad pair)."""
    good_pair, bad_pair = states[0].pair, states[-1].pair
    want = min(MIN_END_SAMPLES, max_repeats)
    while True:  # the ends, until they separate
        good, bad = bench.samples(good_pair, want), bench.samples(bad_pair, want)
        sep = separation(good, bad)
        if sep >= SEPARATION_MIN or want >= max_repeats:
            break
        want = min(2 * want, max_repeats)
    if sep < SEPARATION_MIN or not MetricJudge.worse(good, bad, True):
        return []
    pairs = [s.pair for s in states]
    search = StepSearch(len(states), lambda i, c: bench.measure(pairs[i], c), repeats=repeats,
                        max_repeats=max_repeats, min_change=min_change, higher_is_better=True,
                        cost=lambda i: COST_MEASURED if pairs[i] in bench.store else COST_BUILD,
                        known={i: bench.store[p] for i, p in enumerate(pairs) if p in bench.store},
                        stop_at_regression=True)
    found = []
    while True:  # one answer per regression; the rest of the window goes on with the same search
        seen = len(search.steps)
        steps = [s for s in search.run()[seen:] if s.regression(True)]
        if not steps:
            return found
        st = steps[0]
        search.confirm(st, lambda i, c: bench.draw(pairs[i], c))  # its runs count; answered even if unconfirmed
        found.append((pairs[st.lo], pairs[st.hi]))
        if not search.more_after or st.hi >= len(states) - 1:
            return found


def before_bisect(bench: Bench, states: list[State], max_repeats: int = 10, repeats: int = 1) -> list[tuple]:
    """``hourly bisect`` before issue 17 (commit d8db7d5), for comparison: one good/bad verdict per
    probe against the window's ends (``classify``), and the rest of the window bisected only when
    the first bad state's re-measurement lay significantly between the ends."""
    found = []
    while True:
        pairs = [s.pair for s in states]
        want = min(MIN_END_SAMPLES, max_repeats)
        while True:
            good, bad = list(bench.samples(pairs[0], want)), list(bench.samples(pairs[-1], want))
            sep = separation(good, bad)
            if sep >= SEPARATION_MIN or want >= max_repeats:
                break
            want = min(2 * want, max_repeats)
        if sep < SEPARATION_MIN or not MetricJudge.worse(good, bad, True):
            return found

        def evaluate(pair, fresh=False):
            samples = [] if fresh else list(bench.store.get(pair, []))
            while True:
                if samples:
                    c = MetricJudge.classify(samples, good, bad)
                    if c.verdict is not Verdict.UNSURE:
                        return c
                    if len(samples) >= max_repeats:
                        return None
                    need = min(len(samples), max_repeats - len(samples))
                    for ref, p in ((good, pairs[0]), (bad, pairs[-1])):
                        if len(ref) < len(samples) + need:
                            ref[:] = bench.samples(p, len(samples) + need)
                else:
                    need = repeats
                samples += bench.draw(pair, need) if fresh else bench.measure(pair, need)

        verdicts: dict[int, Verdict] = {}
        while (i := next_probe(len(states), verdicts, {j: COST_MEASURED if pairs[j] in bench.store else COST_BUILD
                                                       for j in range(1, len(states) - 1)})) is not None:
            c = evaluate(pairs[i])
            verdicts[i] = c.verdict if c else Verdict.SKIP
        b = bounds(len(states), verdicts)
        cg, cb = evaluate(pairs[b.lo], fresh=True), evaluate(pairs[b.hi], fresh=True)
        found.append((pairs[b.lo], pairs[b.hi]))
        confirmed = cg is not None and cg.verdict is Verdict.GOOD and cb is not None and cb.verdict is Verdict.BAD
        if not (confirmed and cb.between and b.hi < len(states) - 1):
            return found
        states = states[b.hi:]


def plain_git_bisect(bench: Bench, states: list[State], good: float, bad: float) -> tuple:
    lo, hi = 0, len(states) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        v = bench.measure(states[mid].pair, 1, rebuild=True)[0]
        if abs(v - good) <= abs(v - bad):
            lo = mid
        else:
            hi = mid
    return states[lo].pair, states[hi].pair


def score(walks, answers: list[tuple], planted: list) -> tuple[int, int, int]:
    """(planted found exactly, wrong culprits, ranges)."""
    names = {(r, s) for r, s, _ in planted}
    got, wrong, ranges = set(), 0, 0
    for lg, fb in answers:
        moved = step_commits(walks, lg, fb)
        commits = [(n, s) for n in moved for s in moved[n]]
        if len(commits) != 1:
            ranges += 1
        elif commits[0] in names:
            got.add(commits[0])
        else:
            wrong += 1
    return len(got), wrong, ranges


def limit(n_states: int, k: int) -> int:
    return math.ceil(math.log2(math.comb(n_states - 1, k))) + k + 2


def run(windows: int, seed: int, noise: float, days: int, max_repeats: int, repeats: int,
        min_change: float, kinds: str, sizes: tuple[float, float], quiet: bool = False) -> dict:
    walks = load_walks()
    rng = np.random.default_rng(seed)
    t0 = max(min(t for _, t in w) for w in walks.values())
    t1 = min(max(t for _, t in w) for w in walks.values())
    starts = list(range((t0 // DAY + 1) * DAY, (t1 // DAY) * DAY - days * DAY, DAY))
    stats_ = {k: {"found": 0, "found_big": 0, "wrong": 0, "ranges": 0, "builds": [], "runs": [], "over": [],
                  "all_big": 0} for k in ("bisect", "scan", "guide", "before")}
    planted_n = big_n = 0
    n_states = []
    for w in range(windows):
        day = int(rng.choice(starts))
        t_end = day + days * DAY
        states = candidate_states(walks, day, t_end)
        # commits that make a state of their own (a nameable culprit)
        single = []
        for a, b in zip(states, states[1:]):
            moved = step_commits(walks, a.pair, b.pair)
            c = [(n, s) for n in moved for s in moved[n]]
            if len(c) == 1:
                single.append(c[0])
        k = int(rng.integers(1, 4))
        picks = rng.choice(len(single), size=k, replace=False)
        planted = []
        if kinds == "compensate":
            k = max(k, 2)
            picks = rng.choice(len(single), size=k, replace=False)
        for j, p in enumerate(sorted(picks)):
            size = float(rng.uniform(*sizes))
            f = 1 - size
            if kinds == "compensate" and j == 1:  # an improvement that wins back 30-80 % of the first step
                f = 1 + float(rng.uniform(0.3, 0.8)) * (1 - planted[0][2])
            planted.append((*single[p], f))
        regs = [p for p in planted if p[2] < 1]
        big = [p for p in regs if p[2] <= 1 - 0.02]
        planted_n += len(regs)
        big_n += len(big)
        n_states.append(len(states))
        lim = limit(len(states), k)

        def account(key, bench, answers):
            f, w, r = score(walks, answers, regs)
            fb, _, _ = score(walks, answers, big)
            st = stats_[key]
            st["found"] += f
            st["found_big"] += fb
            st["all_big"] += fb == len(big)
            st["wrong"] += w
            st["ranges"] += r
            st["builds"].append(bench.builds)
            st["runs"].append(bench.runs)
            st["over"].append(bench.builds - lim)

        def noisy():  # each strategy its own noise, the same windows whatever the search draws
            return np.random.default_rng([seed, w, sum(len(st["builds"]) for st in stats_.values())])

        # hourly bisect over the whole window
        bench = Bench(walks, planted, noise, noisy())
        account("bisect", bench, hourly_bisect(bench, states, max_repeats, repeats, min_change))

        # hourly bisect as it was before issue 17
        bench = Bench(walks, planted, noise, noisy())
        account("before", bench, before_bisect(bench, states))

        # hourly scan (1 h, --repeats 3) + detection + hourly bisect of each regression
        bench = Bench(walks, planted, noise, noisy())
        hours = list(range(day, t_end + 1, HOUR))
        pts = []  # consecutive equal pairs collapse, as collapsed_points does
        for h in hours:
            p = candidate_states(walks, h - 1, h)[-1].pair
            if not pts or pts[-1][1] != p:
                pts.append((h, p))
        series = [bench.samples(p, 3) for _, p in pts]
        answers = []
        for c in detect(series, higher_is_better=True).changes:
            if c.kind is ChangeKind.REGRESSION:
                sub = candidate_states(walks, pts[c.before_index][0], pts[c.after_index][0])
                if len(sub) >= 2:
                    answers += hourly_bisect(bench, sub, max_repeats, repeats, min_change)
        account("scan", bench, answers)

        # the guide's loop: a build and a run every hour, then git bisect inside each step's hour
        bench = Bench(walks, planted, noise, noisy())
        vals = [bench.measure(candidate_states(walks, h - 1, h)[-1].pair, 1, rebuild=True)[0] for h in hours]
        answers = []
        for c in detect(vals, higher_is_better=True).changes:
            if c.kind is ChangeKind.REGRESSION:
                sub = candidate_states(walks, hours[c.before_index], hours[c.after_index])
                if len(sub) >= 2:
                    answers.append(plain_git_bisect(bench, sub, vals[c.before_index], vals[c.after_index]))
        account("guide", bench, answers)

    out = {"windows": windows, "planted": planted_n, "big": big_n, "states": statistics.median(n_states),
           "stats": stats_}
    if not quiet:
        print(f"{windows} windows of {days} days, seed {seed}, noise {noise:.1%} per run, {kinds}; "
              f"{planted_n} planted regressions ({big_n} of >= 2 %); median {out['states']:.0f} states")
        print(f"{'strategy':14} {'found':>12} {'>=2% found':>12} {'windows all>=2%':>15} {'wrong':>6} "
              f"{'ranges':>6} {'builds':>7} {'over limit (mean/max)':>22} {'runs':>6}")
        for key, st in stats_.items():
            print(f"{key:14} {st['found']:>5}/{planted_n:<6} {st['found_big']:>5}/{big_n:<6} "
                  f"{st['all_big'] / windows:>15.1%} {st['wrong']:>6} {st['ranges']:>6} "
                  f"{statistics.mean(st['builds']):>7.1f} "
                  f"{statistics.mean(st['over']):>10.1f}/{max(st['over']):<11d} {statistics.mean(st['runs']):>6.0f}")
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--windows", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--noise", type=float, default=0.007)
    ap.add_argument("--days", type=int, default=3)
    ap.add_argument("--max-repeats", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=1, help="first runs per probe (hourly's default --repeats 1)")
    ap.add_argument("--min-change", type=float, default=DEFAULT_MIN_CHANGE)
    ap.add_argument("--kinds", choices=["regressions", "compensate"], default="regressions")
    ap.add_argument("--sizes", type=float, nargs=2, default=(0.01, 0.08))
    a = ap.parse_args()
    run(a.windows, a.seed, a.noise, a.days, a.max_repeats, a.repeats, a.min_change, a.kinds, tuple(a.sizes))
