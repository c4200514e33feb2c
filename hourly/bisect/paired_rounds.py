"""The rounds of paired verdicts (hourly.analysis.judges.paired), measured through a bisection's lab:
one process per state per round, the states of a round in turn and the next round reversed, when
the lab can run its states alternately (each kept in an environment of its own:
hourly.measure.measurer.StateEnvs); else one state after another, which the answer says."""

from __future__ import annotations

import math
import statistics
from typing import TYPE_CHECKING, Mapping, Sequence

from hourly.analysis.judges import Evidence
from hourly.analysis.judges.metric import INDIFFERENCE, neither_rounds
from hourly.analysis.paired import round_order
from hourly.analysis.process_stat import WORDS, ProcessValue
from hourly.analysis.samples import location
from hourly.bisect.events import ProcessDone
from hourly.bisect.records import Taken
from hourly.model import Pair
from hourly.text.plurals import plural

if TYPE_CHECKING:
    from hourly.bisect.lab import Lab


#: what an answer says of verdicts measured one state after another (an in-place build, an executor
#: that cannot interleave): the machine's drift between them is not cancelled
APART = "measured one after another: drift not cancelled"


def process_value(ev: Evidence) -> float | None:
    """What one process gave a round: its value (a process's samples summarised, by their median
    until the verdicts choose a statistic on the window's ends: the unit of noise is the process,
    not the sample), its samples kept for that choice; None when it measured nothing."""
    if not ev.ok or not ev.samples:
        return None
    value = ev.samples[0] if len(ev.samples) == 1 else location(ev.samples)
    counted = [r for r in ev.runs if not r.warmup and r.status == "ok"]
    if len(ev.samples) == 1 and len(counted) == 1 and len(counted[0].samples) > 1:
        return ProcessValue(value, counted[0].samples)
    return value


class Progress:
    """What the handler hears after each process of a verdict's rounds (:class:`ProcessDone`): the
    change of the state judged (``focus``) from the first state of the rounds, read off every round so
    far (``earlier`` ones and those measured now), the benchmark's seconds so far, and about how long
    until the change is told from zero or from the smallest step searched for at three standard
    errors (a guess for the person waiting; the judge decides)."""

    #: standard errors at which the guess of "settled" is made
    Z = 3.0
    #: a verdict guessed to need this many more seconds of the machine, where --min-change is what
    #: sets its length, is said once a bisection with what would shorten it
    SLOW_S = 600.0
    #: standard errors from the end, and past halfway to a level of its own, a probe must read for
    #: the long-verdict note to say so (:meth:`between`): not a reading a hair past halfway
    Z_BETWEEN = 2.0
    PAST_HALFWAY = 0.5

    def __init__(self, lab: "Lab", what: str, pairs: list[Pair], focus: Pair,
                 earlier: Sequence[Mapping[Pair, float | None]], statistic: str | None = None):
        self.lab, self.what, self.focus, self.statistic = lab, what, focus, statistic
        self.pairs = pairs
        self.ref = pairs[0] if pairs[0] != focus else pairs[-1]
        self.earlier = list(earlier)
        self.chip0, self.done = self.seconds(), 0

    def seconds(self) -> float:
        return float(getattr(self.lab, "seconds", 0.0))

    def tell(self, pair: Pair, now: list[dict[Pair, float | None]], round_no: int, per_round: int) -> None:
        """A process of ``pair`` finished in round ``round_no`` (of this call, from 1); ``now``: the
        rounds measured in this call so far, the one under way last."""
        self.done += 1
        rounds = [{p: self.by(v) for p, v in b.items()} for b in self.earlier + now]
        logs = self.log_differences(rounds, self.ref)
        change = error = settle = midway = None
        near = ""
        if len(logs) >= 2:
            mean, sd = statistics.fmean(logs), statistics.stdev(logs)
            change, error = math.expm1(mean), sd / math.sqrt(len(logs))
            min_change = getattr(self.lab, "min_change", 0.0) or 0.0
            x, sdx = abs(mean), sd  # a probe: from the end it reads nearer, which its verdict turns on
            nearer = self.nearer(rounds)
            if nearer is not None:
                x, sdx, near = nearer
            target = max(x, math.log1p(min_change)) / self.Z
            spent = self.seconds() - self.chip0
            if target > 0 and spent > 0:
                need = math.ceil((sdx / target) ** 2)
                between = self.between(nearer, len(logs), min_change)
                if between is not None:  # nearer a level of its own than the end: Wald's bound
                    delta = between[2]
                    need, midway = min(math.ceil(neither_rounds(x, sdx, delta)), 10 ** 6), math.expm1(delta)
                left = max(0, min(need, getattr(self.lab, "max_repeats", need)) - len(logs))
                settle = left * per_round * spent / self.done
                # said from the third round: the spread of two rounds is too rough to say it by
                if settle >= self.SLOW_S and len(logs) >= 3 and (
                        between[4] if between is not None else x < math.log1p(min_change)):
                    self.slow(sdx, need, settle, between)
        self.lab.handler.process(ProcessDone(self.what, pair, len(self.earlier) + round_no, change, error,
                                             self.seconds(), settle,
                                             by=WORDS[self.statistic] if self.statistic else "",
                                             midway=midway, near=near))

    def log_differences(self, rounds: list[dict[Pair, float | None]], other: Pair) -> list[float]:
        """Each round's log ratio of the state judged to ``other``, where both measured."""
        return [math.log(b[self.focus]) - math.log(b[other]) for b in rounds  # type: ignore[arg-type]
                if (b.get(self.focus) or 0) > 0 and (b.get(other) or 0) > 0]

    def nearer(self, rounds: list[dict[Pair, float | None]]) -> tuple[float, float, str] | None:
        """A probe (the middle of three states): how far it reads from the end it reads nearer (on a
        log scale), a round's spread of that, and which end ("earlier", "later"); None for any
        other verdict, or before two rounds ran it with both ends."""
        if len(self.pairs) != 3 or self.focus != self.pairs[1]:
            return None
        reads = []
        for end, word in ((self.pairs[0], "earlier"), (self.pairs[2], "later")):
            d = self.log_differences(rounds, end)
            if len(d) < 2:
                return None
            reads.append((abs(statistics.fmean(d)), statistics.stdev(d), word))
        return min(reads)

    def between(self, nearer: tuple[float, float, str] | None, rounds: int,
                min_change: float) -> tuple[float, float, float, str, bool] | None:
        """A probe that reads nearer "a level of its own" than the end it is nearer — past halfway
        to three quarters of --min-change from it, where the judge puts that level
        (hourly.analysis.judges.metric.INDIFFERENCE), from its third round (the spread of two is
        too rough to say where it reads): it is taken at the end's level only once its reading
        moves back (a look at a time: the rounds do not say when), and judged a level of its own
        only at Wald's bound, which the guess is. Its distance from that end, a round's spread of
        it, the level's distance, which end, and whether it reads so clearly — past halfway by
        PAST_HALFWAY standard errors and Z_BETWEEN of them from the end (a reading at halfway goes
        either way next round; the long-verdict note waits for this); None for any other verdict
        or reading."""
        if nearer is None or min_change <= 0 or rounds < 3:
            return None
        x, sdx, word = nearer
        delta = INDIFFERENCE * math.log1p(min_change)
        if x <= delta / 2:
            return None
        se = sdx / math.sqrt(rounds)
        return x, sdx, delta, word, x - delta / 2 >= self.PAST_HALFWAY * se and x >= self.Z_BETWEEN * se

    def slow(self, sd: float, need: int, settle: float,
             between: tuple[float, float, float, str, bool] | None = None) -> None:
        """Said once a bisection (on its lab): a verdict whose state reads within --min-change of
        the other (a probe at an end's level) is long because telling a step of --min-change from
        none at this noise takes that many rounds; a larger one would settle sooner. ``between``
        (:meth:`between`): a probe that reads nearer a level of its own than the end's, said so."""
        if getattr(self.lab, "told_slow", False):
            return
        setattr(self.lab, "told_slow", True)  # noqa: B010 - a lab's own flag, not in its Protocol
        cap = getattr(self.lab, "max_repeats", need)
        rounds = f"about {need} rounds" if need <= cap else f"more than --max-repeats ({cap}) rounds"
        if between is None:
            head = (f"at this noise (±{sd * 100:.1f} % a round) telling a step of {self.lab.min_change * 100:g} % "
                    f"(--min-change) from none takes {rounds}")
        else:
            x, sdx, delta, near, _ = between
            head = (f"it reads {math.expm1(x) * 100:.1f} % from the {near} end, nearer a step of its own "
                    f"({math.expm1(delta) * 100:.1f} %, three quarters of --min-change {self.lab.min_change * 100:g} %) "
                    f"than that end's level: at this noise (±{sdx * 100:.1f} % a round) it is taken at the end's "
                    f"level only when its reading moves back, and told a level of its own after {rounds}")
        self.lab.handler.note(
            f"{self.what}: {head}, ~{settle / 60:.0f} min of the benchmark more; "
            "a larger --min-change (the smallest step worth pinning) settles each verdict sooner, and steps "
            "below it go unpinned")

    def by(self, v: float | None) -> float | None:
        """A process's value by the statistic in force (its median where none was chosen)."""
        return v.by(self.statistic) if self.statistic and isinstance(v, ProcessValue) else v


def measure_rounds(lab: "Lab", pairs: list[Pair], count: int, start: int, stop_on: Pair | None = None,
                   what: str = "", earlier: Sequence[Mapping[Pair, float | None]] = (), statistic: str | None = None,
                   bid: int | None = None) -> tuple[list[dict[Pair, float | None]], list[tuple[Pair, Taken]]]:
    """``count`` rounds of ``pairs``, one process each, measured through the lab: in alternation
    (round ``start + r`` in :func:`~hourly.analysis.paired.round_order`) when the lab can run its
    states alternately without installing them again (``lab.interleaves``: each state its own
    environment), else one state after another (its ``count`` runs at once; ``lab.apart`` says
    why: drift between them is not cancelled). ``stop_on``: a state whose failure ends the rounds
    (a probe that crashes is not run again, nor the others with it). Returns each round's values and
    every measurement taken (for the rows). ``what`` names the verdict for the handler, which hears of
    each process (:class:`Progress`; ``earlier``: the verdict's rounds measured before; ``statistic``:
    the per-process statistic chosen on the window's ends that the change is read by, None: none).

    ``bid``: the bisection the rounds are of. Each round every state of which measured is kept as it
    ends (``lab.keep_round``), and the rounds a call before this one kept of the same states, that
    no verdict of this call took yet, come first — all of them, more than ``count`` where there are
    more: the verdict reads every round measured for it — measured no more (``lab.take_rounds``): a
    bisection stopped in the middle of a verdict (Ctrl-C, a job's time limit) goes on from its
    rounds, each of which held the machine for seconds, rather than measuring them again."""
    kept = lab.kept_rounds(bid, pairs) if bid is not None else 0
    if kept and not earlier:  # said once a verdict: as it begins
        lab.handler.note(f"{what or 'rounds'}: {plural(kept, 'round')} of {', '.join(p.short() for p in pairs)} "
                         "measured before the stop taken up again")
    # every kept round at once, however few were asked for: a verdict that looked at the first
    # ``count`` of them could decide on those while the rest, already measured, said otherwise
    blocks: list[dict[Pair, float | None]] = lab.take_rounds(bid, pairs, max(count, kept)) if kept and bid is not None else []
    taken: list[tuple[Pair, Taken]] = []
    count = max(0, count - len(blocks))

    def keep(block: dict[Pair, float | None]) -> None:
        if bid is not None and all(block.get(p) is not None for p in pairs):
            lab.keep_round(bid, pairs, block)

    progress = Progress(lab, what or "rounds", pairs, stop_on or pairs[-1], earlier, statistic)
    if lab.interleaves:
        for r in range(len(blocks), len(blocks) + count):
            block: dict[Pair, float | None] = {}
            for pair in round_order(pairs, start + r):
                t = lab.measure_many([(pair, 1)])[0]
                taken.append((pair, t))
                block[pair] = process_value(t.evidence)
                progress.tell(pair, [*blocks, block], r + 1, len(pairs))
                if pair == stop_on and not t.evidence.ok:
                    blocks.append(block)
                    return blocks, taken
            blocks.append(block)
            keep(block)
        return blocks, taken
    lab.apart = lab.apart or "the states cannot be run alternately here"
    got: dict[Pair, list[float | None]] = {}
    for pair in sorted(pairs, key=lambda p: p != stop_on):  # the state that may stop them first
        # one process per round still (its samples summarised, as when interleaved: a process that
        # prints many samples is one value, never many), the state's processes one after another
        values = got.setdefault(pair, [])
        failed = False
        for _ in range(count):
            t = lab.measure_many([(pair, 1)])[0]
            taken.append((pair, t))
            values.append(process_value(t.evidence))
            progress.tell(pair, [], len(values), len(pairs))  # no change read until the other state runs
            failed = not t.evidence.ok
            if failed:
                break
        if pair == stop_on and failed:
            break
    for r in range(count):
        blocks.append({p: got[p][r] if r < len(got.get(p, ())) else None for p in pairs})
        keep(blocks[-1])
    return blocks, taken
