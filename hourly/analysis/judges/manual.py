"""``hourly bisect --manual``: a state is what the person says it is (``git bisect good|bad``,
mozregression's "good or bad?"). The person's word arrives as evidence (hourly.bisect.manual asks
for it); this judge reads it: ``good`` and ``bad`` place the state, ``skip`` leaves it out as
untestable, ``unsure`` leaves it out as undecided (its row keeps the word). With a benchmark the
window's own judge offers its verdict first, and Enter takes it. The ends are taken as given and
nothing is measured again: the person's verdicts are the evidence (the answer says they were theirs).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from hourly.analysis.judges.base import DEFAULT_OPTIONS, BaseJudge, Call, Evidence, JudgeOptions, Run, Verdict
from hourly.analysis.judges.chain import ChainTraits, RateTest
from hourly.analysis.judges.exit import ExitJudge
from hourly.analysis.judges.metric import MetricJudge
from hourly.analysis.judges.printed import PrintedJudge
from hourly.errors import UserError

#: what a person may answer, and the words that stand for them
VERDICT_WORDS = {"good": Verdict.GOOD, "g": Verdict.GOOD, "bad": Verdict.BAD, "b": Verdict.BAD,
                 "skip": Verdict.SKIP, "s": Verdict.SKIP, "unsure": Verdict.UNSURE, "u": Verdict.UNSURE}
#: the start of every manual verdict's reason: how answers, reports and --log tell them apart
MANUAL = "manual verdict"


class ManualJudge(BaseJudge):
    """The person's word as the verdict. ``window_mode``: the mode the window came from (metric: a
    regression; exit: a crash; printed); ``bench``: a benchmark runs first and its verdict is offered."""

    name = "manual"
    #: stored as the verdict-by-verdict search of printed mode (the key of bisections stored before)
    mode = "printed"
    answer_mode = "manual"
    steps = False
    mixed_states = False  # a person judges the states of the timeline
    confirms = False      # nothing is measured again
    #: git bisect's plain search: the earlier middle on ties, no extra cost near a failed build
    later_on_ties = False
    near_breaks = False

    def __init__(self, opts: JudgeOptions = DEFAULT_OPTIONS):
        self.window_mode, self.bench = opts.window_mode, opts.bench

    @property
    def measures_ends(self) -> bool:
        """The ends are measured (not judged): a metric window's benchmark verdicts are offered against them."""
        return self.bench and self.window_mode == MetricJudge.mode

    @property
    def traits(self) -> ChainTraits:
        return ChainTraits(self.mode, self.answer_mode, False, self.mixed_states, self.near_breaks,
                           self.later_on_ties, self.confirms, person=True, measures_ends=self.measures_ends,
                           window_mode=self.window_mode, bench=self.bench)

    def by_runs(self, runs: list[Run], role: str) -> Call:
        """Runs alone never place a state of a person's bisection: without their word it is left out."""
        return Call(Verdict.SKIP, "no word from the person: a manual bisection's runs decide nothing")

    def check_end(self, pair_text: str, got: Verdict, want: Verdict, find_fix: bool) -> UserError | None:
        """The ends are taken as given: each is what the window says it is."""
        return None

    def rate(self, seen: Sequence[int | None] | None = None) -> RateTest | None:
        """A person's word, never a failure rate."""
        return None

    def identity(self) -> dict:
        return {"manual": True, "window_mode": self.window_mode, "bench": self.bench}

    def call(self, ev: Evidence) -> Call:
        if ev.word is None:  # the state could not be made (its build failed) or its benchmark ran nothing
            return Call(Verdict.SKIP, ev.detail or ev.status)
        said = f"{MANUAL} ({ev.word.how})"
        if ev.word.proposal is not None:
            said += f"; the benchmark said {ev.word.proposal.value}"
        return Call(ev.word.verdict, said)

    def steer(self, v: Verdict) -> Verdict:
        """Unsure leaves a state out of the search as skip does (its row keeps the word)."""
        return Verdict.SKIP if v is Verdict.UNSURE else v

    def confirmed(self, good: Verdict, bad: Verdict) -> bool:
        return True

    @staticmethod
    def parse(text: str) -> Verdict | None:
        return VERDICT_WORDS.get(text.strip().lower())

    def reply(self, line: str, proposal: Verdict | None) -> tuple[Verdict, str] | None:
        """A line typed at the prompt as a verdict and how it was given (None: no verdict word)."""
        if not line.strip() and proposal is not None:
            return proposal, "the benchmark's verdict, confirmed at the prompt"
        v = self.parse(line)
        if v is None:
            return None
        if proposal is not None and v is not proposal:
            return v, f"typed at the prompt, overriding the benchmark's {proposal.value}"
        return v, "typed at the prompt"

    def propose(self, ev: Evidence, good: Sequence[float], bad: Sequence[float]) -> tuple[Verdict | None, str | None]:
        """The benchmark's verdict on a state, offered to the person, by the window's own mode; for a
        metric the reason (None: no verdict offered, and why in the reason)."""
        if self.window_mode == ExitJudge.mode:
            return ExitJudge.exit_verdict(ev.counted), None
        if self.window_mode == PrintedJudge.mode:
            return PrintedJudge.printed_verdict([r.status for r in ev.runs if not r.warmup]), None
        if not ev.samples or not good or not bad:
            return None, ("the state printed no metric" if not ev.samples else
                          "an end has no stored measurement to compare with")
        c = MetricJudge.classify(list(ev.samples), good, bad)
        return (c.verdict if c.verdict is not Verdict.UNSURE else None), c.reason

    @staticmethod
    def given(row: Mapping[str, Any]) -> bool:
        """A probe row whose verdict a person gave."""
        return given(row)


def given(row: Mapping[str, Any]) -> bool:
    """A probe row whose verdict a person gave."""
    return str(row.get("reason") or "").startswith(MANUAL)
