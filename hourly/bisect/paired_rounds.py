"""The rounds of paired verdicts (hourly.analysis.judges.paired), measured through a bisection's lab:
one process per state per round, the states of a round in turn and the next round reversed, when
the lab can run its states alternately (each kept in an environment of its own:
hourly.measure.measurer.StateEnvs); else one state after another, which the answer says."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hourly.analysis.judges import Evidence
from hourly.analysis.paired import round_order
from hourly.analysis.process_stat import ProcessValue
from hourly.analysis.samples import location
from hourly.model import Pair

if TYPE_CHECKING:
    from hourly.bisect.drive import Lab, Taken


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


def measure_rounds(lab: "Lab", pairs: list[Pair], count: int, start: int, stop_on: Pair | None = None
                   ) -> tuple[list[dict[Pair, float | None]], list[tuple[Pair, "Taken"]]]:
    """``count`` rounds of ``pairs``, one process each, measured through the lab: in alternation
    (round ``start + r`` in :func:`~hourly.analysis.paired.round_order`) when the lab can run its
    states alternately without installing them again (``lab.interleaves``: each state its own
    environment), else one state after another (its ``count`` runs at once; ``lab.apart`` says
    why: drift between them is not cancelled). ``stop_on``: a state whose failure ends the rounds
    (a probe that crashes is not run again, nor the others with it). Returns each round's values and
    every measurement taken (for the rows)."""
    blocks: list[dict[Pair, float | None]] = []
    taken: list[tuple[Pair, Taken]] = []
    if lab.interleaves:
        for r in range(count):
            block: dict[Pair, float | None] = {}
            for pair in round_order(pairs, start + r):
                t = lab.measure_many([(pair, 1)])[0]
                taken.append((pair, t))
                block[pair] = process_value(t[0])
                if pair == stop_on and not t[0].ok:
                    blocks.append(block)
                    return blocks, taken
            blocks.append(block)
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
            values.append(process_value(t[0]))
            failed = not t[0].ok
            if failed:
                break
        if pair == stop_on and failed:
            break
    for r in range(count):
        blocks.append({p: got[p][r] if r < len(got.get(p, ())) else None for p in pairs})
    return blocks, taken
