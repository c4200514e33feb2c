"""Where pairs are built and measured: here, one after another, or as Slurm jobs, W at once.

An executor takes requests — (pair, count): build the pair, run the benchmark count times — for
a *host* (:class:`hourly.execute.host.Host`: the scan, the bisection or the profile asking), and
talks to it through that protocol only: ``s``, ``store``, ``key``, ``origin``, ``gate``, ``split``
and ``measure``.

* :class:`LocalExecutor` — here, in turn: ``host.measure`` for each request.
* :class:`SlurmExecutor` — each request is one Slurm job (hourly/worker.py) that builds in its own
  worktrees and environment with the shared wheel cache and writes ``result.json`` into its job
  folder under ``<workdir>/jobs/``; at most ``workers`` jobs run at once. This process (the
  coordinator) is the store's only writer: it records each result exactly as
  :meth:`~hourly.measure.measurer.Measurer.measure` would (build rows, then the measurement), in the order
  the requests were made, as soon as the results before it are in.

A request is of one of two kinds (:class:`~hourly.model.RequestKind`): *measure* — ``(pair,
count)``, from scan and bisect (``measure_many``, ``stream``) — or *profile* — a
:class:`ProfileRequest` from ``hourly profile`` (``profile_stream``): build the pair the same way,
then capture one run of the benchmark under the JAX profiler into a folder of the shared workdir.
Both go through the same submission, polling, resubmission and adoption.

Faults: a job ended by the cluster (``NODE_FAIL``, ``PREEMPTED``, ``TIMEOUT``, ``CANCELLED`` …)
or that ended without a result file is submitted again, up to ``max_attempts`` times; a build or
benchmark failure is a verdict like a local one. Jobs carry the run's identity (job name
``hourly-<store hash>``, comment ``hourly:<store hash>:<request folder>``), so a coordinator that
was killed and started again adopts its jobs still queued or running, records the results that
arrived meanwhile, and submits only what was lost: nothing finished is done again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generator, Iterator, Mapping, Protocol

from hourly.adapters.store import Measurement
from hourly.errors import HourlyError, UsageError, UserError
from hourly.execute.host import Counted, Host
from hourly.execute.jobfiles import write_json
from hourly.model import ExecutorKind, Pair, RequestKind, Status

if TYPE_CHECKING:
    from hourly.adapters.slurm import Slurm, SubmitOptions

MAX_ATTEMPTS = 3
#: seconds between looks at the jobs (tests set HOURLY_SLURM_POLL lower)
POLL_S = 2.0
RECORDED = "recorded"  # a job folder whose result is in the store
EXECUTORS = tuple(k.value for k in ExecutorKind)
#: the outcome of a job whose request was done, by kind (anything else is a failure or a fault)
DONE = {RequestKind.MEASURE: "measured", RequestKind.PROFILE: "profiled"}


@dataclass
class ProfileRequest:
    """Build ``pair`` and capture one run of the benchmark under the JAX profiler into ``out`` (a
    folder on the shared filesystem); ``trace``: :class:`~hourly.profile.capture.TraceOptions`' fields;
    ``label``: what a failure names (``good state of step-1``)."""

    pair: Pair
    out: Path
    trace: dict = field(default_factory=dict)
    label: str = ""


@dataclass(frozen=True)
class Capabilities:
    """What an executor can do, asked instead of its class.

    ``here``: it builds in this process, in the user's trees, and installs into ``--python`` (so
    that environment is locked for the run, and the pair being built can be shown while it builds);
    ``parallel``: states it measures at once; ``profiles``: it captures profiles itself
    (``profile_stream``); ``interleaves``: it runs one request after another on one machine, in the
    order asked, so a round of several states measured in alternation (a bisection's paired
    verdicts) runs them in the same stretch of time on the same machine."""

    here: bool
    parallel: int = 1
    profiles: bool = False
    interleaves: bool = False


class Executor(Protocol):
    #: states measured at once (a bisection's round; ``capabilities.parallel``)
    workers: int

    @property
    def capabilities(self) -> Capabilities:
        """What it can do (see :class:`Capabilities`)."""
        ...

    def measure_many(self, host: Host, reqs: list[tuple[Pair, int]]) -> list[Counted]:
        """For each request: (Measurement recorded in host.store, builds run, benchmark runs, samples
        those runs printed): :class:`hourly.execute.host.Counted`."""
        ...

    def stream(self, host: Host, reqs: list[tuple[Pair, int]]) -> Generator[Counted, None, None]:
        """The same, one request at a time in order; closing it early cancels what still runs."""
        ...


class ProfilingExecutor(Executor, Protocol):
    """An executor that also captures profiles elsewhere (``hourly profile``'s remote sides)."""

    def profile_stream(self, host: Host, reqs: list[ProfileRequest]) -> Iterator[dict]:
        """For each request, in order, its job's result (``out``: the capture folder)."""
        ...


class LocalExecutor:
    """Build and measure here, one pair after another (hourly's behaviour without an executor)."""

    workers = 1
    capabilities = Capabilities(here=True, interleaves=True)

    def measure_many(self, host: Host, reqs: list[tuple[Pair, int]]) -> list[Counted]:
        return list(self.stream(host, reqs))

    def stream(self, host: Host, reqs: list[tuple[Pair, int]]) -> Generator[Counted, None, None]:
        for pair, count in reqs:
            yield host.measure(pair, count)


def _default_slurm() -> Slurm:
    from hourly.adapters.slurm import Slurm  # imported when a Slurm executor is made
    return Slurm()


@dataclass
class SlurmExecutor:
    """Each request is one Slurm job; ``workers`` jobs at most at once."""

    workers: int = 1
    partition: str | None = None
    time: str | None = None
    gres: str | None = None
    slurm_args: list[str] = field(default_factory=list)
    max_attempts: int = MAX_ATTEMPTS
    poll_s: float = field(default_factory=lambda: float(os.environ.get("HOURLY_SLURM_POLL", POLL_S)))
    slurm: Slurm = field(default_factory=_default_slurm)

    def __post_init__(self) -> None:
        #: jobs submitted and results recorded in this process (bisect's --json "jobs" counts requests)
        self.submitted = 0
        self.adopted = 0

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(here=False, parallel=self.workers, profiles=True)

    def options(self) -> SubmitOptions:
        from hourly.adapters.slurm import SubmitOptions
        return SubmitOptions(self.partition, self.time, self.gres, tuple(self.slurm_args))

    def measure_many(self, host: Host, reqs: list[tuple[Pair, int]]) -> list[Counted]:
        return list(self.stream(host, reqs))

    def stream(self, host: Host, reqs: list[tuple[Pair, int]]) -> Generator[Counted, None, None]:
        return _Round(self, host).stream(list(reqs))

    def profile_stream(self, host: Host, reqs: list[ProfileRequest]) -> Iterator[dict]:
        """Each request one job (kind profile), up to ``workers`` at once; for each, in order, the
        job's result (its build rows recorded in ``host.store``, its capture folder ``out``): the
        same round as :meth:`stream`, whose tasks tell the two kinds apart."""
        return _Round(self, host).stream(list(reqs))


@dataclass
class _Task:
    index: int
    pair: Pair
    count: int
    dir: Path
    kind: RequestKind = RequestKind.MEASURE
    extra: dict = field(default_factory=dict)  # what the kind adds to request.json (profile: out, trace, label)
    job: str | None = None
    result: dict | None = None
    untestable: str | None = None  # why the pair cannot be tested at all (--only jax): no job


class _Round:
    """One ``stream`` call: submit, adopt, poll, record in order."""

    def __init__(self, ex: SlurmExecutor, host: Host):
        self.ex, self.host, self.slurm = ex, host, ex.slurm
        self.store = host.store
        self.origin = host.origin
        self.run_id = hashlib.sha256(str(self.store.path).encode()).hexdigest()[:10]
        self.name = f"hourly-{self.run_id}"
        self.jobs_dir = self.store.workdir / "jobs"
        self.claimed: set[Path] = set()
        self.live: dict[str, str] | None = None  # comment -> job id of this run's queued or running jobs

    # -- the loop ---------------------------------------------------------------------------
    def stream(self, reqs: list) -> Generator[Any, None, None]:
        waiting = list(enumerate(reqs))
        running: dict[int, _Task] = {}
        ready: dict[int, _Task] = {}
        nxt = 0
        try:
            while nxt < len(reqs):
                while waiting and len(running) < self.ex.workers:
                    i, req = waiting.pop(0)
                    task = self._start(i, req)
                    (ready if task.untestable or task.result else running)[i] = task
                while nxt in ready:
                    yield self._record(ready.pop(nxt))
                    nxt += 1
                if nxt >= len(reqs):
                    break
                if running:
                    for i in self._finished(running):
                        ready[i] = running.pop(i)
                if nxt not in ready:
                    time.sleep(self.ex.poll_s)
        except GeneratorExit:  # the caller stopped (a scan whose benchmark never worked): cancel the rest
            self.slurm.cancel([t.job for t in running.values() if t.job])
            raise

    # -- one request ------------------------------------------------------------------------
    def _task(self, index: int, req: tuple[Pair, int] | ProfileRequest) -> _Task:
        """The request — ``(pair, count)`` or a :class:`ProfileRequest` — as a task with its folder."""
        if isinstance(req, ProfileRequest):
            kind, pair, count = RequestKind.PROFILE, req.pair, 0
            extra = {"out": str(Path(req.out).absolute()), "trace": req.trace, "label": req.label}
        else:
            (pair, count), kind, extra = req, RequestKind.MEASURE, {}
            why = self.host.gate.untestable(pair.jax) if self.host.gate is not None else None
            if why:  # as Measurer.measure: recorded (in its turn) without a build
                return _Task(index, pair, count, self.jobs_dir, untestable=why)
        return _Task(index, pair, count, self._folder(pair, count, kind, extra), kind, extra)

    def _start(self, index: int, req: tuple[Pair, int] | ProfileRequest) -> _Task:
        task = self._task(index, req)
        if task.untestable:
            return task
        task.result = _read(task.dir / "result.json")
        if task.result is not None and task.result.get("outcome") == DONE[task.kind]:
            self.ex.adopted += 1  # finished while no coordinator watched: recorded now, not redone
            return task
        job = self._live().get(self._comment(task))
        if job is not None and task.result is None:
            task.job = job  # still queued or running since a coordinator that was killed
            self.ex.adopted += 1
            return task
        task.result = None
        (task.dir / "attempts.json").unlink(missing_ok=True)  # the bound counts this run's tries
        self._submit(task)
        return task

    def _folder(self, pair: Pair, count: int, kind: RequestKind = RequestKind.MEASURE,
                extra: dict | None = None) -> Path:
        """The request's job folder: the first of its name not yet recorded (the same request made
        again later, for more samples or another profile, gets a folder of its own)."""
        ident = [str(self.store.path), self.host.key, self.origin, pair.xla, pair.jax, count]
        if kind is not RequestKind.MEASURE:
            ident += [kind.value, extra]
        digest = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:8]
        base = f"{pair.key()}-{digest}" if kind is RequestKind.MEASURE else f"{kind.value}-{pair.key()}-{digest}"
        n = 0
        while True:
            d = self.jobs_dir / f"{base}-{n}"
            if not (d / RECORDED).exists() and d not in self.claimed:
                self.claimed.add(d)
                return d
            n += 1

    def _comment(self, task: _Task) -> str:
        return f"hourly:{self.run_id}:{task.dir.name}"

    def _live(self) -> dict[str, str]:
        if self.live is None:
            self.live = {j.comment: j.id for j in self.slurm.jobs(self.name) if j.state.active}
        return self.live

    def _submit(self, task: _Task) -> None:
        d = task.dir
        d.mkdir(parents=True, exist_ok=True)
        attempts = _read(d / "attempts.json") or {"jobs": []}
        if len(attempts["jobs"]) >= self.ex.max_attempts:
            raise UserError(
                f"the Slurm job of {task.pair.short()} was lost {len(attempts['jobs'])} times (jobs "
                f"{', '.join(attempts['jobs'])}; {attempts.get('why', 'no result file')}; output in {d})",
                "check the jobs' output there and the cluster (sinfo, sacct), then run the same command again: "
                "it goes on from there")
        if (d / "result.json").exists():  # an earlier attempt's (interrupted, or an error since fixed)
            os.replace(d / "result.json", d / f"result-{len(attempts['jobs'])}.json")
        s = self.host.s
        settings = s.as_dict()
        settings["cache_dir"] = str(s.resolved_cache_dir().absolute())
        req = {"kind": task.kind.value, "settings": settings, "pair": [task.pair.xla, task.pair.jax],
               "count": task.count, "origin": self.origin, "workdir": str(self.store.workdir),
               "attempt": len(attempts["jobs"]) + 1, **task.extra}
        write_json(d / "request.json", req)
        script = d / "job.sh"
        worker = os.environ.get("HOURLY_WORKER_PYTHON") or sys.executable
        script.write_text("#!/bin/bash\n# one hourly request (hourly/worker.py); written by the coordinator\n"
                          f"exec {shlex.quote(worker)} -m hourly.worker {shlex.quote(str(d))}\n")
        task.job = self.slurm.submit(script, name=self.name, comment=self._comment(task),
                                     output=d / "slurm-%j.out", chdir=d, options=self.ex.options())
        attempts["jobs"].append(task.job)
        write_json(d / "attempts.json", attempts)
        self.ex.submitted += 1

    # -- polling ----------------------------------------------------------------------------
    def _finished(self, running: dict[int, _Task]) -> list[int]:
        """The requests whose result is in; jobs the cluster ended without one are submitted again."""
        done = []
        states = None
        for i, task in running.items():
            task.result = _read(task.dir / "result.json")
            if _usable(task.result):
                done.append(i)
                continue
            if task.result is None:
                if states is None:
                    states = self.slurm.states(self.name, [t.job for t in running.values() if t.job])
                state = states.get(task.job) if task.job is not None else None
                if state is not None and state.active:
                    continue
                task.result = _read(task.dir / "result.json")  # written just before the job ended
                if _usable(task.result):
                    done.append(i)
                    continue
                why = f"the cluster ended job {task.job} ({state})"
            else:  # the build was interrupted (out of memory, killed): not the pair's verdict
                why = f"the build was interrupted: {task.result.get('error')}"
            attempts = _read(task.dir / "attempts.json") or {"jobs": []}
            attempts["why"] = why
            write_json(task.dir / "attempts.json", attempts)
            task.result = None
            self._submit(task)
        return done

    # -- recording --------------------------------------------------------------------------
    def _record(self, task: _Task) -> Any:  # Counted for a measurement; a profile's result (a dict)
        """The result into the store, as Measurer.measure writes it: build rows, then the measurement
        (a profile: its build rows, as a local profile's build writes them; the result is returned)."""
        from hourly.adapters.store import BuildRecord
        if task.untestable:
            m = Measurement(task.pair.xla, task.pair.jax, Status.UNTESTABLE.value, None, [], [], task.untestable,
                            self.origin)
            self.store.add_measurement(self.host.key, m)
            return Counted(m, 0, 0, 0)
        r = task.result
        assert r is not None  # a task is recorded once its result is in (an untestable one has none)
        if r["outcome"] == "user_error":
            raise UserError(r["error"], r.get("fix"), r.get("details"))
        if r["outcome"] != DONE[task.kind]:
            raise HourlyError(f"the Slurm job of {task.pair.short()} failed: {r.get('error')} "
                              f"(traceback in {task.dir / 'result.json'})")
        for b in r["builds"]:  # INSERT OR REPLACE: recording one twice changes nothing
            self.store.record_build(BuildRecord(**b))
        if task.kind is RequestKind.PROFILE:
            (task.dir / RECORDED).write_text(json.dumps({"profile": r["out"]}))
            return r
        def row(d: dict) -> Measurement:
            return Measurement(**{k: v for k, v in d.items() if k not in ("id", "created")})
        m = row(r["measurement"])
        rows = [row(d) for d in r.get("rows") or [r["measurement"]]]  # one per named metric (--metrics)
        # a coordinator killed between the rows and the folder's mark recorded them already: the
        # runs (each with its own log path) tell the row apart from any other
        same = [old for old in self.store.measurements(self.host.key, m.xla, m.jax)
                if m.runs and old.runs == m.runs and old.origin == m.origin and old.metric == m.metric]
        if same:
            m = same[0]
        else:
            self.store.add_measurements(self.host.key, rows)
            m = next(x for x in rows if (x.metric, x.runs) == (m.metric, m.runs))
        (task.dir / RECORDED).write_text(json.dumps({"measurement": m.id}))
        self.host.split.add(r.get("jaxlib_builds", 0), r.get("jax_builds", 0))
        return Counted(m, r.get("builds_run", 0), r.get("runs", 0), r.get("samples", 0))


def _usable(result: dict | None) -> bool:
    """A job's result that stands: there is one, and its build was not interrupted."""
    return result is not None and result.get("outcome") != "interrupted"


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def make_executor(flags: Mapping[str, Any]) -> LocalExecutor | SlurmExecutor:
    """The executor the command line asks for (the options of hourly.options.EXECUTOR in ``flags``,
    which it reads and leaves as they are).

    ``--executor local`` with more than one worker, or with Slurm's options, is a usage error."""
    kind = str(flags.get("executor") or ExecutorKind.LOCAL).lower()
    workers = flags.get("workers")
    slurm = {k: flags.get(k) for k in ("partition", "time", "gres", "slurm_arg")}
    if kind not in EXECUTORS:
        raise UsageError(f"--executor {kind!r} is not an executor", "pass --executor local or --executor slurm")
    if workers is not None and workers < 1:
        raise UsageError(f"--workers must be 1 or more, not {workers}", "pass --workers 4")
    if kind == "local":
        if workers and workers > 1:
            raise UsageError(f"--workers {workers} needs --executor slurm (the local executor builds one pair at "
                             "a time on this machine)", f"add --executor slurm, or leave out --workers {workers}")
        given = [f"--{k.replace('_', '-')}" for k, v in slurm.items() if v]
        if given:
            raise UsageError(f"{', '.join(given)} apply to --executor slurm only", "add --executor slurm, or leave them out")
        return LocalExecutor()
    from hourly.adapters.slurm import Slurm
    cluster = Slurm()
    why = cluster.reachable()
    if why:
        raise UserError(f"--executor slurm, but no Slurm is reachable: {why}",
                        "run hourly on a cluster's login node (sinfo must answer), or pass --executor local")
    return SlurmExecutor(workers or 1, slurm["partition"], slurm["time"], slurm["gres"],
                         list(slurm["slurm_arg"] or []), slurm=cluster)
