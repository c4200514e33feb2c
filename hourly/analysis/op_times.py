"""The op-time join of ``hourly explain``: the time each changed HLO instruction costs in the
last-good and the first-bad state, from the traces of the two dump runs.

Pure: it takes the HLO diff's records (``ModuleDiff.as_dict()``) and two op tables
``{"<module>/<op>": [duration µs of each call, …]}`` — what :func:`hourly.profile.compare.
parse_perfetto_trace` reads from a JAX trace: on the CPU the thunks the runtime reports (events
carrying ``hlo_module``/``hlo_op``), on a GPU the kernels of the "XLA Ops" row — and names every
changed instruction of an entry computation with its per-call median in each state:

* *changed* instructions by their name on each side (a rename is followed), *added* ones by their
  first-bad name (nothing before), *removed* ones by their last-good name (nothing after);
* an instruction with no event (a parameter, a constant, a bitcast: not a thunk or a kernel) is
  *untimed*; a fusion's time covers the instructions changed inside it;
* each op's first call is warm-up (lazy initialisation, cold caches) and left out when more than
  3 remain;
* the delta is the difference of the per-call medians (µs); rows are sorted by it, largest
  increase first;
* *within noise*: a paired instruction whose medians differ by less than 5 % of the good one, or
  whose calls the two-sided Mann–Whitney U test does not tell apart at p < 0.01; with fewer than
  3 calls on a side (and more than 5 % apart) it is not judged (``None``): one call says nothing of
  its noise;
* every other op of the traces (unchanged in the HLO, same name in both) is compared the same way:
  "the rest" is within noise, or the ops that moved are named — a time change the HLO diff does not
  explain points below the HLO (code generation, the runtime).
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass

#: the smallest relative change of a per-call median counted as a change
MIN_RELATIVE = 0.05
#: the Mann–Whitney U p-value under which two sets of calls differ (with the 5 % floor above)
P_VALUE = 0.01


@dataclass
class OpTime:
    calls: int
    median_us: float
    total_us: float


def op_time(durations: list[float] | None) -> OpTime | None:
    if not durations:
        return None
    return OpTime(len(durations), statistics.median(durations), sum(durations))


#: calls each side needs before the test can tell them apart
MIN_CALLS = 3


def differs(good: list[float], bad: list[float]) -> bool | None:
    """Whether two sets of one op's call durations differ beyond noise (see the module's doc);
    None when either side has fewer than :data:`MIN_CALLS` calls and the medians are not within
    :data:`MIN_RELATIVE` (one call says nothing of its noise)."""
    if not good or not bad:
        return bool(good) != bool(bad)
    mg, mb = statistics.median(good), statistics.median(bad)
    if abs(mb - mg) < MIN_RELATIVE * max(abs(mg), 1e-9):
        return False
    if len(good) < MIN_CALLS or len(bad) < MIN_CALLS:
        return None
    from scipy.stats import mannwhitneyu
    return bool(mannwhitneyu(good, bad, alternative="two-sided").pvalue < P_VALUE)


def _module(key: str) -> str:
    return key.split()[0]  # "jit_f" or "jit_f {layout}" when one name was compiled twice


def steady(durations: list[float]) -> list[float]:
    """An op's calls without its first (warm-up: lazy initialisation, cold caches — on the CPU
    the first call of a fusion costs 10 to 1000 times the next ones), when more than
    :data:`MIN_CALLS` remain."""
    return durations[1:] if len(durations) > MIN_CALLS else durations


def join(modules: list[dict], good: dict[str, list[float]], bad: dict[str, list[float]],
         source: str = "") -> dict:
    """The changed instructions of every module with their times (see the module's doc); each op's
    first call is left out as warm-up (:func:`steady`)."""
    good = {k: steady(v) for k, v in good.items()}
    bad = {k: steady(v) for k, v in bad.items()}
    rows: list[dict] = []
    claimed_good: set[str] = set()
    claimed_bad: set[str] = set()
    for m in modules:
        if m.get("identical"):
            continue
        mod = _module(m["key"])
        for c in m.get("changes") or []:
            gname = c["good"] if c["kind"] != "added" else None
            bname = c["bad"] if c["kind"] != "removed" else None
            gk, bk = (f"{mod}/{gname}" if gname else None), (f"{mod}/{bname}" if bname else None)
            gd, bd = (good.get(gk) if gk else None), (bad.get(bk) if bk else None)
            if gk:
                claimed_good.add(gk)
            if bk:
                claimed_bad.add(bk)
            g, b = op_time(gd), op_time(bd)
            row = {"module": mod, "kind": c["kind"], "name": bname or gname, "opcode": c["opcode"],
                   "good_name": gname, "bad_name": bname,
                   "good": asdict(g) if g else None, "bad": asdict(b) if b else None}
            if g is None and b is None:
                row.update(timed=False, delta_us=None, within_noise=None)
            else:
                d = differs(gd or [], bd or [])
                row.update(timed=True, delta_us=(b.median_us if b else 0.0) - (g.median_us if g else 0.0),
                           within_noise=None if d is None else not d)
            rows.append(row)
    timed = sorted((r for r in rows if r["timed"]), key=lambda r: -r["delta_us"])
    untimed = [r for r in rows if not r["timed"]]
    # the rest: ops unchanged in the HLO, by the same name in both traces
    rest = sorted((set(good) & set(bad)) - claimed_good - claimed_bad)
    moved: list[dict] = []
    unjudged: list[str] = []
    for k in rest:
        d = differs(good[k], bad[k])
        if d is None:
            unjudged.append(k)
        elif d:
            g, b = op_time(good[k]), op_time(bad[k])
            assert g is not None and b is not None
            moved.append({"op": k, "good": asdict(g), "bad": asdict(b), "delta_us": b.median_us - g.median_us})
    moved.sort(key=lambda r: -r["delta_us"])
    only = {"good": sorted(set(good) - set(bad) - claimed_good), "bad": sorted(set(bad) - set(good) - claimed_bad)}
    return {"source": source, "rows": timed, "untimed": untimed, "rest": len(rest), "rest_moved": moved,
            "rest_unjudged": unjudged,
            "only_in_trace": only, "ops": {"good": len(good), "bad": len(bad)}}
