"""The stored scan's table: the scan's own rows (origin ``scan``) per planned instant, the edge
steps' confirmations, and the messages of a benchmark that never worked."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from hourly import options
from hourly.adapters.store import Measurement, Store
from hourly.errors import UserError
from hourly.measure.settings import Settings, keyed
from hourly.metric import unread_words
from hourly.model import MetricPoints, Pair, PointResult, ScanReport, Status, cut_side
from hourly.scan.identity import SCAN_ORIGIN

if TYPE_CHECKING:  # detection pulls in numpy
    from hourly.analysis.detect import Detection, EdgeCheck
    from hourly.analysis.moved import Moved
    from hourly.analysis.steps import CrashWindow
    from hourly.model import Step


LEVEL = "hourly"

#: Lines of a failing run's log shown when the scan stops.
LOG_TAIL_LINES = 8



#: The origin of an edge step's measurements again (confirm_edges): rows of their own, never the table's.
CONFIRM_ORIGIN = "confirm"



#: Runs of each pair when an edge step is measured again: this many, or twice --repeats if more.
CONFIRM_REPEATS = 5



def point_of(label: str, xla: str, jax: str, m: Measurement | None) -> PointResult:
    """An instant of the table: its pair's measurement, or ``planned``."""
    if m is None:
        return PointResult(label, xla, jax, "planned")
    many = any("samples" in r for r in m.runs)  # runs that printed many samples: counted apart
    return PointResult(label, xla, jax, m.status, m.value, m.samples, m.detail, m.sample_count if many else None)


def metric_latest(store: Store, key: str, metric: str | None, origin: str = SCAN_ORIGIN) -> dict[tuple[str, str], Measurement]:
    """The newest ``origin`` row of every pair; of one named ``metric`` when given (its rows, and the
    rows that hold for every metric: a failed build, runs that all failed). A pair measured with no
    row of ``metric`` (its runs never printed it, before any state did) reads ``no_metric``."""
    latest = store.all_latest(key, origin=origin, metric=metric)
    if metric:
        for pair, m in store.all_latest(key, origin=origin).items():
            if pair not in latest:
                latest[pair] = Measurement(m.xla, m.jax, Status.NO_METRIC.value, None, [], [],
                                           f"{metric} never printed; the runs printed other metrics", origin,
                                           metric=metric)
    return latest


def metric_names(store: Store, key: str, s: Settings) -> list[str] | None:
    """The named metrics of the scan's table, in the order first recorded (the names asked for, with
    ``--metrics a,b``); None for the regex's one metric."""
    named = s.named_metrics()
    if named is None:
        return None
    from hourly.measure.benchmark import ALL_METRICS
    if ALL_METRICS not in named:
        return named
    names = store.metric_names(key)
    return names + [s.metric] if s.metric and s.metric not in names else names


def scan_table(store: Store, s: Settings, key: str, rows: list[tuple[str, str, str]]
               ) -> tuple[list[PointResult], list[MetricPoints] | None, dict, list[dict], list[Pair]]:
    """The table of the scan's instants ``rows`` (label, xla, jax): the points of the primary metric
    (with named metrics and none chosen, the first's), each named metric's (None for the regex's
    one), the edge checks of those points and their JSON, and the pairs to measure again for
    every metric's edge steps."""
    names = metric_names(store, key, s)
    if names is None:
        latest = metric_latest(store, key, None)
        points = [point_of(t, x, j, latest.get((x, j))) for t, x, j in rows]
        checks, as_json, todo = edge_checks(store, key, points, s)
        return points, None, checks, as_json, todo
    metrics = []
    again: list[Pair] = []
    for name in names:
        latest = metric_latest(store, key, name)
        pts = [point_of(t, x, j, latest.get((x, j))) for t, x, j in rows]
        direction = s.direction_of(name)
        checks, as_json, todo = edge_checks(store, key, pts, s, name, direction)
        metrics.append(MetricPoints(name, direction, pts, checks, as_json))
        again += [p for p in todo if p not in again]
    primary = s.primary_metric()
    chosen = next((m for m in metrics if m.name == primary), metrics[0] if metrics else None)
    if chosen is None:  # nothing recorded yet (or only runs that measured no name)
        latest = metric_latest(store, key, None)
        return [point_of(t, x, j, latest.get((x, j))) for t, x, j in rows], metrics, {}, [], again
    return chosen.points, metrics, chosen.edge_checks or {}, chosen.edge_json or [], again



def confirm_repeats(s: Settings) -> int:
    return max(CONFIRM_REPEATS, 2 * s.repeats)



def edge_checks(store: Store, key: str, points: list[PointResult], s: Settings, metric: str | None = None,
                higher_is_better: bool | None = None
                ) -> tuple[dict[tuple[str, str], EdgeCheck], list[dict], list[Pair]]:
    """The edge steps of the scan's table (of one named ``metric``, whose direction is
    ``higher_is_better``) and what measuring them again said: {step key: check},
    the same for --json, and the pairs still to measure again (no ``confirm`` row newer than
    their latest ``scan`` row: a rerun of the scan asks for a new confirmation)."""
    from hourly.analysis.detect import check_edge
    from hourly.analysis.steps import edge_check_json, edge_pairs, find_steps, step_key
    if not any(p.status == Status.OK.value and p.value is not None for p in points):
        return {}, [], []
    direction = s.higher_is_better if higher_is_better is None else higher_is_better
    steps, _, groups = find_steps(points, direction)
    checks: dict[tuple[str, str], EdgeCheck] = {}
    out: list[dict] = []
    todo: list[Pair] = []
    for st in steps:
        pairs = edge_pairs(st.change, groups)
        if pairs is None:
            continue
        rows = [_confirm_rows(store, key, g.point.xla, g.point.jax, metric) for g in pairs[:2]]
        missing = [Pair(g.point.xla, g.point.jax) for g, r in zip(pairs[:2], rows, strict=True) if not r]
        if missing:
            todo += [p for p in missing if p not in todo]
            continue
        samples = [[x for m in r if m.status == Status.OK.value for x in m.samples] for r in rows]
        check = check_edge(st.change, samples[0], samples[1])
        checks[step_key(st)] = check
        out.append(edge_check_json(st, check, pairs))
    return checks, out, todo



def _confirm_rows(store: Store, key: str, xla: str, jax: str, metric: str | None = None) -> list[Measurement]:
    """A pair's ``confirm`` rows newer than its latest ``scan`` row (of ``metric`` when given)."""
    rows = store.measurements(key, xla, jax, metric)
    since = max((m.id or 0 for m in rows if m.origin == SCAN_ORIGIN), default=0)
    return [m for m in rows if m.origin == CONFIRM_ORIGIN and (m.id or 0) > since]



def log_tail(path: str | None, n: int = LOG_TAIL_LINES) -> list[str]:
    """The last ``n`` non-empty lines of a run's log (printed verbatim)."""
    try:
        lines = Path(path).read_text(errors="replace").splitlines() if path else []
    except OSError:
        return []
    return [ln for ln in lines if ln.strip()][-n:]



def likely_fix(status: str, tail: list[str], s: Settings) -> str:
    """The likeliest fix for a benchmark that never worked, from how its run failed."""
    text = "\n".join(tail)
    if status == Status.TIMEOUT.value:
        return f"raise --bench-timeout (now {s.bench_timeout} s) or check why the benchmark hangs"
    if status == Status.NO_METRIC.value and s.named_metrics() is not None:
        return ("check that the benchmark prints `METRIC <name>: <value>` lines"
                + (f" of {', '.join(s.named_metrics() or [])}" if s.metrics and s.metrics != "all" else "")
                + " (or pass --metric-regex for a metric printed another way), or pass --mode exit to judge "
                "runs by their exit code alone")
    if status == Status.NO_METRIC.value:
        return (f"check --metric-regex ({s.metric_regex}) against the benchmark's output above, or pass "
                "--mode exit to judge runs by their exit code alone")
    if "ModuleNotFoundError" in text or "ImportError" in text:
        return (f"a missing import: install what the benchmark needs into --python ({s.python}), "
                "or pass the --python that has it")
    if any(w in text for w in ("No such file or directory", "can't open file", "not found")):
        where = s.bench_cwd or os.getcwd()
        return (f"a path that does not exist from --bench-cwd ({where}): pass the --bench-cwd the "
                "command expects, or absolute paths in --bench-cmd")
    where = f" in {s.bench_cwd}" if s.bench_cwd else ""
    return f"run the benchmark command by hand{where} with --python's environment to see why it fails"



def never_worked(m: Measurement, s: Settings, first: bool) -> UserError:
    """The error of a scan whose benchmark never worked (``first``: it stopped at the first pair)."""
    if m.status == Status.UNTESTABLE.value:  # refused before it ran: no run, no log, the reason is all
        return untestable_window(m.detail)
    run = next((r for r in m.runs if r.get("status") != Status.OK.value), m.runs[0] if m.runs else {})
    tail = log_tail(run.get("log"))
    where = f"the first measured pair {cut_side(m.xla, 8)}/{m.jax[:8]}" if first else "every measured pair"
    if s.mode == "exit":
        what = f"exit code {run.get('returncode')}" if run.get("status") == Status.CRASHED.value else m.status
        return UserError(f"the window holds no good state: {where} already fails ({what}; log {run.get('log')})",
                         "start the window earlier with --from, or fix the command"
                         + ("; --keep-going scans on anyway" if first else ""), tail)
    what = {Status.CRASHED.value: f"crashed with exit code {run.get('returncode')}",
            Status.TIMEOUT.value: "timed out",
            Status.NO_METRIC.value: _no_metric(run, s)}.get(m.status, m.status)
    stop = "; the scan stopped before building the next pair" if first else ""
    return UserError(f"every run of {where} {what} (log {run.get('log')}){stop}",
                     (_WARM_UP_FIX.format(s.warmup_samples) if m.status == Status.NO_METRIC.value and _only_warm_up(run)
                      else likely_fix(m.status, tail, s))
                     + ("; then run the scan again with --rerun (that pair is stored as failed), or"
                        " --keep-going to scan on anyway" if first else ""), tail)



_WARM_UP_FIX = "pass a --warmup-samples below the times a run prints the metric (now {0} are dropped from each run)"


def _captured(run: dict) -> list:
    """What the regex read that is no finite number: its last match, or with --metric-samples all
    every counted one."""
    return [run["captured"]] if run.get("captured") is not None else run.get("rejected") or []


def _only_warm_up(run: dict) -> bool:
    """A run whose every match of the metric was a warm-up sample (dropped), none unreadable."""
    return not _captured(run) and not run.get("unread") and bool(run.get("matched"))


def _no_metric(run: dict, s: Settings) -> str:
    """Why a run that exited 0 has no value, for the scan's error: what the regex read that is no
    finite number, the warm-up samples that were all it printed, or nothing matched at all."""
    if run.get("unread"):  # a number hourly will not guess at: what was captured and what followed
        return f"printed a number hourly cannot read for the metric: {unread_words(run['unread'])}"
    captured = _captured(run)
    if captured:
        shown = ", ".join(repr(c) for c in captured[:3]) + (", ..." if len(captured) > 3 else "")
        return f"printed no finite number for the metric: --metric-regex captured {shown}"
    if _only_warm_up(run):
        return (f"printed the metric only as warm-up samples: {run['matched']} of them, and --warmup-samples "
                f"{s.warmup_samples} drops each run's first ones")
    return "never printed the metric"


def untestable_window(why: str | None) -> UserError:
    """Nothing of the window could be run at all (``--only jax``: the installed jaxlib is refused by
    every state measured), with the reason the states were refused."""
    from hourly.measure.pinned import GATE_FIX
    return UserError(f"nothing was measured: every state of the window measured so far is "
                     f"{why or 'untestable'}",
                     "move the window to commits this jaxlib runs, or install a jaxlib they accept into "
                     f"--python; {GATE_FIX}")


def stored_scan(store: Store, s: Settings) -> ScanReport:
    """The stored scan's table: the scan's own measurements only (never a later command's)."""
    rows = store.points(LEVEL)
    s = keyed(s, store)  # settings read from the store carry the scan's key already
    key = s.bench_key()
    out, metrics, checks, as_json, _ = scan_table(store, s, key, rows)
    pairs = {(x, j) for _, x, j in rows}  # the builds are the scan's (and a bisection's of its pairs)
    return ScanReport(out, len(pairs), len(pairs & store.built_pairs()), store.load_settings("pinned") or None,
                      edge_checks=checks, edge_json=as_json, pairing=store.load_settings("pairing"), metrics=metrics)



def require_measured(report: ScanReport, s: Settings) -> None:
    """A scan that stopped early, or ended with nothing measured, is a user error (exit 1) that
    says why and what to fix."""
    if report.stopped is not None:
        raise report.stopped
    pts = [p for p in report.points if p.status != "planned"]
    if not pts or any(p.status == Status.OK.value for p in pts):
        return
    if all(p.status == Status.BUILD_FAILED.value for p in pts):
        raise UserError(f"nothing was measured: every build failed ({pts[0].detail})",
                        "check --build-cmd in that log, or move the window")
    if all(p.status in (Status.BUILD_FAILED.value, Status.UNTESTABLE.value) for p in pts):
        raise untestable_window(next(p.detail for p in pts if p.status == Status.UNTESTABLE.value))
    p = next(p for p in pts if p.status != Status.BUILD_FAILED.value)
    store = Store(s.workdir, create=False, read_only=True)
    try:
        m = store.latest(keyed(s, store).bench_key(), p.xla, p.jax, origin=SCAN_ORIGIN,
                         metric=s.primary_metric() if report.metrics is None else None)
    finally:
        store.close()
    assert m is not None  # p is a point of this scan: its measurement is in the store
    raise never_worked(m, s, first=False)




# -- an incomplete scan (#22: planned-but-unmeasured points are gaps, never "no steps") -------------

def gaps(points: list[PointResult]) -> list[dict]:
    """The runs of consecutive points the scan planned and has not measured yet (an interrupted
    scan, or one that stopped early): ``{"from", "to", "instants", "pairs"}`` each, in order."""
    out: list[dict] = []
    prev: PointResult | None = None
    for p in points:
        if p.status != "planned":
            prev = p
            continue
        same = prev is not None and (prev.xla, prev.jax) == (p.xla, p.jax)
        if out and prev is not None and prev.status == "planned":
            g = out[-1]
            g["to"], g["instants"], g["pairs"] = p.time, g["instants"] + 1, g["pairs"] + (not same)
        else:
            out.append({"from": p.time, "to": p.time, "instants": 1, "pairs": 1})
        prev = p
    return out


def unmeasured_pairs(points: list[PointResult]) -> int:
    return len({(p.xla, p.jax) for p in points if p.status == "planned"})


#: what every printed scan command names, default or not (the window, the checkouts, the build, the benchmark)
SCAN_ALWAYS = ("from_", "to", "xla_repo", "jax_repo", "build_cmd", "python", "bench_cmd", "workdir")
#: what a report's reproduce line names even at its default, so that it reads the same to someone
#: whose hourly has other defaults
REPRODUCE = ("tz", "step", "ref", "repeats", "metric_regex")


def scan_command(s: Settings, explicit: tuple[str, ...] = ()) -> str:
    """The ``hourly scan`` command of these settings, one line to print (hourly.options.command_line:
    secret-looking values redacted): run again, it resumes (measured pairs are kept, only the missing
    ones are built and measured). A setting is named when it is not its default, or in
    :data:`SCAN_ALWAYS` or ``explicit``; one-off flags (--force, --rerun, ...) and the executor's
    options are not settings of the scan and are left out."""
    return settings_command("scan", s, explicit=explicit)


def settings_command(command: str, s: Settings, lead: dict[str, object] | None = None,
                     explicit: tuple[str, ...] = ()) -> str:
    """``hourly COMMAND`` with ``lead`` (option name -> value, first and as given: a bisection's
    ``--good``/``--bad``) and then the settings of ``s`` that the command takes, named as
    :func:`scan_command` names them; one line to print, secrets redacted."""
    from hourly.measure.settings import FIELD_NAMES, ONE_OFF
    default = Settings()
    named = (*SCAN_ALWAYS, *explicit)
    values = dict(lead or {})
    mode = values.get("mode") or s.mode
    exit_mode = str(getattr(mode, "value", mode)) == "exit"
    for name in options.TAKES[command]:
        if name in values or name not in FIELD_NAMES or name in ONE_OFF:
            continue
        v = getattr(s, name)
        if v is None or v == [] or (name not in named and v == getattr(default, name)):
            continue
        if name == "xla_repo" and s.only == "jax":  # the pinned jaxlib stays: no XLA checkout
            continue
        if name == "metric_regex" and exit_mode:  # an exit-status run reads no metric (and refuses one)
            continue
        values[name] = v
    return options.command_line(command, values)


def has_scan(store: Store) -> bool:
    """Whether a scan was made in the workdir of ``store`` (its settings stored, or points of it):
    a workdir of ``hourly bisect --good --bad`` alone (or of the release level alone) has none, and
    nothing may speak of a scanned window there."""
    return store.load_settings("scan") is not None or bool(store.points(LEVEL))


def gap_note(points: list[PointResult], s: Settings) -> str | None:
    """One line for an incomplete table: what is missing and the command that measures it."""
    gs = gaps(points)
    if not gs:
        return None
    n, total = unmeasured_pairs(points), len({(p.xla, p.jax) for p in points})
    where = ", ".join(g["from"] if g["from"] == g["to"] else f"{g['from']} .. {g['to']}" for g in gs[:3])
    more = f" and {len(gs) - 3} more" if len(gs) > 3 else ""
    return (f"incomplete: {n} of {total} distinct pairs not measured yet ({where}{more}); "
            f"a step there is not seen: run the same scan again to resume: {scan_command(s)}")


def gaps_json(points: list[PointResult], s: Settings) -> dict:
    """``complete``, ``gaps`` and the command that fills them, for --json."""
    gs = gaps(points)
    return {"complete": not gs, "gaps": gs, "resume": scan_command(s) if gs else None}


def require_complete(report: ScanReport, s: Settings, found_anything: bool) -> None:
    """A table with gaps where nothing was found is not an answer (exit 1): the step may lie in them."""
    if report.plan is not None or found_anything:
        return
    note = gap_note(report.points, s)
    if note is None:
        return
    n, total = unmeasured_pairs(report.points), len({(p.xla, p.jax) for p in report.points})
    raise UserError(f"the scan is incomplete ({n} of {total} pairs not measured) and no step was found in "
                    "the part that was", f"run the same scan again to resume it: {scan_command(s)}")


def require_edges_read(checks: dict | None, s: Settings, then: str = "", metric: str | None = None) -> None:
    """An edge step that, measured again, moved the other way (:attr:`~hourly.analysis.detect.
    EdgeVerdict.REVERSED`) is not an answer either way (exit 1): not the step the scan's one run per
    pair reported, nor an outlier — those runs are too noisy to read it. Names the step, what
    measuring again read, and the scan that measures each pair more times; ``then`` as
    :func:`require_decided`'s."""
    from dataclasses import replace

    from hourly.analysis.detect import EdgeVerdict, percent
    for (before, after), check in (checks or {}).items():
        if check.verdict is not EdgeVerdict.REVERSED:
            continue
        again = scan_command(replace(s, repeats=max(UNDECIDED_REPEATS, 2 * s.repeats))) + " --rerun"
        raise UserError(f"the edge step{f' of {metric}' if metric else ''} between {before} and {after}, measured "
                        f"again, moved the other way ({check.level_before:.4g} → {check.level_after:.4g}, "
                        f"{percent(check.relative_change)}): one run per pair is too noisy to read it",
                        f"measure each pair more times: {again}{then}")


def require_edges_read_report(report: ScanReport, s: Settings, then: str = "") -> None:
    """:func:`require_edges_read` over the scan's table and each named metric's."""
    require_edges_read(report.edge_checks, s, then)
    for m in report.metrics or []:
        require_edges_read(m.edge_checks, s, then, m.name)


# -- a table too short to tell noise from steps (issue 33: never "no steps found" from it) ---------

#: Runs of each pair asked for when one value per pair cannot tell noise from steps.
UNDECIDED_REPEATS = 3


def repeats_command(s: Settings) -> str:
    """The scan again with every pair measured UNDECIDED_REPEATS times (``--rerun``: the pairs
    already stored too): the repeats measure the noise that the differences could not."""
    from dataclasses import replace
    return scan_command(replace(s, repeats=max(UNDECIDED_REPEATS, s.repeats))) + " --rerun"


def undecided_note(detection: Detection, s: Settings) -> str | None:
    """One line when the scan's table is too short to tell noise from steps
    (:attr:`hourly.analysis.detect.Detection.too_short`), with the command that tells; else None."""
    from hourly.analysis.steps import too_short
    why = too_short(detection, "pair")
    if why is None:
        return None
    if detection.repeated:
        return (f"{why}; scan more instants between them (a finer --step), or bisect a window directly "
                "(hourly bisect --good TIME --bad TIME)")
    return f"{why}; measure each pair {UNDECIDED_REPEATS} times to tell: {repeats_command(s)}"


def one_state(points: list[PointResult]) -> tuple[str, str] | None:
    """Why a table whose measured values are of one (xla, jax) pair can say nothing of steps, and
    the fix; None when two or more pairs were measured. One state shows no step whatever its noise:
    "no steps found" from it would be an answer from nothing."""
    measured = {(p.xla, p.jax) for p in points if p.status == Status.OK.value and p.value is not None}
    if len(measured) >= 2:
        return None
    pairs = {(p.xla, p.jax) for p in points}
    if len(pairs) < 2:
        return ("window holds one (xla, jax) pair: no commit landed in it, so it has no step to find",
                "to look wider, an earlier --from or a later --to")
    return (f"scan measured one of its {len(pairs)} (xla, jax) pairs: a step needs two states to compare",
            "see why the others have no value (hourly show), or widen the window")


def require_decided(points: list[PointResult], s: Settings, found_anything: bool = False,
                    then: str = "", higher_is_better: bool | None = None, metric: str | None = None) -> None:
    """A table too short to tell noise from steps where nothing was found is not an answer (exit 1,
    naming the command that measures the noise): not "no steps found", not "nothing to bisect".
    ``then``: what to run after the fix (", then run hourly bisect again"); ``higher_is_better``
    and ``metric``: a named metric's direction and name (its points are ``points``)."""
    from hourly.analysis.steps import find_steps
    if found_anything or not any(p.status == Status.OK.value and p.value is not None for p in points):
        return
    one = one_state(points)
    if one is not None and len({(p.xla, p.jax) for p in points}) > 1:  # the others have no value
        raise UserError(f"the {one[0]}{f' ({metric})' if metric else ''}", one[1] + then)
    higher = s.higher_is_better if higher_is_better is None else higher_is_better
    note = undecided_note(find_steps(points, higher)[1], s)
    if note is not None:
        why, _, fix = note.partition("; ")
        raise UserError(f"the scan{f' of {metric}' if metric else ''} has {why}", fix + then)


def require_decided_report(report: ScanReport, s: Settings, found_anything: bool = False, then: str = "") -> None:
    """:func:`require_decided` over the scan's table, or over each named metric's (the first whose
    table is too short to tell says so): no metric found anything, and one whose noise cannot be
    measured might hold a step."""
    if report.metrics is None:
        require_decided(report.points, s, found_anything, then)
        return
    for m in report.metrics:
        require_decided(m.points, s, found_anything, then, m.higher_is_better, m.name)


# -- what each named metric did -----------------------------------------------------------------

@dataclass
class MetricFinding:
    """One metric of the table: its points, what it did, where it stops being printed."""

    metric: MetricPoints
    moved: Moved
    windows: list[CrashWindow] = field(default_factory=list)  # printed ↔ not printed


def findings(report: ScanReport, min_change: float | None = None) -> list[MetricFinding]:
    """What each named metric of ``report`` did (an edge step that measuring again called an
    outlier does not stand)."""
    from hourly.analysis.detect import EdgeVerdict
    from hourly.analysis.moved import what_moved
    from hourly.analysis.steps import metric_windows, step_key
    out = []
    for m in report.metrics or []:
        checks = m.edge_checks or {}

        def outlier(st: Step, checks: dict = checks) -> bool:
            check = checks.get(step_key(st))
            return check is not None and check.verdict is EdgeVerdict.OUTLIER

        moved, _ = what_moved(m.name, m.points, m.higher_is_better, min_change, bool(gaps(m.points)),
                              dropped=outlier)
        out.append(MetricFinding(m, moved, metric_windows(m.points)))
    return out


# -- steps judged against an assumed noise (never named with exit 0) -------------------------------

def unreal_steps(points: list[PointResult], checks: dict | None, higher_is_better: bool) -> tuple[int, str] | None:
    """The steps of a table whose noise was assumed, not measured (under 4 pairs of one run each:
    :attr:`~hourly.analysis.detect.Detection.noise_assumed`), that measuring again did not confirm:
    how many, and why they cannot be told from noise (one clause); None when every step that stands
    was measured again and confirmed, or the noise was measured. As ``hourly detect`` judges a
    series: a step against an assumed noise is no answer."""
    from hourly.analysis.detect import EdgeVerdict
    from hourly.analysis.steps import find_steps, standing, step_key, too_short
    if not any(p.status == Status.OK.value and p.value is not None for p in points):
        return None
    steps, detection, _ = find_steps(points, higher_is_better)
    if not detection.noise_assumed:
        return None
    stand = standing(steps, checks)
    confirmed = [st for st in stand if (c := (checks or {}).get(step_key(st))) is not None
                 and c.verdict is EdgeVerdict.CONFIRMED]
    why = too_short(detection, "pair")
    if not stand or len(confirmed) == len(stand) or why is None:
        return None
    return len(stand) - len(confirmed), why


def require_real(points: list[PointResult], s: Settings, checks: dict | None = None, then: str = "",
                 higher_is_better: bool | None = None, metric: str | None = None) -> None:
    """A step named against an assumed noise is no answer (exit 1, "cannot tell"), with the
    command that measures the noise; an incomplete scan's first fix is to resume it (its other
    pairs measure the noise too). ``then``, ``higher_is_better`` and ``metric`` as
    :func:`require_decided`'s."""
    from hourly.text.plurals import plural
    higher = s.higher_is_better if higher_is_better is None else higher_is_better
    unreal = unreal_steps(points, checks, higher)
    if unreal is None:
        return
    n, why = unreal
    what = f"the {'step' if n == 1 else plural(n, 'step')}{f' of {metric}' if metric else ''} above {'is' if n == 1 else 'are'}"
    fix = f"measure each pair {UNDECIDED_REPEATS} times to tell: {repeats_command(s)}"
    if gaps(points):
        missing, total = unmeasured_pairs(points), len({(p.xla, p.jax) for p in points})
        raise UserError(f"the scan is incomplete ({missing} of {total} pairs not measured) and cannot tell whether "
                        f"{what} real: {why}",
                        f"run the same scan again to resume it: {scan_command(s)}; if the step still rests on an "
                        f"assumed noise, {fix}{then}")
    raise UserError(f"cannot tell whether {what} real: {why}", fix + then)


def require_real_report(report: ScanReport, s: Settings, then: str = "") -> None:
    """:func:`require_real` over the scan's table, or over each named metric's."""
    if report.metrics is None:
        require_real(report.points, s, report.edge_checks, then)
        return
    for m in report.metrics:
        require_real(m.points, s, m.edge_checks, then, m.higher_is_better, m.name)
