"""One Slurm job: build and measure one (pair, count) request — or build one pair and capture a
trace of it (a request of kind profile) — and write the result to a file.

``python -m hourly.worker <job dir>`` reads ``<job dir>/request.json`` (written by the
coordinator, hourly/execute/executors.py), and:

1. checks the pair out in worktrees of its own (``<job dir>/trees/{xla,jax}``), so jobs on one
   node or many never share a working tree;
2. makes an environment of its own over ``--python``'s packages (hourly.adapters.venvs.overlay_env), so
   jobs never install over each other;
3. builds through the same :class:`~hourly.measure.build.Builder` as a local run, with the shared wheel
   cache (an entry appears whole or not at all; a waiting lock per key keeps two jobs from
   building one key at once), and benchmarks ``count`` times, exactly as
   :meth:`hourly.measure.measurer.Measurer.measure` does;
4. writes ``<job dir>/result.json`` atomically (a temporary file renamed into place): the
   measurement, the build rows the coordinator records, and the build and run counts.

A request of kind ``profile`` (``hourly profile``) does steps 1–3 up to the build, then runs the
benchmark once under the JAX profiler (:func:`hourly.profile.run.trace_state`, as a local
profile does) into the folder the request names (``<workdir>/profiles/<target>/<side>``), and
writes the build rows and that folder to ``result.json`` the same way.

The worker never opens the SQLite store: the coordinator is its only writer. Logs go to the
workdir's ``logs/`` as a local run's do (the workdir is on the shared filesystem).
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from contextlib import contextmanager
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from hourly.execute.jobfiles import write_json

if TYPE_CHECKING:  # a job imports what it runs
    from hourly.adapters.store import BuildRecord, Measurement
    from hourly.model import Pair

REQUEST = "request.json"
RESULT = "result.json"


class RecordingStore:
    """What a :class:`~hourly.measure.measurer.Measurer` writes, kept for the coordinator instead of stored."""

    def __init__(self, workdir: Path):
        from hourly.adapters.store import log_dir
        self.workdir = workdir
        self.logs = log_dir(workdir)
        self.builds: list = []
        self.measurements: list = []

    def record_build(self, b: BuildRecord) -> None:
        self.builds.append(b)

    def add_measurement(self, bench_key: str, m: Measurement) -> None:
        self.measurements.append(m)

    def add_measurements(self, bench_key: str, ms: Iterable[Measurement]) -> None:
        self.measurements.extend(ms)

    def metric_names(self, bench_key: str) -> list[str]:
        """The coordinator's store knows them; a job records the names its runs print (and the
        primary), which the coordinator's table reads with the rest."""
        return []




@contextmanager
def own_pair(job: Path, req: dict) -> Iterator[tuple[Any, Pair]]:  # a Measurer over the job's store
    """The request's pair checked out in the job's own worktrees, with an environment of its own:
    a :class:`~hourly.measure.measurer.Measurer` over them (its store records for the coordinator), and the pair.
    The trees and the environment are removed after."""
    from hourly.adapters.gitrepo import GitRepo
    from hourly.adapters.venvs import overlay_env
    from hourly.measure.build import Workspace
    from hourly.measure.measurer import Measurer
    from hourly.measure.settings import FIELD_NAMES, Settings, keyed
    from hourly.model import Pair

    s = Settings(**{k: v for k, v in req["settings"].items() if k in FIELD_NAMES})
    pair = Pair(*req["pair"])
    trees = job / "trees"
    base = {"jax": GitRepo(s.jax_repo, "jax")}
    if s.only != "jax":
        base["xla"] = GitRepo(s.xla_repo, "xla")
    own: dict[str, GitRepo] = {}
    try:
        for name, repo in base.items():
            own[name] = repo.add_worktree(trees / name, getattr(pair, name))
        python = overlay_env(job / "venv", s.python, job / "venv.log")
        wheels = s.resolved_wheel_dir()
        try:  # a wheel folder inside the JAX tree is the job's own tree's; any other is the job's own
            wheels = own["jax"].path / wheels.absolute().relative_to(Path(s.jax_repo))
        except ValueError:
            wheels = job / "wheels"
        js = replace(s, jax_repo=str(own["jax"].path), xla_repo=str(own["xla"].path) if "xla" in own else s.xla_repo,
                     python=python, wheel_dir=str(wheels), force=True)
        store = RecordingStore(Path(req["workdir"]))
        repos = [own[n] for n in ("xla", "jax") if n in own]
        with Workspace(repos, force=True) as ws:
            yield Measurer(keyed(js), store, own.get("xla"), own["jax"], ws), pair
    finally:
        for name, tree in own.items():
            try:
                base[name].remove_worktree(tree.path)
            except Exception:
                pass
        import shutil
        shutil.rmtree(job / "venv", ignore_errors=True)


def measure(job: Path, req: dict) -> dict:
    with own_pair(job, req) as (m, pair):
        got = m.measure(pair, req["count"], origin=req["origin"])
        b = m.builder
        return {"outcome": "measured", "measurement": asdict(got),
                "rows": [asdict(r) for r in m.last_rows],  # every named metric's row (the primary's among them)
                "builds": [asdict(r) for r in m.store.builds], "builds_run": b.builds_run,
                "jaxlib_builds": b.jaxlib_builds, "jax_builds": b.jax_builds, "runs": m.runs,
                "samples": m.samples}  # the samples those runs printed, counted apart from them


def profile(job: Path, req: dict) -> dict:
    """Build the pair as :func:`measure` does, then capture one run under the profiler into ``out``."""
    from hourly.measure.build import BuildInterrupted, BuildStatus
    from hourly.profile.capture import TraceOptions
    from hourly.profile.run import trace_state
    with own_pair(job, req) as (m, pair):
        build = m.builder.prepare(pair)
        if build.status is BuildStatus.INTERRUPTED:  # not the pair's verdict: the coordinator submits again
            raise BuildInterrupted(f"the build of {pair.short()} was interrupted (log {build.log_path})",
                                   "free memory or raise --build-timeout, then run the same command again")
        out = trace_state(m.s, build, Path(req["out"]), TraceOptions(**req.get("trace", {})), req.get("label", ""))
        b = m.builder
        return {"outcome": "profiled", "out": str(out), "builds": [asdict(r) for r in m.store.builds],
                "builds_run": b.builds_run, "jaxlib_builds": b.jaxlib_builds, "jax_builds": b.jax_builds}


def run(job: Path) -> dict:
    from hourly.errors import UserError
    from hourly.measure.build import BuildInterrupted
    from hourly.model import RequestKind
    req = json.loads((job / REQUEST).read_text())
    try:  # a request without a kind (written by an hourly before profile jobs) measures
        kind = RequestKind(req.get("kind", RequestKind.MEASURE.value))
        result = {RequestKind.MEASURE: measure, RequestKind.PROFILE: profile}[kind](job, req)
    except BuildInterrupted as e:
        result = {"outcome": "interrupted", "error": e.message, "fix": e.fix}
    except UserError as e:
        result = {"outcome": "user_error", "error": e.message, "fix": e.fix, "details": e.details}
    except Exception as e:
        result = {"outcome": "error", "error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
    result.update(job_id=os.environ.get("SLURM_JOB_ID"), host=os.uname().nodename, attempt=req.get("attempt"))
    write_json(job / RESULT, result)
    return result


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not (Path(args[0]) / REQUEST).is_file():
        print("usage: python -m hourly.worker <job dir holding request.json>", file=sys.stderr)
        return 2
    result = run(Path(args[0]).absolute())
    print(f"hourly worker: {result['outcome']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
