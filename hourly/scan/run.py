"""The hourly scan: resolve → plan → (build → benchmark → store) per distinct pair."""

from __future__ import annotations

import os
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Generator

from hourly.adapters.gitrepo import GitRepo
from hourly.adapters.locks import holds_store_lock, python_env_lock
from hourly.adapters.store import STORE_NAME, Measurement, Store
from hourly.errors import ProcessError, UserError
from hourly.events import SILENT, Handler
from hourly.execute.executors import Executor
from hourly.execute.host import Counted, MeasuringHost
from hourly.measure import machine as environment
from hourly.measure.build import Builder, check_wheel_dir, require_command, require_python
from hourly.measure.measurer import build_spec, open_repos, pin_of, trees
from hourly.measure.pinned import Pin
from hourly.measure.pins import PinReader, behind_pins
from hourly.measure.resolve import PlannedPoint, distinct_pairs, resolve_pairs
from hourly.measure.settings import Settings, keyed
from hourly.metric import compile_metric_regex
from hourly.model import DryRunPlan, Pair, PointResult, ScanReport, Status
from hourly.scan.identity import check_scan, other_measurements
from hourly.scan.identity import record as record_investigation
from hourly.scan.table import (
    CONFIRM_ORIGIN,
    LEVEL,
    SCAN_ORIGIN,
    confirm_repeats,
    never_worked,
    scan_table,
)
from hourly.text.plurals import plural
from hourly.text.timeparse import instants, iso_utc, parse_step, window


def check(s: Settings, benchmark: bool = True, here: bool = True) -> None:
    """Every input error a scan can find before it touches anything (the workdir included);
    ``benchmark=False`` for a dry run, which needs only the repositories and the window; ``here``:
    the builds are installed on this machine (not in a Slurm job's container), so --python is here."""
    _window(s)
    if not benchmark:
        return
    if here:
        require_python(s.python)
    if not s.bench_cmd:
        raise UserError("no benchmark command", 'pass --bench-cmd "python3 bench.py ...", set bench_cmd in '
                        "hourly.toml, or add --dry-run to see the plan without one")
    spec = s.bench_spec()
    compile_metric_regex(spec.metric_regex)
    if spec.cwd and not Path(spec.cwd).is_dir():
        raise UserError(f"--bench-cwd {spec.cwd} is not a directory", "pass an existing directory")
    program = s.bench_argv()[0]
    if here and os.sep in program and not (Path(spec.cwd or ".") / Path(program).expanduser()).exists():
        # a path (not a name a build may install on --python's PATH): missing now, missing at every state
        # (checked where the runs happen: a Slurm job's container may mount it)
        raise UserError(f"benchmark command not found: {program}",
                        "pass --bench-cmd with the path of the program (relative to --bench-cwd), or its name on PATH")
    check_wheel_dir(s.resolved_wheel_dir())
    env = {**os.environ, **s.env_dict()}
    argv = s.build_argv()
    if argv:  # --only jax with an editable tree builds nothing
        require_command(argv[0], str(Path(s.python).parent) + os.pathsep + env.get("PATH", ""))


def _window(s: Settings) -> tuple[datetime, datetime, timedelta]:
    if not s.from_ or not s.to:
        raise UserError("the scan needs a window", 'pass --from "Aug 24 2023" --to "Aug 26 2023"')
    t0, t1 = window(s.from_, s.to, s.tz)
    now = datetime.now(timezone.utc)
    if t0 > now:  # every instant would stand at today's newest commits: "no steps found" from no history
        raise UserError(f"the window starts in the future (--from {iso_utc(t0)}; now is {iso_utc(now)}): "
                        "no commit stands there yet", "pass a --from in the past")
    return t0, t1, parse_step(s.step)


def plan(s: Settings, xla: GitRepo | None, jax: GitRepo, pin: Pin | None = None) -> list[PlannedPoint]:
    t0, t1, step = _window(s)
    times = instants(t0, t1, step)
    points = resolve_pairs(xla, jax, times, s.refs(), s.first_parent, pin)
    if not points:
        raise UserError("no commit of both repositories lies before the window's end",
                        "move the window later or check --ref")
    if s.pairing == "pin":  # each JAX commit with the XLA commit it pins (hourly.measure.pins)
        assert xla is not None  # Settings refuse --pairing pin with --only
        reader = PinReader(jax, "xla", xla)
        reader.prefetch([p.pair.jax for p in points])  # every pin in one process, then one to resolve them
        reader.resolve_all([r.rev for r in (reader.find(p.pair.jax) for p in points) if r is not None])
        points = [PlannedPoint(p.time, Pair(reader.pin(p.pair.jax).rev, p.pair.jax)) for p in points]
    return points


def pairing_notes(s: Settings, xla: GitRepo | None, jax: GitRepo, pairs: list[Pair]) -> dict:
    """How the scan paired JAX and XLA, and (time pairing) the pairs whose XLA commit is older than
    their JAX commit's pin: stored with the scan, shown in its table and JSON."""
    notes = {"pairing": s.pairing, "behind_pin": {}, "unknown": {}}
    if s.pairing == "time":
        found = behind_pins(pairs, xla, jax)
        notes["behind_pin"], notes["unknown"] = found["behind_pin"], found["unknown"]
    return notes






def sync(repos: list[GitRepo]) -> None:
    """``git remote update`` each repository; a failure (after retries of transient ones) is one line
    that names ``--no-sync``, for a user who is offline or whose remote is wrong."""
    for r in repos:
        try:
            r.remote_update()
        except ProcessError as e:
            what = "timed out" if e.timed_out else _first_complaint(e.tail)
            raise UserError(f"`git remote update` failed in {r.name} repository {r.path}: {what}",
                            "check the network and the remote, or pass --no-sync to scan the history "
                            "you already have") from e


def _first_complaint(output: str) -> str:
    """The line of git's output that says what went wrong (git adds generic lines after it)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in lines:
        if line.split(":", 1)[0].lower() in ("fatal", "error", "ssh", "remote"):
            return line
    return lines[-1] if lines else "no output"




def dry_run(s: Settings, workdir: str | os.PathLike) -> ScanReport:
    """The plan, without syncing, building or measuring; needs no benchmark command and creates no
    workdir. Points are "cached" (measured with this benchmark), "built" (wheels cached) or "planned"."""
    check(s, benchmark=False)
    xla, jax = open_repos(s)
    pin = pin_of(s, jax)
    points = plan(s, xla, jax, pin)
    pairs = distinct_pairs(points)
    path = Path(workdir).expanduser().absolute()
    store = Store(path, create=False) if (path / STORE_NAME).exists() else None
    key = keyed(s).bench_key() if s.bench_cmd else None
    latest = store.all_latest(key) if store and key else {}
    measured = {p for p in pairs if (p.xla, p.jax) in latest}
    builder = Builder(None, jax, xla, build_spec(s), store)  # the build cache is shared by all workdirs
    needs = builder.needs(pairs)  # one batch of git processes for all pairs, not one per pair
    built = {p for p in pairs if needs[p].value == "cached"}
    # a --rerun under way (stopped, to be resumed) is read, never begun: a dry run stores nothing
    pending = store.rerun(_rerun_scope(s, key), asked=False) if store and key else None
    fresh = store.measured_since(key, pending.since, SCAN_ORIGIN) if store and key and pending else set()
    todo = [p for p in pairs if (s.rerun or pending) and (p.xla, p.jax) not in fresh
            or _wanted(latest.get((p.xla, p.jax)), s.retry_failed)]
    results = []
    for p in points:
        m = latest.get((p.pair.xla, p.pair.jax))
        status = "cached" if m else "built" if p.pair in built else "planned"
        results.append(PointResult(p.label, p.pair.xla, p.pair.jax, status, m.value if m else None,
                                   m.samples if m else [], m.detail if m else None))
    return ScanReport(results, len(pairs), 0, pin.as_json() if pin else None, pairing=pairing_notes(s, xla, jax, pairs),
                      plan=DryRunPlan(sum(p not in built for p in todo), len(built),
                                      len(measured) if key else None))




def _wanted(m: Measurement | None, retry_failed: bool) -> bool:
    """Not measured yet, or (with --retry-failed) its build failed."""
    return m is None or (retry_failed and m.status in (Status.BUILD_FAILED.value, Status.UNTESTABLE.value))






def run_scan(s: Settings, store: Store | str | os.PathLike, handler: Handler = SILENT,
             executor: Executor | None = None) -> ScanReport:
    """Scan; given a workdir rather than a Store, it is created only once the input is known good.
    ``handler`` hears the progress (pairs done of all, the pair being built here);
    ``executor`` (hourly.execute.executors): where pairs are built and measured [default: here, in turn]."""
    check(s, here=executor is None or executor.capabilities.here)
    xla, jax = open_repos(s)
    if s.sync:
        sync(trees(xla, jax))
    if s.cherry_pick:  # a bad spec or an unknown commit: before the workdir, not at the first build
        from hourly.measure.cherry_pick import parse
        parse(s.cherry_pick, {r.name: r for r in trees(xla, jax)})
    pin = pin_of(s, jax)
    points = plan(s, xla, jax, pin)
    s = keyed(s)  # the key its measurements are stored under (a scan measures under its own)
    if not isinstance(store, Store):
        store = Store(store)
    return _measure_points(s, store, xla, jax, points, handler, pin, executor)


@holds_store_lock
def _measure_points(s: Settings, store: Store, xla: GitRepo | None, jax: GitRepo, points: list[PlannedPoint],
                    handler: Handler, pin: Pin | None = None, executor: Executor | None = None) -> ScanReport:
    # builds are installed into --python here: no other run may install into it until this one ends
    with env_lock_for(s.python, executor):
        return _measure_held(s, store, xla, jax, points, handler, pin, executor)


def env_lock_for(python: str, executor: Executor | None) -> AbstractContextManager:
    """The lock of the environment a run installs into, when it builds here (remote jobs install
    into their own)."""
    local = executor is None or executor.capabilities.here
    return python_env_lock(python) if local else nullcontext()


def _measure_held(s: Settings, store: Store, xla: GitRepo | None, jax: GitRepo, points: list[PlannedPoint],
                  handler: Handler, pin: Pin | None = None, executor: Executor | None = None) -> ScanReport:
    pairs = distinct_pairs(points)
    check_scan(store, s, {"xla": xla, "jax": jax})  # one investigation per workdir
    key = s.bench_key()
    others = other_measurements(store, s, key, "this scan")  # another benchmark's hunt in this workdir: said
    if others:
        handler.note(others)
    t0, t1, _ = _window(s)
    record_investigation(store, s, t0.timestamp(), t1.timestamp())
    store.save_settings("scan", s.as_dict())
    store.save_settings("pinned", pin.as_json() if pin else {})
    store.save_settings("environment", environment.capture(s.python, s.env_dict(), s.only))
    store.save_points(LEVEL, [(p.label, p.pair.xla, p.pair.jax) for p in points])
    notes = pairing_notes(s, xla, jax, pairs)
    store.save_settings("pairing", notes)
    latest = store.all_latest(key, origin=SCAN_ORIGIN)
    # --rerun: the pairs stored before it began (one stopped and resumed, with or without the flag,
    # keeps what it measured: adapters/store_tables/settings.py, SettingsTables.rerun)
    scope = _rerun_scope(s, key)
    rerun = store.rerun(scope, s.rerun)
    fresh = store.measured_since(key, rerun.since, SCAN_ORIGIN) if rerun else set()
    again = {p for p in pairs if (p.xla, p.jax) not in fresh} if rerun else set()
    if rerun is not None and rerun.resumed:
        handler.note(rerun.going_on("the pairs it has measured", f"{plural(len(again), 'pair')} measured again"))
    todo = [p for p in pairs if p in again or _wanted(latest.get((p.xla, p.jax)), s.retry_failed)]
    done = len(pairs) - len(todo)
    handler.progress(done, len(pairs), None)
    builds = 0
    stopped = None
    # fail fast: the first pair that gets measured decides whether the benchmark works at all
    # (unless an earlier run of this scan already measured one)
    checked = s.keep_going or any(m.status == Status.OK.value for m in latest.values())
    with MeasuringHost(s, store, xla, jax, pin, SCAN_ORIGIN, key) as host:
        if todo and executor is not None and not executor.capabilities.here:
            measured = executor.stream(host, [(p, s.repeats) for p in todo])
        else:  # here, in turn: the pair being built is shown while it builds
            measured = _here(host, todo, handler, done, len(pairs))
        for counted in measured:  # remote: W pairs at once, recorded in the scan's order as they come in
            builds += counted.builds
            done += 1
            handler.progress(done, len(pairs), None)
            checked, stopped = _fail_fast(counted.measurement, s, checked)
            if stopped:
                measured.close()  # cancels the jobs still running (Ctrl-C leaves them to be adopted)
                break
        jaxlib_builds, jax_builds = host.split.take()
    if stopped is None and rerun is not None:
        store.end_rerun(scope)  # every pair measured: the rerun has ended
    if stopped is None and s.confirm_edges and s.mode != "exit":
        more = confirm_edges(s, store, xla, jax, points, pin, handler, key)
        builds, jaxlib_builds, jax_builds = builds + more[0], jaxlib_builds + more[1], jax_builds + more[2]
    results, metrics, checks, as_json, _ = scan_table(store, s, key, _rows(points))
    return ScanReport(results, len(pairs), builds, pin.as_json() if pin else None,
                      jaxlib_builds, jax_builds, stopped=stopped, edge_checks=checks, edge_json=as_json,
                      pairing=notes, metrics=metrics)


def _rerun_scope(s: Settings, key: str) -> dict:
    """What a --rerun of this scan is of: its benchmark and its window."""
    t0, t1, _ = _window(s)
    return {"level": LEVEL, "bench": key, "from": t0.timestamp(), "to": t1.timestamp()}


def _rows(points: list[PlannedPoint]) -> list[tuple[str, str, str]]:
    return [(p.label, p.pair.xla, p.pair.jax) for p in points]


def _here(host: MeasuringHost, todo: list[Pair], handler: Handler, done: int, total: int
          ) -> Generator[Counted, None, None]:
    said = False
    for i, pair in enumerate(todo):
        handler.progress(done + i, total, pair)
        got = host.measure(pair, host.s.repeats)
        left = [(r["stopped"][0], r.get("log")) for r in got.measurement.runs if r.get("stopped")]
        if left and not said:  # a benchmark that leaves processes behind: said once, each run's record keeps it
            said = True
            handler.note(f"note: {left[0][0]} (log {left[0][1]}); each such run's record says so (runs[].stopped)")
        yield got


def confirm_edges(s: Settings, store: Store, xla: GitRepo | None, jax: GitRepo, points: list[PlannedPoint],
                  pin: Pin | None, handler: Handler = SILENT, key: str | None = None) -> tuple[int, int, int]:
    """Measure every unconfirmed edge step's two pairs again (of every named metric: one
    measurement gives them all), back to back, with :func:`confirm_repeats` runs each (rows of origin ``confirm``: the scan's table never changes).
    Returns the builds it ran (total, jaxlib, jax package): none unless a build left the cache."""
    key = key if key is not None else s.bench_key()
    again = scan_table(store, s, key, _rows(points))[4]  # every named metric's edge steps
    if not again:
        return 0, 0, 0
    builds = 0
    with MeasuringHost(s, store, xla, jax, pin, CONFIRM_ORIGIN, key) as host:
        for i, pair in enumerate(again):
            handler.progress(i, len(again), pair)
            builds += host.measure(pair, confirm_repeats(s)).builds
        handler.progress(len(again), len(again), None)
        return (builds, *host.split.take())


def _fail_fast(got: Measurement, s: Settings, checked: bool) -> tuple[bool, UserError | None]:
    """The first pair that gets measured (not a build failure) decides whether the benchmark works at
    all: (checked now, the error that stops the scan when it never worked)."""
    if checked or got.status in (Status.BUILD_FAILED.value, Status.UNTESTABLE.value):
        return checked, None  # nothing ran: says nothing of the benchmark
    return True, never_worked(got, s, first=True) if got.status != Status.OK.value else None










