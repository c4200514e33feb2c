"""The front-end profile of ``hourly profile``: which JAX functions grew between the last-good and
the first-bad state of a step in tracing, lowering or dispatch.

Each state's Python runs :mod:`hourly.harness.frontend_profile` in several processes
(``--front-end-processes``, :data:`PROCESSES` by default; locally interleaved good, bad, good,
bad, …, so that a machine whose speed drifts moves both states alike), each process tracing,
lowering and dispatching the per-phase harness's ``make()`` target under :mod:`cProfile`,
``repeats`` times after warm-up, ``PYTHONHASHSEED=0``, into a file of its own
(``frontend-<k>.json``). :func:`diff` compares the two states' files, phase by phase.

**The process is the unit of noise.** The repeats of one process share its state — its
allocations, caches, which core its threads landed on, the clock and the other core's load while
it ran — so two processes of one state differ by more than the repeats of either show (seen
here: dispatch's ``_user_call``, which holds XLA's inline execution on the CPU, "moved" between
two processes of one state by a test across their repeats). So each process is reduced to its
medians over its repeats, and

* the phase's total, and every function (``module:function``) by its own and cumulative time,
  is compared by the states' medians of those per-process medians (:func:`judge`);
* **beyond noise**: that difference is at least the phase's floor — 1 % of the good state's
  median total (:data:`FLOOR_FRACTION`), :data:`FLOOR_MS` at least — and 5 % of the good value;
  every process of one state lies beyond every process of the other, so every pair of processes
  run side by side differs the same way; and the **gap** between the two states (their closest
  processes) is wider than the **spread** within either state (its two most different
  processes). From 8 processes a state the most extreme ones at each end are left out first
  (:func:`trimmed`), so more processes make the rule no stricter. A function one state never ran
  and the other ran in every process counts when each of those processes spent the floor in it;
* **within noise**: under the floor. **Unsure**: above it, not apart beyond the spread — no change
  claimed, and the record's ``settle`` is the ``--front-end-processes`` that settles it
  (:func:`settle_processes`). **Not judged**: fewer than :data:`MIN_PROCESSES` a state. A single
  process's difference is never presented as a change;
* why: process medians drawn alike for both states pass the rule in 0.05 % of tries at 4 a state
  (0.75 % at 3, 9 % at 2; normal draws, simulated), and 200 splits 4 against 4 of 12 real
  processes of one state put no own-time row (one cumulative-time row); a rank test alone
  (every process apart by the floor) put own-time rows in 2 and cumulative-time rows in 7 of 150
  such splits — the process-to-process
  noise of a loaded machine is far from normal, and hundreds of functions are compared. A
  change of 4σ of that noise passes in 37 % of tries at 4 a state, 61 % at 8, 83 % at 16;
* the rows: own time grown beyond noise, largest first (where the time is spent — a planted slow
  function is first); cumulative time grown beyond noise (the path from the phase's entry to it);
  own time shrunk; call counts that changed in every process (among the functions above the
  floor); unsure.

Processes that ran on different machines (a Slurm job per state) are not judged in time at all:
the machines' difference is no code's. What it cannot see: time spent in C++ without a Python
frame around it (lowering's MLIR passes are the C function that runs them, ``<built-in method
…>``), and functions of one module and one name (nested ``wrapper``s) apart: they are summed.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from hourly.adapters import proc
from hourly.analysis.op_times import MIN_RELATIVE

#: the floor of a change that counts, as a share of the good state's median phase total
FLOOR_FRACTION = 0.01
#: and in ms, whatever the total
FLOOR_MS = 0.05
#: processes a state by default (``--front-end-processes``), and the fewest a state needs for a
#: change in time to be judged: process medians drawn alike for both states pass the rule in 9 %
#: of tries at 2 a state, 0.75 % at 3 and 0.05 % at 4 (normal draws, simulated); the 12 processes
#: of one state of tests/test_profile_frontend.py, split 3 against 3, put a row in 24 of 300 splits,
#: 4 against 4 in 1 of 200 (a cumulative time; no own-time row), on this 2-core machine under load
PROCESSES = 4
MIN_PROCESSES = 4
#: the phases of the harness (hourly.jaxbench_phases) the front-end profile explains, and which
#: profiled phases each is made of
FRONT_END_METRICS = {"trace_ms": ("trace",), "lower_ms": ("lower",), "dispatch_us": ("dispatch",),
                     "step_dispatch_us": ("dispatch",), "first_call_ms": ("trace", "lower")}
PHASES = ("trace", "lower", "dispatch")
#: rows per list in the record
ROWS = 15
#: one process's profile in a state's folder: ``frontend-<k>.json`` (its log ``frontend-<k>.log``)
FILE_PATTERN = re.compile(r"^frontend-(\d+)\.json$")


def hunted_metric(metric_regex: str) -> str | None:
    """The harness phase a scan's ``--metric-regex`` reads (``MEDIAN trace_ms:…`` → ``trace_ms``),
    or None when it names none of the harness's metrics."""
    import re
    names = ("trace_ms", "lower_ms", "compile_cached_ms", "compile_ms", "first_call_ms", "step_dispatch_us",
             "dispatch_us", "step_ms", "peak_memory_bytes", "live_array_bytes", "compiled_temp_bytes")
    for name in names:  # longest names first where one contains another (step_dispatch_us, dispatch_us)
        if re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", metric_regex):
            return name
    return None


def is_front_end(metric: str | None) -> bool:
    return metric in FRONT_END_METRICS


def harness_target(argv: list[str]) -> str | None:
    """The ``make()`` target of a benchmark command that runs the per-phase harness
    (``python3 …/jaxbench_phases.py bench.py …`` or ``python -m hourly.jaxbench_phases bench.py``);
    None for any other command."""
    for i, arg in enumerate(argv):
        if Path(arg).name == "jaxbench_phases.py" or (arg == "hourly.jaxbench_phases" and i and argv[i - 1] == "-m"):
            rest = [a for a in argv[i + 1:]]
            return rest[0] if rest and not rest[0].startswith("-") else None
    return None


@dataclass(frozen=True)
class FrontEndPlan:
    """Whether and how ``hourly profile`` profiles the front end: the target (None: not at all),
    its working folder, and why."""

    target: str | None
    cwd: str | None
    why: str
    metric: str | None = None


def plan(choice: str, metric_regex: str, bench_argv: list[str], bench_cwd: str | None) -> FrontEndPlan:
    """``--front-end auto`` (a step in a front-end phase of a benchmark run by the harness), ``off``,
    or a target (``bench.py[:make]``) to profile whatever the metric."""
    metric = hunted_metric(metric_regex)
    if choice == "off":
        return FrontEndPlan(None, None, "--front-end off", metric)
    if choice != "auto":
        return FrontEndPlan(choice, bench_cwd, f"--front-end {choice}", metric)
    if not is_front_end(metric):
        what = f"the step is in {metric}" if metric else "the metric is not one of the per-phase harness's"
        return FrontEndPlan(None, None, f"{what}, not a front-end phase (trace, lower, dispatch); "
                                        "--front-end bench.py[:make] profiles it anyway", metric)
    target = harness_target(bench_argv)
    if target is None:
        return FrontEndPlan(None, None, f"the step is in {metric}, but the benchmark is not the per-phase harness "
                                        "(hourly bench): give its make() with --front-end bench.py[:make]", metric)
    return FrontEndPlan(target, bench_cwd, f"the step is in {metric}", metric)


# --------------------------------------------------------------------------------------- running

def process_file(folder: str | os.PathLike, k: int) -> Path:
    """The profile of a state's ``k``-th process (from 1) in its folder."""
    return Path(folder) / f"frontend-{k}.json"


def process_files(folder: str | os.PathLike) -> list[Path]:
    """A state's process profiles in its folder, by process number."""
    folder = Path(folder)
    found = [(int(m.group(1)), p) for p in folder.glob("frontend-*.json") if (m := FILE_PATTERN.match(p.name))]
    return [p for _, p in sorted(found)]


def clear(folder: str | os.PathLike) -> None:
    """Remove a state's process profiles and their logs (a run made before this one)."""
    folder = Path(folder)
    for p in [*folder.glob("frontend-*.json"), *folder.glob("frontend-*.log"), folder / "frontend.json"]:
        p.unlink(missing_ok=True)


def profile_command(python: str, target: str, out: str | os.PathLike, repeats: int, warmup: int,
                    iters: int, phases: tuple[str, ...] = PHASES) -> list[str]:
    return [python, "-m", "hourly.harness.frontend_profile", target, "--out", str(out), "--repeats", str(repeats),
            "--warmup", str(warmup), "--iters", str(iters), "--phases", ",".join(phases), "--traceback"]


def run_profile(python: str | None, target: str, out: Path, cwd: str | None, env: dict[str, str] | None,
                repeats: int = 7, warmup: int = 2, iters: int = 100, timeout: float | None = None,
                check: bool = False) -> proc.Result:
    """Run :mod:`hourly.harness.frontend_profile` once (one process) under ``python`` (this one by default)
    with only the hourly package added to its path (it needs the standard library and JAX);
    ``PYTHONHASHSEED=0`` so both states hash alike. The log is ``out`` with ``.log``."""
    from hourly.profile.capture import hourly_pythonpath
    out.parent.mkdir(parents=True, exist_ok=True)
    shim = hourly_pythonpath()
    merged = {**os.environ, **(env or {}), "PYTHONHASHSEED": "0"}
    merged["PYTHONPATH"] = os.pathsep.join(p for p in (shim, merged.get("PYTHONPATH")) if p)
    try:
        return proc.run(profile_command(python or sys.executable, target, out, repeats, warmup, iters),
                        cwd=cwd, env=merged, timeout=timeout, log_path=out.with_suffix(".log"), check=check)
    finally:
        import shutil
        shutil.rmtree(shim, ignore_errors=True)


def load(path: str | os.PathLike) -> dict:
    return json.loads(Path(path).read_text())


def load_state(folder: str | os.PathLike) -> list[dict]:
    """A state's process profiles (:func:`process_files`), loaded."""
    return [load(p) for p in process_files(folder)]


# --------------------------------------------------------------------------------------- the diff

def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else 0.0


#: why a quantity was or was not shown to move (:attr:`Judged.why`)
SHOWN = "apart"                 # moved True: the states' processes lie apart by more than their spread
UNDER_FLOOR = "under the floor"  # moved False: the medians differ by less than the floor (or 5 %)
OVERLAP = "overlap"             # moved None, unsure: above the floor, the processes not apart beyond their spread
FEW = "few processes"           # moved None, not judged: fewer than MIN_PROCESSES a state
MACHINES = "machines"           # moved None, not judged: the processes ran on different machines


def trimmed(n: int) -> int:
    """How many processes of a state of ``n`` are left out at each end before the rule: none up to
    7, then one more per 4 (8 → 1, 12 → 2, 16 → 3). So the rule does not grow stricter with more
    processes (a state's range only widens with each one, while its closest processes come
    together), and one or two slowed processes do not hide a change (see :data:`MIN_PROCESSES`)."""
    return max(0, (n - MIN_PROCESSES) // 4)


def _middle(xs: list[float]) -> list[float]:
    t = trimmed(len(xs))
    s = sorted(xs)
    return s[t:len(s) - t] if t else s


def settle_processes(n: int) -> int:
    """``--front-end-processes`` that settles what ``n`` a state left unsure or unjudged."""
    return max(2 * n, 2 * MIN_PROCESSES)


@dataclass(frozen=True)
class Judged:
    """One quantity compared between the states' processes (the module's doc): the medians of
    the per-process values and their difference, the **spread** within a state (the wider
    state's range, after :func:`trimmed`), the **gap** between the states (their closest
    processes, the way the medians moved; negative when they overlap), the verdict — True
    (beyond noise), False (within noise: under the floor), None (unsure, or not judged) — and
    ``why`` (:data:`SHOWN`, :data:`UNDER_FLOOR`, :data:`OVERLAP`, :data:`FEW`, :data:`MACHINES`)."""

    good: float
    bad: float
    delta: float
    spread: float
    gap: float
    moved: bool | None
    why: str


def judge(good: list[float], bad: list[float], floor: float, judged: bool = True) -> Judged:
    """``good`` and ``bad``: one value per process (its median over its repeats). Beyond noise when
    the medians differ by ``floor`` and 5 % of the good value, every process of one state lies
    beyond every process of the other (after :func:`trimmed`), and that gap is wider than the
    spread within either state. Under the floor: within noise (no process count changes that).
    Above it and not apart: unsure — no change is claimed, and more processes settle it. With
    fewer than :data:`MIN_PROCESSES` processes a state, or ``judged`` False (the caller's reason:
    different machines), nothing above the floor is judged."""
    mg, mb = _median(good), _median(bad)
    delta = mb - mg
    g, b = _middle(good), _middle(bad)
    spread = max((max(xs) - min(xs) for xs in (g, b) if xs), default=0.0)
    if not g or not b:
        return Judged(mg, mb, delta, spread, 0.0, None, FEW)
    gap = min(b) - max(g) if delta >= 0 else min(g) - max(b)
    if abs(delta) < max(floor, MIN_RELATIVE * abs(mg)):
        return Judged(mg, mb, delta, spread, gap, False, UNDER_FLOOR)
    if not judged:
        return Judged(mg, mb, delta, spread, gap, None, MACHINES)
    if len(good) < MIN_PROCESSES or len(bad) < MIN_PROCESSES:
        return Judged(mg, mb, delta, spread, gap, None, FEW)
    if gap > 0 and gap > spread:
        return Judged(mg, mb, delta, spread, gap, True, SHOWN)
    if (not any(good) and all(bad)) or (not any(bad) and all(good)):
        # a function that one state never ran and the other ran in every process: no noise of the
        # state without it to be apart from, so every process of the other over the floor shows it
        size = max(floor, MIN_RELATIVE * abs(mg))
        return Judged(mg, mb, delta, spread, gap, True, SHOWN) if gap >= size else \
            Judged(mg, mb, delta, spread, gap, None, OVERLAP)
    return Judged(mg, mb, delta, spread, gap, None, OVERLAP)


def moved(good: list[float], bad: list[float], floor: float) -> bool | None:
    """:func:`judge`'s verdict alone."""
    return judge(good, bad, floor).moved


def _per_process(processes: list[dict | None], field: str) -> list[float]:
    """A function's median of ``field`` over the repeats, per process (0 where a process has no
    row for it: the function never ran there, or stayed under the profiler's floor)."""
    return [_median(list(f[field])) if f else 0.0 for f in processes]


def _side(j: Judged) -> dict:
    return {"good": j.good, "bad": j.bad}


def diff_phase(good: list[dict], bad: list[dict], judged: bool = True) -> dict:
    """One phase of two states' front-end profiles compared (the module's doc); ``good`` and
    ``bad``: the phase's record of each process of the state. ``judged`` False: no time is judged
    (the processes ran on different machines: the caller says so)."""
    gw = [_median(p["wall_ms"]) for p in good]
    bw = [_median(p["wall_ms"]) for p in bad]
    floor = max(FLOOR_FRACTION * _median(gw), FLOOR_MS)
    t = judge(gw, bw, FLOOR_MS, judged)
    gp = [_median(p.get("plain_ms") or []) for p in good]
    bp = [_median(p.get("plain_ms") or []) for p in bad]
    pl = judge(gp, bp, FLOOR_MS, judged)
    total = {"good_ms": t.good, "bad_ms": t.bad, "delta_ms": t.delta, "good_processes_ms": gw,
             "bad_processes_ms": bw, "spread_ms": t.spread, "gap_ms": t.gap, "beyond_noise": t.moved, "why": t.why,
             "plain_good_ms": pl.good, "plain_bad_ms": pl.bad, "plain_beyond_noise": pl.moved, "plain_why": pl.why}
    rows = []
    keys = {k for p in (*good, *bad) for k in p["functions"]}
    for key in keys:
        g = [p["functions"].get(key) for p in good]
        b = [p["functions"].get(key) for p in bad]
        g_own, b_own = _per_process(g, "own_ms"), _per_process(b, "own_ms")
        own = judge(g_own, b_own, floor, judged)
        cum = judge(_per_process(g, "cum_ms"), _per_process(b, "cum_ms"), floor, judged)
        g_calls, b_calls = _per_process(g, "calls"), _per_process(b, "calls")
        row = {"function": key, "own_ms": _side(own), "cum_ms": _side(cum),
               "own_ms_processes": {"good": g_own, "bad": b_own},
               "calls": {"good": _median(g_calls), "bad": _median(b_calls)},
               # calls are counted, not timed: changed when no process of one state has a count of the other's
               "calls_changed": bool(g_calls and b_calls) and not set(g_calls) & set(b_calls),
               "d_own_ms": own.delta, "d_cum_ms": cum.delta, "own_moved": own.moved, "cum_moved": cum.moved,
               "own_why": own.why, "cum_why": cum.why, "own_spread_ms": own.spread, "own_gap_ms": own.gap,
               "cum_spread_ms": cum.spread, "cum_gap_ms": cum.gap,
               "only": "bad" if not any(g) else "good" if not any(b) else None}
        via = next((f["via"] for f in (*b, *g) if f and f.get("via")), None)
        if via:
            row["via"] = via
        rows.append(row)
    grew_own = sorted((r for r in rows if r["own_moved"] and r["d_own_ms"] > 0), key=lambda r: -r["d_own_ms"])
    shrank_own = sorted((r for r in rows if r["own_moved"] and r["d_own_ms"] < 0), key=lambda r: r["d_own_ms"])
    grew_cum = sorted((r for r in rows if r["cum_moved"] and r["d_cum_ms"] > 0), key=lambda r: -r["d_cum_ms"])
    unsure = sorted((r for r in rows if r["own_why"] == OVERLAP), key=lambda r: -abs(r["d_own_ms"]))
    unsure_cum = [r for r in rows if r["cum_why"] == OVERLAP]
    big = [r for r in rows if max(r["cum_ms"]["good"], r["cum_ms"]["bad"]) >= floor]
    calls = sorted((r for r in big if r["calls_changed"]),
                   key=lambda r: -abs(r["calls"]["bad"] - r["calls"]["good"]) / max(r["calls"]["good"], 1))
    unjudged = [r["function"] for r in rows if r["own_why"] in (FEW, MACHINES) or r["cum_why"] in (FEW, MACHINES)]
    return {"total": total, "floor_ms": floor, "processes": {"good": len(good), "bad": len(bad)},
            "trimmed": {"good": trimmed(len(good)), "bad": trimmed(len(bad))},
            "repeats": {"good": [len(p["wall_ms"]) for p in good], "bad": [len(p["wall_ms"]) for p in bad]},
            "functions": len(rows),
            "grew_own": grew_own[:ROWS], "grew_own_count": len(grew_own),
            "grew_cum": grew_cum[:ROWS], "grew_cum_count": len(grew_cum),
            "shrank_own": shrank_own[:ROWS], "shrank_own_count": len(shrank_own),
            "unsure_own": unsure[:ROWS], "unsure_own_count": len(unsure), "unsure_cum_count": len(unsure_cum),
            "calls_changed": calls[:ROWS], "calls_changed_count": len(calls),
            "unjudged": sorted(unjudged)[:ROWS], "unjudged_count": len(unjudged)}


def process_order(good: list[dict], bad: list[dict]) -> list[str] | None:
    """The sides of the processes in the order they started (``good``, ``bad``, …); None when a
    profile has no start time (written by an older hourly)."""
    started: list[tuple[float, str]] = []
    for side, docs in (("good", good), ("bad", bad)):
        for d in docs:
            if d.get("started") is None:
                return None
            started.append((float(d["started"]), side))
    return [side for _, side in sorted(started)]


def interleaved(order: list[str] | None) -> bool | None:
    """Whether the two states' processes alternated (no two processes of one state in a row, but
    for the larger state's last ones when a process of the other failed)."""
    if order is None:
        return None
    n = min(order.count("good"), order.count("bad"))
    head = order[:2 * n]
    return all(a != b for a, b in zip(head, head[1:], strict=False))


def diff(good: list[dict] | dict, bad: list[dict] | dict, metric: str | None = None) -> dict:
    """The two states' front-end profiles — each a list of its processes' files (:func:`load_state`),
    or one file — compared, phase by phase; ``metric``: the phase the step is in (its phases come
    first). ``settle``: the ``--front-end-processes`` that would settle what this diff left unsure
    or unjudged (None when it left nothing so)."""
    good_docs = [good] if isinstance(good, dict) else list(good)
    bad_docs = [bad] if isinstance(bad, dict) else list(bad)
    wanted = FRONT_END_METRICS.get(metric or "", ())
    every = (*good_docs, *bad_docs)
    present = {p for d in every for p in d.get("phases", {})}
    phases = [p for p in PHASES if all(p in d.get("phases", {}) for d in every)]
    phases.sort(key=lambda p: (p not in wanted, PHASES.index(p)))
    notes = list(dict.fromkeys(n for d in every for n in d.get("notes", [])))
    for side, docs in (("good", good_docs), ("bad", bad_docs)):
        missing = [p for p in PHASES if p in present and not all(p in d.get("phases", {}) for d in docs)]
        if missing:
            notes.append(f"a process of the {side} state has no {', '.join(missing)} profile")
    hosts = {d.get("host") for d in every if d.get("host")}
    judged = len(hosts) <= 1
    ng, nb = len(good_docs), len(bad_docs)
    settle = settle_processes(min(ng, nb))
    if not judged:
        notes.append(f"the processes ran on {len(hosts)} machines: no change in time is judged, the machines' "
                     "difference is no code's (call counts still are); profile both states on one machine")
    elif min(ng, nb) < MIN_PROCESSES:
        notes.append(f"{ng}/{nb} processes a state, fewer than {MIN_PROCESSES}: no change in time is judged "
                     f"(the repeats of one process share its state; only processes show a state's noise) — "
                     f"hourly profile … --front-end-processes {max(settle, PROCESSES)} judges it")
    order = process_order(good_docs, bad_docs)
    inter = interleaved(order)
    if inter is False:
        notes.append("the two states' processes did not alternate (" + ", ".join(order or []) + "): a drift of "
                     "the machine between them is not cancelled")
    compared = {p: diff_phase([d["phases"][p] for d in good_docs], [d["phases"][p] for d in bad_docs], judged)
                for p in phases}
    open_ = [p for p, ph in compared.items() if ph["unsure_own_count"] or ph["unsure_cum_count"]
             or ph["total"]["why"] == OVERLAP or ph["unjudged_count"]]
    first = good_docs[0] if good_docs else {}
    return {"metric": metric, "phases": compared,
            "profiler": first.get("profiler", "cProfile"),
            "processes": {"good": ng, "bad": nb}, "order": order, "interleaved": inter, "judged": judged,
            "settle": settle if open_ and judged else None,
            "repeats": {"good": first.get("repeats"), "bad": (bad_docs[0] if bad_docs else {}).get("repeats")},
            "warmup": first.get("warmup"), "iters": first.get("iters"),
            "environment": {"good": first.get("environment"),
                            "bad": (bad_docs[0] if bad_docs else {}).get("environment")},
            "notes": notes}


# --------------------------------------------------------------------------------------- lines

def _ms(x: float) -> str:
    return f"{x:.3g}" if abs(x) < 10 else f"{x:.1f}"


def _pct(good: float, bad: float) -> str:
    return f", {100 * (bad - good) / good:+.0f} %" if good else ""


def _range(xs: list[float] | None) -> str:
    if not xs:
        return "?"
    return _ms(min(xs)) if min(xs) == max(xs) else f"{_ms(min(xs))}–{_ms(max(xs))}"


def _verdict(moved_: bool | None, why: str | None) -> str:
    """A verdict in words, by :attr:`Judged.why` (None: a record of an older hourly)."""
    if moved_:
        return "beyond noise"
    if moved_ is False:
        return "within noise"
    return {OVERLAP: "unsure: the states' processes not apart beyond their spread",
            MACHINES: "not judged: the processes ran on different machines",
            FEW: f"not judged: fewer than {MIN_PROCESSES} processes a state"}.get(why or "", "not judged")


def _calls(c: dict) -> str:
    fmt = lambda x: str(int(x)) if float(x).is_integer() else f"{x:g}"
    return f"{fmt(c['good'])} → {fmt(c['bad'])}"


def _row(r: dict, field: str) -> str:
    d = r["d_own_ms"] if field == "own" else r["d_cum_ms"]
    via = f" (via {r['via']})" if r.get("via") else ""
    new = " (new)" if r.get("only") == "bad" else " (gone)" if r.get("only") == "good" else ""
    other = (f"cum {r['d_cum_ms']:+.3g} ms" if field == "own"
             else f"cum {_ms(r['cum_ms']['good'])} → {_ms(r['cum_ms']['bad'])} ms")
    own = ""
    if field == "own":
        per = r.get("own_ms_processes") or {}
        procs = (f" (processes {_range(per['good'])} → {_range(per['bad'])})"
                 if per.get("good") and per.get("bad") else "")
        own = f"own {_ms(r['own_ms']['good'])} → {_ms(r['own_ms']['bad'])} ms{procs}, "
    return f"      {d:+.3g} ms  {r['function']}{via}{new}: {own}{other}, calls {_calls(r['calls'])}"


def _header(rec: dict) -> str:
    procs = rec.get("processes")
    reps = rec.get("repeats") or {}
    step = f"; the step is in {rec['metric']}" if rec.get("metric") else ""
    if not procs:  # a record of an older hourly: one process a state
        return (f"Front end (Python level: {rec.get('profiler', 'cProfile')} of {rec.get('target')}, "
                f"{reps.get('good')}/{reps.get('bad')} repeats in one process per state{step}):")
    inter = rec.get("interleaved")
    how = ("interleaved" if inter else "not interleaved (" + ", ".join(rec.get("order") or []) + ")"
           if inter is False else "order unknown")
    return (f"Front end (Python level: {rec.get('profiler', 'cProfile')} of {rec.get('target')}, "
            f"{procs.get('good')}/{procs.get('bad')} processes per state, {how}, each {reps.get('good')} repeats "
            f"after {rec.get('warmup')} warm-up rounds{step}):")


def _rule(rec: dict) -> str:
    trims = {(ph.get("trimmed") or {}).get(side, 0) for ph in rec.get("phases", {}).values() for side in ("good", "bad")}
    left_out = (", after leaving out the most extreme processes at each end of a state (one from 8 processes, "
                "two from 12, …)" if any(trims) else "")
    return ("a change counts from the phase's floor (1 % of the good state's total) and 5 % between the states' "
            "medians of per-process medians, when every process of one state lies beyond every process of the other "
            f"by more than the spread between the processes of one state{left_out}")


def lines(rec: dict | None, indent: str = "") -> list[str]:
    """The front-end diff (:func:`diff`'s record, or why there is none) as lines."""
    if not rec:
        return []
    if rec.get("skipped"):
        return [f"{indent}Front end (Python-level profile): not made — {rec['skipped']}"]
    if rec.get("error"):
        logs = ", ".join(f"{k}: {v}" for k, v in (rec.get("logs") or {}).items())
        return [f"{indent}Front end (Python-level profile): {rec['error']} (log {logs})"]
    out = [indent + _header(rec)]
    settle = rec.get("settle")
    more = f"hourly profile … --front-end-processes {settle}" if settle else None
    for phase, ph in rec.get("phases", {}).items():
        t = ph["total"]
        plain = (f"; without the profiler {_ms(t['plain_good_ms'])} → {_ms(t['plain_bad_ms'])} ms "
                 f"({_verdict(t['plain_beyond_noise'], t.get('plain_why'))})" if t.get("plain_good_ms") else "")
        what = {"dispatch": f" ({rec.get('iters')} calls)"}.get(phase, "")
        procs = (f"; processes {_range(t['good_processes_ms'])} → {_range(t['bad_processes_ms'])}"
                 if "good_processes_ms" in t else "")
        out.append(f"{indent}  {phase}{what}: {_ms(t['good_ms'])} → {_ms(t['bad_ms'])} ms under the profiler "
                   f"({t['delta_ms']:+.3g} ms{_pct(t['good_ms'], t['bad_ms'])}, "
                   f"{_verdict(t['beyond_noise'], t.get('why'))}{procs}){plain}")
        if ph["grew_own"]:
            out.append(f"{indent}    own time grew beyond noise (where the time went), largest first:")
            out += [indent + _row(r, "own") for r in ph["grew_own"]]
            if ph["grew_own_count"] > len(ph["grew_own"]):
                out.append(f"{indent}      … {ph['grew_own_count'] - len(ph['grew_own'])} more")
        if ph["grew_cum"]:
            out.append(f"{indent}    cumulative time grew beyond noise (the path to it):" if ph["grew_own"] else
                       f"{indent}    cumulative time grew beyond noise, and no function's own time under it did (spread "
                       "thin over functions each under the floor, or the processes' speed: a lead, not a finding):")
            out += [indent + _row(r, "cum") for r in ph["grew_cum"][:8]]
            if ph["grew_cum_count"] > 8:
                out.append(f"{indent}      … {ph['grew_cum_count'] - 8} more")
        if ph["shrank_own"]:
            out.append(f"{indent}    own time shrank beyond noise:")
            out += [indent + _row(r, "own") for r in ph["shrank_own"][:5]]
        if ph["calls_changed"]:
            shown = ", ".join(f"{r['function']} {_calls(r['calls'])}" for r in ph["calls_changed"][:6])
            more_calls = f" … {ph['calls_changed_count'] - 6} more" if ph["calls_changed_count"] > 6 else ""
            out.append(f"{indent}    calls changed in every process: {shown}{more_calls}")
        unsure_n = ph.get("unsure_own_count", 0)
        if unsure_n or ph.get("unsure_cum_count"):
            out.append(f"{indent}    unsure — moved by more than the floor between the medians, but the two states' "
                       f"processes overlap or lie apart by less than their spread; no change claimed"
                       + (f" ({more} settles it)" if more else "")
                       + (":" if unsure_n else f": the cumulative time of {ph['unsure_cum_count']} functions"))
            out += [indent + _row(r, "own") for r in ph.get("unsure_own", [])[:5]]
            rest = unsure_n - min(5, len(ph.get("unsure_own", [])))
            tail = [f"{rest} more in own time"] if rest > 0 else []
            if unsure_n and ph.get("unsure_cum_count"):
                tail.append(f"{ph['unsure_cum_count']} in cumulative time")
            if tail:
                out.append(f"{indent}      … " + ", ".join(tail))
        moved_n = ph["grew_own_count"] + ph["shrank_own_count"]
        open_n = unsure_n + ph.get("unsure_cum_count", 0) + ph["unjudged_count"]
        if ph["unjudged_count"]:
            reason = _verdict(None, FEW if rec.get("judged", True) else MACHINES).removeprefix("not judged: ")
            out.append(f"{indent}    not judged ({reason}): "
                       f"{ph['unjudged_count']} functions moved by more than the floor between the medians; no change "
                       "claimed" + (f" ({more} judges them)" if more else ""))
        compared = f"{ph['functions']} compared, floor {_ms(ph['floor_ms'])} ms"
        if not moved_n and not ph["grew_cum"] and not open_n:
            out.append(f"{indent}    no function moved beyond noise ({compared})")
        elif not moved_n and not ph["grew_cum"]:
            out.append(f"{indent}    no function shown to move beyond noise ({compared})")
        else:
            out.append(f"{indent}    the other functions: no change shown ({compared})")
        if t["beyond_noise"] and not moved_n:
            out.append(f"{indent}    the total moved and no function's own time did: the time is spread over "
                       "functions each under the floor, or the processes of the two states ran at different speeds "
                       "(load, clocks) by more than the spread between processes of one state showed")
        elif moved_n and t["beyond_noise"] is not True:
            out.append(f"{indent}    functions moved and the total was not shown to: the total's spread between "
                       "processes is larger than their change")
    if rec.get("processes"):
        out.append(f"{indent}  rule: {_rule(rec)}")
    out += [f"{indent}  note: {n}" for n in rec.get("notes", [])]
    if rec.get("files"):
        files = rec["files"]
        out.append(f"{indent}  profiles: good {_files(files.get('good'))}  bad {_files(files.get('bad'))}")
    return out


def _files(f: str | list[str] | None) -> str:
    """One state's profile files as a line: ``W/good/frontend-{1,2,3}.json``."""
    if not f:
        return "none"
    if isinstance(f, str):
        return f
    paths = [Path(p) for p in f]
    nums = [m.group(1) for p in paths if (m := FILE_PATTERN.match(p.name))]
    if len(nums) == len(paths) and len({p.parent for p in paths}) == 1:
        return str(paths[0].parent / ("frontend-" + (nums[0] if len(nums) == 1 else "{" + ",".join(nums) + "}")
                                      + ".json"))
    return ", ".join(map(str, paths))
