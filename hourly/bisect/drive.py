"""One window's bisection, from its ends to its answer, driven through a :class:`Lab`.

The drive decides nothing about a state itself: the window's judge (hourly.analysis.judges) calls
every verdict, and the lab measures (``measure_many(requests) -> evidence``), remembers (stored
measurements, known build failures, costs) and records (every verdict a row, as it is reached).
The :class:`~hourly.bisect.search.Bisector` is the lab of a real bisection (the store, the
executor, the handler); a test hands a table of evidence instead (tests/test_drive.py).

The window's judge chooses the search: the window search of metric mode (every step of the
window, :mod:`hourly.bisect.metric_drive`), or one verdict at a time over the chain of states
(exit status, printed metric, failure rate, a person's word: :mod:`hourly.bisect.chain_drive`).
Then the mixed pairs of a step that moves both repositories say which one to blame, and the answer
is built (:func:`hourly.bisect.answer.build_answer`).
"""

from __future__ import annotations

from typing import Callable

from hourly.analysis.bisection import next_blame
from hourly.analysis.judges import Verdict, chain_judge, paired_judge, window_judge
from hourly.answers import Answer, Rest
from hourly.bisect.answer import build_answer, error_answer, iso
from hourly.bisect.chain_drive import ChainDrive
from hourly.bisect.lab import Lab, WindowState, Witness
from hourly.bisect.metric_drive import MetricDrive
from hourly.bisect.records import Probe, Taken, Window
from hourly.errors import UserError
from hourly.model import Blame, Pair

__all__ = ["Lab", "Taken", "WindowDrive", "Witness", "every_step"]


class WindowDrive(WindowState):
    """One window of ``states`` (its bisection ``bid``, its stored rows ``rows``): ends, search,
    confirmation, blame, answer."""

    def run(self) -> Answer:
        lab, states = self.lab, self.states
        rounds0, jobs0 = lab.rounds, lab.jobs
        spent = getattr(lab, "spent", None)  # the chip-seconds "so far": the window's, every call of it
        if spent is not None and hasattr(lab, "seconds"):
            lab.seconds = spent(self.bid, [st.pair for st in states]).seconds
        seconds0 = float(getattr(lab, "seconds", 0.0))
        lab.handler.started(self.w, len(states), len(self.rows))
        known: dict[Pair, Verdict] | None = None
        evaluate: Callable[[Pair, str], Probe]
        choice = None  # the per-process statistic in force (a paired search's: chosen on the ends)
        if lab.judge.steps:
            metric = MetricDrive(self, window_judge(lab.judge), paired_judge(lab.judge))
            b, more_after, confirmed = metric.run()
            if metric.session.paired:
                choice = metric.session.search.paired_verdicts.choice
            evaluate, extras = metric.evaluate, None
        else:
            chain = ChainDrive(self, chain_judge(lab.judge))
            b, known, confirmed = chain.run()
            more_after, evaluate, extras = False, chain.evaluate, chain.extras
        last_good, first_bad = states[b.lo].pair, states[b.hi].pair
        moved = lab.moved(last_good, first_bad)
        blame = None
        if b.adjacent and moved["xla"] and moved["jax"]:
            blame = self.blame(last_good, first_bad, known, evaluate)
        a = build_answer(lab, self, b, moved, blame, confirmed)
        a.continues_at = states[b.hi].time if more_after and b.hi < len(states) - 1 else None
        if extras is not None:
            extras(a, last_good, first_bad)
        # rounds of measure_many (one state each without workers) and the requests they carried
        a.rounds, a.jobs = lab.rounds - rounds0, lab.jobs - jobs0
        figures = getattr(lab, "sampling_figures", None)  # what the verdicts cost, where the lab knows
        if figures is not None and lab.judge.steps:
            a.sampling = figures(self.bid, [st.pair for st in states], float(getattr(lab, "seconds", 0.0)) - seconds0,
                                 choice)
        return a

    def blame(self, good: Pair, bad: Pair, known: dict[Pair, Verdict] | None,
              evaluate: Callable[[Pair, str], Probe]) -> Blame:
        """Old xla + new jax, then new xla + old jax: which change alone brings the regression
        (:func:`~hourly.analysis.bisection.next_blame`). A mixed pair the search measured already
        (``known``: its verdicts) is not measured again: its verdict is recorded as the blame's; old
        xla + new jax measured by the search is a state of its chain, and good it settles the blame
        (``on_chain``: XLA_ON_NEW_JAX, the step from it moving xla alone)."""
        seen: dict[Pair, Verdict] = {}
        on_chain = known is not None and Pair(good.xla, bad.jax) in known
        while True:
            nxt = next_blame(good, bad, seen, on_chain)
            if isinstance(nxt, Blame):
                return nxt
            r = self.stored.get(("blame", nxt))
            if r:
                seen[nxt] = Verdict(r["verdict"])
            elif known and known.get(nxt) in (Verdict.GOOD, Verdict.BAD, Verdict.SKIP):
                seen[nxt] = self.record(Probe("blame", nxt, known[nxt], "measured by the search "
                                              "(the mixed state inside the step)")).verdict
            else:
                seen[nxt] = self.record(evaluate(nxt, "blame")).verdict



def every_step(lab: Lab, w: Window, one: Callable[[Window], Answer]) -> list[Answer]:
    """Every regression in the window, each window's answer from ``one`` (the Bisector's: its stored
    answer, else a :class:`WindowDrive`'s): the search pins the earliest and says whether the rest
    of the window (from its first bad state) still holds a step; then that rest is bisected in
    turn, reusing every measurement. A window that cannot be bisected: its error answer (a window
    of the store), or the error itself (``--good``/``--bad``)."""
    answers: list[Answer] = []
    lab.going = None  # metric mode: the search, its states, and where this window starts in them
    while True:
        try:
            a = one(w)
        except UserError as e:
            if answers:  # the rest of the window: no further step named, and why (said, never dropped)
                answers[-1].rest = Rest(iso(w.good_time), iso(w.bad_time), e.message, e.fix)
                return answers
            if w.origin == "flags":
                raise
            # one window of many (from the store) that cannot be bisected: say why, go on
            lab.handler.cannot_bisect(w, e)
            return [error_answer(w, lab.judge.mode, e)]
        a.kind = a.kind or w.kind  # answers stored before kinds existed
        answers.append(a)
        nxt = a.continues_at
        if nxt is None or nxt >= w.bad_time or (not lab.judge.steps and not a.confirmed):
            return answers
        w = Window(nxt, w.bad_time, w.origin, "the rest of the window, after the step above")
