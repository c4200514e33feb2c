"""``hourly nightly``: the guide's daily scan, one nightly container per date.

For each date of the window (both ends included, every ``--every`` days): make the image
available (local, else pulled; a tag that does not exist is recorded as *missing*), read the JAX
and XLA commits and the digest out of it, run the benchmark ``--repeats`` times in fresh
containers (always removed), keep each run's full output under ``<workdir>/logs/nightly/``, and
store the date's result in the workdir's SQLite store (table ``nightly``, and the ``points`` table
at level "nightly" for dates whose commits are known). The report names the good day → bad day
boundary with the exact commits on both sides and the next commands to run.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import threading
import time
import uuid
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from datetime import date, timedelta
from enum import Enum
from pathlib import Path
from typing import Any, Callable

from . import containers
from .bench import DEFAULT_METRIC_REGEX, compile_metric_regex, parse_metric, spread
from .errors import UserError
from .store import Store
from .timeparse import parse_time
from .words import found, plural

LEVEL = "nightly"
DEFAULT_IMAGE = "ghcr.io/nvidia/jax:nightly-{date}"
DEFAULT_BENCH_CMD = "/bin/bash /dir/test.sh"
DEFAULT_MOUNT_TARGET = "/dir"


class NightlyStatus(str, Enum):
    """The outcome of one date (runs use the first four)."""

    OK = "ok"
    CRASHED = "crashed"
    TIMEOUT = "timeout"
    NO_METRIC = "no_metric"
    MISSING = "missing"

    def __str__(self) -> str:
        return self.value


# --------------------------------------------------------------------------------------------
# settings

@dataclass
class NightlySettings:
    from_: str
    to: str
    image: str = DEFAULT_IMAGE
    mounts: list[str] = field(default_factory=list)  # SRC:DST; [] means $PWD:/dir
    gpus: str = "all"
    env: list[str] = field(default_factory=list)
    bench_cmd: str = DEFAULT_BENCH_CMD
    metric_regex: str = DEFAULT_METRIC_REGEX
    repeats: int = 1
    timeout: float | None = None
    every: int = 1
    workdir: str = "hourly-work"
    pull: bool = True
    parallel: int = 1
    rerun: bool = False
    higher_is_better: bool = True

    def effective_mounts(self) -> list[str]:
        return list(self.mounts) or [f"{os.getcwd()}:{DEFAULT_MOUNT_TARGET}"]

    def container_workdir(self) -> str | None:
        """Runs start in /dir when something is mounted there (so relative commands work)."""
        targets = [m.split(":")[1] for m in self.effective_mounts() if m.count(":") >= 1]
        return DEFAULT_MOUNT_TARGET if DEFAULT_MOUNT_TARGET in targets else None

    def argv(self) -> list[str]:
        import shlex
        try:
            argv = shlex.split(self.bench_cmd)
        except ValueError as e:
            raise UserError(f"cannot split --bench-cmd ({e})", "check its quotes") from e
        if not argv:
            raise UserError("empty --bench-cmd", f"pass the benchmark command, e.g. {DEFAULT_BENCH_CMD!r}")
        return argv

    def key(self) -> str:
        """What makes two nightly results comparable: images, command, mounts, env, regex.

        GPU selection and parallelism are left out: they change where a run happens, not what.
        """
        mounts = []
        for m in self.effective_mounts():
            src, _, rest = m.partition(":")
            mounts.append(f"{Path(src).expanduser().absolute()}:{rest}")
        ident = {"image": self.image, "cmd": self.argv(), "mounts": mounts,
                 "env": sorted(self.env), "regex": self.metric_regex}
        return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:16]

    def validate(self) -> None:
        """Check every setting before anything runs; pins the default mount to $PWD now, so
        the stored settings (and `--show` from elsewhere) keep meaning the same directory."""
        if not self.mounts:
            self.mounts = self.effective_mounts()
        if "{date}" not in self.image:
            raise UserError(f"--image {self.image!r} has no {{date}}",
                            "write it like ghcr.io/nvidia/jax:nightly-{date}")
        if not isinstance(self.repeats, int) or self.repeats < 1:
            raise UserError(f"--repeats must be 1 or more, not {self.repeats!r}", "pass --repeats 1")
        if self.every < 1:
            raise UserError(f"--every must be 1 or more days, not {self.every}", "pass --every 1")
        date_range(self.from_, self.to, self.every)  # the dates parse and are in order
        if self.parallel < 1:
            raise UserError(f"--parallel must be 1 or more, not {self.parallel}", "pass --parallel 1")
        if self.timeout is not None and self.timeout <= 0:
            raise UserError(f"--timeout must be positive, not {self.timeout}", "pass seconds, e.g. 3600")
        compile_metric_regex(self.metric_regex)
        for e in self.env:
            if "=" not in e or e.startswith("="):
                raise UserError(f"--env {e!r} is not KEY=VALUE", "write it as --env KEY=VALUE")
        for m in self.effective_mounts():
            containers.parse_mount(m)
        containers.parse_gpus(self.gpus)
        gpu_slots(self.gpus, self.parallel)
        self.argv()

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# --------------------------------------------------------------------------------------------
# pure parts

def parse_date(text: str) -> date:
    """A calendar date: 2023-07-06, "Jul 6 2023", … (times are not allowed)."""
    p = parse_time(text)
    if not p.date_only:
        raise UserError(f"{text!r} is a time, the nightly scan takes dates",
                        "pass a date like 2023-07-06")
    return p.when.date()


def date_range(from_: str, to: str, every: int = 1) -> list[date]:
    """Dates from ``from_`` to ``to``, both included, ``every`` days apart."""
    d0, d1 = parse_date(from_), parse_date(to)
    if d1 < d0:
        raise UserError(f"--to {to} is before --from {from_}", "swap them")
    out, d = [], d0
    while d <= d1:
        out.append(d)
        d += timedelta(days=every)
    return out


def image_ref(template: str, d: date) -> str:
    return template.format(date=d.isoformat())


def run_status(exit_code: int | None, timed_out: bool, value: float | None) -> NightlyStatus:
    if timed_out:
        return NightlyStatus.TIMEOUT
    if exit_code != 0:
        return NightlyStatus.CRASHED
    if value is None:
        return NightlyStatus.NO_METRIC
    return NightlyStatus.OK


def aggregate(runs: list[dict[str, Any]]) -> tuple[NightlyStatus, float | None, list[float]]:
    """A date is OK when any run measured (value: median); else its first run's outcome."""
    samples = [r["value"] for r in runs if r["status"] == "ok" and r["value"] is not None]
    if samples:
        return NightlyStatus.OK, statistics.median(samples), samples
    return (NightlyStatus(runs[0]["status"]) if runs else NightlyStatus.NO_METRIC), None, []


def gpu_slots(gpus: str, parallel: int) -> list[str]:
    """The ``--gpus`` value each of ``parallel`` workers uses, one GPU set per worker (pure).

    ``all`` → GPU i for worker i; ``0,3,5`` (or ``device=0,3,5``) → one listed id each; ``N`` →
    N consecutive GPUs each; ``none`` → none for all.
    """
    g = str(gpus).strip().lower()
    if parallel == 1:
        return [g]
    if g in ("none", "0", ""):
        return ["none"] * parallel
    # "device=…" because a bare number means a count to Docker (and to parse_gpus)
    if g == "all":
        return [f"device={i}" for i in range(parallel)]
    if g.isdigit():
        k = int(g)
        return ["device=" + ",".join(str(i * k + j) for j in range(k)) for i in range(parallel)]
    ids = [p.strip() for p in g.removeprefix("device=").split(",") if p.strip()]
    if len(ids) < parallel:
        raise UserError(f"--parallel {parallel} needs at least {parallel} GPUs, --gpus names {len(ids)}",
                        "name more GPUs or lower --parallel")
    return [f"device={i}" for i in ids[:parallel]]


@dataclass
class NightlyPoint:
    date: str
    image: str
    status: NightlyStatus
    digest: str | None = None
    value: float | None = None
    samples: list[float] = field(default_factory=list)
    xla: str | None = None
    jax: str | None = None
    runs: list[dict[str, Any]] = field(default_factory=list)
    detail: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"date": self.date, "image": self.image, "digest": self.digest,
                "status": self.status.value, "value": self.value, "samples": self.samples,
                "xla": self.xla, "jax": self.jax}

    @property
    def spread(self) -> float | None:
        return spread(self.samples)


@dataclass
class Boundary:
    good: NightlyPoint
    bad: NightlyPoint
    kind: str  # "slower" | "crash"
    change: float | None  # relative change of the metric from good to bad

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "change": self.change,
                "good": {k: getattr(self.good, k) for k in ("date", "image", "digest", "xla", "jax")},
                "bad": {k: getattr(self.bad, k) for k in ("date", "image", "digest", "xla", "jax")}}


def detect_steps(points: list[NightlyPoint], higher_is_better: bool = True) -> list:
    """hourly's detection (hourly.steps) over the dates; missing and broken dates are gaps.

    Returns :class:`hourly.steps.Step` objects whose indices are positions in ``points``.
    """
    from .scan import PointResult
    from .steps import find_steps
    if not any(p.status is NightlyStatus.OK for p in points):
        return []
    # a date without commits must not merge with its neighbours: give it its own "pair"
    rows = [PointResult(p.date, p.xla or f"unknown-{p.date}", p.jax or f"unknown-{p.date}",
                        p.status.value, p.value, list(p.samples)) for p in points]
    steps, _, _ = find_steps(rows, higher_is_better)
    return steps


def find_boundary(points: list[NightlyPoint],
                  regressions: list[tuple[int, int, float]]) -> Boundary | None:
    """The good day → bad day to hand to the next phase (pure).

    ``regressions`` are detected slowdowns as (index of the last date before, index of the
    first date after, relative change); the largest wins. Without one, the first OK date
    followed by a crash or timeout.
    """
    if regressions:
        before, after, change = max(regressions, key=lambda r: abs(r[2]))
        return Boundary(points[before], points[after], "slower", change)
    last_ok = None
    for p in points:
        if p.status is NightlyStatus.OK:
            last_ok = p
        elif p.status in (NightlyStatus.CRASHED, NightlyStatus.TIMEOUT) and last_ok is not None:
            return Boundary(last_ok, p, "crash", None)
    return None


def next_commands(b: Boundary, s: NightlySettings) -> list[str]:
    """What to run next: the good day's container, then the hourly scan inside it."""
    import shlex
    container = ["hourly", "container", "--date", b.good.date]
    if s.image != DEFAULT_IMAGE:
        container += ["--image", s.image]
    if s.gpus != "all":
        container += ["--gpus", s.gpus]
    scan = ["hourly", "scan", "--from", b.good.date, "--to", b.bad.date, "--bench-cmd", s.bench_cmd]
    if s.metric_regex != DEFAULT_METRIC_REGEX:
        scan += ["--metric-regex", s.metric_regex]
    return [shlex.join(container), shlex.join(scan)]


# --------------------------------------------------------------------------------------------
# store

def record(store: Store, key: str, p: NightlyPoint) -> None:
    with store.transaction() as c:
        c.execute("INSERT INTO nightly (bench_key, date, image, digest, status, value, samples, runs,"
                  " xla, jax, detail, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                  (key, p.date, p.image, p.digest, p.status.value, p.value, json.dumps(p.samples),
                   json.dumps(p.runs), p.xla, p.jax, p.detail, time.time()))
        if p.xla and p.jax:
            c.execute("INSERT OR REPLACE INTO points VALUES (?, ?, ?, ?)", (LEVEL, p.date, p.xla, p.jax))


def stored(store: Store, key: str) -> dict[str, NightlyPoint]:
    """The latest stored result of every date under ``key``."""
    rows = store.conn.execute("SELECT * FROM nightly WHERE bench_key=? ORDER BY id", (key,))
    return {r["date"]: NightlyPoint(r["date"], r["image"], NightlyStatus(r["status"]), r["digest"],
                                    r["value"], json.loads(r["samples"]), r["xla"], r["jax"],
                                    json.loads(r["runs"]), r["detail"]) for r in rows}


# --------------------------------------------------------------------------------------------
# running

@dataclass
class NightlyReport:
    points: list[NightlyPoint]
    boundary: Boundary | None
    settings: NightlySettings
    measured: int = 0  # dates run now (not from the store)
    steps: list = field(default_factory=list)  # hourly.steps.Step, indices into points

    def as_json(self) -> dict[str, Any]:
        return {"points": [p.as_json() for p in self.points],
                "steps": [st.as_json() for st in self.steps],
                "boundary": self.boundary.as_json() if self.boundary else None}

    def next_commands(self) -> list[str]:
        return next_commands(self.boundary, self.settings) if self.boundary else []


def measure_date(d: date, s: NightlySettings, scan_id: str, gpus: str, log_dir: Path,
                 docker_client=None, stop: threading.Event | None = None) -> NightlyPoint:
    """Image → commits → ``repeats`` runs of the benchmark, for one date (no store access)."""
    ref = image_ref(s.image, d)
    img = containers.ensure_image(ref, pull=s.pull, docker_client=docker_client)
    if not img.present:
        return NightlyPoint(d.isoformat(), ref, NightlyStatus.MISSING, detail=img.reason)
    commits = containers.read_commits(ref, docker_client=docker_client)
    rx = compile_metric_regex(s.metric_regex)
    runs = []
    for i in range(1, s.repeats + 1):
        if stop is not None and stop.is_set():
            raise KeyboardInterrupt
        log = log_dir / f"{d.isoformat()}-run{i}.log"
        res = containers.run_container(
            ref, s.argv(), name=f"hourly-{scan_id}-{d.isoformat()}-{i}",
            labels=containers.scan_labels(scan_id, level=LEVEL, date=d.isoformat(), run=str(i)),
            mounts=s.effective_mounts(), env=s.env, gpus=gpus, timeout=s.timeout,
            workdir=s.container_workdir(), log_path=log, docker_client=docker_client)
        value = parse_metric(res.output, rx)
        status = run_status(res.exit_code, res.timed_out, value)
        runs.append({"status": status.value, "value": value if status is NightlyStatus.OK else None,
                     "returncode": res.exit_code, "duration": round(res.duration, 3), "log": str(log)})
    status, value, samples = aggregate(runs)
    detail = None
    bad = [r for r in runs if r["status"] != "ok"]
    if bad:
        r = bad[0]
        what = {"crashed": f"exit code {r['returncode']}", "timeout": "timed out",
                "no_metric": "metric never printed"}[r["status"]]
        detail = f"{what}; log {r['log']}"
    return NightlyPoint(d.isoformat(), ref, status, img.digest, value, samples, commits.xla,
                        commits.jax, runs, detail)


def run_nightly(s: NightlySettings, store: Store,
                on_progress: Callable[[int, int, str | None], None] | None = None,
                docker_client=None) -> NightlyReport:
    """Measure every date not stored yet (all with ``rerun``; *missing* ones are retried, a
    nightly may have been published since) and return the whole window's report."""
    s.validate()
    dates = date_range(s.from_, s.to, s.every)
    key = s.key()
    store.save_settings(LEVEL, s.as_dict())
    have = stored(store, key)
    todo = [d for d in dates if s.rerun or d.isoformat() not in have
            or have[d.isoformat()].status is NightlyStatus.MISSING]
    total, done = len(dates), len(dates) - len(todo)
    if on_progress:
        on_progress(done, total, None)
    scan_id = f"n{uuid.uuid4().hex[:8]}"
    log_dir = store.workdir / "logs" / "nightly"
    log_dir.mkdir(parents=True, exist_ok=True)
    first = docker_client or containers.client()
    slots = gpu_slots(s.gpus, min(s.parallel, max(1, len(todo))))
    stop = threading.Event()
    try:
        if len(slots) == 1:
            for d in todo:
                if on_progress:
                    on_progress(done, total, d.isoformat())
                record(store, key, measure_date(d, s, scan_id, slots[0], log_dir, first))
                done += 1
                if on_progress:
                    on_progress(done, total, None)
        else:
            done = _run_parallel(todo, s, scan_id, slots, log_dir, store, key, stop,
                                 on_progress, done, total)
    except BaseException:
        stop.set()
        containers.cleanup(f"hourly.scan={scan_id}", docker_client=first)
        raise
    return show(store, s, measured=len(todo), dates=dates)


def _run_parallel(todo, s, scan_id, slots, log_dir, store, key, stop, on_progress, done, total):
    """One worker per GPU slot, each with its own client; results are stored from this thread
    (the SQLite connection belongs to it)."""
    free = list(slots)
    pending: dict[Future, tuple[date, str]] = {}
    queue = list(todo)
    with ThreadPoolExecutor(max_workers=len(slots)) as pool:
        try:
            while queue or pending:
                while queue and free:
                    d, gpu = queue.pop(0), free.pop(0)
                    fut = pool.submit(lambda d=d, gpu=gpu: measure_date(
                        d, s, scan_id, gpu, log_dir, containers.new_client(), stop))
                    pending[fut] = (d, gpu)
                    if on_progress:
                        on_progress(done, total, d.isoformat())
                finished, _ = wait(list(pending), return_when=FIRST_COMPLETED)
                for fut in finished:
                    d, gpu = pending.pop(fut)
                    free.append(gpu)
                    record(store, key, fut.result())
                    done += 1
                    if on_progress:
                        on_progress(done, total, None)
        except BaseException:
            # Workers sit in container.wait(): remove their containers first, or leaving the
            # pool (which joins the workers) would wait for the benchmarks to finish.
            stop.set()
            for fut in pending:
                fut.cancel()
            containers.cleanup(f"hourly.scan={scan_id}")
            raise
    return done


def show(store: Store, s: NightlySettings | None = None, measured: int = 0,
         dates: list[date] | None = None) -> NightlyReport:
    """The stored nightly results (of the last nightly run's settings unless ``s``)."""
    if s is None:
        saved = store.load_settings(LEVEL)
        if not saved:
            raise UserError(f"no nightly results in {store.workdir}",
                            "run `hourly nightly --from ... --to ...` first")
        s = NightlySettings(**saved)
    have = stored(store, s.key())
    if dates is None:
        dates = date_range(s.from_, s.to, s.every)
    points = [have.get(d.isoformat()) or NightlyPoint(d.isoformat(), image_ref(s.image, d),
                                                      NightlyStatus.MISSING, detail="not measured")
              for d in dates]
    steps = detect_steps(points, s.higher_is_better)
    from .detect import ChangeKind
    regressions = [(st.before_index, st.after_index, st.change.relative_change) for st in steps
                   if st.kind is ChangeKind.REGRESSION]
    return NightlyReport(points, find_boundary(points, regressions), s, measured, steps)


# --------------------------------------------------------------------------------------------
# terminal output

def _short(sha: str | None, n: int = 10) -> str:
    return sha[:n] if sha else "-"


def fmt_value(p: NightlyPoint) -> str:
    if p.value is None:
        return p.status.value
    text = f"{p.value:.4g}"
    if p.spread is not None:
        text += f" ±{p.spread * 100:.1f}%"
    return text


def table(report: NightlyReport):
    """The guide's ``grep MLUPS OUT*``, readable: one row per date with image facts, every
    detected step marked (▼ worse, ▲ better) on the first date after it, and the boundary."""
    from rich.table import Table

    from .detect import ChangeKind
    t = Table(title="hourly nightly", caption=f"images: {report.settings.image}")
    t.add_column("date", no_wrap=True)
    t.add_column("digest", no_wrap=True)
    t.add_column("xla", no_wrap=True)
    t.add_column("jax", no_wrap=True)
    t.add_column("metric", justify="right", no_wrap=True)
    t.add_column("", no_wrap=True)
    marks = {st.after_index: ("▼ " if st.kind is ChangeKind.REGRESSION else "▲ ") +
             f"{st.change.relative_change * 100:+.1f}%" for st in report.steps}
    b = report.boundary
    for i, p in enumerate(report.points):
        mark = marks.get(i, "")
        if b and p is b.good:
            mark = "good"
        elif b and p is b.bad:
            mark = f"bad {mark}" if mark else f"bad ({p.status.value})"
        style = None if p.status is NightlyStatus.OK else ("dim" if p.status is NightlyStatus.MISSING else "red")
        t.add_row(p.date, _short((p.digest or "").removeprefix("sha256:") or None, 12),
                  _short(p.xla, 8), _short(p.jax, 8), fmt_value(p), mark, style=style)
    return t


def print_report(console, report: NightlyReport) -> None:
    from .steps import describe
    kw = dict(highlight=False, markup=False, soft_wrap=True)
    console.print(table(report))
    counts: dict[str, int] = {}
    for p in report.points:
        counts[p.status.value] = counts.get(p.status.value, 0) + 1
    console.print(f"{plural(len(report.points), 'date')} ({', '.join(f'{n} {k}' for k, n in counts.items())});"
                  f" {report.measured} measured now, the rest from {report.settings.workdir}", **kw)
    n = len(report.steps)
    console.print(found(n, "step"), **kw)
    for st in report.steps:
        console.print(f"  {describe(st)}", **kw)
    b = report.boundary
    if b is None:
        console.print("no slowdown between good days and no crash after a good day: nothing to hand "
                      "over", **kw)
        return
    what = (f"{b.change * 100:+.1f}%" if b.kind == "slower" else f"{b.bad.status.value}")
    console.print(f"\nboundary: {b.good.date} (good) → {b.bad.date} (bad, {what})", **kw)
    for side, p in (("good", b.good), ("bad", b.bad)):
        console.print(f"  {side}: xla {p.xla or '?'}  jax {p.jax or '?'}  {p.digest or ''}",
                      **kw)
    console.print("next: start the good day's container, then scan the window hour by hour inside it:", **kw)
    for cmd in report.next_commands():
        console.print(f"  {cmd}", **kw)
