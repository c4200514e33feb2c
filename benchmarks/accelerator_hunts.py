"""Hunts on an accelerator, simulated: chip time to a right answer where a process is expensive.

    PYTHONPATH=. python benchmarks/accelerator_hunts.py [--hunts 200] [--seed 1] [--family NAME] [--jobs 1]
    PYTHONPATH=. python benchmarks/accelerator_hunts.py --null [--hunts 2000]

The noise is the TPU machine's, as measured (issue 43; docs/measuring.md): a benchmark process spends
16–20 s before its first sample (opening the chip, imports) and 0.33 s a sample after; its samples
are bimodal — every other one ~8 % slower — with a standard deviation of 4–10 % of the level; each
process's own level scatters 0.3–1 % between processes. A window of 40 or 400 states holds one step
of 2–5 % (a time: higher is worse), and with ``crash`` a crash window (10–20 % of the states, away
from the step) whose processes fail after their fixed cost.

Nothing is built or run: each round's processes are drawn from that model. The decisions are
hourly's own — the window's ends compared in rounds (hourly.analysis.judges.paired's
``ends_paired``, looped by its ``compare_ends``, the loop hourly.bisect.metric_drive runs), then
:class:`~hourly.analysis.step_search.StepSearch` with a paired ``rounds`` callback and crash
windows, as hourly.bisect.step_session drives it. Three ways to measure a process:

- today: 12 samples a process, their median (hourly before issue 43);
- new: 12 samples a process until the window's ends are compared, then n from the costs and the
  two-level noise measured so far (hourly.analysis.process_stat: ``variance_components``, of the
  samples until the statistic is chosen on the ends, then of the values it gives;
  ``between_floor``, ``samples_per_process``), revised after every verdict's rounds; each process
  reduced by the statistic chosen on the ends (``choose_statistic``: the ends' verdict held to
  ``selection_bound``), held fixed for the probes;
- oracle: the n and statistic that cost the least chip time per unit of precision under the true
  noise of the hunt (found by simulation of that noise), from the first process on;
- new and oracle search as hourly does (since 2026-12-06): once the ends read apart, the search's
  first probe is measured in their rounds (A P B rather than A B) and its verdict takes them first;
  new-alone and oracle-alone search without it (hourly before), today never did.

A hunt is *right* when it names the planted step's commit, *wrong* when it names another (a single
commit), else it gave no answer (the ends did not differ, or a range). ``--null``: windows whose ends
do not differ at all — the rate at which the ends' verdict says "they differ" anyway, for the median
alone and for the statistic chosen with and without its share of the rate, and by the rule hourly
had before (3 standard errors at every look).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hourly.analysis.judges.metric import SEPARATION_MIN
from hourly.analysis.judges.paired import PairedMetricJudge, compare_ends, ends_bound, read_apart
from hourly.analysis.paired import Paired, round_order
from hourly.analysis.process_stat import (
    DEFAULT_SAMPLES,
    STATISTICS,
    Cost,
    ProcessValue,
    between_floor,
    reduce,
    samples_per_process,
    selection_bound,
    variance_components,
)
from hourly.analysis.step_search import StepSearch
from hourly.model import BISECT_MIN_CHANGE, DEFAULT_MAX_REPEATS

PER_SAMPLE = 0.33   # s a sample
SLOW_MODE = 0.08    # every other sample this much slower
FAMILIES = {        # name: (states, crash window)
    "40": (40, False), "40-crash": (40, True), "400": (400, False), "400-crash": (400, True)}
#: families of another shape, not in the default run: ``--family`` names them. "11-clear": the TPU
#: front-end case (benchmarks/README.md, run C): 11 states, a step of 8-10 % that stands clear of
#: processes 1-2 % apart, 16-18 s before a process's first sample, 0.15 s a sample; --min-change 0.05
#: "11-lean": the same case with the benchmark's set-up off the chip's compiler, as runs D and E
#: measured it (its inputs built with NumPy): 11-12.5 s before the first sample and ~4 s after the
#: last, samples 3.6-3.9 % apart and one in ~7 a quarter slower (a collector), processes of one
#: state 0.5-1 % apart
SHAPES = {"11-clear": (11, False), "11-lean": (11, False)}
CLEAR_MIN_CHANGE = 0.05  # what the tpu-frontend window passes (its step is 8-10 %)
N_GRID = (3, 4, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64, 80, 96, 128, 160, 200)


class Hunt:
    """One simulated hunt: the window's true levels, the noise, the chip time spent."""

    def __init__(self, states: int, crash: bool, rng: np.random.Generator, clear: bool = False,
                 lean: bool = False):
        self.rng = rng
        self.n_states = states
        self.fixed = float(rng.uniform(16, 20))
        self.per_sample = PER_SAMPLE
        self.sd = float(rng.uniform(0.04, 0.10))
        self.between = float(rng.uniform(0.003, 0.01))
        self.step = float(rng.uniform(0.02, 0.05))
        if clear:  # SHAPES' "11-clear"
            self.fixed, self.per_sample = float(rng.uniform(16, 18)), 0.15
            self.between, self.step = float(rng.uniform(0.01, 0.02)), float(rng.uniform(0.08, 0.10))
        self.collector = lean
        if lean:  # SHAPES' "11-lean", as runs D and E measured it: the fixed cost is the whole
            # process's (its exit too); samples 3.6-3.9 % apart (robust scale) besides the collector's
            self.fixed = float(rng.uniform(11, 12.5)) + float(rng.uniform(4.0, 4.5))
            self.between, self.sd = float(rng.uniform(0.005, 0.01)), float(rng.uniform(0.036, 0.039))
        self.culprit = int(rng.integers(1, states))          # the first state after the step
        self.crashes: range = range(0)
        if crash:
            width = max(2, int(states * rng.uniform(0.1, 0.2)))
            while True:  # a crash window inside the window, not at the ends, away from the step
                lo = int(rng.integers(1, states - width))
                if lo + width < self.culprit - 1 or lo > self.culprit + 1:
                    break
            self.crashes = range(lo, lo + width)
        self.chip = 0.0
        self.processes = 0

    def level(self, i: int) -> float:
        return 1.0 + self.step if i >= self.culprit else 1.0

    def process(self, i: int, n: int) -> list[float] | None:
        """One process of state ``i`` giving ``n`` samples (None: it crashed after its fixed cost)."""
        self.processes += 1
        if i in self.crashes:
            self.chip += self.fixed
            return None
        self.chip += self.fixed + n * self.per_sample
        m = self.level(i) * math.exp(self.between * self.rng.standard_normal())
        x = m * (1 + self.sd * self.rng.standard_normal(n))
        if self.collector:  # "11-lean": one sample in ~7 a quarter slower (a collector), as measured
            x[self.rng.random(n) < 1 / 7] *= 1.25
        else:
            x[int(self.rng.integers(2))::2] *= 1 + SLOW_MODE
        return [float(v) for v in x]


def stat_variance(sd: float, statistic: str, n: int, draws: int = 4000, seed: int = 0) -> float:
    """The variance of ``statistic`` of one process's ``n`` samples (within only, level 1)."""
    rng = np.random.default_rng(seed)
    x = 1 + sd * rng.standard_normal((draws, n))
    x[:, ::2] *= 1 + SLOW_MODE
    if statistic == "median":
        v = np.median(x, axis=1)
    elif statistic == "p10":
        v = np.quantile(x, 0.10, axis=1)
    else:
        x.sort(axis=1)
        k = n // 4
        v = x[:, k:n - k].mean(axis=1)
    return float(v.var())


def oracle_choice(h: Hunt) -> tuple[str, int]:
    """The statistic and n that cost the least chip time per unit of precision under ``h``'s noise."""
    best = None
    for s in STATISTICS:
        for n in N_GRID:
            cost = (h.fixed + n * h.per_sample) * (h.between ** 2 + stat_variance(h.sd, s, n))
            if best is None or cost < best[0]:
                best = (cost, s, n)
    assert best is not None
    return best[1], best[2]


class Measure:
    """How a strategy measures a process: n and the value handed to the search."""

    def __init__(self, kind: str, h: Hunt):
        self.kind, self.h = kind, h
        self.n = DEFAULT_SAMPLES
        self.statistic = "median"
        if kind == "oracle":
            self.statistic, self.n = oracle_choice(h)
        self.seen: dict[int, list[list[float]]] = {}   # state -> its processes' samples
        #: new: the statistic the verdicts hold once the search chose it on the ends, whose values'
        #: noise n is chosen for (hourly.measure.sample_size.SampleSize.statistic); None before
        self.held: str | None = None

    def value(self, i: int) -> float | None:
        x = self.h.process(i, self.n)
        if x is None:
            return None
        self.seen.setdefault(i, []).append(x)
        if self.kind == "new":
            return ProcessValue.of(x)                     # the verdicts choose the statistic
        return reduce(x, self.statistic) if len(x) > 1 else x[0]

    def revise(self) -> None:
        """New: n from the costs and the two-level noise of every state measured more than once."""
        if self.kind != "new":
            return
        comps = []
        for procs in self.seen.values():
            if len(procs) >= 2:
                w, b = variance_components(procs, self.held)
                comps.append((w, b, float(np.mean([len(p) for p in procs])), len(procs)))
        if not comps:
            return
        within = float(np.mean([c[0] for c in comps]))
        between = float(np.mean([c[1] for c in comps]))
        k = sum(c[3] - 1 for c in comps) + 1  # processes, less one per state: the between's dof + 1
        floor = between_floor(within, float(np.mean([c[2] for c in comps])), k)
        self.n = samples_per_process(Cost(self.h.fixed, self.h.per_sample, k), within, between, floor=floor)


def first_probe(states: int) -> list[int]:
    """The states of the first probe's rounds a fresh paired search of ``states`` asks for (the
    interval's ends and the probe), found by asking it."""
    class Asked(Exception):
        pass

    def rounds(sts: list[int], count: int, stop_on: int | None) -> list[dict]:
        raise Asked(list(sts))

    def measure(i: int, count: int) -> list[float] | None:
        raise AssertionError("a paired search measures in rounds")
    search = StepSearch(states, measure, max_repeats=DEFAULT_MAX_REPEATS, min_change=BISECT_MIN_CHANGE,
                        higher_is_better=False, judge=PairedMetricJudge(), rounds=rounds, crash_windows=True,
                        stop_at_regression=True)
    search.seed(0, states - 1, Paired.of([{0: 1.0 + k / 1000, states - 1: 1.05 + k / 1000} for k in range(6)],
                                         [0, states - 1]))
    try:
        search.run()
    except Asked as e:
        return e.args[0]
    raise AssertionError("the search asked for no round")


def hunt(kind: str, states: int, crash: bool, seed: int, ride: bool = False, clear: bool = False,
         lean: bool = False) -> dict:
    """One hunt of ``kind`` (today, new, oracle) on the window drawn from ``seed``. ``ride`` (the
    search as hourly.bisect.metric_drive runs it since 2026-12-06): once the ends read apart
    (``read_apart``), the first probe is measured in their rounds (A P B rather than A B), and its
    verdict takes them first."""
    h = Hunt(states, crash, np.random.default_rng(seed), clear=clear, lean=lean)
    m = Measure(kind, h)
    judge = PairedMetricJudge()
    round_no = 0
    search: StepSearch | None = None
    first = first_probe(states) if ride else [0, states - 1]
    riding: list[dict] = []  # the ends' rounds, the first probe in them
    riding_failed: list[bool] = []
    states_n = states

    def rounds(sts: list[int], count: int, stop_on: int | None) -> list[dict]:
        nonlocal round_no
        out = []
        for _ in range(count):
            block: dict[int, float | None] = {}
            for st in round_order(sts, round_no):
                block[st] = v = m.value(st)
                if v is None and st == stop_on:
                    if search is not None:
                        search.mark_untestable(st, "crashed", crashed=True)
                    out.append(block)
                    round_no += 1
                    return out
            out.append(block)
            round_no += 1
        m.revise()
        return out

    def ends_rounds(count: int, earlier: list[dict]) -> list[dict]:
        # hourly.bisect.metric_drive: the first probe rides once the ends read apart, while it measures
        sts = first if ride and read_apart(earlier, 0, states_n - 1) and not riding_failed else [0, states_n - 1]
        got = rounds(sts, count, None)
        if len(sts) == 3:
            if any(b.get(first[1]) is None for b in got):
                riding_failed.append(True)
                riding.clear()
            else:
                riding.extend(got)
        return got

    def search_rounds(sts: list[int], count: int, stop_on: int | None) -> list[dict]:
        if ride and list(sts) == first and riding:  # every round it rode in first, however few it asks for
            taken = list(riding)
            riding.clear()
            return taken + (rounds(sts, count - len(taken), stop_on) if count > len(taken) else [])
        return rounds(sts, count, stop_on)

    # the ends, as the bisection compares them (hourly.bisect.metric_drive.separate_paired)
    min_change = CLEAR_MIN_CHANGE if clear else BISECT_MIN_CHANGE
    got = compare_ends(judge, ends_rounds, 0, states - 1, cap=DEFAULT_MAX_REPEATS, min_change=min_change)
    outcome, p = got.outcome, got.paired
    result = {"kind": kind, "right": False, "wrong": False, "ends_differ": outcome is True,
              "ends_rounds": len(got.blocks)}
    if outcome is True and p.difference(0, states - 1) > 0:
        def measure(i: int, count: int) -> list[float] | None:
            raise AssertionError("a paired search measures in rounds")
        search = StepSearch(states, measure, max_repeats=DEFAULT_MAX_REPEATS, min_change=min_change,
                            higher_is_better=False, judge=judge, rounds=search_rounds, crash_windows=True,
                            stop_at_regression=True)
        search.seed(0, states - 1, p)
        if search.paired_verdicts.choice.candidates > 1:
            m.held = search.paired_verdicts.choice.statistic
        steps = search.run()
        named = [s for s in steps if s.hi - s.lo == 1 and s.regression(False)]
        result["right"] = any(s.hi == h.culprit for s in named)
        result["wrong"] = any(s.hi != h.culprit for s in named)
        result["statistic"] = search.paired_verdicts.choice.statistic if kind == "new" else m.statistic
    else:
        result["statistic"] = m.statistic
    result.update(chip=h.chip, processes=h.processes, n=m.n, first_probe_processes=len(m.seen.get(first[1], ())) if ride else None)
    return result


def null_ends(seed: int, sd: float, between: float, statistic_rule: str, n: int = DEFAULT_SAMPLES) -> bool:
    """Two ends that do not differ, compared as hourly compares a window's ends (rounds until the
    verdict is not unknown, up to --max-repeats): whether the verdict said "they differ".
    ``statistic_rule``: median (no choice), chosen (the best of STATISTICS, the look's share of the
    rate shared among them: hourly), naive (the best of STATISTICS at the bound of one); before and
    before-chosen: the rule hourly had before (3 standard errors at every look, raised by
    ``selection_bound`` for the best of several), the median alone and the statistic chosen."""
    rng = np.random.default_rng(seed)
    judge = PairedMetricJudge()

    def proc() -> list[float]:
        mm = math.exp(between * rng.standard_normal())
        x = mm * (1 + sd * rng.standard_normal(n))
        x[int(rng.integers(2))::2] *= 1 + SLOW_MODE
        return [float(v) for v in x]

    def value() -> float:
        v = ProcessValue.of(proc())
        return float(v) if statistic_rule in ("median", "before") else v  # one value a process: no choice

    def rounds(count: int, earlier) -> list[dict]:
        return [{0: value(), 1: value()} for _ in range(count)]

    def compared() -> bool:
        got = compare_ends(judge, rounds, 0, 1, cap=DEFAULT_MAX_REPEATS, min_change=BISECT_MIN_CHANGE)
        return got.outcome is True

    if statistic_rule not in ("naive", "before", "before-chosen"):
        return compared()
    import hourly.analysis.judges.paired as jp
    saved = jp.ends_bound
    jp.ends_bound = (  # type: ignore[assignment]  # every look of the verdict under the other rule
        (lambda k, dof, cap, r: ends_bound(1, dof, cap, r)) if statistic_rule == "naive"
        else lambda k, dof, cap, r: selection_bound(SEPARATION_MIN, k, dof))
    try:
        return compared()
    finally:
        jp.ends_bound = saved  # type: ignore[assignment]


def _null_job(args: tuple) -> tuple[str, bool]:
    seed, rule = args
    rng = np.random.default_rng(10_000 + seed)
    return rule, null_ends(seed, float(rng.uniform(0.04, 0.10)), float(rng.uniform(0.003, 0.01)), rule)


def _hunt_job(args: tuple) -> dict:
    kind, family, seed = args
    states, crash = {**FAMILIES, **SHAPES}[family]
    # hourly's search rides its first probe in the ends' rounds since 2026-12-06; today's did not
    base = kind.removesuffix("-alone")
    r = hunt(base, states, crash, seed, ride=base != "today" and not kind.endswith("-alone"),
             clear=family in SHAPES, lean=family == "11-lean")
    r["family"], r["kind"] = family, kind
    return r


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hunts", type=int, default=200, help="seeded hunts a family (default 200)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--family", action="append", choices=sorted({**FAMILIES, **SHAPES}),
                    help="only these families (and SHAPES': 11-clear, 11-lean)")
    ap.add_argument("--kinds", default="today,new,oracle",
                    help="of today, new, oracle; new-alone, oracle-alone: their search without the first probe "
                         "in the ends' rounds (hourly's before 2026-12-06)")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--null", action="store_true", help="the ends' false 'differ' rate on windows with no change")
    a = ap.parse_args()
    pool = ProcessPoolExecutor(a.jobs) if a.jobs > 1 else None
    try:
        return _main(a, pool)
    finally:
        if pool is not None:  # its workers stopped here, not by the interpreter's exit (which may find them gone)
            pool.shutdown()


def _main(a: argparse.Namespace, pool: ProcessPoolExecutor | None) -> int:
    t0 = time.time()
    run = pool.map if pool is not None else map
    if a.null:
        rules = ("median", "chosen", "naive", "before", "before-chosen")
        got: dict[str, list[bool]] = {r: [] for r in rules}
        for rule, said in run(_null_job, [(a.seed * 100_000 + k, r) for r in rules for k in range(a.hunts)]):
            got[rule].append(said)
        for rule in rules:
            k, n = sum(got[rule]), len(got[rule])
            lo, hi = wilson(k, n)
            print(f"null ends, {rule:13s}: 'they differ' in {k} of {n} ({100 * k / n:.2f} %, 95 % {100 * lo:.2f}–"
                  f"{100 * hi:.2f} %)")
        need = ", ".join(f"{r} {ends_bound(1, r - 1, DEFAULT_MAX_REPEATS, r):.1f} "
                         f"({ends_bound(len(STATISTICS), r - 1, DEFAULT_MAX_REPEATS, r):.1f})" for r in (3, 6, 10, 15, 20))
        print(f"separation needed at the look after r rounds (the best of {len(STATISTICS)} in brackets): {need}; "
              f"before: {SEPARATION_MIN:.2f} ({selection_bound(SEPARATION_MIN, len(STATISTICS)):.2f} on known noise); "
              f"{time.time() - t0:.0f} s")
        return 0
    kinds = a.kinds.split(",")
    families = a.family or list(FAMILIES)
    jobs = [(k, f, a.seed * 100_000 + s) for f in families for s in range(a.hunts) for k in kinds]
    results = list(run(_hunt_job, jobs))
    ok = True
    print(f"{'family':10s} {'kind':7s} {'right':>6s} {'wrong':>6s} {'none':>5s} {'chip-min a hunt':>16s} "
          f"{'to a right answer':>18s} {'processes':>9s}  n (median)  statistics")
    for f in families:
        per = {}
        for k in kinds:
            rs = [r for r in results if r["family"] == f and r["kind"] == k]
            right = sum(r["right"] for r in rs)
            wrong = sum(r["wrong"] for r in rs)
            chip = sum(r["chip"] for r in rs) / 60
            per[k] = (chip / max(right, 1), wrong)
            stats = {s: sum(r["statistic"] == s for r in rs) for s in STATISTICS}
            print(f"{f:10s} {k:7s} {right:6d} {wrong:6d} {len(rs) - right - wrong:5d} {chip / len(rs):16.1f} "
                  f"{chip / max(right, 1):18.1f} {statistics.mean(r['processes'] for r in rs):9.1f}  "
                  f"{statistics.median(r['n'] for r in rs):10.0f}  "
                  + " ".join(f"{s} {c}" for s, c in stats.items() if c))
        if "new" in per and "oracle" in per:
            ratio = per["new"][0] / per["oracle"][0]
            good = ratio <= 1.5 and per["new"][1] == 0
            ok &= good
            print(f"{f:10s} new/oracle chip time to a right answer: {ratio:.2f}× "
                  f"{'(within 1.5×, no wrong answer)' if good else '(NOT within 1.5× with no wrong answer)'}")
    print(f"{len(jobs)} hunts, {time.time() - t0:.0f} s")
    return 0 if ok else 1


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of ``k`` of ``n``."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    w = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, c - w), min(1.0, c + w)


if __name__ == "__main__":
    sys.exit(main())
