"""``--mode printed``: a state is good while its runs print the metric, bad once one exits 0 without it
(``MLUPS: nan``, or no line): git bisect run's rule over whether the metric was printed."""

from __future__ import annotations

from typing import Sequence

from hourly.analysis.judges.base import Call, Run, Verdict
from hourly.analysis.judges.exit import _check_end
from hourly.analysis.judges.runs import RunsJudge
from hourly.errors import UserError
from hourly.model import Status


class PrintedJudge(RunsJudge):
    name = "printed"
    mode = answer_mode = "printed"

    def runs(self, runs: list[Run]) -> Call:
        # a number hourly will not guess at (``MLUPS: 1,000``) is no value, but the metric was printed
        statuses = [Status.OK.value if r.unread and r.status == Status.NO_METRIC.value else r.status for r in runs]
        return Call(self.turned(self.printed_verdict(statuses)), f"runs {statuses}")

    @staticmethod
    def printed_verdict(statuses: Sequence[str | None]) -> Verdict:
        """A run that exited 0 without the metric is bad, every run printing it is good; crashes and
        time-outs say nothing about the metric (skip: they are crash windows of their own), and so
        does no run at all."""
        if not statuses:
            return Verdict.SKIP
        if any(st == Status.NO_METRIC.value for st in statuses):
            return Verdict.BAD
        if any(st != Status.OK.value for st in statuses):
            return Verdict.SKIP
        return Verdict.GOOD

    def check_end(self, pair_text: str, got: Verdict, want: Verdict, find_fix: bool) -> UserError | None:
        return _check_end(pair_text, got, want, find_fix, "by whether it printed the metric")
