"""The faces the window search of every step (metric mode) sees of its judge: :class:`WindowJudge`
(the metric judge: a probe's samples between the ends, the ends themselves, the confirmation) and
:class:`PairedJudge` (the same judge when its verdicts come from rounds of the states compared).

hourly.bisect.metric_drive and hourly.bisect.step_session call only these, and the metric mode's
fixed rules that need no judge (a row's verdict from a level, an untestable measurement's call:
``verdict_of``, ``confirming``, ``interval_end``, ``end_verdict``, ``ahead``, ``failed``, ``seen_from`` in
hourly.analysis.judges.metric). Which face a judge is taken as is decided in one place
(hourly.analysis.judges: ``window_judge``, ``paired_judge``); the window search itself
(hourly.analysis.step_search) is handed the whole metric judge.
"""

from __future__ import annotations

from typing import Hashable, Protocol, Sequence

from hourly.analysis.judges.base import Call, Evidence, Verdict
from hourly.analysis.judges.metric import Judgement
from hourly.analysis.paired import Paired

__all__ = ["PairedJudge", "WindowJudge"]


class WindowJudge(Protocol):
    """A state of a window search, by its samples' level."""

    def against(self, good: list[float], bad: list[float]) -> None:
        """The ends' samples a state is classified between (the lists: the ends grow)."""
        ...

    def call(self, ev: Evidence) -> Call:
        """A state's samples against the ends; unsure with how many more samples may decide."""
        ...

    def untestable(self, why: str) -> Call:
        """A state known untestable before it is tried (a recorded build failure)."""
        ...

    def ends(self, good: Sequence[float], bad: Sequence[float], final: bool, higher_is_better: bool,
             find_fix: bool, where: str, min_change: float | None = None) -> bool:
        """Whether the window's ends are told apart (``final``: no more samples come); told, they are
        checked: apart, the later one worse (better, finding a fix), a UserError otherwise (alike
        only where shown so against ``min_change``)."""
        ...

    def confirmed(self, good: Verdict, bad: Verdict) -> bool:
        """Whether fresh verdicts on the step's two states confirm it."""
        ...

    def edge(self, runs: bool, why: str = "crashed") -> Call:
        """A crash window's edge, probed by exit status: it runs, or it crashed (``why``)."""
        ...


class PairedJudge(Protocol):
    """The window search's judge on rounds of the states it compares (hourly.analysis.paired)."""

    def noise(self, groups: Sequence[tuple[list[list[float]], int]], log: bool, level: float) -> tuple[float, int]:
        """One process's noise on the paired scale, pooled over the window's rounds so far."""
        ...

    def level_paired(self, p: Paired, a: Hashable, i: Hashable, b: Hashable, sigma: float, dof: int, delta: float,
                     final: bool = False) -> Judgement:
        """Where state ``i`` stands between ``a`` and ``b``, all three in the rounds ``p``."""
        ...

    def ends_paired(self, p: Paired, x: Hashable, y: Hashable, sigma: float, dof: int, delta: float,
                    final: bool = False) -> tuple[bool | None, str]:
        """Whether a window's ends differ in rounds of the two (None: unknown yet), and in words."""
        ...

    def check_ends_paired(self, p: Paired, outcome: bool | None, words: str, higher_is_better: bool,
                          find_fix: bool, where: str) -> None:
        """The ends, compared in rounds: they differ, and the later one is worse (a UserError otherwise)."""
        ...

    def in_rounds(self, side: Verdict, role: str, outcome: bool | None, rounds: int, words: str) -> Call:
        """The row of a state compared in rounds with its partner (a window's end, a step's state
        confirmed)."""
        ...

    def drift_words(self, change: float, log: bool, since: str) -> str:
        """The note a drift of the machine makes."""
        ...

    def untestable(self, why: str) -> Call:
        """A state known untestable before it is tried."""
        ...
