"""The hourly scan: resolve → plan → (build → benchmark → store) per distinct pair."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from . import environment
from .bench import compile_metric_regex, run_benchmark
from .build import BUILD_ATTEMPTS, Builder, BuildInterrupted, BuildSpec, BuildStatus, Workspace, require_command
from .config import Settings
from .errors import ProcessError, UserError
from .executor import LocalExecutor
from .gitrepo import GitRepo
from .locks import holds_store_lock
from .model import DryRunPlan, Pair, PointResult, ScanReport, Status
from .pin import JaxlibGate, Pin, make_pin
from .resolve import PlannedPoint, distinct_pairs, resolve_pairs
from .store import STORE_NAME, Measurement, Store
from .timeparse import instants, parse_step, window

if TYPE_CHECKING:  # detection pulls in numpy
    from .detect import EdgeCheck

LEVEL = "hourly"
#: The origin of the scan's own measurements; bisect, confirmation and profile add rows of their
#: own origin and never change what the scan's table shows.
SCAN_ORIGIN = "scan"
#: Lines of a failing run's log shown when the scan stops.
LOG_TAIL_LINES = 8
#: The origin of an edge step's measurements again (confirm_edges): rows of their own, never the table's.
CONFIRM_ORIGIN = "confirm"
#: Runs of each pair when an edge step is measured again: this many, or twice --repeats if more.
CONFIRM_REPEATS = 5


def open_repos(s: Settings) -> tuple[GitRepo | None, GitRepo]:
    """The checkouts a hunt needs: with --only jax no XLA checkout (jaxlib stays as installed)."""
    xla = None if s.only == "jax" else GitRepo(s.xla_repo, "xla")
    return xla, GitRepo(s.jax_repo, "jax")


def trees(xla: GitRepo | None, jax: GitRepo) -> list[GitRepo]:
    return [r for r in (xla, jax) if r is not None]


def check(s: Settings, benchmark: bool = True) -> None:
    """Every input error a scan can find before it touches anything (the workdir included);
    ``benchmark=False`` for a dry run, which needs only the repositories and the window."""
    _window(s)
    if not benchmark:
        return
    if not s.bench_cmd:
        raise UserError("no benchmark command", 'pass --bench-cmd "python3 bench.py ...", set bench_cmd in '
                        "hourly.toml, or add --dry-run to see the plan without one")
    spec = s.bench_spec()
    compile_metric_regex(spec.metric_regex)
    if spec.cwd and not Path(spec.cwd).is_dir():
        raise UserError(f"--bench-cwd {spec.cwd} is not a directory", "pass an existing directory")
    env = {**os.environ, **s.env_dict()}
    argv = s.build_argv()
    if argv:  # --only jax with an editable tree builds nothing
        require_command(argv[0], str(Path(s.python).parent) + os.pathsep + env.get("PATH", ""))


def _window(s: Settings):
    if not s.from_ or not s.to:
        raise UserError("the scan needs a window", 'pass --from "Aug 24 2023" --to "Aug 26 2023"')
    t0, t1 = window(s.from_, s.to, s.tz)
    return t0, t1, parse_step(s.step)


def plan(s: Settings, xla: GitRepo | None, jax: GitRepo, pin: Pin | None = None) -> list[PlannedPoint]:
    t0, t1, step = _window(s)
    times = instants(t0, t1, step)
    points = resolve_pairs(xla, jax, times, s.ref, s.first_parent, pin)
    if not points:
        raise UserError("no commit of both repositories lies before the window's end",
                        "move the window later or check --ref")
    return points


def build_spec(s: Settings) -> BuildSpec:
    """How the pairs of these settings are built (the scan's and the bisection's builders share it)."""
    two = s.only is None  # jaxlib and the jax package priced and cached apart (hourly.native)
    return BuildSpec(s.build_argv(), s.resolved_wheel_dir(), s.python, s.env_dict(), s.build_timeout,
                     s.resolved_cache_dir(), s.cache_bytes(), list(s.cherry_pick), s.build_identity_cmd(),
                     package_only=s.only == "jax", jax_cmd=s.jax_package_argv() if two else None,
                     jax_ident_cmd=s.jax_package_identity() if two else None, native_inputs=list(s.native_inputs))


def pin_of(s: Settings, jax: GitRepo | None) -> Pin | None:
    return make_pin(s.only, s.python, jax, s.jax_ref)


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


def stored_results(store: Store, key: str, points: list[PlannedPoint]) -> list[PointResult]:
    latest = store.all_latest(key, origin=SCAN_ORIGIN)
    out = []
    for p in points:
        m = latest.get((p.pair.xla, p.pair.jax))
        if m:
            out.append(PointResult(p.label, p.pair.xla, p.pair.jax, m.status, m.value, m.samples, m.detail))
        else:
            out.append(PointResult(p.label, p.pair.xla, p.pair.jax, "planned"))
    return out


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
    key = s.bench_key() if s.bench_cmd else None
    latest = store.all_latest(key) if store and key else {}
    measured = {p for p in pairs if (p.xla, p.jax) in latest}
    builder = Builder(None, jax, xla, build_spec(s), store)  # the build cache is shared by all workdirs
    built = {p for p in pairs if builder.need(p).value == "cached"}
    todo = [p for p in pairs if s.rerun or _wanted(latest.get((p.xla, p.jax)), s.retry_failed)]
    results = []
    for p in points:
        m = latest.get((p.pair.xla, p.pair.jax))
        status = "cached" if m else "built" if p.pair in built else "planned"
        results.append(PointResult(p.label, p.pair.xla, p.pair.jax, status, m.value if m else None,
                                   m.samples if m else [], m.detail if m else None))
    return ScanReport(results, len(pairs), 0, pin.as_json() if pin else None,
                      plan=DryRunPlan(sum(p not in built for p in todo), len(built),
                                      len(measured) if key else None))


class Measurer:
    """Builds and measures pairs under one set of settings; shared by scan and bisect."""

    def __init__(self, s: Settings, store: Store, xla: GitRepo | None, jax: GitRepo, workspace: Workspace,
                 pin: Pin | None = None):
        self.s = s
        self.store = store
        self.key = s.bench_key()
        self.spec = s.bench_spec()
        self.builder = Builder(workspace, jax, xla, build_spec(s), store)
        if s.cherry_pick:
            from .cherry import parse
            workspace.picks = parse(s.cherry_pick, {r.name: r for r in trees(xla, jax)})
        self.gate = JaxlibGate(jax, pin.detail["jaxlib_version"]) if pin and pin.side == "xla" else None
        self.runs = 0
        self.installed: Pair | None = None  # the pair whose build is installed now

    def untestable(self, pair: Pair) -> str | None:
        """Why ``pair`` cannot be tested at all (--only jax: the installed jaxlib is too old for it)."""
        return self.gate.untestable(pair.jax) if self.gate else None

    def measure(self, pair: Pair, repeats: int | None = None, origin: str = "scan") -> Measurement:
        """Build (or reuse) and benchmark ``pair``; measuring the installed pair again skips the install."""
        why = self.untestable(pair)
        if why:
            m = Measurement(pair.xla, pair.jax, Status.UNTESTABLE.value, None, [], [], why, origin)
            self.store.add_measurement(self.key, m)
            return m
        if pair == self.installed:
            build = None
        else:
            self.installed = None
            build = self.builder.prepare(pair)
        if build is not None and build.status is BuildStatus.INTERRUPTED:
            raise BuildInterrupted(
                f"the build of {pair.short()} was interrupted {BUILD_ATTEMPTS} times ({_first_line(build.tail)};"
                f" log {build.log_path}); nothing was recorded for it",
                "free memory or raise --build-timeout, then run the same command again: it goes on from there")
        if build is not None and build.status is BuildStatus.FAILED:
            m = Measurement(pair.xla, pair.jax, Status.BUILD_FAILED.value, None, [], [],
                            f"build failed: {_last_line(build.tail)} (log {build.log_path})",
                            origin)
        else:
            self.installed = pair
            res = run_benchmark(self.spec, repeats or self.s.repeats, self.store.workdir / "logs", pair.key())
            self.runs += len(res.runs)
            m = Measurement(pair.xla, pair.jax, res.status.value, res.value, res.samples,
                            [r.as_dict() for r in res.runs], res.detail(), origin)
        self.store.add_measurement(self.key, m)
        return m


def _wanted(m: Measurement | None, retry_failed: bool) -> bool:
    """Not measured yet, or (with --retry-failed) its build failed."""
    return m is None or (retry_failed and m.status in (Status.BUILD_FAILED.value, Status.UNTESTABLE.value))


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] if lines else "no output"


def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else "no output"


def run_scan(s: Settings, store: Store | str | os.PathLike,
             on_progress: Callable[[int, int, Pair | None], None] | None = None, executor=None) -> ScanReport:
    """Scan; given a workdir rather than a Store, it is created only once the input is known good.
    ``executor`` (hourly.executor): where pairs are built and measured [default: here, in turn]."""
    check(s)
    xla, jax = open_repos(s)
    if s.sync:
        sync(trees(xla, jax))
    pin = pin_of(s, jax)
    points = plan(s, xla, jax, pin)
    if not isinstance(store, Store):
        store = Store(store)
    return _measure_points(s, store, xla, jax, points, on_progress, pin, executor)


class ScanHost:
    """What a remote executor measures for when a scan asks (see hourly/executor.py): the scan's
    settings, store and benchmark key; its rows are of origin "scan". (The local executor's scan
    is the loop below, unchanged.)"""

    origin = SCAN_ORIGIN

    def __init__(self, s: Settings, store: Store, jax: GitRepo, pin: Pin | None):
        self.s, self.store, self.key = s, store, s.bench_key()
        self._gate = JaxlibGate(jax, pin.detail["jaxlib_version"]) if pin and pin.side == "xla" else None
        self._split = [0, 0]  # jaxlib builds, jax package builds


@holds_store_lock
def _measure_points(s: Settings, store: Store, xla: GitRepo | None, jax: GitRepo, points: list[PlannedPoint],
                    on_progress: Callable[[int, int, Pair | None], None] | None, pin: Pin | None = None,
                    executor=None) -> ScanReport:
    pairs = distinct_pairs(points)
    key = s.bench_key()
    store.save_settings("scan", s.as_dict())
    store.save_settings("pinned", pin.as_json() if pin else {})
    store.save_settings("environment", environment.capture(s.python, s.env_dict()))
    store.save_points(LEVEL, [(p.label, p.pair.xla, p.pair.jax) for p in points])
    latest = store.all_latest(key, origin=SCAN_ORIGIN)
    todo = pairs if s.rerun else [p for p in pairs if _wanted(latest.get((p.xla, p.jax)), s.retry_failed)]
    done = len(pairs) - len(todo)
    if on_progress:
        on_progress(done, len(pairs), None)
    builds = jaxlib_builds = jax_builds = 0
    stopped = None
    # fail fast: the first pair that gets measured decides whether the benchmark works at all
    # (unless an earlier run of this scan already measured one)
    checked = s.keep_going or any(m.status == Status.OK.value for m in latest.values())
    if todo and executor is not None and not isinstance(executor, LocalExecutor):
        host = ScanHost(s, store, jax, pin)
        results = executor.stream(host, [(p, s.repeats) for p in todo])
        for got, b, _ in results:  # W pairs at once; recorded in the scan's order as they come in
            builds += b
            done += 1
            if on_progress:
                on_progress(done, len(pairs), None)
            checked, stopped = _fail_fast(got, s, checked)
            if stopped:
                results.close()  # cancels the jobs still running (Ctrl-C leaves them to be adopted)
                break
        jaxlib_builds, jax_builds = host._split
    elif todo:
        with Workspace(trees(xla, jax), force=s.force) as ws:
            m = Measurer(s, store, xla, jax, ws, pin)
            for pair in todo:
                if on_progress:
                    on_progress(done, len(pairs), pair)
                got = m.measure(pair)
                done += 1
                if on_progress:
                    on_progress(done, len(pairs), None)
                checked, stopped = _fail_fast(got, s, checked)
                if stopped:
                    break
            builds = m.builder.builds_run
            jaxlib_builds, jax_builds = m.builder.jaxlib_builds, m.builder.jax_builds
    if stopped is None and s.confirm_edges and s.mode != "exit":
        more = confirm_edges(s, store, xla, jax, points, pin, on_progress)
        builds, jaxlib_builds, jax_builds = builds + more[0], jaxlib_builds + more[1], jax_builds + more[2]
    results = stored_results(store, key, points)
    checks, as_json, _ = edge_checks(store, key, results, s)
    return ScanReport(results, len(pairs), builds, pin.as_json() if pin else None,
                      jaxlib_builds, jax_builds, stopped=stopped, edge_checks=checks, edge_json=as_json)


def confirm_edges(s: Settings, store: Store, xla: GitRepo | None, jax: GitRepo, points: list[PlannedPoint],
                  pin: Pin | None, on_progress: Callable[[int, int, Pair | None], None] | None = None
                  ) -> tuple[int, int, int]:
    """Measure every unconfirmed edge step's two pairs again, back to back, with
    :func:`confirm_repeats` runs each (rows of origin ``confirm``: the scan's table never changes).
    Returns the builds it ran (total, jaxlib, jax package): none unless a build left the cache."""
    key = s.bench_key()
    _, _, again = edge_checks(store, key, stored_results(store, key, points), s)
    if not again:
        return 0, 0, 0
    with Workspace(trees(xla, jax), force=s.force) as ws:
        m = Measurer(s, store, xla, jax, ws, pin)
        for i, pair in enumerate(again):
            if on_progress:
                on_progress(i, len(again), pair)
            m.measure(pair, confirm_repeats(s), origin=CONFIRM_ORIGIN)
        if on_progress:
            on_progress(len(again), len(again), None)
        return m.builder.builds_run, m.builder.jaxlib_builds, m.builder.jax_builds


def confirm_repeats(s: Settings) -> int:
    return max(CONFIRM_REPEATS, 2 * s.repeats)


def edge_checks(store: Store, key: str, points: list[PointResult], s: Settings
                ) -> tuple[dict[tuple[str, str], EdgeCheck], list[dict], list[Pair]]:
    """The edge steps of the scan's table and what measuring them again said: {step key: check},
    the same for --json, and the pairs still to measure again (no ``confirm`` row newer than
    their latest ``scan`` row: a rerun of the scan asks for a new confirmation)."""
    from .detect import check_edge
    from .steps import edge_check_json, edge_pairs, find_steps, step_key
    if not any(p.status == Status.OK.value and p.value is not None for p in points):
        return {}, [], []
    steps, _, groups = find_steps(points, s.higher_is_better)
    checks: dict[tuple[str, str], EdgeCheck] = {}
    out: list[dict] = []
    todo: list[Pair] = []
    for st in steps:
        pairs = edge_pairs(st.change, groups)
        if pairs is None:
            continue
        rows = [_confirm_rows(store, key, g.point.xla, g.point.jax) for g in pairs[:2]]
        missing = [Pair(g.point.xla, g.point.jax) for g, r in zip(pairs[:2], rows) if not r]
        if missing:
            todo += [p for p in missing if p not in todo]
            continue
        samples = [[x for m in r if m.status == Status.OK.value for x in m.samples] for r in rows]
        check = check_edge(st.change, samples[0], samples[1])
        checks[step_key(st)] = check
        out.append(edge_check_json(st, check, pairs))
    return checks, out, todo


def _confirm_rows(store: Store, key: str, xla: str, jax: str) -> list[Measurement]:
    """A pair's ``confirm`` rows newer than its latest ``scan`` row."""
    rows = store.measurements(key, xla, jax)
    since = max((m.id or 0 for m in rows if m.origin == SCAN_ORIGIN), default=0)
    return [m for m in rows if m.origin == CONFIRM_ORIGIN and (m.id or 0) > since]


def _fail_fast(got: Measurement, s: Settings, checked: bool) -> tuple[bool, UserError | None]:
    """The first pair that gets measured (not a build failure) decides whether the benchmark works at
    all: (checked now, the error that stops the scan when it never worked)."""
    if checked or got.status == Status.BUILD_FAILED.value:
        return checked, None
    return True, never_worked(got, s, first=True) if got.status != Status.OK.value else None


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
    run = next((r for r in m.runs if r.get("status") != Status.OK.value), m.runs[0] if m.runs else {})
    tail = log_tail(run.get("log"))
    where = f"the first measured pair {m.xla[:8]}/{m.jax[:8]}" if first else "every measured pair"
    if s.mode == "exit":
        what = f"exit code {run.get('returncode')}" if run.get("status") == Status.CRASHED.value else m.status
        return UserError(f"the window holds no good state: {where} already fails ({what}; log {run.get('log')})",
                         "start the window earlier with --from, or fix the command"
                         + ("; --keep-going scans on anyway" if first else ""), tail)
    what = {Status.CRASHED.value: f"crashed with exit code {run.get('returncode')}",
            Status.TIMEOUT.value: "timed out",
            Status.NO_METRIC.value: "never printed the metric"}.get(m.status, m.status)
    stop = "; the scan stopped before building the next pair" if first else ""
    return UserError(f"every run of {where} {what} (log {run.get('log')}){stop}",
                     likely_fix(m.status, tail, s)
                     + ("; then run the scan again with --rerun (that pair is stored as failed), or"
                        " --keep-going to scan on anyway" if first else ""), tail)


def show(store: Store, s: Settings) -> ScanReport:
    """The stored scan's table: the scan's own measurements only (never a later command's)."""
    rows = store.points(LEVEL)
    key = s.bench_key()
    latest = store.all_latest(key, origin=SCAN_ORIGIN)
    out = []
    for t, x, j in rows:
        m = latest.get((x, j))
        out.append(PointResult(t, x, j, m.status, m.value, m.samples, m.detail) if m
                   else PointResult(t, x, j, "planned"))
    checks, as_json, _ = edge_checks(store, key, out, s)
    return ScanReport(out, len({(x, j) for _, x, j in rows}), 0, store.load_settings("pinned") or None,
                      edge_checks=checks, edge_json=as_json)


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
    p = next(p for p in pts if p.status != Status.BUILD_FAILED.value)
    store = Store(s.workdir, create=False)
    try:
        m = store.latest(s.bench_key(), p.xla, p.jax, origin=SCAN_ORIGIN)
    finally:
        store.close()
    raise never_worked(m, s, first=False)
