"""Running ``hourly nightly``: one container per date (in parallel, one GPU set per worker), each
result stored as it is reached. The only nightly module that talks to Docker.

The settings, the pure parts and the report of what the store holds are in hourly/nightly/plan.py;
the terminal output in hourly/render/nightly.py.
"""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any

from hourly.adapters import containers
from hourly.adapters.locks import owner_labels, run_lock
from hourly.adapters.proc import parse_env
from hourly.adapters.stale_runs import remove_dead_runs
from hourly.adapters.store import Store
from hourly.adapters.store_tables.settings import Rerun
from hourly.events import SILENT, Handler
from hourly.measure.benchmark import Run, metric_views, read_run, result_of, with_count
from hourly.measure.sample_cost import SAMPLES_VAR
from hourly.metric import compile_metric_regex
from hourly.model import NightlyPoint, Status
from hourly.nightly.plan import LEVEL, NightlyReport, NightlySettings, date_range, gpu_slots, image_ref
from hourly.nightly.plan import stored_nightly as nightly_show


def measure_day(d: date, s: NightlySettings, scan_id: str, gpus: str, log_dir: Path,
                docker_client: Any = None, stop: threading.Event | None = None,
                known: list[str] | None = None) -> list[NightlyPoint]:
    """Image → commits → ``repeats`` runs of the benchmark, for one date (no store access): one
    result, or one per named metric (``--metrics``; ``known``: the names already recorded)."""
    ref = image_ref(s.image, d)
    img = containers.ensure_image(ref, pull=s.pull, docker_client=docker_client)
    if not img.present:
        return [NightlyPoint(d.isoformat(), ref, Status.MISSING, detail=img.reason)]
    commits = containers.read_commits(ref, docker_client=docker_client)
    # each container asked for a count of samples like every benchmark run (HOURLY_SAMPLES): the
    # user's --env HOURLY_SAMPLES (or --samples, made one), else the default
    spec = with_count(replace(s.read_spec(), env=parse_env(list(s.env))))
    env = list(s.env) if SAMPLES_VAR in spec.env else [*s.env, f"{SAMPLES_VAR}={spec.asked}"]
    compile_metric_regex(s.metric_regex)
    runs: list[Run] = []
    for i in range(1, s.repeats + 1):
        if stop is not None and stop.is_set():
            raise KeyboardInterrupt
        log = log_dir / f"{d.isoformat()}-run{i}.log"
        res = containers.run_container(
            ref, s.argv(), name=f"hourly-{scan_id}-{d.isoformat()}-{i}",
            labels={**containers.scan_labels(scan_id, level=LEVEL, date=d.isoformat(), run=str(i)),
                    **owner_labels(scan_id)},
            mounts=s.effective_mounts(), env=env, gpus=gpus, timeout=s.timeout,
            workdir=s.container_workdir(), log_path=log, docker_client=docker_client)
        run = read_run(res.output, res.exit_code, res.timed_out, res.duration, str(log), spec)
        run.asked = spec.asked
        runs.append(run)
    return [NightlyPoint(d.isoformat(), ref, r.status, img.digest, r.value, r.samples, commits.xla, commits.jax,
                         [x.as_dict() for x in r.runs], r.detail(), metric)
            for metric, r in metric_views(result_of(runs, spec), spec.metrics, known)]


def run_nightly(s: NightlySettings, store: Store, handler: Handler = SILENT,
                docker_client: Any = None, within: Rerun | None = None) -> NightlyReport:
    """Measure every date not stored yet (*missing* ones are retried, a nightly may have been
    published since) and return the whole window's report. With ``rerun``, every date stored
    before the rerun began (a stopped one goes on: SettingsTables.rerun); ``within``: the rerun of
    the hunt this level is part of, whose time decides instead (the hunt ends it)."""
    s = s.validate()
    dates = date_range(s.from_, s.to, s.every)
    key = s.key()
    store.save_settings(LEVEL, s.as_dict())
    have = store.nightly_points(key, metric=None)  # any row of a date: measured (of any metric)
    known = store.nightly_metric_names(key)
    scope = {"level": LEVEL, "bench": key, "from": s.from_, "to": s.to, "every": s.every}
    rerun = within or store.rerun(scope, s.rerun)
    fresh = store.nightly_dates_since(key, rerun.since) if rerun else set()
    if within is None and rerun is not None and rerun.resumed:
        handler.note(rerun.going_on("the dates it has measured"))
    todo = [d for d in dates if rerun and d.isoformat() not in fresh or d.isoformat() not in have
            or have[d.isoformat()].status is Status.MISSING]
    total, done = len(dates), len(dates) - len(todo)
    handler.progress(done, total, None)
    scan_id = f"n{uuid.uuid4().hex[:8]}"
    log_dir = store.logs / "nightly"
    log_dir.mkdir(parents=True, exist_ok=True)
    first = docker_client or containers.client()
    remove_dead_runs(first)  # containers of runs killed before (kill -9, reboot)
    slots = gpu_slots(s.gpus, min(s.parallel, max(1, len(todo))))
    stop = threading.Event()
    owner = run_lock(scan_id).acquire()  # while held, this run's containers are known to be alive
    try:
        if len(slots) == 1:
            for d in todo:
                handler.progress(done, total, d.isoformat())
                store.add_nightlies(key, measure_day(d, s, scan_id, slots[0], log_dir, first, known=known), LEVEL)
                done += 1
                handler.progress(done, total, None)
        else:
            done = _run_parallel(todo, s, scan_id, slots, log_dir, store, key, stop,
                                 handler, done, total, known)
    except BaseException:
        stop.set()
        containers.cleanup(f"hourly.scan={scan_id}", docker_client=first)
        raise
    finally:
        owner.release()
        owner.path.unlink(missing_ok=True)
    if within is None and rerun is not None:
        store.end_rerun(scope)  # every date measured: the rerun has ended
    return nightly_show(store, s, measured=len(todo), dates=dates)


def _measure_with_own_client(d: date, s: NightlySettings, scan_id: str, gpu: str, log_dir: Path,
                             stop: threading.Event, known: list[str] | None) -> list[NightlyPoint]:
    """:func:`measure_day` in a worker thread, with a Docker client of the thread's own."""
    return measure_day(d, s, scan_id, gpu, log_dir, containers.new_client(), stop, known)


def _run_parallel(todo: list[date], s: NightlySettings, scan_id: str, slots: list[str], log_dir: Path, store: Store,
                  key: str, stop: threading.Event, handler: Handler, done: int, total: int,
                  known: list[str] | None = None) -> int:
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
                    fut = pool.submit(_measure_with_own_client, d, s, scan_id, gpu, log_dir, stop, known)
                    pending[fut] = (d, gpu)
                    handler.progress(done, total, d.isoformat())
                finished, _ = wait(list(pending), return_when=FIRST_COMPLETED)
                for fut in finished:
                    d, gpu = pending.pop(fut)
                    free.append(gpu)
                    store.add_nightlies(key, fut.result(), LEVEL)
                    done += 1
                    handler.progress(done, total, None)
        except BaseException:
            # Workers sit in container.wait(): remove their containers first, or leaving the
            # pool (which joins the workers) would wait for the benchmarks to finish.
            stop.set()
            for fut in pending:
                fut.cancel()
            containers.cleanup(f"hourly.scan={scan_id}")
            raise
    return done
