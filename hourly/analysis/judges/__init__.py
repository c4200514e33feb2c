"""The judges: how a state of a bisection is called good, bad, skip (untestable) or unsure.

One judge per mode, each in its own module and registered here by name; the searches ask the
window's judge and never decide a verdict themselves (docs/architecture.md, "Judges": a new judge
is one module and one line of :data:`JUDGES`).
"""

from __future__ import annotations

from hourly.analysis.judges.base import DEFAULT_OPTIONS, Call, Evidence, Judge, JudgeOptions, Run, Verdict, Word
from hourly.analysis.judges.exit import ExitJudge
from hourly.analysis.judges.flaky import FlakyJudge
from hourly.analysis.judges.manual import ManualJudge
from hourly.analysis.judges.metric import Level, MetricJudge
from hourly.analysis.judges.paired import PairedMetricJudge
from hourly.analysis.judges.printed import PrintedJudge

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


__all__ = ["JUDGES", "Call", "Evidence", "ExitJudge", "FlakyJudge", "Judge", "Level", "ManualJudge",
           "MetricJudge", "JudgeOptions", "PairedMetricJudge", "PrintedJudge", "Run", "Verdict", "Word", "judge"]
