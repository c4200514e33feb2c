"""What a bisection's verdicts cost and how each benchmark process was sampled (issue 43): the
figures its answer states, and the samples per process a bisection starts from (what its window's
states measured before). The count itself is hourly.measure.sample_size's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hourly.analysis.process_stat import Choice
from hourly.bisect.events import ProcessDone
from hourly.measure.benchmark import SAMPLES_LAST
from hourly.measure.sample_cost import Timing
from hourly.model import Pair, Status

if TYPE_CHECKING:
    from hourly.adapters.store import Measurement
    from hourly.adapters.store_tables.bisections import Spent
    from hourly.bisect.lab import Metered
    from hourly.measure.benchmark import Run
    from hourly.measure.measurer import Measurer


#: what verdicts that are not paired reduce each process by (hourly.bisect.paired_rounds.process_value)
UNPAIRED = Choice("median", "the verdicts are not paired: each process by its median, no statistic chosen")


def figures(m: "Measurer | None", chip_s: float, processes: int, samples: int, choice: Choice | None = None,
            asked: list[int] | None = None) -> dict:
    """What a window's verdicts cost (``processes``, ``samples``, ``chip_s``: every benchmark process
    the bisection ran of it, their samples and seconds) and how each process was sampled:
    the samples asked of it (HOURLY_SAMPLES) and how that count was set, the per-process statistic
    in force and why (``choice``: the one the paired search held, chosen on the window's ends or
    restored with them when it resumed; None: the verdicts are not paired, :data:`UNPAIRED`), what
    a process costs, and whether the benchmark followed the count. ``asked``: the counts the
    window's stored processes were asked for, in every call (this call's are added)."""
    choice = choice or UNPAIRED
    out: dict = {"processes": processes, "samples": samples, "chip_s": round(chip_s, 1),
                 "statistic": choice.statistic, "statistic_why": choice.why}
    if m is not None:
        if m.spec.metrics is None and m.spec.samples == SAMPLES_LAST:  # the last match of each process read
            out["one_value"] = True
        out.update(m.sizes.figures().as_dict())
        out["samples_per_process"] = m.sizes.n
        out["asked"] = sorted(set(m.sizes.asked) | set(asked or ()))  # the calls before a resume too
        if m.unfollowed:
            out["not_followed"] = m.unfollowed
    return out


def window_figures(spent: "Spent", m: "Measurer | None", this_call_s: float, choice: Choice | None = None) -> dict:
    """What a window of a bisection cost and how each process was sampled (:func:`figures`): every
    process the bisection ran of its states (``spent``: in this call and the calls before a resume,
    read from the store — not only this call's, nor only those the answer's verdict rows count),
    this call's seconds (``this_call_s``) said apart when earlier calls ran too. ``choice``: the
    per-process statistic the search held (None: its verdicts are not paired)."""
    out = figures(m, spent.seconds, spent.processes, spent.samples, choice, spent.asked)
    if spent.seconds - this_call_s >= 1.0:  # a resumed bisection: the calls before it too
        out["this_call_chip_s"] = round(this_call_s, 1)
    return out


def tell_runs(lab: "Metered", m: "Measurer") -> None:
    """Verdicts that are not paired measure a state's runs in one request: the handler hears of
    each run as it ends (``measuring <state>: run 3, 112 chip-s so far``)."""
    counts: dict[Pair, int] = {}
    seconds = [lab.seconds, 0.0]  # the lab's seconds when the request began, and the runs' since

    def told(pair: Pair, run: "Run") -> None:
        if seconds[0] != lab.seconds:  # a new request: the lab has added the last one's seconds
            seconds[:] = [lab.seconds, 0.0]
            counts.clear()
        seconds[1] += run.duration
        counts[pair] = counts.get(pair, 0) + 1
        lab.handler.process(ProcessDone("measuring", pair, counts[pair], None, None, seconds[0] + seconds[1],
                                        None, unit="run"))
    m.on_run = told


def seed(m: "Measurer", stored: list[list["Measurement"]]) -> None:
    """The samples per process start from what the window's states measured before (a resumed or
    repeated bisection, the scan): each stored process's cost and samples, state by state."""
    for rows in stored:
        for row in rows:
            m.sizes.observe(Pair(row.xla, row.jax).key(),
                            [(Timing.of(r), [float(x) for x in r.get("samples") or []])
                             for r in row.runs if not r.get("warmup") and r.get("status") == Status.OK.value])
