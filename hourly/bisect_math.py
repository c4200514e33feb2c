"""The pure parts of bisection: candidate states, probe choice, verdicts (no I/O).

*States.* Between a good instant and a bad one, every first-parent commit of either repository
that lands inside the window makes a new state: xla and jax each at their last first-parent commit
at or before that commit's committer time (the scan's pairing rule, via
:class:`hourly.resolve.Resolver`). So every state is one the hourly loop could have built, and two
adjacent states differ by the commits of one step — usually one commit of one repository.

*Search.* States ``0..n-1`` with 0 known good and ``n-1`` known bad. A probe's cost is what it
needs: 0 for a state already measured, a little for a state whose wheels are cached (benchmark runs
only), 1 for a build. The next probe minimises its cost plus the expected number of halvings still
needed after it (``(a·log2 a + b·log2 b)/N`` for the two sides ``a`` and ``b``), so a free state
near the middle beats a build at the exact middle, and builds stay near ``log2(n)``. Untestable
states (build failed, unsure after all repeats) are left out and the search goes on with their
neighbours; when only untestable states separate the last good from the first bad, the answer is
that range.

*Verdicts.* Metric mode: a sequential probability ratio test between two Gaussians fitted to the
good and bad ends' samples (the JAX-Toolbox triage idea, made sequential as Pinpoint's adaptive
attempts are), vetoed to UNSURE when the probe is inconsistent with the side it leans to (a z-test
on its mean, and Pinpoint's Mann-Whitney U + Kolmogorov-Smirnov pair once there are enough
samples). Exit mode: like ``git bisect run`` — 0 good, 125 skip, anything else bad.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Iterable, Sequence

import numpy as np
from scipy import stats

# the noise floor and prior are detection's: one definition, so a step and its bisection agree
from .detect import NOISE_FLOOR_RELATIVE, PRIOR_RELATIVE_NOISE
from .model import REPOS, Pair
from .resolve import Resolver


class Verdict(str, Enum):
    GOOD = "good"
    BAD = "bad"
    UNSURE = "unsure"  # more samples may decide
    SKIP = "skip"      # untestable: build failed, benchmark could not say, or unsure after all repeats

    def __str__(self) -> str:
        return self.value


# -- states -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class State:
    time: int   # unix seconds: the committer time that made this state (the window's start for state 0)
    pair: Pair


def candidate_states(walks: dict[str, list[tuple[str, int]]], t_good: int, t_bad: int) -> list[State]:
    """The states from ``t_good`` to ``t_bad``: state 0 stands at ``t_good``, the last at ``t_bad``.

    ``walks`` maps "xla"/"jax" to ``(sha, committer time)`` in ``git rev-list --first-parent`` order.
    """
    if t_bad <= t_good:
        raise ValueError("the bad end must be later than the good end")
    res = {name: Resolver(walks[name]) for name in REPOS}

    def at(t: int) -> Pair | None:
        x, j = res["xla"].at(t), res["jax"].at(t)
        return Pair(x, j) if x and j else None

    times = sorted({ts for name in REPOS for _, ts in walks[name] if t_good < ts <= t_bad})
    out: list[State] = []
    first = at(t_good)
    if first is not None:
        out.append(State(t_good, first))
    for t in times:
        p = at(t)
        if p is not None and (not out or out[-1].pair != p):
            out.append(State(t, p))
    last = at(t_bad)
    if last is not None and (not out or out[-1].pair != last):
        out.append(State(t_bad, last))
    return out


def step_commits(walks: dict[str, list[tuple[str, int]]], old: Pair, new: Pair) -> dict[str, list[str]]:
    """Per repository, the first-parent commits a step from ``old`` to ``new`` brings (oldest first)."""
    out = {}
    for name in REPOS:
        a, b = getattr(old, name), getattr(new, name)
        if a == b:
            out[name] = []
            continue
        shas = [s for s, _ in walks[name]]
        i_new, i_old = shas.index(b), shas.index(a)
        out[name] = list(reversed(shas[i_new:i_old]))
    return out


# -- search -----------------------------------------------------------------------------------

#: Probe costs, in builds.
COST_MEASURED = 0.0
COST_CACHED = 0.05
COST_BUILD = 1.0


@dataclass(frozen=True)
class Bounds:
    lo: int  # last state known good
    hi: int  # first state after lo known bad

    @property
    def adjacent(self) -> bool:
        return self.hi - self.lo == 1


def bounds(n: int, verdicts: dict[int, Verdict]) -> Bounds:
    """The last good state before the first bad one (state 0 is good, n-1 bad by definition)."""
    bad = [i for i, v in verdicts.items() if v is Verdict.BAD and 0 < i] + [n - 1]
    hi = min(bad)
    good = [i for i, v in verdicts.items() if v is Verdict.GOOD and i < hi] + [0]
    return Bounds(max(good), hi)


def expected_halvings(a: int, b: int) -> float:
    """Expected log2 of the interval left after a probe splitting it into ``a`` and ``b`` steps."""
    n = a + b
    return sum(k * math.log2(k) for k in (a, b) if k > 0) / n


def next_probe(n: int, verdicts: dict[int, Verdict], costs: dict[int, float] | None = None) -> int | None:
    """The state to test next, or None when the last good and first bad are settled.

    States with a final verdict (good, bad, skip) are not probed again; ``costs`` gives each
    state's cost in builds (default: a build).
    """
    b = bounds(n, verdicts)
    costs = costs or {}
    best, best_score = None, None
    mid = (b.lo + b.hi) / 2
    for i in range(b.lo + 1, b.hi):
        if verdicts.get(i) in (Verdict.GOOD, Verdict.BAD, Verdict.SKIP):
            continue
        score = (costs.get(i, COST_BUILD) + expected_halvings(i - b.lo, b.hi - i), abs(i - mid), i)
        if best_score is None or score < best_score:
            best, best_score = i, score
    return best


def plain_bisection_probes(n: int, first_bad: int) -> int:
    """How many probes a plain bisection (always the midpoint) needs over states 0..n-1."""
    lo, hi, k = 0, n - 1, 0
    while hi - lo > 1:
        m = (lo + hi) // 2
        k += 1
        if m >= first_bad:
            hi = m
        else:
            lo = m
    return k


# -- verdicts ---------------------------------------------------------------------------------

#: Wald's SPRT error rates (false bad, false good) per decision; a bisection makes ~log2(n) of them
#: (benchmarks: 0.01 pins 99.3 %, 0.002 pins 99.7 % of 8 % steps in 3 % noise, for ~1 more sample).
ALPHA = 0.002
BETA = 0.002
#: A probe whose mean is this many standard errors from the side it leans to fits neither end.
Z_VETO = 4.0
#: Pinpoint's pair of tests vetoes once the probe has this many samples.
NONPARAMETRIC_MIN = 8


@dataclass(frozen=True)
class Classification:
    verdict: Verdict
    llr: float            # log likelihood ratio, bad vs good (positive: looks bad)
    reason: str
    between: bool = False  # significantly between the ends: a second step lies after this state


def pooled_sigma(groups: Iterable[Sequence[float]]) -> tuple[float | None, int]:
    """Pooled within-group standard deviation (None without any repeated group) and its degrees of freedom."""
    ss, dof = 0.0, 0
    for g in groups:
        g = np.asarray(g, dtype=float)
        if len(g) >= 2:
            ss += float(np.sum((g - g.mean()) ** 2))
            dof += len(g) - 1
    return (math.sqrt(ss / dof) if dof else None), dof


def noise(good: Sequence[float], bad: Sequence[float], probe: Sequence[float] = ()) -> float:
    """The standard deviation of one sample: pooled over the groups, floored, or a prior."""
    level = float(np.median(np.abs(np.concatenate([np.asarray(good, float), np.asarray(bad, float)]))))
    s, _ = pooled_sigma([good, bad, probe])
    floor = max(NOISE_FLOOR_RELATIVE * level, 1e-12)
    return max(s if s is not None else PRIOR_RELATIVE_NOISE * level, floor)


def veto_threshold(dof: int) -> float:
    """Z_VETO as a Student-t quantile: a noise estimate from few samples needs a wider margin."""
    if dof <= 0:
        return float("inf")
    return float(stats.t.ppf(stats.norm.cdf(Z_VETO), dof))


def separation(good: Sequence[float], bad: Sequence[float]) -> float:
    """How many standard errors apart the two ends' means are."""
    s = noise(good, bad)
    return abs(float(np.mean(bad)) - float(np.mean(good))) / (s * math.sqrt(1 / len(good) + 1 / len(bad)))


def worse(good: Sequence[float], bad: Sequence[float], higher_is_better: bool) -> bool:
    """Whether the bad end is really worse than the good end in the metric's direction."""
    d = float(np.mean(bad)) - float(np.mean(good))
    return d < 0 if higher_is_better else d > 0


def classify(probe: Sequence[float], good: Sequence[float], bad: Sequence[float]) -> Classification:
    """GOOD, BAD or UNSURE for a probe's samples, against the good and bad ends' samples.

    Direction does not matter here: the ends define which level is which. A probe that fits
    neither end is placed by where it lies: beyond the bad end is BAD, beyond the good end GOOD,
    and between the two BAD with ``between`` set (worse than good, so a regression came before
    it; not yet as bad as the bad end, so another one comes after).
    """
    if not probe:
        return Classification(Verdict.UNSURE, 0.0, "no samples")
    p = np.asarray(probe, float)
    g, b = np.asarray(good, float), np.asarray(bad, float)
    sigma = noise(g, b, p)
    mg, mb, mp = float(g.mean()), float(b.mean()), float(p.mean())
    dof = pooled_sigma([g, b, p])[1]
    # The probe's mean is sufficient for its level; under each end it is distributed around that
    # end's mean with the uncertainty of both means (Student-t when the noise is estimated, its
    # tails carrying the uncertainty of a noise estimate from few samples). Comparing means, not
    # summing per-sample ratios, keeps an end's own error from counting once per probe sample.
    sg = sigma * math.sqrt(1 / len(p) + 1 / len(g))
    sb = sigma * math.sqrt(1 / len(p) + 1 / len(b))
    if dof > 0:
        llr = float(stats.t.logpdf(mp, dof, mb, sb) - stats.t.logpdf(mp, dof, mg, sg))
    else:
        llr = float(_lognorm(np.array([mp]), mb, sb ** 2)[0] - _lognorm(np.array([mp]), mg, sg ** 2)[0])
    zg = abs(mp - mg) / (sigma * math.sqrt(1 / len(p) + 1 / len(g)))
    zb = abs(mp - mb) / (sigma * math.sqrt(1 / len(p) + 1 / len(b)))
    veto = veto_threshold(dof)
    if zg > veto and zb > veto:
        t = (mp - mg) / (mb - mg) if mb != mg else 0.5
        if t < 0:
            return Classification(Verdict.GOOD, llr, f"beyond the good end ({zg:.1f} standard errors)")
        if t > 1:
            return Classification(Verdict.BAD, llr, f"beyond the bad end ({zb:.1f} standard errors)")
        return Classification(Verdict.BAD, llr, f"between the ends ({t * 100:.0f}% of the way to bad): "
                              "a second step comes later", between=True)
    upper, lower = math.log((1 - BETA) / ALPHA), math.log(BETA / (1 - ALPHA))
    if llr >= upper:
        verdict, z, ref = Verdict.BAD, zb, b
    elif llr <= lower:
        verdict, z, ref = Verdict.GOOD, zg, g
    else:
        return Classification(Verdict.UNSURE, llr, f"between the ends after {len(p)} samples (LLR {llr:+.2f})")
    if z > veto:
        return Classification(Verdict.UNSURE, llr,
                              f"leans {verdict.value} but its mean is {z:.1f} standard errors from that end")
    if len(p) >= NONPARAMETRIC_MIN and len(ref) >= 3:
        mw = stats.mannwhitneyu(p, ref, alternative="two-sided").pvalue
        ks = stats.ks_2samp(p, ref).pvalue
        if mw < ALPHA and ks < ALPHA:
            return Classification(Verdict.UNSURE, llr,
                                  f"leans {verdict.value} but differs from that end (Mann-Whitney p={mw:.3g}, KS p={ks:.3g})")
    return Classification(verdict, llr, f"{verdict.value} (LLR {llr:+.2f}, {len(p)} samples)")


def _lognorm(x: np.ndarray, mean: float, var: float) -> np.ndarray:
    return -0.5 * (np.log(2 * math.pi * var) + (x - mean) ** 2 / var)


def exit_verdict(returncodes: Sequence[int | None], timed_out: bool = False) -> Verdict:
    """``git bisect run``'s rule over one or more runs: any failing run is bad, 125 skips, 0 is good.

    A run that timed out (``None``) counts as bad: a hang is a failure of the program.
    """
    if not returncodes:
        return Verdict.SKIP
    if any(rc is None for rc in returncodes) or timed_out:
        return Verdict.BAD
    if any(rc not in (0, 125) for rc in returncodes):
        return Verdict.BAD
    if any(rc == 125 for rc in returncodes):
        return Verdict.SKIP
    return Verdict.GOOD


def exit_transitions(verdicts: Sequence[Verdict | None]) -> list[tuple[int, int]]:
    """(last good index, first bad index) for every good→bad transition; skips and None are passed over."""
    out, last_good, seen_bad = [], None, False
    for i, v in enumerate(verdicts):
        if v is Verdict.GOOD:
            last_good, seen_bad = i, False
        elif v is Verdict.BAD:
            if last_good is not None and not seen_bad:
                out.append((last_good, i))
            seen_bad = True
    return out
