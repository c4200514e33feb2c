"""The front-end profile of ``hourly profile``: which JAX functions grew between the last-good and
the first-bad state of a step in tracing, lowering or dispatch.

Each state's Python runs :mod:`hourly.frontend_profile` once (one process per state: the per-phase
harness's ``make()`` target traced, lowered and dispatched under :mod:`cProfile`, ``repeats``
times after warm-up, ``PYTHONHASHSEED=0``); :func:`diff` compares the two files, phase by phase:

* the phase's total: the per-repeat wall times (under the profiler, and without it: ``plain``);
* every function (``module:function``) by its own time, cumulative time and call count, each the
  median over the repeats; the change is the difference of the medians;
* **beyond noise** (:func:`moved`): the change of the medians is at least the phase's floor — 1 %
  of the good state's median total (:data:`FLOOR_FRACTION`), and :data:`FLOOR_MS` at least — and
  5 % of the good median; the two-sided Mann–Whitney U test on the repeats tells the states apart
  at p < 0.01 (:mod:`hourly.analysis.op_times`' rule); and the fastest repeats of the two states
  differ the same way by as much (a process slowed by its machine for most of its repeats moves
  its median, rarely its fastest repeat). With fewer than 3 repeats a side nothing is judged, and
  the record says so. A single run's difference is never presented as a change;
* the rows: own time grown beyond noise, largest first (where the time is spent — a planted slow
  function is first); cumulative time grown beyond noise (the path from the phase's entry to it);
  own time shrunk; call counts that changed (deterministic, so any change is real) among the
  functions above the floor.

What it cannot see: noise between processes (each state is one process; its repeats are the
samples), time spent in C++ without a Python frame around it (lowering's MLIR passes are the
C function that runs them, ``<built-in method …>``), and functions of one module and one name
(nested ``wrapper``s) apart: they are summed.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from hourly.adapters import proc
from hourly.analysis.op_times import MIN_CALLS, MIN_RELATIVE, P_VALUE

#: the floor of a change that counts, as a share of the good state's median phase total
FLOOR_FRACTION = 0.01
#: and in ms, whatever the total
FLOOR_MS = 0.05
#: the phases of the harness (hourly.jaxbench_phases) the front-end profile explains, and which
#: profiled phases each is made of
FRONT_END_METRICS = {"trace_ms": ("trace",), "lower_ms": ("lower",), "dispatch_us": ("dispatch",),
                     "step_dispatch_us": ("dispatch",), "first_call_ms": ("trace", "lower")}
PHASES = ("trace", "lower", "dispatch")
#: rows per list in the record
ROWS = 15
FILE = "frontend.json"


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

def profile_command(python: str, target: str, out: str | os.PathLike, repeats: int, warmup: int,
                    iters: int, phases: tuple[str, ...] = PHASES) -> list[str]:
    return [python, "-m", "hourly.frontend_profile", target, "--out", str(out), "--repeats", str(repeats),
            "--warmup", str(warmup), "--iters", str(iters), "--phases", ",".join(phases), "--traceback"]


def run_profile(python: str | None, target: str, out: Path, cwd: str | None, env: dict[str, str] | None,
                repeats: int = 7, warmup: int = 2, iters: int = 100, timeout: float | None = None,
                check: bool = False) -> proc.Result:
    """Run :mod:`hourly.frontend_profile` under ``python`` (this one by default) with only the
    hourly package added to its path (it needs the standard library and JAX); ``PYTHONHASHSEED=0``
    so both states hash alike. The log is ``out`` with ``.log``."""
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


# --------------------------------------------------------------------------------------- the diff

def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else 0.0


def moved(good: list[float], bad: list[float], floor: float) -> bool | None:
    """Whether a function's (or a phase's) per-repeat values differ beyond noise (the module's
    doc); None when a side has fewer than :data:`~hourly.analysis.op_times.MIN_CALLS` repeats and
    the change is above the floors."""
    mg, mb = _median(good), _median(bad)
    if abs(mb - mg) < max(floor, MIN_RELATIVE * abs(mg)):
        return False
    if len(good) < MIN_CALLS or len(bad) < MIN_CALLS:
        return None
    # the fastest repeats must differ the same way: a process its machine slowed for most of its
    # repeats moves its median, rarely its fastest repeat (seen here: MLIR's context set-up 2.5 ms in
    # one repeat of a process and 5-11 ms in its six others, 2.4 ms in every repeat of the next)
    lo_g, lo_b = min(good), min(bad)
    if abs(lo_b - lo_g) < max(floor, MIN_RELATIVE * abs(lo_g)) or (lo_b - lo_g) * (mb - mg) < 0:
        return False
    if len(set(good) | set(bad)) == 1:
        return False
    from scipy.stats import mannwhitneyu
    return bool(mannwhitneyu(good, bad, alternative="two-sided").pvalue < P_VALUE)


def _p(good: list[float], bad: list[float]) -> float | None:
    if len(good) < MIN_CALLS or len(bad) < MIN_CALLS or len(set(good) | set(bad)) == 1:
        return None
    from scipy.stats import mannwhitneyu
    return float(mannwhitneyu(good, bad, alternative="two-sided").pvalue)


def _values(f: dict | None, field: str, n: int) -> list[float]:
    return list(f[field]) if f else [0.0] * n


def diff_phase(good: dict, bad: dict) -> dict:
    """One phase of two front-end profiles compared (the module's doc)."""
    gw, bw = good["wall_ms"], bad["wall_ms"]
    ng, nb = len(gw), len(bw)
    floor = max(FLOOR_FRACTION * _median(gw), FLOOR_MS)
    total = {"good_ms": _median(gw), "bad_ms": _median(bw), "delta_ms": _median(bw) - _median(gw),
             "plain_good_ms": _median(good.get("plain_ms") or []), "plain_bad_ms": _median(bad.get("plain_ms") or []),
             "beyond_noise": moved(gw, bw, FLOOR_MS), "p": _p(gw, bw),
             "plain_beyond_noise": moved(good.get("plain_ms") or [], bad.get("plain_ms") or [], FLOOR_MS)}
    rows = []
    gf, bf = good["functions"], bad["functions"]
    for key in set(gf) | set(bf):
        g, b = gf.get(key), bf.get(key)
        g_own, b_own = _values(g, "own_ms", ng), _values(b, "own_ms", nb)
        g_cum, b_cum = _values(g, "cum_ms", ng), _values(b, "cum_ms", nb)
        g_calls, b_calls = _values(g, "calls", ng), _values(b, "calls", nb)
        row = {"function": key,
               "own_ms": {"good": _median(g_own), "bad": _median(b_own)},
               "cum_ms": {"good": _median(g_cum), "bad": _median(b_cum)},
               "calls": {"good": _median(g_calls), "bad": _median(b_calls)},
               "d_own_ms": _median(b_own) - _median(g_own), "d_cum_ms": _median(b_cum) - _median(g_cum),
               "own_moved": moved(g_own, b_own, floor), "cum_moved": moved(g_cum, b_cum, floor),
               "only": "bad" if g is None else "good" if b is None else None}
        via = (b or {}).get("via") or (g or {}).get("via")
        if via:
            row["via"] = via
        if row["own_moved"] or row["cum_moved"]:
            row["p_own"], row["p_cum"] = _p(g_own, b_own), _p(g_cum, b_cum)
        rows.append(row)
    grew_own = sorted((r for r in rows if r["own_moved"] and r["d_own_ms"] > 0), key=lambda r: -r["d_own_ms"])
    shrank_own = sorted((r for r in rows if r["own_moved"] and r["d_own_ms"] < 0), key=lambda r: r["d_own_ms"])
    grew_cum = sorted((r for r in rows if r["cum_moved"] and r["d_cum_ms"] > 0), key=lambda r: -r["d_cum_ms"])
    big = [r for r in rows if max(r["cum_ms"]["good"], r["cum_ms"]["bad"]) >= floor]
    calls = sorted((r for r in big if r["calls"]["good"] != r["calls"]["bad"]),
                   key=lambda r: -abs(r["calls"]["bad"] - r["calls"]["good"]) / max(r["calls"]["good"], 1))
    unjudged = [r["function"] for r in rows if r["own_moved"] is None or r["cum_moved"] is None]
    return {"total": total, "floor_ms": floor, "repeats": {"good": ng, "bad": nb}, "functions": len(rows),
            "grew_own": grew_own[:ROWS], "grew_own_count": len(grew_own),
            "grew_cum": grew_cum[:ROWS], "grew_cum_count": len(grew_cum),
            "shrank_own": shrank_own[:ROWS], "shrank_own_count": len(shrank_own),
            "calls_changed": calls[:ROWS], "calls_changed_count": len(calls),
            "unjudged": sorted(unjudged)[:ROWS], "unjudged_count": len(unjudged)}


def diff(good: dict, bad: dict, metric: str | None = None) -> dict:
    """The two states' front-end profiles compared, phase by phase; ``metric``: the phase the step
    is in (its phases come first)."""
    wanted = FRONT_END_METRICS.get(metric or "", ())
    phases = [p for p in PHASES if p in good.get("phases", {}) and p in bad.get("phases", {})]
    phases.sort(key=lambda p: (p not in wanted, PHASES.index(p)))
    notes = list(dict.fromkeys([*good.get("notes", []), *bad.get("notes", [])]))
    for side, doc in (("good", good), ("bad", bad)):
        missing = [p for p in PHASES if p in (good.get("phases", {}) | bad.get("phases", {}))
                   and p not in doc.get("phases", {})]
        if missing:
            notes.append(f"the {side} state has no {', '.join(missing)} profile")
    if min(good.get("repeats", 0), bad.get("repeats", 0)) < MIN_CALLS:
        notes.append(f"fewer than {MIN_CALLS} repeats a side: no change is judged beyond noise")
    return {"metric": metric, "phases": {p: diff_phase(good["phases"][p], bad["phases"][p]) for p in phases},
            "profiler": good.get("profiler", "cProfile"),
            "repeats": {"good": good.get("repeats"), "bad": bad.get("repeats")},
            "warmup": good.get("warmup"), "iters": good.get("iters"),
            "environment": {"good": good.get("environment"), "bad": bad.get("environment")},
            "notes": notes}


# --------------------------------------------------------------------------------------- lines

def _ms(x: float) -> str:
    return f"{x:.3g}" if abs(x) < 10 else f"{x:.1f}"


def _pct(good: float, bad: float) -> str:
    return f", {100 * (bad - good) / good:+.0f} %" if good else ""


def _verdict(moved_: bool | None, p: float | None) -> str:
    if moved_ is None:
        return "not judged: too few repeats"
    pv = f", p {p:.2g}" if p is not None else ""
    return ("beyond noise" if moved_ else "within noise") + pv


def _calls(c: dict) -> str:
    fmt = lambda x: str(int(x)) if float(x).is_integer() else f"{x:g}"
    return f"{fmt(c['good'])} → {fmt(c['bad'])}"


def _row(r: dict, field: str) -> str:
    d = r["d_own_ms"] if field == "own" else r["d_cum_ms"]
    via = f" (via {r['via']})" if r.get("via") else ""
    new = " (new)" if r.get("only") == "bad" else " (gone)" if r.get("only") == "good" else ""
    other = (f"cum {r['d_cum_ms']:+.3g} ms" if field == "own"
             else f"cum {_ms(r['cum_ms']['good'])} → {_ms(r['cum_ms']['bad'])} ms")
    own = f"own {_ms(r['own_ms']['good'])} → {_ms(r['own_ms']['bad'])} ms, " if field == "own" else ""
    return f"      {d:+.3g} ms  {r['function']}{via}{new}: {own}{other}, calls {_calls(r['calls'])}"


def lines(rec: dict | None, indent: str = "") -> list[str]:
    """The front-end diff (:func:`diff`'s record, or why there is none) as lines."""
    if not rec:
        return []
    if rec.get("skipped"):
        return [f"{indent}Front end (Python-level profile): not made — {rec['skipped']}"]
    if rec.get("error"):
        logs = ", ".join(f"{k}: {v}" for k, v in (rec.get("logs") or {}).items())
        return [f"{indent}Front end (Python-level profile): {rec['error']} (log {logs})"]
    reps = rec.get("repeats") or {}
    out = [f"{indent}Front end (Python level: {rec.get('profiler', 'cProfile')} of {rec.get('target')}, "
           f"{reps.get('good')}/{reps.get('bad')} repeats in one process per state after {rec.get('warmup')} "
           f"warm-up rounds{'; the step is in ' + rec['metric'] if rec.get('metric') else ''}):"]
    for phase, ph in rec.get("phases", {}).items():
        t = ph["total"]
        plain = (f"; without the profiler {_ms(t['plain_good_ms'])} → {_ms(t['plain_bad_ms'])} ms "
                 f"({_verdict(t['plain_beyond_noise'], None)})" if t.get("plain_good_ms") else "")
        what = {"dispatch": f" ({rec.get('iters')} calls)"}.get(phase, "")
        out.append(f"{indent}  {phase}{what}: {_ms(t['good_ms'])} → {_ms(t['bad_ms'])} ms under the profiler "
                   f"({t['delta_ms']:+.3g} ms{_pct(t['good_ms'], t['bad_ms'])}, "
                   f"{_verdict(t['beyond_noise'], t.get('p'))}){plain}")
        if ph["grew_own"]:
            out.append(f"{indent}    own time grew beyond noise (where the time went), largest first:")
            out += [indent + _row(r, "own") for r in ph["grew_own"]]
            if ph["grew_own_count"] > len(ph["grew_own"]):
                out.append(f"{indent}      … {ph['grew_own_count'] - len(ph['grew_own'])} more")
        if ph["grew_cum"]:
            out.append(f"{indent}    cumulative time grew beyond noise (the path to it):")
            out += [indent + _row(r, "cum") for r in ph["grew_cum"][:8]]
            if ph["grew_cum_count"] > 8:
                out.append(f"{indent}      … {ph['grew_cum_count'] - 8} more")
        if ph["shrank_own"]:
            out.append(f"{indent}    own time shrank beyond noise:")
            out += [indent + _row(r, "own") for r in ph["shrank_own"][:5]]
        if ph["calls_changed"]:
            shown = ", ".join(f"{r['function']} {_calls(r['calls'])}" for r in ph["calls_changed"][:6])
            more = f" … {ph['calls_changed_count'] - 6} more" if ph["calls_changed_count"] > 6 else ""
            out.append(f"{indent}    calls changed: {shown}{more}")
        moved_n = ph["grew_own_count"] + ph["shrank_own_count"]
        rule = (f"a change counts from {_ms(ph['floor_ms'])} ms ({FLOOR_FRACTION * 100:g} % of the good total) and 5 %, "
                f"in the medians and the fastest repeats, when Mann–Whitney U over the repeats gives p < {P_VALUE}")
        if not moved_n and not ph["grew_cum"]:
            out.append(f"{indent}    no function moved beyond noise ({ph['functions']} compared; {rule})")
        else:
            out.append(f"{indent}    the other functions: within noise ({ph['functions']} compared; {rule})")
        if t["beyond_noise"] and not moved_n:
            out.append(f"{indent}    the total moved and no function's own time did: the two processes ran at different "
                       "speeds (load, clocks), which the repeats of one process cannot tell from a change")
        elif moved_n and t["beyond_noise"] is False:
            out.append(f"{indent}    functions moved and the total did not beyond noise: the total's spread between the "
                       "two processes is larger than their change")
        if ph["unjudged_count"]:
            out.append(f"{indent}    not judged (too few repeats): {ph['unjudged_count']} functions")
    out += [f"{indent}  note: {n}" for n in rec.get("notes", [])]
    if rec.get("files"):
        out.append(f"{indent}  profiles: good {rec['files']['good']}  bad {rec['files']['bad']}")
    return out
