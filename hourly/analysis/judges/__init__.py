"""The judges: how a state of a bisection is called good, bad, skip (untestable) or unsure.

One judge per mode, each in its own module and registered here by name; the searches ask the
window's judge and never decide a verdict themselves (docs/architecture.md, "Judges": a new judge
is one module and one line of :data:`JUDGES`).
"""

from __future__ import annotations

from hourly.analysis.judges.base import DEFAULT_OPTIONS, Call, Evidence, Judge, JudgeOptions, Run, Verdict, Word
from hourly.analysis.judges.chain import ChainJudge, ChainTraits, RateTest
from hourly.analysis.judges.exit import ExitJudge, FlakyJudge
from hourly.analysis.judges.manual import ManualJudge
from hourly.analysis.judges.metric import Level, MetricJudge
from hourly.analysis.judges.paired import PairedMetricJudge
from hourly.analysis.judges.printed import PrintedJudge
from hourly.analysis.judges.runs import RunsJudge
from hourly.analysis.judges.window import PairedJudge, WindowJudge

#: every judge, by the name a bisection asks for it with (hourly.bisect.search.judge_for)
JUDGES: dict[str, type] = {
    "metric": MetricJudge,
    "paired": PairedMetricJudge,
    "exit": ExitJudge,
    "flaky": FlakyJudge,
    "printed": PrintedJudge,
    "manual": ManualJudge,
}



def judge(name: str, opts: JudgeOptions = DEFAULT_OPTIONS) -> Judge:
    """The judge registered as ``name``, told ``opts``."""
    return JUDGES[name](opts)


# -- the one place a judge is taken as the judge of a chain or of a window search ----------------------

def chain_judge(j: Judge) -> ChainJudge:
    """``j`` as the judge of a chain of states, one verdict at a time (its search is not the window search)."""
    assert not j.steps and isinstance(j, (RunsJudge, ManualJudge)), j.name
    return j


def window_judge(j: Judge) -> MetricJudge:
    """``j`` as the judge of the window search of every step (metric mode): the search is handed it
    whole, its drives see it as a :class:`~hourly.analysis.judges.window.WindowJudge`."""
    assert j.steps and isinstance(j, MetricJudge), j.name
    return j


def paired_judge(j: Judge) -> PairedMetricJudge | None:
    """``j`` as the judge of paired verdicts (rounds of the states it compares); None when its verdicts
    are not paired."""
    return j if isinstance(j, PairedMetricJudge) else None


__all__ = ["JUDGES", "Call", "ChainJudge", "ChainTraits", "Evidence", "ExitJudge", "FlakyJudge", "Judge", "Level",
           "ManualJudge", "MetricJudge", "JudgeOptions", "PairedJudge", "PairedMetricJudge", "PrintedJudge", "RateTest",
           "Run", "Verdict", "WindowJudge", "Word", "chain_judge", "judge", "paired_judge", "window_judge"]
