"""``--mode metric``, paired: every verdict on states measured in alternation, in the same stretch of time.

A probe is judged against both ends of its interval from rounds of the three (A P B, then B P A, …:
one process each), a step's two states against each other from rounds of the two, the window's ends
likewise: each round's common level is taken out (hourly.analysis.paired), so drift common to the
states of a round — the machine's load falling, its clocks, a neighbour — cancels, and what is left
is each process's own noise. The rule is the metric judge's (:meth:`MetricJudge.level`, :meth:`MetricJudge.differ`:
Wald's bounds on a Student-t predictive of the difference of two locations), applied to the
centred values: three outcomes, different (a level), same, or unknown, and unknown gets more
rounds (Pinpoint's adaptive attempts) up to ``--max-repeats`` rounds. Samples taken earlier (the
scan's, an earlier verdict's) are context — the noise, the size of the window's change, how many
rounds a verdict will need, and whether the machine drifted — never evidence for a verdict.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Generic, Hashable, Mapping, Sequence, TypeVar

from hourly.analysis.detect import NOISE_FLOOR_RELATIVE, PRIOR_RELATIVE_NOISE
from hourly.analysis.judges.base import DEFAULT_OPTIONS, Call, JudgeOptions, Verdict
from hourly.analysis.judges.metric import Judgement, Level, MetricJudge, ruled_out
from hourly.analysis.paired import Paired, pooled_noise
from hourly.analysis.process_stat import WORDS, choose_statistic, level_bound
from hourly.analysis.samples import odds
from hourly.errors import UserError
from hourly.text.plurals import plural

if TYPE_CHECKING:
    from hourly.analysis.judges.window import PairedJudge

#: Rounds a paired verdict starts with (two give no noise of their own; the window's pooled noise
#: and the expected size of the difference may ask for more: hourly.analysis.rounds.verdict_samples)
MIN_ROUNDS = 2
#: Rounds the window's ends start with: nothing is known of the noise yet.
END_ROUNDS = 3
#: The rate at which a window's ends that do not differ are said to differ, over all the looks
#: their verdict takes (one after each round, from END_ROUNDS up to --max-repeats): a user spends
#: chip-hours searching a window whose ends only looked apart.
ENDS_ALPHA = 0.01
#: A state that reads this many standard errors away from how it read before, on a machine whose
#: rounds all moved alike, is said to show drift (and by at least DRIFT_MIN of its level).
DRIFT_Z = 4.0
DRIFT_MIN = 0.01
#: A probe is taken at an end's level once that end beats the other by Wald's bound and is at least
#: as likely as "a level of its own" (a step on each side; MetricJudge.level's ``neither_bound``).
#: Holding the end to Wald's bound against "neither" too took 8-12 rounds a probe at 1.5 % noise
#: per process (simulated, a 19-state window: 90 processes against 70); what it guards against is a
#: second step of about --min-change beside the one found (docs/bisect.md, "Paired verdicts"). Taking
#: the end unless "neither" was likelier by 3:1 missed the -2 % step beside a -7 % one (0.7 % noise,
#: tests/test_bisect.py's window) in 8-10 % of simulated windows, at even odds in 4.5 %, for 7 % more
#: processes (tests/test_ends_rate.py).
NEITHER_BOUND = 0.0
#: Paired values are judged by their Hodges–Lehmann locations (95 % of the mean's efficiency on
#: Gaussian noise, robust to a wild process), not their medians (64 %): the drift a median also
#: guarded against is cancelled by the pairing; this saved a third of the rounds a probe took.
HL = True


def ends_bound(candidates: int, dof: int, cap: int, rounds: int) -> float:
    """The separation (standard errors) a window's ends must reach at their look after ``rounds``
    rounds so that ends that do not differ are said to differ at most :data:`ENDS_ALPHA` of the
    time over all the verdict's looks: it looks after every round from END_ROUNDS up to ``cap``
    (--max-repeats) and stops at the first that passes. The rate is spent over the looks as
    ``ENDS_ALPHA · (k/K)²`` by the k-th of K (a power-family spending function, between Pocock's
    equal shares and O'Brien–Fleming's: little at the first looks, whose noise of 2–4 degrees of
    freedom could not pass a real step anyway, more at the later ones), each look's share held
    alone (Bonferroni over the looks: it holds however alike the looks are; a look on the same
    rounds again is the same event), shared again among the ``candidates`` statistics chosen from
    on these rounds, and read as a Student-t quantile at the noise's ``dof`` degrees of freedom
    (at 2, the first look's, tens of standard errors; at 19, about 4.5). Never below
    SEPARATION_MIN, the unpaired ends' check."""
    from hourly.analysis.judges.metric import SEPARATION_MIN
    looks = max(1, cap - END_ROUNDS + 1)
    k = min(max(1, rounds - END_ROUNDS + 1), looks)
    share = ENDS_ALPHA * ((k / looks) ** 2 - ((k - 1) / looks) ** 2)
    return max(SEPARATION_MIN, level_bound(share, candidates, dof))


#: How often, a look, ends that do not differ start to carry a window's first probe in their
#: rounds (:func:`read_apart`): their paired t must pass its two-sided quantile (31.6 on the 2
#: degrees of freedom of 3 rounds, 12.9 on 3, 6.9 on 5, 5.0 on 8).
RIDE_ALPHA = 0.001


def read_apart(blocks: Sequence[Mapping[S, "float | None"]], good: S, bad: S) -> bool:
    """Whether a window's ends read apart in their rounds so far (at least END_ROUNDS): the t of
    their paired differences (of logs where every value is positive) past its two-sided
    RIDE_ALPHA quantile. No verdict — that is :func:`compare_ends`' — only when the first probe
    starts riding in their rounds (hourly.bisect.metric_drive), so that ends that do not differ
    seldom cost a third process a round."""
    from scipy.stats import t as student_t
    both = [(float(g), float(x)) for g, x in ((b.get(good), b.get(bad)) for b in blocks)
            if g is not None and x is not None]
    if len(both) < END_ROUNDS:
        return False
    log = all(g > 0 and x > 0 for g, x in both)
    diffs = [math.log(x) - math.log(g) if log else x - g for g, x in both]
    mean, sd = statistics.fmean(diffs), statistics.stdev(diffs)
    if mean == 0:
        return False
    return sd == 0 or abs(mean) / (sd / math.sqrt(len(diffs))) >= float(student_t.ppf(1 - RIDE_ALPHA / 2, len(diffs) - 1))


def more_rounds(done: int, cap: int) -> int:
    """The rounds a verdict still unsure after ``done`` rounds takes next: one more (the rounds run
    here one after another, so a verdict looks again after each, as a sequential test may, and
    stops at the first that decides), none past ``cap``."""
    return 1 if done < cap else 0


S = TypeVar("S", bound=Hashable)

#: Measures ``count`` more rounds of a window's two ends, one process of each a round, given the
#: rounds measured so far (``earlier``): each round's value of each end (None: that process measured
#: nothing). The I/O of :func:`compare_ends`: real processes through a bisection's lab
#: (hourly.bisect.paired_rounds.measure_rounds), or a simulation's draws.
EndsRounds = Callable[[int, Sequence[Mapping[S, "float | None"]]], Sequence[Mapping[S, "float | None"]]]


@dataclass(frozen=True)
class EndsCompared(Generic[S]):
    """What :func:`compare_ends` found: whether the ends differ (None: no round ran both ends, up to
    ``cap`` rounds: nothing was compared), the difference in words, the rounds as compared (``paired``)
    and their noise (``sigma``: one process's, on the paired scale), and every round measured."""

    outcome: bool | None
    words: str
    paired: Paired
    sigma: float
    blocks: list[Mapping[S, float | None]]


def ends_delta(p: Paired, sigma: float, min_change: float, cap: int) -> float:
    """The smallest difference of a window's ends that counts: --min-change (as a ratio on a log
    scale), or what ``cap`` rounds of this noise can resolve."""
    from hourly.analysis.judges.metric import INDIFFERENCE, resolvable_change
    want = math.log1p(min_change) if p.log else min_change * abs(p.level[0])
    return max(INDIFFERENCE * want, resolvable_change(sigma, cap))


def compare_ends(judge: "PairedJudge", rounds: EndsRounds[S], good: S, bad: S, *, cap: int,
                 min_change: float, repeats: int = 1) -> EndsCompared[S]:
    """A window's two ends compared in rounds of the two, as a bisection compares them: ``repeats``
    rounds first (at least END_ROUNDS, at most ``cap``: --max-repeats), then a look after each round
    (:func:`more_rounds`) until ``judge``'s ``ends_paired`` (:meth:`PairedMetricJudge.ends_paired`) is not unknown, or
    ``cap`` rounds are measured (its last look, which decides). ``rounds`` measures (the I/O: a lab's
    processes, or a simulation's); every look spends its share of ENDS_ALPHA, so the rate holds only
    for this schedule. Whether the outcome suits the hunt (the later end worse) is the caller's:
    ``check_ends_paired``."""
    blocks: list[Mapping[S, float | None]] = []
    want = max(END_ROUNDS, min(repeats, cap))
    while True:
        blocks += rounds(want - len(blocks), list(blocks))
        p = Paired.of(blocks, [good, bad])
        final = len(blocks) >= cap
        if p.rounds:
            sigma, dof = judge.noise([p.noise_groups()], p.log, p.level[0])
            outcome, words = judge.ends_paired(p, good, bad, sigma, dof, ends_delta(p, sigma, min_change, cap), final)
            if outcome is not None or final:
                return EndsCompared(outcome, words, p, sigma, blocks)
        elif final:
            return EndsCompared(None, f"no round of {len(blocks)} ran both ends", p, float("nan"), blocks)
        want = len(blocks) + max(1, more_rounds(len(blocks), cap))


def _pct(x: float) -> str:
    return f"{x * 100:+.1f} %"


class PairedMetricJudge(MetricJudge):
    """The metric judge on paired evidence (see the module's text)."""

    name = "paired"
    mode = "metric"
    answer_mode = "metric"
    steps = True
    #: the search measures its verdicts in rounds of the states compared
    paired = True

    def __init__(self, opts: JudgeOptions = DEFAULT_OPTIONS):
        super().__init__(opts)

    def identity(self) -> dict:
        """Paired verdicts are not the unpaired ones: a bisection of either rule is stored apart."""
        return {"verdicts": "paired"}

    # -- noise ------------------------------------------------------------------------------------
    @staticmethod
    def noise(groups: Sequence[tuple[list[list[float]], int]], log: bool, level: float) -> tuple[float, int]:
        """One process's noise on the paired scale (ratios on a log scale, else the metric's units),
        pooled over the window's rounds so far, floored; a prior when no round repeats yet."""
        sigma, dof = pooled_noise(groups)
        scale = 1.0 if log else max(abs(level), 1e-12)
        floor = NOISE_FLOOR_RELATIVE * scale
        return max(sigma if sigma is not None else PRIOR_RELATIVE_NOISE * scale, floor), dof

    # -- the verdicts -----------------------------------------------------------------------------
    def level_paired(self, p: Paired, a: Hashable, i: Hashable, b: Hashable, sigma: float, dof: int, delta: float,
                     final: bool = False) -> Judgement:
        """LOW, HIGH, NEITHER, UNSURE (more rounds) or SKIP (``final``: none left) for probe ``i``
        between ``a`` and ``b``, all three in the rounds ``p``."""
        j = MetricJudge.level(p.of_state(i), p.of_state(a), p.of_state(b), sigma, dof, delta, final,
                              neither_bound=NEITHER_BOUND, hl=HL)
        da, db = p.difference(a, i), p.difference(b, i)
        where = (f"paired over {plural(p.rounds, 'round')}: {_pct(da) if p.log else f'{da:+.4g}'} from the "
                 f"earlier end, {_pct(db) if p.log else f'{db:+.4g}'} from the later")
        words = {Level.LOW: "at the earlier end's level", Level.HIGH: "at the later end's level",
                 Level.NEITHER: "far from both ends: a step on each side",
                 Level.UNSURE: "undecided", Level.SKIP: "unsure"}[j.level]
        if j.level in (Level.LOW, Level.HIGH, Level.NEITHER):
            words += f" (odds {odds(j.margin)})" if j.level is not Level.NEITHER or j.margin > 0 else ""
        elif j.level is Level.SKIP:
            words += f" after {plural(p.rounds, 'round')}"
        if "leans to" in j.reason:
            words = "leans to the " + ("earlier" if j.level is Level.LOW else "later") + f" end (odds {odds(j.margin)})"
        return Judgement(j.level, f"{words}, {where}", j.margin)

    def ends_paired(self, p: Paired, x: Hashable, y: Hashable, sigma: float, dof: int, delta: float,
                    final: bool = False) -> tuple[bool | None, str]:
        """Whether a window's ends differ, in rounds of the two: apart by :func:`ends_bound`
        standard errors of their paired difference (this look's share of a false rate of
        ENDS_ALPHA over every look up to --max-repeats rounds), the same when Wald's test says no
        difference of ``delta`` (:meth:`differ_paired`, at its own bound at every look), else unknown
        — at the last look (``final``) too, where a difference neither shown nor ruled out stays unknown;
        and the difference in words (``+7.8 %, paired over 6 rounds, 12.5 standard errors (9.5
        needed at this look for a 1 % false rate)``).

        Where processes printed several samples, each is reduced by the statistic that separates
        the ends best (hourly.analysis.process_stat.choose_statistic; ``sigma`` and ``dof`` are then
        those of its rounds), and having picked the best of several on these same rounds, the
        look's share of the rate is shared again among them (:func:`ends_bound`'s ``candidates``)."""
        from hourly.analysis.samples import hodges_lehmann, location, se2
        choice = choose_statistic(p.processes(x), p.processes(y))
        by = ""
        if choice.candidates > 1:
            q = p.reduced(choice.statistic)
            if q is not p:
                sigma, dof = self.noise([q.noise_groups()], q.log, q.level[0])
            p = q
            by = f", each process by its {WORDS[choice.statistic]}: {choice.why}"
        bound = ends_bound(choice.candidates, dof, self.max_repeats, p.rounds)
        # "the same" needs Wald's own bound at every look, the last too: there "the likelier of the
        # two" said "do not differ" of ends -7 % apart at 1.1 standard errors (noise hid it)
        d, _ = self.differ_paired(p, x, y, sigma, dof, delta)
        cx, cy = p.of_state(x), p.of_state(y)
        loc = hodges_lehmann if HL else location
        sep = abs(loc(cy) - loc(cx)) / se2(sigma, cx, cy, HL)
        diff = p.difference(x, y)
        said = f"{_pct(diff) if p.log else f'{diff:+.4g}'}, paired over {plural(p.rounds, 'round')}, " \
               f"{sep:.1f} standard errors ({bound:.1f} needed at this look for a {ENDS_ALPHA * 100:g} % false rate){by}"
        if sep >= bound:
            return True, said
        if d is False:  # Wald's test: no difference of delta — said, so "do not differ" has its size
            # as a share of the level either way: the same words for the same values at any scale
            share = math.expm1(delta) if p.log else delta / abs(p.level[0]) if p.level[0] else None
            return False, f"{said}; {ruled_out(share, delta)}"
        return None, said  # at the last look too: a difference not shown is not "the same"

    def differ_paired(self, p: Paired, x: Hashable, y: Hashable, sigma: float, dof: int, delta: float,
                      final: bool = False) -> tuple[bool | None, str]:
        """Whether ``y`` differs from ``x`` by at least ``delta`` in the rounds ``p`` (the three
        outcomes: True, False, None while unknown; ``final``: none left, a difference still needs
        20:1), and in words."""
        d = MetricJudge.differ(p.of_state(x), p.of_state(y), sigma, dof, delta, final, hl=HL)
        diff = p.difference(x, y)
        said = _pct(diff) if p.log else f"{diff:+.4g}"
        word = {True: "differ", False: "do not differ", None: "unknown whether they differ"}[d]
        return d, f"{word}: {said}, paired over {plural(p.rounds, 'round')}"

    @staticmethod
    def check_ends_paired(p: Paired, outcome: bool | None, words: str, higher_is_better: bool, find_fix: bool,
                          where: str) -> None:
        """The ends a window search rests on, compared in rounds: they differ, and the later one is
        worse (better, finding a fix)."""
        if outcome is None:  # the last look: the rounds neither showed a difference nor ruled one out
            raise UserError(f"the ends of {where} were not shown to differ, nor to be alike ({words}): "
                            "the processes' spread hides what lies between them",
                            "pass a larger --max-repeats, or measure where the processes agree better "
                            "(a quieter machine, more samples a process: --samples)")
        if outcome is not True:
            raise UserError(f"the ends of {where} do not differ ({words})",
                            "pass ends on either side of the regression, or a larger --max-repeats")
        good, bad = p.states[0], p.states[1]
        diff = p.difference(good, bad)
        worse = diff < 0 if higher_is_better else diff > 0
        if not worse and find_fix:
            raise UserError(f"the later end is not better than the earlier end ({words})",
                            "pass --bad before the improvement and --good after it, or set "
                            "--higher-is-better/--lower-is-better")
        if not worse:
            raise UserError(f"the bad end is not worse than the good end ({words})",
                            "it got better: to find the commit that did it, pass --find-fix with --bad at this --good "
                            "and --good at this --bad; or set --higher-is-better/--lower-is-better")

    @staticmethod
    def in_rounds(side: Verdict, role: str, outcome: bool | None, rounds: int, words: str) -> Call:
        """The row of a state compared in rounds with its partner: a window's end (``role`` "end",
        compared with the other end over ``rounds`` rounds: ``side`` by definition), or one of a
        step's two states confirmed (``side`` when the two differ, ``outcome`` True; else unsure)."""
        if role == "end":  # "the other end": finding a fix, the good end's partner is the user's --good
            return Call(side, f"{plural(rounds, 'round')} in alternation with the other end: they differ by {words}")
        other = "first bad" if role == "confirm_good" else "last good"
        return Call(side if outcome is True else Verdict.UNSURE, f"in alternation with the {other} state: {words}")

    @staticmethod
    def drift_words(change: float, log: bool, since: str) -> str:
        """The note a drift makes: 'the machine drifted by +6.1 % since …'."""
        what = _pct(change) if log else f"{change:+.4g}"
        return f"the machine drifted by {what} {since} (the same states read that much differently now; " \
               "paired verdicts cancel it)"
