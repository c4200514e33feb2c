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

from typing import TYPE_CHECKING, Any, Callable, Protocol

from hourly.analysis.bisection import State, next_blame
from hourly.analysis.judges import Evidence, Judge, JudgeOptions, Verdict
from hourly.answers import Answer, Commit, EndSamples, Rest
from hourly.bisect.records import Probe, Taken, Where, Window
from hourly.errors import UserError
from hourly.model import Blame, Pair

if TYPE_CHECKING:
    from hourly.bisect.events import BisectHandler

__all__ = ["Lab", "Taken", "WindowDrive", "Witness", "every_step"]


class Witness(Protocol):
    """Who gives the verdicts of a manual bisection (hourly.bisect.manual.Person): the state is made
    ready and the person asked; their word comes back as evidence for the manual judge."""

    def ask(self, lab: Any, bid: int, pair: Pair, role: str, where: Where | None, ends: tuple[Pair, Pair]) -> Taken:
        """The person's word on ``pair`` (``where``: its place in the window; ``ends``: the window's)."""
        ...

    def resume_at(self, bid: int) -> Pair | None:
        """The probe a stopped bisection waited at (it resumes there), if any."""
        ...

    def recorded(self, bid: int, p: Probe) -> None:
        """A verdict was recorded: the word that gave it is taken."""
        ...


class Lab(Protocol):
    """What a bisection's search measures, remembers and records through."""

    judge: Judge
    handler: "BisectHandler"
    witness: Witness | None
    max_repeats: int
    min_change: float
    find_fix: bool
    rounds: int
    jobs: int
    #: what a judge the bisection makes on the way is told (exit mode turning flaky)
    options: JudgeOptions
    #: metric mode: the window search whose rest of the window goes on (hourly.bisect.metric_drive.Going)
    going: Any
    #: the named metric followed (--metric; its answer says it), None: the regex's one metric
    metric: str | None
    #: why paired verdicts were measured one state after another after all (an in-place build);
    #: None while every round interleaved (hourly.bisect.metric_drive.measure_rounds sets it)
    apart: str | None

    @property
    def interleaves(self) -> bool:
        """Whether states can be run alternately without installing them again (each its own
        environment, measured here one request after another): paired rounds interleave."""
        ...

    def crash_line(self, pair: Pair) -> str | None:
        """The last line a crashed run of ``pair`` printed (None: no crash in hand)."""
        ...

    @property
    def workers(self) -> int:
        """States measured per round."""
        ...

    @property
    def repeats(self) -> int:
        ...

    @property
    def higher_is_better(self) -> bool:
        ...

    @property
    def mixed_states(self) -> bool:
        """A step that moves both repositories holds the mixed state old xla + new jax (time pairing)."""
        ...

    @property
    def pairing_name(self) -> str:
        ...

    @property
    def pinned(self) -> dict | None:
        """What a one-repository hunt kept fixed, for the answer."""
        ...

    def measure_many(self, reqs: list[tuple[Pair, int]]) -> list[Taken]:
        """Each (pair, count) measured (recorded in the store as it is taken), in the order asked: one round."""
        ...

    def stored(self, pair: Pair) -> list[Evidence]:
        """Every measurement of ``pair`` in hand (the scan's, earlier bisections')."""
        ...

    def known_failed(self, pair: Pair) -> str | None:
        """Why ``pair`` cannot be built (a recorded build failure, too new for --only's jaxlib), or None."""
        ...

    def cost(self, pair: Pair) -> float:
        ...

    def record(self, bid: int, p: Probe) -> Probe:
        """A verdict as a row of the bisection, and an event."""
        ...

    def unbuilt_end(self, pair: Pair, role: str) -> UserError | None:
        ...

    def probes(self, bid: int) -> list[dict]:
        ...

    def moved(self, old: Pair, new: Pair) -> dict[str, list[str]]:
        """Per repository, the commits a step from ``old`` to ``new`` brings (the pairing's)."""
        ...

    def commit(self, repo: str, sha: str) -> Commit:
        ...

    def cherry_picks(self, pair: Pair) -> dict[str, str] | None:
        ...


class WindowDrive:
    """One window of ``states`` (its bisection ``bid``, its stored rows ``rows``): ends, search,
    confirmation, blame, answer."""

    def __init__(self, lab: Lab, w: Window, states: list[State], bid: int, rows: list[dict]):
        self.lab, self.w, self.states, self.bid, self.rows = lab, w, states, bid, rows
        #: stored verdict rows by (role, pair): what a resumed bisection does not do again
        self.stored = {(r["role"], Pair(r["xla"], r["jax"])): r for r in rows}
        #: the states the verdicts compare with: the window's ends, then the step's two states
        self.ends = (states[0].pair, states[-1].pair)
        #: per end of the window: how many samples the verdicts compared against, and from where
        self.end_samples: dict[str, EndSamples] = {}
        #: metric mode: how the verdicts were measured (paired: "interleaved", or why one state after
        #: another), the machine's drift said on the way, the crash windows the search found
        self.measured: str | None = None
        self.drifts: list[str] = []
        self.crash_windows: list[dict] = []
        self.round_no = 0  # rounds of paired verdicts measured in this window (each round's order alternates)

    def record(self, p: Probe) -> Probe:
        return self.lab.record(self.bid, p)

    def where(self, between: str = " .. ") -> str:
        """The window in words: ``<good> .. <bad>`` (UTC)."""
        from hourly.bisect.answer import iso
        return f"{iso(self.w.good_time)}{between}{iso(self.w.bad_time)}"

    def run(self) -> Answer:
        from hourly.bisect.answer import build_answer
        lab, states = self.lab, self.states
        rounds0, jobs0 = lab.rounds, lab.jobs
        seconds0, ends = float(getattr(lab, "seconds", 0.0)), self.ends
        lab.handler.started(self.w, len(states), len(self.rows))
        known: dict[Pair, Verdict] | None = None
        evaluate: Callable[[Pair, str], Probe]
        choice = None  # the per-process statistic in force (a paired search's: chosen on the ends)
        if lab.judge.steps:
            from hourly.bisect.metric_drive import MetricDrive
            metric = MetricDrive(self)
            b, more_after, confirmed = metric.run()
            if metric.session.paired:
                choice = metric.session.search.paired_verdicts.choice
            evaluate, extras = metric.evaluate, None
        else:
            from hourly.bisect.chain_drive import ChainDrive
            chain = ChainDrive(self)
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
            a.sampling = figures(ends, float(getattr(lab, "seconds", 0.0)) - seconds0, a.runs, a.run_samples,
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
    from hourly.bisect.answer import error_answer, iso
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
