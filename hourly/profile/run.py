"""``hourly profile``: traces and memory profiles of the last-good and first-bad states, compared.

For each regression (the bisected culprit's ends when a bisection stored them, else the scan's
detected steps, else ``--good``/``--bad`` given explicitly) both states are made the installed build
again (from the wheel cache when possible), the benchmark runs once under the JAX profiler
(:mod:`hourly.trace`), and the two captures are compared: device ops whose total time changed most,
and memory in use by allocation site. Everything lands in ``<workdir>/profiles/<name>/``.
Capture is opt-in: it never changes the numbers of a scan.

With a remote executor (``--executor slurm``, hourly/execute/executors.py) each (target, side) is one job of
kind profile: all sides are submitted at once (up to ``--workers``), each builds its pair in its own
worktrees and environment and captures into the same folder a local run would; this process records
the jobs' build rows and compares the captures as a local run does.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Iterator, cast

from hourly.adapters.locks import holds_store_lock
from hourly.adapters.store import Store
from hourly.analysis.steps import find_steps
from hourly.errors import UserError
from hourly.events import SILENT, Handler
from hourly.execute.executors import Executor, ProfileRequest, ProfilingExecutor
from hourly.execute.host import MeasuringHost
from hourly.measure.benchmark import bench_env
from hourly.measure.build import BuildResult
from hourly.measure.measurer import open_repos, pin_of
from hourly.measure.resolve import resolve_pairs
from hourly.measure.settings import Settings
from hourly.model import Pair, cut_side
from hourly.profile import frontend
from hourly.profile.capture import TraceOptions, capture
from hourly.profile.compare import compare
from hourly.scan.table import stored_scan
from hourly.timeparse import parse_time


@dataclass
class Target:
    name: str
    good: Pair
    bad: Pair


@dataclass
class ProfileResult:
    target: Target
    good_dir: Path
    bad_dir: Path
    comparison_path: Path
    text: str
    record: dict = field(default_factory=dict)  # profile.json: the comparison and the front-end diff


def parse_state(text: str, s: Settings) -> Pair:
    """``xla@<sha>,jax@<sha>`` (either may be omitted: then it is resolved at the other's time)
    or a time, resolved like the scan does."""
    xla, jax = open_repos(s)
    pin = pin_of(s, jax)  # --only: the pinned side is what it is at every instant
    parts = dict(p.split("@", 1) for p in text.split(",") if "@" in p)
    if parts:
        if set(parts) - {"xla", "jax"}:
            raise UserError(f"cannot read state {text!r}", "write xla@<sha>,jax@<sha> or a time")
        if pin and pin.side in parts:
            raise UserError(f"{pin.side} is pinned in this hunt (--only): {text!r} names a commit of it",
                            f"name a {pin.hunted} commit or a time")
        # a side without a checkout (--only jax: xla) is the pinned one, refused above
        shas = {name: repo.resolve_sha(parts[name]) for name, repo in (("xla", xla), ("jax", jax))
                if name in parts and repo is not None}
        if pin:
            shas[pin.side] = pin.label
        if len(shas) == 2:
            return Pair(shas["xla"], shas["jax"])
        known = next(iter(shas))
        repo = xla if known == "xla" else jax
        assert repo is not None  # one side named and none pinned: both checkouts are there
        info = repo.commits([shas[known]])[shas[known]]
        from datetime import datetime, timezone
        t = datetime.fromtimestamp(info.committer_time, timezone.utc)
        pair = resolve_pairs(xla, jax, [t], s.refs(), s.first_parent, pin)[0].pair
        return Pair(shas.get("xla", pair.xla), shas.get("jax", pair.jax))
    t = parse_time(text, s.tz).when
    points = resolve_pairs(xla, jax, [t], s.refs(), s.first_parent, pin)
    if not points:
        raise UserError(f"no commit of both repositories before {text!r}", "give a later time")
    return points[0].pair


def targets_from_store(store: Store, s: Settings) -> tuple[list[Target], str | None]:
    """The states to profile: each finished bisection's last-good and first-bad states under the
    current build (hourly.scan.identity.answers_by_build, as the report takes them), else each
    regression of the stored scan; and the line naming the answers of another build that were left
    out (None: none was)."""
    from hourly.scan.identity import answers_by_build
    split = answers_by_build(store, s)
    left_out = split.left_out(store)
    culprits = [(a.last_good, a.first_bad) for a in split.current if a.last_good and a.first_bad]
    if culprits:  # the bisection's last-good/first-bad states, when there are any
        return [Target(f"regression-{i}", good, bad) for i, (good, bad) in enumerate(culprits, 1)], left_out
    table = stored_scan(store, s)
    points = table.points  # with named metrics: --metric's (else the first's), in its own direction
    higher = next((m.higher_is_better for m in table.metrics or [] if m.points is points), s.higher_is_better)
    if not any(p.status == "ok" for p in points):
        return [], left_out
    steps = [st for st in find_steps(points, higher)[0] if st.kind.value == "regression"]
    return [Target(f"step-{i}", Pair(st.before.xla, st.before.jax), Pair(st.after.xla, st.after.jax))
            for i, st in enumerate(steps, 1)], left_out


SIDES = ("good", "bad")


def trace_state(s: Settings, build: BuildResult, out: Path, options: TraceOptions, label: str) -> Path:
    """With ``build`` installed into ``s.run_python()``, run the benchmark once under the JAX profiler into
    ``out``; the capture folder. A failed build or run is a :class:`UserError` naming ``label``
    (``good state of step-1``). Shared by the local profile and a profile job (hourly/worker.py)."""
    if not build.ok:
        raise UserError(f"the {label} does not build ({build.log_path})", "profile another pair with --good/--bad")
    spec = s.bench_spec()
    cap = capture(spec.cmd, out, env=bench_env(spec), cwd=spec.cwd, python=spec.python,
                  options=options, timeout=spec.timeout, check=False)
    if not cap.ok:
        raise UserError(f"the benchmark failed under the profiler for the {label} "
                        f"(log {cap.out_dir / 'run.log'})", "check that it runs without hourly trace")
    if options.front_end_target:
        # the Python-level profile of tracing, lowering and dispatch (hourly.frontend_profile); a
        # failure is noted by the comparison (no frontend.json, its log named), never fatal
        (out / frontend.FILE).unlink(missing_ok=True)
        frontend.run_profile(spec.python, options.front_end_target, out / frontend.FILE,
                             options.front_end_cwd or spec.cwd, bench_env(spec), options.front_end_repeats,
                             options.front_end_warmup, options.front_end_iters, timeout=spec.timeout)
    return cap.out_dir


#: the origin of the profile's build rows (hourly.execute.host)
PROFILE_ORIGIN = "profile"


@holds_store_lock
def run_profiles(store: Store, s: Settings, targets: list[Target], options: TraceOptions,
                 handler: Handler = SILENT,
                 executor: Executor | None = None,
                 front_end: frontend.FrontEndPlan | None = None) -> list[ProfileResult]:
    """Capture both states of each target and compare them. ``executor``: a remote one
    (hourly.execute.executors.SlurmExecutor) captures every side as a job of its own, all at once
    [default: here, one after another]. ``front_end``: whether each state's front end is profiled
    too (:func:`hourly.profile.frontend.plan`) [default: not]."""
    if not targets:
        raise UserError("no regression to profile in this workdir",
                        "run `hourly scan` (and `hourly bisect`) first, or pass --good and --bad")
    if front_end is not None and front_end.target:
        options = replace(options, front_end_target=front_end.target, front_end_cwd=front_end.cwd)
        handler.note(f"front-end profile ({front_end.why}): {front_end.target}, "
                     f"{options.front_end_repeats} repeats per state")
    elif front_end is not None:
        handler.note(f"no front-end profile: {front_end.why}")
    sides = [(target, side, getattr(target, side)) for target in targets for side in SIDES]
    xla, jax = open_repos(s)
    host = MeasuringHost(s, store, xla, jax, pin_of(s, jax), PROFILE_ORIGIN)
    if executor is not None and executor.capabilities.profiles:
        captured = _capture_remote(host, sides, options, handler, cast(ProfilingExecutor, executor))
    else:
        captured = _capture_here(host, sides, options, handler)
    results, dirs = [], {}
    for (target, side, _), out in zip(sides, captured, strict=True):  # a target is compared once both its sides are in
        dirs[side] = out
        if side != SIDES[-1]:
            continue
        comparison = compare(dirs["good"], dirs["bad"])
        record: dict = {"target": target.name, "good": asdict(target.good), "bad": asdict(target.bad),
                        "comparison": comparison.as_dict(), "front_end": front_end_record(dirs, options, front_end)}
        text = comparison.render() + "".join(line + "\n" for line in frontend.lines(record["front_end"]))
        folder = store.workdir / "profiles" / target.name
        path = folder / "comparison.txt"
        path.write_text(text)
        record["comparison_path"] = str(path)
        (folder / RECORD).write_text(json.dumps(record, indent=1, default=str) + "\n")
        results.append(ProfileResult(target, dirs["good"], dirs["bad"], path, text, record))
    return results


#: what each target's folder keeps of its comparison (``hourly report`` reads it)
RECORD = "profile.json"


def front_end_record(dirs: dict[str, Path], options: TraceOptions,
                     front_end: frontend.FrontEndPlan | None) -> dict:
    """The front-end diff of both sides (:func:`hourly.profile.frontend.diff`), or why there is none."""
    if front_end is None or not options.front_end_target:
        return {"skipped": front_end.why if front_end else "not asked"}
    files = {side: dirs[side] / frontend.FILE for side in SIDES}
    missing = [side for side, f in files.items() if not f.is_file()]
    if missing:
        return {"error": "the front-end profile failed at the " + " and the ".join(f"{m} state" for m in missing),
                "logs": {m: str(files[m].with_suffix(".log")) for m in missing}, "target": options.front_end_target}
    rec = frontend.diff(frontend.load(files["good"]), frontend.load(files["bad"]), front_end.metric)
    rec.update(target=options.front_end_target, why=front_end.why, files={k: str(v) for k, v in files.items()})
    return rec


def _say_side(handler: Handler, target: Target, side: str, pair: Pair, where: str = "") -> None:
    handler.note(f"{target.name}: {side} state xla {cut_side(pair.xla, 10)} jax {pair.jax[:10]}{where}")


def _capture_here(host: MeasuringHost, sides, options: TraceOptions, handler: Handler) -> Iterator[Path]:
    """Each side in turn, built in the user's trees: its capture folder."""
    with host:
        for target, side, pair in sides:
            _say_side(handler, target, side, pair)
            build = host.measurer().builder.prepare(pair)
            yield trace_state(host.s, build, host.store.workdir / "profiles" / target.name / side,
                              options, f"{side} state of {target.name}")


def _capture_remote(host: MeasuringHost, sides, options: TraceOptions, handler: Handler,
                    executor: ProfilingExecutor) -> Iterator[Path]:
    """Every side a job of kind profile, ``executor.workers`` at once (the user's trees are not
    touched): the capture folders, in order."""
    reqs = []
    for target, side, pair in sides:
        _say_side(handler, target, side, pair, " (a Slurm job)")
        reqs.append(ProfileRequest(pair, host.store.workdir / "profiles" / target.name / side, asdict(options),
                                   f"{side} state of {target.name}"))
    for r in executor.profile_stream(host, reqs):
        yield Path(r["out"])
