"""How many samples the next benchmark process is asked for (``HOURLY_SAMPLES``), from what the
processes so far cost and how their samples scatter: the one place that knows both (a
:class:`~hourly.measure.measurer.Measurer` holds one, so a bisection's paired rounds, its ends and
its probes all revise the same figures).

The arithmetic is hourly.analysis.process_stat's (:func:`~hourly.analysis.process_stat.samples_per_process`);
this module gathers its inputs: each run's cost (hourly.measure.sample_cost.Timing), per state and
pooled, and the within- and between-process variance of the states measured by several processes
(on a log scale, so that states of different levels pool), once the verdicts hold a statistic
chosen on the window's ends that of the values they use, each process's samples reduced by it
(:attr:`SampleSize.statistic`). ``--samples N`` fixes the count.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Iterable

from hourly.analysis.process_stat import (
    DEFAULT_SAMPLES,
    Cost,
    between_floor,
    samples_per_process,
    variance_components,
)
from hourly.measure.sample_cost import Timing

#: how far one revision may move the count (a factor): two processes' variances are a rough figure
STEP = 2.0
#: the processes measured (with two samples or more) before the count is first revised; after that
#: it is revised each time the processes measured have grown by half
FIRST_REVISION = 4


@dataclass(frozen=True)
class Figures:
    """What the count was chosen from, for the answer: the pooled cost (None: unmeasured), the
    within- and between-process variances (log scale; nan: unknown), the count and how it was set."""

    cost: Cost | None
    within: float
    between: float
    n: int
    how: str  # "fixed" (--samples), "default" (no figures yet), "chosen" (from the figures)

    def as_dict(self) -> dict:
        def num(x: float) -> float | None:
            return None if not math.isfinite(x) else float(f"{x:.4g}")
        return {"samples_per_process": self.n, "how": self.how,
                # the median of the processes' own (SampleSize.cost keeps it), not fixed less after
                "first_sample_s": None if self.cost is None or self.cost.first is None else round(self.cost.first, 3),
                "after_last_sample_s": None if self.cost is None else round(self.cost.after, 3),
                "per_sample_s": None if self.cost is None else round(self.cost.per_sample, 5),
                "within_var": num(self.within), "between_var": num(self.between)}


class SampleSize:
    """The samples per process: ``fixed`` (``--samples``), else :data:`DEFAULT_SAMPLES` until the
    costs and the two variances are measured (:data:`FIRST_REVISION` processes), then the count
    that buys the most precision per second of the machine, revised as the processes come in
    (each time they have grown by half, by at most a factor :data:`STEP` a time)."""

    def __init__(self, fixed: int | None = None):
        self.fixed = fixed
        self.timings: dict[str, list[Timing]] = {}
        self.processes: dict[str, list[list[float]]] = {}
        self.n = fixed or DEFAULT_SAMPLES
        self.how = "fixed" if fixed else "default"
        #: every count asked for, in order (what the answer says was chosen)
        self.asked: list[int] = []
        self.revised_at = 0  # the processes measured when the count was last revised
        #: the per-process statistic the verdicts hold, once chosen on the window's ends: the noise is
        #: then that of its values (a process's samples reduced by it); None until then: the samples'
        #: own variance (the more samples of the two while the statistic is not known)
        self.statistic: str | None = None

    def next(self) -> int:
        """The count the next process is asked for."""
        self.asked.append(self.n)
        return self.n

    def observe(self, state: str, runs: Iterable[tuple[Timing | None, list[float]]]) -> None:
        """One measurement of ``state``: each counted run's timing and samples; the count revised."""
        for t, samples in runs:
            if t is not None:
                self.timings.setdefault(state, []).append(t)
            if len(samples) >= 2:
                self.processes.setdefault(state, []).append(samples)
        seen = sum(len(g) for g in self.processes.values())
        if self.fixed or seen < max(FIRST_REVISION, 1.5 * self.revised_at):
            return
        f = self.figures()
        if f.how == "chosen":
            self.revised_at = seen
            self.n = int(min(max(f.n, math.floor(self.n / STEP)), math.ceil(self.n * STEP)))
            self.how = "chosen"

    def cost(self, state: str | None = None) -> Cost | None:
        """What a process costs (of ``state``; None: pooled over every state): the median seconds
        besides its samples (to the first, and after the last to its exit: the process holds the
        chip until it exits) and per sample; None before any process printed two samples."""
        ts = self.timings.get(state, []) if state is not None else [t for v in self.timings.values() for t in v]
        per = [t.per_sample for t in ts if t.per_sample is not None and t.per_sample > 0]
        if not per:
            return None
        after = [t.after for t in ts if t.after is not None]
        return Cost(statistics.median(t.besides_samples for t in ts), statistics.median(per), len(ts),
                    statistics.median(after) if after else 0.0, statistics.median(t.first for t in ts))

    def _pooled(self) -> tuple[float, float, tuple[float, int]]:
        """The within- and between-process variances (log scale), pooled over the states measured by
        two processes or more (each state's own figures averaged; nan while none was), and what they
        rest on: the mean samples a process and the degrees of freedom of the between estimate (each
        state's processes less one, summed) — what :func:`between_floor` needs."""
        within, between, sizes, dof = [], [], [], 0
        for groups in self.processes.values():
            logged = [[math.log(x) for x in g] for g in groups if all(x > 0 for x in g)]
            w, b = variance_components(logged if len(logged) == len(groups) else groups, self.statistic)
            if math.isfinite(w) and math.isfinite(b):
                within.append(w)
                between.append(b)
                sizes += [len(g) for g in groups]
                dof += len(groups) - 1
        if not within:
            return float("nan"), float("nan"), (0.0, 0)
        return statistics.fmean(within), statistics.fmean(between), (statistics.fmean(sizes), dof)

    def figures(self) -> Figures:
        """The figures now, and the count they give (or why it is not theirs: fixed, default)."""
        cost = self.cost()
        within, between, (samples, dof) = self._pooled()  # once: the variances and the floor's basis
        if self.fixed:
            return Figures(cost, within, between, self.fixed, "fixed")
        if cost is None or not math.isfinite(within):
            return Figures(cost, within, between, self.n, self.how)
        # floored: a few processes whose levels happen to agree do not send the count to its bound
        n = samples_per_process(cost, within, between, floor=between_floor(within, samples, dof + 1))
        return Figures(cost, within, between, n, "chosen")
