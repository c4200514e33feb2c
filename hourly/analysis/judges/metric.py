"""``--mode metric``: a state is good or bad by the level of its samples between the window's ends.

Robust to slow runs: levels are medians, the noise the pooled Shamos estimator, the predictive
heavy-tailed for few runs (hourly.analysis.samples). Against the two ends (:meth:`MetricJudge.classify`):
a sequential probability ratio test between the good and bad ends' samples (the JAX-Toolbox triage
idea, made sequential as Pinpoint's adaptive attempts are), vetoed to UNSURE when the probe is
inconsistent with the side it leans to (a z-test on its location, and Pinpoint's Mann-Whitney U +
Kolmogorov-Smirnov pair once there are enough samples). Inside an interval of the window search
(:meth:`MetricJudge.level`): at the earlier end's level (LOW), the later end's (HIGH), or at least
``--min-change`` from both (NEITHER: a step on each side); and whether two states differ at all
(:meth:`MetricJudge.differ`). Then how each of those is written as a verdict: the earlier level is
good, the later bad, and a state between two steps bad (a regression came before it).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from hourly.analysis.judges.base import DEFAULT_OPTIONS, BaseJudge, Call, Evidence, JudgeOptions, Verdict
from hourly.analysis.samples import (
    hodges_lehmann,
    location,
    logpdf,
    noise,
    odds,
    pooled_sigma,
    se2,
    separation,
    tail_dof,
)
from hourly.errors import UserError
from hourly.model import Named
from hourly.text.plurals import plural

#: Wald's SPRT error rates (false bad, false good) per decision; a bisection makes ~log2(n) of them
#: (benchmarks: 0.01 pins 99.3 %, 0.002 pins 99.7 % of 8 % steps in 3 % noise, for ~1 more sample).
ALPHA = 0.002
BETA = 0.002
#: A probe whose mean is this many standard errors from the side it leans to fits neither end.
Z_VETO = 4.0
#: Pinpoint's pair of tests vetoes once the probe has this many samples.
NONPARAMETRIC_MIN = 8
#: When repeats run out, a probe still takes the verdict it leans to by at least this log-likelihood
#: ratio (20:1); otherwise it is untestable.
FALLBACK_LLR = math.log(20.0)
#: The test's "another step" hypothesis starts at this fraction of --min-change: a step of exactly
#: --min-change then lies well inside it and is found with the test's full power, not at a coin toss.
INDIFFERENCE = 0.75
#: Error rate of each of the search's verdicts (Wald's bound log(1/STEP_ALPHA)): a window takes
#: ~25 of them and one wrong verdict can hide a step, so they are held stricter than ALPHA.
STEP_ALPHA = 0.0005
#: Samples a probe needs before it is judged a level of its own (a step on each side).
NEITHER_MIN = 3
#: The ends' locations must lie this many standard errors apart.
SEPARATION_MIN = 3.0
#: Samples each end needs before probes are classified against it (capped by --max-repeats).
MIN_END_SAMPLES = 3


class Level(Named):
    """Where a probe stands inside an interval whose ends differ."""
    LOW = "low"          # at the level of the interval's earlier end: the step is after it
    HIGH = "high"        # at the level of the later end: the step is before it
    NEITHER = "neither"  # at least min-change from both: a step on each side
    UNSURE = "unsure"    # more samples may decide
    SKIP = "skip"        # untestable: failed, or unsure after all repeats


@dataclass(frozen=True)
class Judgement:
    level: Level
    reason: str
    margin: float = 0.0  # log-likelihood of the chosen level over the best other


@functools.cache
def veto_threshold(dof: int) -> float:
    """Z_VETO as a Student-t quantile: a noise estimate from few samples needs a wider margin
    (remembered per ``dof``: scipy's quantile costs ~0.3 ms a call, and every verdict asks)."""
    if dof <= 0:
        return float("inf")
    from scipy import stats  # here, not at the top: scipy.stats costs every hourly process ~1 s to import
    return float(stats.t.ppf(stats.norm.cdf(Z_VETO), dof))


def resolvable_change(sigma: float, max_repeats: int) -> float:
    """The smallest difference two states of ``max_repeats`` samples each can tell from none.

    At ``d`` apart the test's log-likelihood ratio grows to ``d²·R / (4σ²)``; it must reach
    ``log((1-β)/α)``. Steps smaller than this are not searched for: more repeats could not
    decide them, and a verdict by coin toss would name wrong culprits.
    """
    return sigma * math.sqrt(4 * math.log((1 - STEP_ALPHA) / STEP_ALPHA) / max(max_repeats, 1))


def neither_rounds(x: float, sd: float, delta: float) -> float:
    """About how many rounds a probe reading ``x`` from the end it is nearer (``sd``: a round's
    spread of that difference) takes to be judged "a level of its own" at least ``delta`` from it
    (:meth:`MetricJudge.level`), where it reads nearer that level than the end's (``x > delta/2``):
    Wald's bound against the end, whose log-likelihood ratio grows by ``(x² − (x − μ)²) / (2·sd²)``
    a round (``μ = max(delta, x)``, the level's most likely point). Infinite at halfway and below:
    there only a reading that moves settles it."""
    x = abs(x)
    mu = max(delta, x)
    gain = x * x - (x - mu) ** 2
    if gain <= 0 or sd <= 0:
        return math.inf if gain <= 0 else 1.0
    return 2 * math.log((1 - STEP_ALPHA) / STEP_ALPHA) * sd * sd / gain


def ruled_out(share: float | None, delta: float) -> str:
    """The size Wald's "alike" ruled out, in the words both ends' checks say it (``share``: ``delta``
    as a share of the level; None where the level is 0: ``delta`` in the metric's units)."""
    size = f"{share * 100:.1f} %" if share is not None else f"{delta:.4g}"
    return f"by Wald's test no difference of {size} or more"


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


class MetricJudge(BaseJudge):
    """A state's verdict by its samples' level (see the module's text). ``against(good, bad)``
    gives the samples a probe is classified between; ``opts.max_repeats`` the most samples a state
    takes while it is unsure (finding a fix, the bisection flips the metric's direction instead)."""

    name = "metric"
    mode = "metric"
    answer_mode = "metric"
    #: the window search pins every step of the window (hourly.analysis.step_search.StepSearch)
    steps = True
    #: a level of the window search as a probe row's verdict: the earlier level is good, the later
    #: bad (and a probe between two steps is bad: a regression came before it)
    VERDICT_OF = {Level.LOW: Verdict.GOOD, Level.HIGH: Verdict.BAD, Level.NEITHER: Verdict.BAD}

    def __init__(self, opts: JudgeOptions = DEFAULT_OPTIONS):
        self.max_repeats = opts.max_repeats
        self.refs: tuple[list[float], list[float]] = ([], [])

    # -- against the two ends ---------------------------------------------------------------------
    def against(self, good: list[float], bad: list[float]) -> None:
        """The samples probes are classified between (the lists, not copies: the ends grow)."""
        self.refs = (good, bad)

    def call(self, ev: Evidence) -> Call:
        """A probe's samples against the ends; unsure after ``max_repeats`` samples: untestable."""
        samples = list(ev.samples)
        c = self.classify(samples, *self.refs)
        if c.verdict is not Verdict.UNSURE:
            return c
        if len(samples) >= self.max_repeats:
            return Call(Verdict.SKIP, f"unsure after {plural(len(samples), 'sample')}: {c.reason}")
        return Call(Verdict.UNSURE, c.reason, more=min(len(samples), self.max_repeats - len(samples)))

    @staticmethod
    def failed(ev: Evidence) -> Call:
        """A measurement that printed no sample: the state is untestable, and why."""
        said = f"{ev.status}: {ev.detail}"  # a detail that names its status already (the jaxlib gate's): once
        return Call(Verdict.SKIP, ev.detail if ev.detail and ev.detail.startswith(f"{ev.status}: ") else said)

    @staticmethod
    def untestable_level(why: str) -> Judgement:
        """A state of the window search that cannot be measured (build failed, no metric)."""
        return Judgement(Level.SKIP, why)

    @staticmethod
    def sweep(c: Call) -> str:
        """A setting's samples classified between the two states (``hourly explain``'s sweep):
        ``restores`` (at the good state's level), ``does not restore`` (at the bad state's) or ``unsure``."""
        return {Verdict.GOOD: "restores", Verdict.BAD: "does not restore"}.get(c.verdict, "unsure")

    @staticmethod
    def end(side: Verdict, samples: Sequence[float]) -> Verdict:
        """An end's row: good or bad by definition, untestable without a sample."""
        return side if samples else Verdict.SKIP

    # -- the ends of a window ---------------------------------------------------------------------
    @staticmethod
    def apart(good: Sequence[float], bad: Sequence[float]) -> tuple[bool, float]:
        """Whether the ends separate (and by how many standard errors)."""
        sep = separation(good, bad)
        return sep >= SEPARATION_MIN, sep

    def alike(self, good: Sequence[float], bad: Sequence[float], min_change: float) -> str | None:
        """Whether the ends are shown alike, by Wald's test at its own bound that they differ by less
        than the smallest step searched for (``min_change`` of the level, or what --max-repeats
        samples of this noise can resolve): the size ruled out in words, None where not shown."""
        sigma = noise(good, bad)
        level = abs(location(good))
        delta = max(INDIFFERENCE * min_change * level, resolvable_change(sigma, self.max_repeats))
        if self.differ(good, bad, sigma, pooled_sigma([good, bad])[1], delta) is not False:
            return None
        return ruled_out(delta / level if level else None, delta)

    def check_ends(self, good: Sequence[float], bad: Sequence[float], sep: float, higher_is_better: bool,
                   find_fix: bool, where: str, alike: str | None = None) -> None:
        """The ends a window search rests on: apart, and the later one worse (better, finding a fix).
        ``alike``: not apart, and shown alike (:meth:`alike`: the size ruled out)."""
        if sep < SEPARATION_MIN and alike is not None:
            raise UserError(f"the ends of {where} do not differ ({_mean(good):.4g} vs {_mean(bad):.4g}, "
                            f"{sep:.1f} standard errors; {alike})",
                            "pass ends on either side of the regression, or a larger --max-repeats")
        if sep < SEPARATION_MIN:  # a difference not shown is not "no difference"
            raise UserError(f"the ends of {where} were not shown to differ, nor to be alike "
                            f"({_mean(good):.4g} vs {_mean(bad):.4g}, {sep:.1f} standard errors, "
                            f"{SEPARATION_MIN:g} needed): a change within the samples' spread may lie between them",
                            "pass a larger --max-repeats, or ends on either side of the regression")
        if not self.worse(good, bad, higher_is_better) and find_fix:
            raise UserError(f"the later end ({_mean(bad):.4g}) is not better than the earlier end ({_mean(good):.4g})",
                            "pass --bad before the improvement and --good after it, or set "
                            "--higher-is-better/--lower-is-better")
        if not self.worse(good, bad, higher_is_better):
            raise UserError(f"the bad end ({_mean(bad):.4g}) is not worse than the good end ({_mean(good):.4g})",
                            "it got better: to find the commit that did it, pass --find-fix with --bad at this --good "
                            "and --good at this --bad; or set --higher-is-better/--lower-is-better")

    def ends(self, good: Sequence[float], bad: Sequence[float], final: bool, higher_is_better: bool,
             find_fix: bool, where: str, min_change: float | None = None) -> bool:
        """Whether the window's ends are told apart (``final``: no more samples come): apart, or
        final, they are checked (:meth:`check_ends`: a UserError unless apart and the later worse;
        not apart, they "do not differ" only where ``min_change`` is given and :meth:`alike` shows it)."""
        apart, sep = self.apart(good, bad)
        if not (apart or final):
            return False
        alike = None if apart or min_change is None else self.alike(good, bad, min_change)
        self.check_ends(good, bad, sep, higher_is_better, find_fix, where, alike)
        return True

    @staticmethod
    def edge(runs: bool, why: str = "crashed") -> Call:
        """A crash window's edge, probed by exit status: it runs (unsure: its level is not judged
        yet), or it crashed (``why``) and is untestable."""
        if runs:
            return Call(Verdict.UNSURE, "runs: the edge of a crash window, by exit status (its level not judged yet)")
        return Call(Verdict.SKIP, f"{why} (the edge of a crash window, by exit status)")

    # -- the window search's levels, as verdicts ------------------------------------------------
    @staticmethod
    def verdict_of(level: Level, unjudged: Verdict = Verdict.SKIP) -> Verdict:
        """A level as a probe row's verdict (``unjudged``: for a level that is no verdict)."""
        return MetricJudge.VERDICT_OF.get(level, unjudged)

    @staticmethod
    def ahead(ev: Evidence | None = None) -> Verdict:
        """A state measured ahead of the search (in a round with others): unsure until the search
        judges it; untestable when its measurement failed."""
        return Verdict.SKIP if ev is not None and not ev.ok else Verdict.UNSURE

    @staticmethod
    def interval_end(i: int, n: int, level: Level | None) -> Verdict:
        """The row of an interval's end that took more samples: the window's ends good and bad by
        definition, an inner state by the level it was judged at (unsure: not judged yet)."""
        if i == 0:
            return Verdict.GOOD
        if i == n - 1:
            return Verdict.BAD
        return MetricJudge.VERDICT_OF.get(level, Verdict.UNSURE) if level is not None else Verdict.UNSURE

    @staticmethod
    def confirming(level: Level) -> Verdict:
        """A re-measured state's level as its confirmation verdict: a level of its own is unsure."""
        if level is Level.SKIP:
            return Verdict.SKIP
        return Verdict.UNSURE if level is Level.NEITHER else MetricJudge.VERDICT_OF.get(level, Verdict.UNSURE)

    @staticmethod
    def seen_from(verdict: str, i: int | None, lo: int, hi: int) -> str:
        """A probe's verdict as an answer's step sees it: good before the step, bad from its first
        bad state on (a window may hold several steps, and a probe was judged against the ends of
        the interval it split, not against this step; git bisect's terms are this)."""
        if i is None or verdict not in (Verdict.GOOD.value, Verdict.BAD.value, Verdict.UNSURE.value):
            return verdict
        if i <= lo:
            return Verdict.GOOD.value
        if i >= hi:
            return Verdict.BAD.value
        return verdict

    # -- the rules ------------------------------------------------------------------------------
    @staticmethod
    def worse(good: Sequence[float], bad: Sequence[float], higher_is_better: bool) -> bool:
        """Whether the bad end is really worse than the good end in the metric's direction."""
        d = location(bad) - location(good)
        return d < 0 if higher_is_better else d > 0

    @staticmethod
    def classify(probe: Sequence[float], good: Sequence[float], bad: Sequence[float]) -> Call:
        """GOOD, BAD or UNSURE for a probe's samples, against the good and bad ends' samples.

        Direction does not matter here: the ends define which level is which. A probe that fits
        neither end is placed by where it lies: beyond the bad end is BAD, beyond the good end GOOD,
        and between the two BAD with ``between`` set (worse than good, so a regression came before
        it; not yet as bad as the bad end, so another one comes after).
        """
        if not probe:
            return Call(Verdict.UNSURE, "no samples")
        p = np.asarray(probe, float)
        g, b = np.asarray(good, float), np.asarray(bad, float)
        sigma = noise(g, b, p)
        mg, mb, mp = location(g), location(b), location(p)
        dof = pooled_sigma([g, b, p])[1]
        # The probe's location (the median) stands for its level; under each end it is distributed
        # around that end's location with the uncertainty of both (Student-t: its tails carry the
        # uncertainty of a noise estimate from few samples, and a single run's heavy tail). Comparing
        # locations, not summing per-sample ratios, keeps an end's own error from counting once per
        # probe sample; medians and a Shamos scale keep a few slow runs from deciding.
        sg, sb = se2(sigma, p, g), se2(sigma, p, b)
        nu = tail_dof(dof, len(p))
        llr = logpdf(mp, mb, sb, nu) - logpdf(mp, mg, sg, nu)
        zg, zb = abs(mp - mg) / sg, abs(mp - mb) / sb
        veto = veto_threshold(dof)
        if zg > veto and zb > veto:
            t = (mp - mg) / (mb - mg) if mb != mg else 0.5
            if t < 0:
                return Call(Verdict.GOOD, f"beyond the good end ({zg:.1f} standard errors)", llr=llr)
            if t > 1:
                return Call(Verdict.BAD, f"beyond the bad end ({zb:.1f} standard errors)", llr=llr)
            return Call(Verdict.BAD, f"between the ends ({t * 100:.0f}% of the way to bad): "
                            "a second step comes later", between=True, llr=llr)
        upper, lower = math.log((1 - BETA) / ALPHA), math.log(BETA / (1 - ALPHA))
        if llr >= upper:
            verdict, z, ref = Verdict.BAD, zb, b
        elif llr <= lower:
            verdict, z, ref = Verdict.GOOD, zg, g
        else:
            return Call(Verdict.UNSURE, f"between the ends after {plural(len(p), 'sample')} (odds {odds(llr)})", llr=llr)
        if z > veto:
            return Call(Verdict.UNSURE, f"leans {verdict.value} but its mean is {z:.1f} standard errors from that end",
                            llr=llr)
        if len(p) >= NONPARAMETRIC_MIN and len(ref) >= 3:
            from scipy import stats  # here, not at the top: scipy.stats costs every hourly process ~1 s to import
            mw = stats.mannwhitneyu(p, ref, alternative="two-sided").pvalue
            ks = stats.ks_2samp(p, ref).pvalue
            if mw < ALPHA and ks < ALPHA:
                return Call(Verdict.UNSURE, f"leans {verdict.value} but differs from that end "
                                            f"(Mann-Whitney p={mw:.3g}, KS p={ks:.3g})", llr=llr)
        return Call(verdict, f"{verdict.value} (odds {odds(llr)}, {plural(len(p), 'sample')})", llr=llr)

    @staticmethod
    def level(probe: Sequence[float], low: Sequence[float], high: Sequence[float], sigma: float, dof: int,
              delta: float, final: bool = False, neither_bound: float | None = None, hl: bool = False) -> Judgement:
        """LOW, HIGH or NEITHER for a probe's samples between the samples of an interval's two ends.

        Three hypotheses about the probe's mean: the earlier end's mean, the later end's mean, or any
        level at least ``delta`` from both (a composite hypothesis, taken at its most likely point).
        The probe's location (:func:`location`, the median) is compared under each with the
        Student-t predictive of the difference of two locations on the pooled robust noise ``sigma``
        (``dof`` degrees of freedom, capped by :func:`tail_dof`: a single run's tail is heavy).
        One hypothesis is accepted when it beats both others by Wald's bound (``STEP_ALPHA``).
        ``hl`` (paired, drift-cancelled values): Hodges–Lehmann locations instead of medians.
        ``final`` (no more samples to take): the end it leans to by 20:1, else SKIP. "Neither" needs
        Wald's bound even then: a split on a probe that stayed unsure would put a step where none is,
        while an end taken wrongly only hides a step below --min-change. ``neither_bound`` (paired
        verdicts): an end is taken once it beats the other end by Wald's bound and "neither" by this
        (the log odds of 20:1, say) — telling "at the end's level" from "within --min-change of it"
        at Wald's bound takes many more samples than telling the two ends apart, and an end taken so
        hides at most a step of about --min-change beside another step. A negative bound takes the end
        unless "neither" is likelier by that much (while "neither" itself still needs Wald's bound).
        """
        if not probe:
            return Judgement(Level.UNSURE, "no samples")
        loc = hodges_lehmann if hl else location
        mp, np_ = loc(probe), len(probe)
        ma, mb = loc(low), loc(high)
        sa, sb = se2(sigma, probe, low, hl), se2(sigma, probe, high, hl)
        dof = tail_dof(dof, np_)
        la, lb = logpdf(mp, ma, sa, dof), logpdf(mp, mb, sb, dof)
        # the most likely level at least delta from both ends, and the scale of the end it borders
        cands = [(mp, sa if abs(mp - ma) <= abs(mp - mb) else sb)]
        cands += [(ma + s * delta, sa) for s in (-1, 1)] + [(mb + s * delta, sb) for s in (-1, 1)]
        ok = [(abs(mp - mu), mu, sc) for mu, sc in cands
              if abs(mu - ma) >= delta * (1 - 1e-9) and abs(mu - mb) >= delta * (1 - 1e-9)]
        _, mu, sc = min(ok)
        lo = logpdf(mp, mu, sc, dof)
        scores = {Level.LOW: la, Level.HIGH: lb, Level.NEITHER: lo}
        best = max(scores, key=scores.__getitem__)
        margin = scores[best] - max(v for k, v in scores.items() if k is not best)
        span = abs(mb - ma)
        where = f"{(mp - ma) / (mb - ma) * 100:.0f}% of the way" if span > 0 else "level"
        # a level of its own needs NEITHER_MIN samples: one or two runs far from both ends are as
        # likely a slow first run or a busy machine as a step (their median is no better than they)
        if best is Level.NEITHER and np_ < NEITHER_MIN and not final:
            return Judgement(Level.UNSURE, f"far from both ends after {plural(np_, 'sample')}: "
                                           f"a level of its own needs {NEITHER_MIN}", margin)
        bound = math.log((1 - STEP_ALPHA) / STEP_ALPHA)
        decided = margin >= bound
        if neither_bound is not None and not (best is Level.NEITHER and decided):
            end = Level.LOW if la >= lb else Level.HIGH
            if abs(la - lb) >= bound and scores[end] - scores[Level.NEITHER] >= neither_bound:
                best, margin, decided = end, abs(la - lb), True
        if decided:
            what = {Level.LOW: "at the earlier end's level", Level.HIGH: "at the later end's level",
                    Level.NEITHER: f"at least {delta / max(abs(ma), 1e-12) * 100:.1f}% from both ends: "
                                   "a step on each side"}[best]
            return Judgement(best, f"{what} ({where}, {plural(np_, 'sample')}, odds {odds(margin)})", margin)
        if not final:
            return Judgement(Level.UNSURE, f"undecided after {plural(np_, 'sample')} ({where}, odds only {odds(margin)})", margin)
        lean = Level.LOW if la >= lb else Level.HIGH
        if abs(la - lb) >= FALLBACK_LLR:
            return Judgement(lean, f"leans to the {'earlier' if lean is Level.LOW else 'later'} end after "
                                   f"{plural(np_, 'sample')} ({where}, odds {odds(abs(la - lb))})", abs(la - lb))
        return Judgement(Level.SKIP, f"unsure after {plural(np_, 'sample')} ({where})", margin)

    @staticmethod
    def differ(x: Sequence[float], y: Sequence[float], sigma: float, dof: int, delta: float,
               final: bool = False, hl: bool = False) -> bool | None:
        """Whether ``y``'s level differs from ``x``'s by at least ``delta``: True, False, or None while
        unsure — Wald's test of "no difference" against "at least delta", on the same Student-t
        predictive as :func:`judge`. ``final``: different only at 20:1 (FALLBACK_LLR), else the same."""
        loc = hodges_lehmann if hl else location
        d = loc(y) - loc(x)
        se = se2(sigma, x, y, hl)
        dof = tail_dof(dof, min(len(x), len(y)))
        l0 = logpdf(d, 0.0, se, dof)
        l1 = logpdf(d, d if abs(d) >= delta else math.copysign(delta, d or 1.0), se, dof)
        bound = math.log((1 - STEP_ALPHA) / STEP_ALPHA)
        if l1 - l0 >= (FALLBACK_LLR if final else bound):
            return True  # out of samples, a difference still needs 20:1: a coin toss would name a culprit
        if l0 - l1 >= (0.0 if final else bound):
            return False
        return None


# -- the window search's rules that need no judge, as its drives read them ------------------------------
#: a level as a probe row's verdict; a re-measured state's level as its confirmation; an interval
#: end's row; an end's row; a state measured ahead; an untestable measurement's call; a probe's
#: verdict as an answer's step sees it (hourly.analysis.judges.window)
verdict_of = MetricJudge.verdict_of
confirming = MetricJudge.confirming
interval_end = MetricJudge.interval_end
end_verdict = MetricJudge.end
ahead = MetricJudge.ahead
failed = MetricJudge.failed
seen_from = MetricJudge.seen_from
