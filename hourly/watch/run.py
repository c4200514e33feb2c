"""Running ``hourly watch``: find the new builds of a source, measure each, judge each arrival,
confirm suspected steps by measuring again (interleaved), store alerts, start and read the hunts.

Resumable at every step: builds found are stored before they are measured (``pending``), a build's
measurement is one transaction, a check's interleaved pairs are stored one by one (a killed run
goes on with the pairs it has), a build is judged once its decision is stored, and a hunt keeps its
own store. Two watches on one workdir never run at once: a run holds the workdir's store lock.

The sources (``containers``, ``wheels``, ``commits``) each say what is new, measure a build on
arrival, run a build once (a confirmation's run) and name the command that hunts a window; the
rest is the same for all. The pure parts are in hourly/watch/plan.py.
"""

from __future__ import annotations

import json
import os
import re
import sys
import uuid
from dataclasses import replace
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Protocol

from hourly.adapters import proc
from hourly.adapters.locks import store_lock
from hourly.adapters.store import Store
from hourly.analysis.arrival import Suspect, Verdict, arrival, confirm, plan_pairs
from hourly.errors import ProcessError, UserError
from hourly.events import SILENT, Handler
from hourly.model import Pair, Status
from hourly.options import join
from hourly.text.privacy import env_from_environment, redact_argv, write_private
from hourly.watch.plan import (
    ANSWER,
    EXIT_FILE,
    HUNT_LOG,
    HUNT_TRIES,
    JOB_SCRIPT,
    LEVEL,
    RunNotes,
    WatchReport,
    WatchSettings,
    alert_kind,
    alerts_of,
    bisect_command,
    confirmation_json,
    confirmed_step,
    hunt_dir,
    hunt_outcome,
    in_series,
    job_script,
    nightly_hunt_command,
    recoveries,
    regression_metric,
    series_of,
    stored_watch,
    suspect_json,
    watch_key,
    watch_state,
)
from hourly.watch_records import Alert, Build, Check, HuntOutcome

Values = dict[str, dict[str, Any]]


class Source(Protocol):
    """What differs between the kinds of builds a watch follows."""

    kind: str

    def key(self) -> str:
        """The identity of what is measured (the level's own benchmark key)."""
        ...

    def open(self) -> None: ...

    def close(self) -> None: ...

    def discover(self, known: list[Build], since: str, until: datetime) -> tuple[list[Build], list[str]]:
        """The builds after the newest known one (none known: from ``since``, the watch's first date
        or time), up to ``until``, oldest first (``build``,
        ``time``, ``ident``, ``status``: ``pending``, or ``missing`` with a ``detail``), and notes."""
        ...

    def measure(self, build: Build) -> tuple[str, str | None, dict[str, Any], Values]:
        """A build measured on arrival: status, detail, what it is (``ident``), values per metric."""
        ...

    def run_once(self, build: Build) -> dict[str, float | None]:
        """One run of a build, for a confirmation: its value per metric (None: the run failed)."""
        ...

    def hunt_command(self, before: Build, after: Build, workdir: Path, metric: str | None = None
                     ) -> tuple[list[str] | None, str, str]:
        """(the command that hunts the window, ``hunt`` or ``bisect``, why none when None);
        ``metric``: the named metric whose regression it is (the hunt follows it)."""
        ...


def _day(text: str) -> date:
    from hourly.text.timeparse import parse_time
    return parse_time(text).when.date()


def _metric_values(metric: str, value: float | None, samples: list[float], runs: list[dict]) -> Values:
    return {metric: {"value": value, "samples": list(samples), "runs": list(runs)}}


def known_metrics(store: Store, w: WatchSettings) -> list[str]:
    """The series a watch keeps so far (every metric measured once), the primary first."""
    key = (store.load_settings(LEVEL) or {}).get("key")
    seen = sorted({m for v in store.watch_values(key).values() for m in v}) if key else []
    return list(dict.fromkeys([*w.primary(), *seen]))


def named_values(w: WatchSettings, rows: list[tuple[str, str, float | None, list[float], list[dict]]],
                 known: list[str]) -> tuple[str, str | None, Values]:
    """One build's measurement as the watch keeps it (pure): ``rows`` are (metric, status, value,
    samples, runs), one per named metric (hourly.measure.benchmark.metric_views; ``''``: the regex's
    one metric, or with named metrics a measurement that measured no name, which holds for every
    metric: each ``known`` series gets a gap). A metric every run called unavailable (``UNAVAILABLE
    name: reason``: device memory on the CPU) starts no series; one already kept gets a gap. The
    build's status: ok when any metric measured, else the first row's."""
    values: Values = {}
    for metric, status, value, samples, runs in rows:
        counted = [r for r in runs if not r.get("warmup")]
        if metric and metric not in known and status == Status.NO_METRIC.value and counted \
                and all(r.get("unavailable") for r in counted):
            continue  # a metric the benchmark says it cannot give here (UNAVAILABLE), never measured: no series
        if metric:
            values.update(_metric_values(metric, value, samples, runs))
        elif w.metrics is None:
            values.update(_metric_values(w.metric, value, samples, runs))
        else:
            for name in known:
                values.update(_metric_values(name, None, [], runs))
    ok = [r for r in rows if r[1] == Status.OK.value]
    return (Status.OK.value, None, values) if ok else (rows[0][1], None, values)


def _read_once(output: str, returncode: int | None, timed_out: bool, log: str, spec: Any, w: WatchSettings
               ) -> dict[str, float | None]:
    """One confirmation run's value per metric, its output read as a measurement's (the regex's
    last match, or with --metric-samples all the median of its samples; every named metric's)."""
    from hourly.measure.benchmark import metric_views, read_run, result_of
    run = read_run(output, returncode, timed_out, 0.0, log, spec)
    views = metric_views(result_of([run], spec), spec.metrics)
    return {(name or w.metric): r.value for name, r in views if name or w.metrics is None}


# --------------------------------------------------------------------------------------------
# containers: a nightly image a day


class Containers:
    """Nightly images (``--image`` with ``{date}``): each date's tag tried after the newest
    build found (or the registry's tags listed, ``--list-tags``), measured as ``hourly nightly``
    measures a date (hourly/nightly/run.py)."""

    kind = "containers"

    def __init__(self, w: WatchSettings, store: Store, docker_client: Any = None) -> None:
        from hourly.nightly.plan import NightlySettings
        self.w = w
        self.store = store
        self.s = NightlySettings(**w.level)
        self._client = docker_client
        self._run_id = ""
        self._owner: Any = None
        self._runs = 0

    def key(self) -> str:
        return self.s.key()

    def open(self) -> None:
        from hourly.adapters import containers
        from hourly.adapters.locks import run_lock
        from hourly.adapters.stale_runs import remove_dead_runs
        self._client = self._client or containers.client()
        remove_dead_runs(self._client)  # containers of a watch killed before (kill -9, reboot)
        self._run_id = f"w{uuid.uuid4().hex[:8]}"
        self._owner = run_lock(self._run_id).acquire()  # while held, this run's containers are known alive

    def close(self) -> None:
        from hourly.adapters import containers
        if self._owner is None:
            return
        try:
            containers.cleanup(f"hourly.scan={self._run_id}", docker_client=self._client)
        finally:
            self._owner.release()
            self._owner.path.unlink(missing_ok=True)
            self._owner = None

    def _dates(self, start: date, last: date) -> list[date]:
        from hourly.nightly.plan import image_ref
        days = [start + timedelta(days=i) for i in range((last - start).days + 1)]
        if not self.w.list_tags:
            return days
        from hourly.adapters.containers import _split_ref
        from hourly.adapters.registry import list_tags
        repo, _ = _split_ref(image_ref(self.s.image, start))
        tags = set(list_tags(repo))
        return [d for d in days if _split_ref(image_ref(self.s.image, d))[1] in tags]

    def discover(self, known: list[Build], since: str, until: datetime) -> tuple[list[Build], list[str]]:
        from hourly.adapters import containers
        from hourly.nightly.plan import image_ref
        present = [b for b in known if b.status != "missing"]
        start = _day(present[-1].build) + timedelta(days=1) if present else _day(since)
        if known and not present:
            start = max(start, _day(known[-1].build) + timedelta(days=1))
        found: list[Build] = []
        absent: list[tuple[date, str]] = []
        for d in self._dates(start, until.date()):
            ref = image_ref(self.s.image, d)
            img = containers.ensure_image(ref, pull=self.s.pull, docker_client=self._client)
            if not img.present:
                absent.append((d, img.reason))
                continue
            # a date without an image before one with an image will have none: a gap of the series
            found += [Build(m.isoformat(), m.isoformat(), "missing", why, {"image": image_ref(self.s.image, m)})
                      for m, why in absent]
            absent = []
            found.append(Build(d.isoformat(), d.isoformat(), "pending", None, {"image": ref, "digest": img.digest}))
        notes = []
        if absent:
            notes.append(f"no image yet for {absent[0][0]}" + (f" .. {absent[-1][0]}" if len(absent) > 1 else "")
                         + f" ({image_ref(self.s.image, absent[0][0])}: {absent[0][1]}); looked for again next run")
        return found, notes

    def measure(self, build: Build) -> tuple[str, str | None, dict[str, Any], Values]:
        from hourly.nightly.run import measure_day
        log_dir = self.store.logs / "watch"
        log_dir.mkdir(parents=True, exist_ok=True)
        known = known_metrics(self.store, self.w)
        got = measure_day(_day(build.build), self.s, self._run_id, self.s.gpus, log_dir, self._client,
                          known=known if self.w.metrics is not None else None)
        p = got[0]
        ident = {"image": p.image, "digest": p.digest, "xla": p.xla, "jax": p.jax}
        status, _, values = named_values(self.w, [(x.metric, x.status.value, x.value, x.samples, x.runs) for x in got],
                                         known)
        detail = None if status == Status.OK.value else next((x.detail for x in got if x.detail), None)
        return status, detail, ident, values

    def run_once(self, build: Build) -> dict[str, float | None]:
        from hourly.adapters import containers
        from hourly.adapters.locks import owner_labels
        self._runs += 1
        d = build.build
        log = self.store.logs / "watch" / f"confirm-{d}-{self._run_id}-{self._runs}.log"
        res = containers.run_container(
            build.ident["image"], self.s.argv(), name=f"hourly-{self._run_id}-{d}-c{self._runs}",
            labels={**containers.scan_labels(self._run_id, level=LEVEL, date=d), **owner_labels(self._run_id)},
            mounts=self.s.effective_mounts(), env=self.s.env, gpus=self.s.gpus, timeout=self.s.timeout,
            workdir=self.s.container_workdir(), log_path=log, docker_client=self._client)
        return _read_once(res.output, res.exit_code, res.timed_out, str(log), self.s.read_spec(), self.w)

    def hunt_command(self, before: Build, after: Build, workdir: Path, metric: str | None = None
                     ) -> tuple[list[str] | None, str, str]:
        return (nightly_hunt_command(self.s.as_dict(), before.build, after.build, self.w, workdir,
                                     metric=metric), "hunt", "")


# --------------------------------------------------------------------------------------------
# wheels: nightly wheels on a package index

_DEV_DATE = re.compile(r"\.dev(\d{8})$")


def dev_date(version: str) -> date | None:
    """The date of a nightly version (``0.4.36.dev20241001`` → 2024-10-01); None for any other."""
    m = _DEV_DATE.search(version)
    if not m:
        return None
    try:
        return datetime.strptime(m.group(1), "%Y%m%d").date()
    except ValueError:
        return None


class Wheels:
    """Nightly jax wheels (``X.Y.Z.devYYYYMMDD``) on an index or in a ``--find-links`` folder: each
    with its jaxlib in an environment of its own, as ``hourly releases`` makes them."""

    kind = "wheels"

    def __init__(self, w: WatchSettings, store: Store):
        from hourly.adapters.venvs import choose_installer, target_python
        from hourly.releases.plan import ReleaseSettings
        self.w = w
        self.store = store
        self.s = ReleaseSettings(**{**w.level, "pre": True})
        self.target = target_python(self.s.python)
        self.installer = choose_installer(self.s.installer)
        self._envs: dict[str, Any] = {}
        self._runs = 0

    def key(self) -> str:
        return self.s.key(self.target)

    def open(self) -> None:
        pass

    def close(self) -> None:
        pass

    def discover(self, known: list[Build], since: str, until: datetime) -> tuple[list[Build], list[str]]:
        from packaging.version import Version

        from hourly.releases.plan import plan_releases
        index = self.s.make_index()
        newest = Version(known[-1].build) if known else None
        first = _day(since)
        versions = sorted({f.version for f in index.files("jax")})
        new = [v for v in versions if (d := dev_date(str(v))) is not None and first <= d <= until.date()
               and (newest is None or v > newest)]
        if not new:
            return [], []
        planned = {p.version: p for p in plan_releases(index, replace(self.s, from_=str(new[0]), to=str(new[-1])),
                                                       self.target)}
        found = []
        for v in new:
            p = planned.get(str(v))
            if p is None:
                continue
            ident = {"version": p.version, "jaxlib": p.jaxlib, "released": p.released}
            found.append(Build(p.version, p.released or str(dev_date(p.version)),
                               "missing" if p.missing else "pending", p.missing, ident))
        return found, []

    def _env(self, build: Build) -> tuple[Path, Any]:
        from hourly.adapters.venvs import ensure_env
        from hourly.releases.plan import Planned
        from hourly.releases.run import as_of_release_args, env_name
        v = build.ident
        if v["version"] not in self._envs:
            p = Planned(v["version"], v["jaxlib"], v.get("released"))
            env = Path(self.s.cache_dir) / env_name(self.target, p, self.s)
            args = self.s.make_index().installer_args()
            if self.s.deps_as_of_release:
                args += as_of_release_args(p.released, datetime.now(timezone.utc))
            log = self.store.logs / "watch" / f"install-jax-{p.version}.log"
            log.parent.mkdir(parents=True, exist_ok=True)
            self._envs[v["version"]] = (env, ensure_env(env, self.s.requirements(p.version, p.jaxlib or p.version),
                                                        args, self.installer, self.target, log, True))
        return self._envs[v["version"]]

    def _spec(self, build: Build) -> Any:
        from dataclasses import replace as with_
        env, made = self._env(build)
        read = self.s.read_spec()  # how a run's output is read: the regex's metric, its samples, named metrics
        return with_(read, cmd=self.s.argv(), cwd=self.s.bench_cwd,
                     env={**self.s.env_dict(), "VIRTUAL_ENV": str(env)}, timeout=self.s.timeout, python=made.python)

    def measure(self, build: Build) -> tuple[str, str | None, dict[str, Any], Values]:
        from hourly.measure.benchmark import metric_views, run_benchmark
        known = known_metrics(self.store, self.w)
        try:
            spec = self._spec(build)
        except ProcessError as e:
            _, _, values = named_values(self.w, [("", Status.INSTALL_FAILED.value, None, [], [])], known)
            return (Status.INSTALL_FAILED.value, f"{self.installer.kind.value} failed; log {e.log_path}",
                    build.ident, values)
        log_dir = self.store.logs / "watch"
        res = run_benchmark(spec, self.s.repeats, log_dir, f"jax-{build.build}")
        views = metric_views(res, spec.metrics, known)
        status, _, values = named_values(self.w, [(name, r.status.value, r.value, r.samples,
                                                   [x.as_dict() for x in r.runs]) for name, r in views], known)
        detail = None if status == Status.OK.value else next((r.detail() for _, r in views if r.detail()), None)
        return status, detail, build.ident, values

    def run_once(self, build: Build) -> dict[str, float | None]:
        from hourly.measure.benchmark import metric_views, run_benchmark
        self._runs += 1
        spec = self._spec(build)
        res = run_benchmark(spec, 1, self.store.logs / "watch", f"confirm-jax-{build.build}")
        return {(name or self.w.metric): r.value for name, r in metric_views(res, spec.metrics)
                if name or self.w.metrics is None}

    def hunt_command(self, before: Build, after: Build, workdir: Path, metric: str | None = None
                     ) -> tuple[list[str] | None, str, str]:
        good, bad = dev_date(before.build), dev_date(after.build)
        if self.w.hunt_image is None or good is None or bad is None:
            return None, "hunt", ("a wheels watch hunts in the nightly containers of the two dates: pass "
                                  "--hunt-image (e.g. ghcr.io/nvidia/jax:nightly-{date}) with the benchmark's "
                                  "--hunt-arg options, or run the command below")
        level = {"image": self.w.hunt_image, "bench_cmd": self.s.bench_cmd, "metric_regex": self.s.metric_regex,
                 "repeats": self.s.repeats, "env": self.s.env, "timeout": self.s.timeout,
                 "metric_samples": self.s.metric_samples, "warmup_samples": self.s.warmup_samples}
        return (nightly_hunt_command(level, good.isoformat(), bad.isoformat(), self.w, workdir,
                                     self.w.hunt_image, metric), "hunt", "")


# --------------------------------------------------------------------------------------------
# commits: the first-parent history of JAX and XLA, every --step


class Commits:
    """The (xla, jax) pair that stood at each instant every ``--step`` (resolved as the scan
    resolves them), a new build whenever the pair changed; built and measured with the scan's
    :class:`~hourly.execute.host.MeasuringHost` (origin ``watch``)."""

    kind = "commits"

    def __init__(self, w: WatchSettings, store: Store):
        from hourly.measure.settings import FIELD_NAMES, Settings, keyed
        self.w = w
        self.store = store
        self.s = keyed(Settings(**{k: v for k, v in w.level.items() if k in FIELD_NAMES}))
        self._host: Any = None
        self._lock: Any = None
        self._repos: Any = None

    def key(self) -> str:
        return self.s.bench_key()

    def open(self) -> None:
        from hourly.measure.measurer import open_repos, pin_of
        xla, jax = open_repos(self.s)
        self._repos = (xla, jax, pin_of(self.s, jax))

    def _measuring(self) -> Any:
        """The host that builds and measures, made on the first measurement: a run with nothing new
        takes neither the trees nor --python (a hunt's job may be using its own environment over it)."""
        from hourly.adapters.locks import python_env_lock
        from hourly.execute.host import MeasuringHost
        if self._host is None:
            self._lock = python_env_lock(self.s.python).acquire()  # builds are installed into --python
            xla, jax, pin = self._repos
            self._host = MeasuringHost(self.s, self.store, xla, jax, pin, LEVEL, self.key())
        return self._host

    def close(self) -> None:
        try:
            if self._host is not None:
                self._host.close()  # the trees are given back before any hunt takes them
        finally:
            self._host = None
            if self._lock is not None:
                self._lock.release()
                self._lock = None

    def discover(self, known: list[Build], since: str, until: datetime) -> tuple[list[Build], list[str]]:
        from hourly.measure.measurer import trees
        from hourly.measure.resolve import resolve_pairs
        from hourly.scan.run import sync
        from hourly.text.timeparse import instants, parse_step, parse_time
        xla, jax, pin = self._repos
        if self.s.sync:
            sync(trees(xla, jax))
        step = parse_step(self.w.step)
        t0 = parse_time(since, self.s.tz).when
        last = parse_time(known[-1].time or "").when if known else None
        times = [t for t in instants(t0, until, step) if last is None or t > last]
        if not times:
            return [], []
        points = resolve_pairs(xla, jax, times, self.s.refs(), self.s.first_parent, pin)
        found = []
        previous = Pair(known[-1].ident["xla"], known[-1].ident["jax"]) if known else None
        for p in points:
            if p.pair == previous:
                continue  # nothing merged since: no new build
            previous = p.pair
            found.append(Build(p.label, p.label, "pending", None, {"xla": p.pair.xla, "jax": p.pair.jax}))
        return found, []

    def _rows(self, pair: Pair, count: int) -> list[Any]:
        """Every row one measurement recorded (one per named metric; the regex's one)."""
        host = self._measuring()
        host.measure(pair, count)
        return list(host.measurer().last_rows)

    def measure(self, build: Build) -> tuple[str, str | None, dict[str, Any], Values]:
        rows = self._rows(Pair(build.ident["xla"], build.ident["jax"]), self.s.repeats)
        status, _, values = named_values(self.w, [(m.metric, m.status, m.value, m.samples, m.runs) for m in rows],
                                         known_metrics(self.store, self.w))
        detail = None if status == Status.OK.value else next((m.detail for m in rows if m.detail), None)
        return status, detail, build.ident, values

    def run_once(self, build: Build) -> dict[str, float | None]:
        """One run of a build for a confirmation, which alternates two builds: each is installed once
        into an environment of its own over --python (``<workdir>/states``, as a bisection's paired
        rounds keep their states), not again at every switch; where it cannot be (--python an
        overlay already), each switch installs it into --python again."""
        from hourly.measure.measurer import StateEnvs
        measurer = self._measuring().measurer()
        if measurer.envs is None:  # the arrivals before it were measured installed into --python
            measurer.envs = StateEnvs(replace(self.s, workdir=str(self.store.workdir)), self.store.logs)
        rows = self._rows(Pair(build.ident["xla"], build.ident["jax"]), 1)
        return {(m.metric or self.w.metric): m.value if m.status == Status.OK.value else None
                for m in rows if m.metric or self.w.metrics is None}

    def hunt_command(self, before: Build, after: Build, workdir: Path, metric: str | None = None
                     ) -> tuple[list[str] | None, str, str]:
        return (bisect_command(self.s.as_dict(), before.ident, after.ident, self.w, workdir, metric),
                "bisect", "")


def make_source(w: WatchSettings, store: Store, docker_client: Any = None) -> Source:
    if w.source == "containers":
        return Containers(w, store, docker_client)
    if w.source == "wheels":
        return Wheels(w, store)
    return Commits(w, store)


# --------------------------------------------------------------------------------------------
# the run


def now_utc() -> datetime:
    return datetime.now(timezone.utc)


def until_of(w: WatchSettings) -> datetime:
    """Where this run stops: the end of ``--until`` (:meth:`WatchSettings.until_end`), else now."""
    return w.until_end() or now_utc()


def _identity(store: Store, w: WatchSettings, key: str, until: datetime) -> WatchSettings:
    """One watch per workdir: a run with another source or benchmark is refused; the first run's
    ``--since`` (default: :data:`~hourly.watch.plan.DEFAULT_SINCE_DAYS` before it) is kept. The
    settings this run watches with: ``w`` with that ``--since``."""
    from hourly.watch.plan import DEFAULT_SINCE_DAYS
    saved = store.load_settings(LEVEL)
    if saved and saved.get("key") != key:
        was = saved.get("settings") or {}
        raise UserError(f"{store.workdir} keeps the series of another watch (source {was.get('source')}, "
                        f"metric {was.get('metric')}, its own benchmark and build)",
                        "pass another --workdir, or the options of that watch's first run")
    if w.since is None:
        w = replace(w, since=(saved or {}).get("since") or (until - timedelta(days=DEFAULT_SINCE_DAYS)).date().isoformat())
    store.save_settings(LEVEL, {"settings": w.as_dict(), "key": key, "since": (saved or {}).get("since") or w.since})
    return w


def run_watch(w: WatchSettings, store: Store, handler: Handler = SILENT, *, show: bool = False,
              source: Source | None = None) -> WatchReport:
    """Look for new builds, measure and judge each, confirm, alert, hunt (``show``: none of it,
    the stored state alone). Holds the workdir's store lock: one watch at a time per workdir."""
    w.validate()
    if show:  # the stored watch as it is: read only, no lock taken, nothing written
        saved = store.load_settings(LEVEL) or {}
        if not saved.get("key"):
            raise UserError(f"no watch in {store.workdir}", "start one with --source containers, wheels or commits")
        return stored_watch(store, w, saved["key"], RunNotes(showed=True))
    src = source or make_source(w, store)
    key = watch_key(w.source, src.key(), w.metric)
    with store_lock(store.workdir):
        until = until_of(w)
        w = _identity(store, w, key, until)
        run = RunNotes()
        src.open()
        try:
            _arrivals(w, store, key, src, until, handler, run)
        finally:
            src.close()  # trees and the Python environment given back before a hunt takes them
        _hunts(w, store, key, src, handler, run)
        _recoveries(w, store, key)
        return stored_watch(store, w, key, run)


def _arrivals(w: WatchSettings, store: Store, key: str, src: Source, until: datetime, handler: Handler,
              run: RunNotes) -> None:
    handler.note(f"looking for new {src.kind} builds up to {until:%Y-%m-%d %H:%M} UTC")
    new, notes = src.discover(store.watch_builds(key), w.since or "", until)
    run.notes += notes
    if new:
        store.add_watch_builds(key, new)
        run.new_builds = [b.build for b in new if b.status != "missing"]
    pending = [b for b in store.watch_builds(key) if b.status == "pending"]
    for i, b in enumerate(pending):
        handler.progress(i, len(pending), f"measuring {b.build}")
        status, detail, ident, values = src.measure(b)
        store.measured_watch_build(key, b.build, status, detail, ident, values)
        run.measured.append(b.build)
    if pending:
        handler.progress(len(pending), len(pending), None)
    for b in store.watch_builds(key):
        if in_series(b) and b.decision is None:
            _judge(w, store, key, src, b, handler, run)


def _judge(w: WatchSettings, store: Store, key: str, src: Source, b: Build, handler: Handler,
           run: RunNotes) -> None:
    """The arrival of ``b``: each metric's series up to it judged, each suspect measured again,
    confirmed steps grouped into alerts; then its decision is stored (judged once)."""
    builds = store.watch_builds(key)
    values = store.watch_values(key)
    checks = store.watch_checks(key)
    metrics = sorted({m for v in values.values() for m in v}) or w.primary()
    before_it = {x.build for x in builds if x.seq < b.seq}
    decision: dict[str, Any] = {}
    steps = []
    ids: list[str] = []
    for metric in metrics:
        ids, points = series_of(builds, values, metric)
        index_of = {bid: i for i, bid in enumerate(ids)}
        i = index_of[b.build]
        since, level_from, judged, rejected = watch_state(metric, checks, index_of, before_it)
        higher = w.direction_of(metric)  # a named metric's unit says (trace_ms: lower is better)
        a = arrival(points[:i + 1], higher_is_better=higher, min_change=w.min_change,
                    since=since, level_from=level_from, judged=judged, rejected=rejected)
        d: dict[str, Any] = {"status": a.status.value, "why": a.why, "noise": a.noise, "checks": []}
        decision[metric] = d
        for sus in a.suspects:
            if sus.after_index < since:
                continue
            check = store.watch_check(key, metric, b.build, ids[sus.before_index], ids[sus.after_index],
                                      suspect_json(sus, ids))
            if check.verdict == "pending":
                handler.note(f"{b.build}: {metric} {sus.relative_change:+.1%} suspected between "
                             f"{ids[sus.before_index]} and {ids[sus.after_index]}: measuring both again, interleaved")
                check = _confirm(w, store, src, check, sus, builds, handler)
                run.checks.append(check.id)
            d["checks"].append(check.id)
            if check.verdict == "confirmed":
                steps.append((check.id, confirmed_step(check, index_of, higher)))
                level_from, since = sus.after_index, sus.after_index + 1
            else:
                judged.add((sus.before_index, sus.after_index))
    for check_ids, lo, hi in alerts_of(steps):
        store.watch_alert(key, b.build, ids[lo], ids[hi], check_ids)
    store.judged_watch_build(key, b.build, decision)
    run.judged.append(b.build)


def _confirm(w: WatchSettings, store: Store, src: Source, check: Check, sus: Suspect, builds: list[Build],
             handler: Handler) -> Check:
    """Measure the check's two builds again, alternately (old, new, old, new, ...), one stored pair
    at a time, until :func:`~hourly.analysis.arrival.confirm` settles or the cap is reached."""
    by_id = {b.build: b for b in builds}
    old_b, new_b = by_id[check.before], by_id[check.after]
    metric = check.metric
    runs = store.watch_runs(check.id)
    want = plan_pairs(sus.relative_change, sus.noise, min_change=w.min_change, cap=w.max_pairs)
    limit = 2 * w.max_pairs  # pairs tried in all, failed runs included
    note = None
    while True:
        c = confirm([r[0] for r in runs], [r[1] for r in runs], min_change=w.min_change, cap=w.max_pairs,
                    window=sus.after_index - sus.before_index)
        if c.verdict is not Verdict.MORE:
            break
        want = max(want, c.next_pairs)
        if len(runs) >= limit:
            c = replace(c, verdict=Verdict.UNDECIDED)
            note = f"{len(runs) - c.pairs} of {len(runs)} pairs had a failed run"
            break
        for _ in range(min(want - c.pairs, limit - len(runs))):
            handler.progress(len(runs), want, f"pair {len(runs) + 1}: {old_b.build}, then {new_b.build}")
            o = src.run_once(old_b).get(metric)
            n = src.run_once(new_b).get(metric)
            store.add_watch_run(check.id, o, n)
            runs.append((o, n))
    result = confirmation_json(c)
    if note:
        result["note"] = note
    store.finish_watch_check(check.id, c.verdict.value, result)
    handler.note(f"  {c.verdict.value}: {c.change:+.2%} over {c.pairs} interleaved pairs"
                 + (f" ({c.note})" if c.note else ""))
    return next(x for x in store.watch_checks(check.watch) if x.id == check.id)


# --------------------------------------------------------------------------------------------
# hunts

FINAL = ("culprit", "unsure", "not started", "off", "not hunted")


def _hunts(w: WatchSettings, store: Store, key: str, src: Source, handler: Handler, run: RunNotes) -> None:
    """Every confirmed regression's hunt: started (here, waited for; or as a Slurm job, read by a
    later run), its answer read into the alert: the culprit, or why it ended unsure."""
    report = stored_watch(store, w, key)
    for a in report.alerts:
        h = a.hunt
        if h is not None and (h.status in FINAL or (h.status == "failed" and (h.tries or 0) >= HUNT_TRIES)):
            continue
        before, after = report.build(a.before), report.build(a.after)
        wd = hunt_dir(store.workdir, a.id)
        argv, kind, why = src.hunt_command(before, after, wd, regression_metric(a, report))
        if alert_kind(a, report) != "regression":
            store.update_watch_alert(a.id, hunt=HuntOutcome.from_json({"status": "not hunted",
                                                                       "reason": "an improvement"}))
            continue
        if argv is None:
            store.update_watch_alert(a.id, hunt=HuntOutcome.from_json({"status": "not started", "reason": why,
                                                                       "command": None}))
            continue
        if not w.hunt:
            store.update_watch_alert(a.id, hunt=HuntOutcome.from_json({"status": "off", "reason": "--no-hunt",
                                                                       "command": _shown(argv)}))
            continue
        if h is not None and h.status in ("submitted", "running"):
            got = _slurm_poll(h, wd, kind)
        else:
            got = _start(w, a, argv, kind, wd, handler)
        tries = ((h.tries or 0) if h else 0) + (1 if got.status == "failed" else 0)
        if got.answered:
            got = got.updated(report=_hunt_report(wd, kind))
        got = HuntOutcome.from_json({"command": (h.command if h else None) or _shown(argv), **got.to_json(),
                                     "kind": kind, "workdir": str(wd), "tries": tries})
        events = ["hunted"] if got.answered or (got.status == "failed" and tries >= HUNT_TRIES) else []
        store.update_watch_alert(a.id, hunt=got, add_events=events)
        if got.status != (h.status if h else None) or got.status == "failed":  # not a job still running
            run.hunted.append(a.id)


def _shown(argv: list[str]) -> list[str]:
    """A hunt's command as stored and shown: a secret passed as ``--env NAME`` (taken from the
    environment of whoever runs it again), any other secret-looking value redacted."""
    return redact_argv(env_from_environment(argv)[0])


def _job_name(watch: str) -> str:
    return f"hourly-watch-{watch[:8]}"


def _start(w: WatchSettings, a: Alert, argv: list[str], kind: str, wd: Path,
           handler: Handler) -> HuntOutcome:
    wd.mkdir(parents=True, exist_ok=True)
    if "--python" in argv:  # a bisection builds and installs: into an environment of its own over --python
        from hourly.adapters.venvs import overlay_env
        i = argv.index("--python") + 1
        argv = [*argv[:i], overlay_env(wd / "python-env", argv[i], wd / "python-env.log"), *argv[i + 1:]]
    # a secret's value is no word of the script: the script passes --env NAME, the hunt takes the
    # value from its environment (the hunt's own store and scripts then hold no value either)
    argv, secrets = env_from_environment(argv)
    script = wd / JOB_SCRIPT
    write_private(script, job_script(argv, sys.executable, wd), 0o700)
    if w.executor == "slurm":
        from hourly.adapters.slurm import Slurm, SubmitOptions
        sl = w.slurm or {}
        job = Slurm().submit(script, name=_job_name(a.watch), comment=f"hourly-watch:{a.id}",
                             output=wd / "slurm-%j.out", chdir=wd,
                             options=SubmitOptions(sl.get("partition"), sl.get("time"), sl.get("gres"),
                                                   tuple(sl.get("extra") or ())),
                             env={**os.environ, **secrets} if secrets else None)
        handler.note(f"alert {a.id}: the hunt is Slurm job {job}: {join(argv)}")
        return HuntOutcome.from_json({"status": "submitted", "job": job, "job_name": _job_name(a.watch),
                                      "command": _shown(argv)})
    handler.note(f"alert {a.id}: hunting ({wd / HUNT_LOG}): {join(argv)}")
    res = proc.run(["sh", str(script)], cwd=wd, check=False, env={**os.environ, **secrets} if secrets else None)
    return _read_answer(wd, kind, res.returncode).updated(command=_shown(argv))


def _hunt_report(wd: Path, kind: str) -> str | None:
    """``hourly report`` of a finished ``hourly hunt``'s workdir (its daily table and answers), for
    the page to link; None when there is none (a bisection's workdir has its answer and log)."""
    if kind != "hunt":
        return None
    res = proc.run([sys.executable, "-m", "hourly", "report", "--workdir", str(wd)], cwd=wd, check=False,
                   timeout=600, log_path=wd / "report.log")
    path = wd / "report" / "report.md"
    return str(path) if res.ok and path.exists() else None


def _read_answer(wd: Path, kind: str, fallback_code: int | None) -> HuntOutcome:
    answer = (wd / ANSWER).read_text() if (wd / ANSWER).exists() else None
    log = (wd / HUNT_LOG).read_text(errors="replace") if (wd / HUNT_LOG).exists() else ""
    code_text = (wd / EXIT_FILE).read_text().strip() if (wd / EXIT_FILE).exists() else ""
    code = int(code_text) if code_text.lstrip("-").isdigit() else fallback_code
    return hunt_outcome(kind, answer, code, log).updated(log=str(wd / HUNT_LOG))


def _slurm_poll(h: HuntOutcome, wd: Path, kind: str) -> HuntOutcome:
    from hourly.adapters.slurm import JobState, Slurm
    job = str(h.job)
    if (wd / EXIT_FILE).exists():
        return _read_answer(wd, kind, None).updated(job=job)
    state = Slurm().states(h.job_name or "", [job]).get(job, JobState.UNKNOWN)
    if state.active:
        return HuntOutcome.from_json({"status": "running", "job": job, "job_name": h.job_name, "state": state.value})
    return HuntOutcome.from_json({
        "status": "failed", "job": job,
        "reason": f"Slurm job {job} ended ({state.value}) without an answer; see {wd}/slurm-{job}.out"})


# --------------------------------------------------------------------------------------------
# recoveries and delivering events


def _recoveries(w: WatchSettings, store: Store, key: str) -> None:
    report = stored_watch(store, w, key)
    for alert_id, rec in recoveries(report).items():
        a = next(x for x in report.alerts if x.id == alert_id)
        if rec is not None and rec != a.recovery:
            store.update_watch_alert(alert_id, recovery=rec, add_events=["recovered"])


def deliver(w: WatchSettings, store: Store, report: WatchReport,
            payload: Callable[[Alert], dict[str, Any]]) -> WatchReport:
    """Every alert's events not delivered yet: with ``--notify-cmd`` the command is run with
    ``payload(alert)`` as JSON on its stdin (events kept when it fails: said in ``run.notify_failures``,
    delivered by the next run); without it, this run's output delivers them. The report again."""
    for a in report.alerts:
        if not a.events:
            continue
        if w.notify_cmd:
            argv = proc.split_command(w.notify_cmd, "--notify-cmd", "pass a command")
            log = store.logs / "watch" / f"notify-alert-{a.id}.log"
            try:
                res = proc.run(argv, input=json.dumps(payload(a)), timeout=300, check=False, log_path=log)
            except UserError as e:
                report.run.notify_failures.append(f"alert {a.id}: {e.one_line()}")
                continue
            if not res.ok:
                what = "timed out" if res.timed_out else f"exit {res.returncode}"
                report.run.notify_failures.append(
                    f"alert {a.id}: --notify-cmd {what}: {res.tail(1) or 'no output'} (log {log})")
                continue
        if "new" in a.events:
            report.run.new_alerts.append(a.id)
        store.update_watch_alert(a.id, events=[])
    return stored_watch(store, w, report.key, report.run)
