"""``hourly profile``: traces and memory profiles of the last-good and first-bad states, compared.

For each regression (the bisected culprit's ends when a bisection stored them, else the scan's
detected steps, else ``--good``/``--bad`` given explicitly) both states are made the installed build
again (from the wheel cache when possible), the benchmark runs once under the JAX profiler
(:mod:`hourly.harness.trace`), and the two captures are compared: device ops whose total time changed most,
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
from itertools import groupby
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
from hourly.options import command_line
from hourly.profile import frontend
from hourly.profile.capture import TraceOptions, capture
from hourly.profile.compare import compare
from hourly.scan.table import stored_scan
from hourly.text.timeparse import parse_time


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
    bisected = [a for a in split.current if a.last_good and a.first_bad]
    if bisected:  # the bisection's last-good/first-bad states, when there are any
        named = [(f"regression-{i}", a) for i, a in enumerate(bisected, 1)]
        failing = [name for name, a in named if a.mode in ("exit", "printed") or a.kind in ("crash", "fix")]
        explain = f"`{command_line('explain', {'workdir': store.workdir})}` diffs their programs and sets both outputs side by side"
        if len(failing) == len(named):
            raise UserError(f"the bisected culprit{'s' if len(named) > 1 else ''} in {store.workdir} "
                            f"{'were' if len(named) > 1 else 'was'} found by exit status: a first-bad state that "
                            "fails has no profile to compare with a state that runs",
                            f"{explain}; or profile two states that run with --good and --bad")
        if failing:
            said = (f"left out {', '.join(failing)}, found by exit status (a first-bad state that fails has no "
                    f"profile to compare): {explain}")
            left_out = f"{left_out}; {said}" if left_out else said
        targets = []
        for name, a in named:
            assert a.last_good is not None and a.first_bad is not None  # bisected: both ends
            if name not in failing:
                targets.append(Target(name, a.last_good, a.first_bad))
        return targets, left_out
    table = stored_scan(store, s)
    points = table.points  # with named metrics: --metric's (else the first's), in its own direction
    higher = next((m.higher_is_better for m in table.metrics or [] if m.points is points), s.higher_is_better)
    if not any(p.status == "ok" for p in points):
        return [], left_out
    steps = [st for st in find_steps(points, higher)[0] if st.kind.value == "regression"]
    return [Target(f"step-{i}", Pair(st.before.xla, st.before.jax), Pair(st.after.xla, st.after.jax))
            for i, st in enumerate(steps, 1)], left_out


SIDES = ("good", "bad")


def profiler_failed(what: str, log: Path, fix: str) -> UserError:
    """A benchmark that failed under the profiler: its log's last line said with ``what`` (a jax
    the profiler cannot import named as that, not as the benchmark's fault), the log's end after."""
    from hourly.scan.table import log_tail
    tail = log_tail(str(log))
    last = next((ln for ln in reversed(tail) if not ln.startswith("# ")), "")
    if "No module named 'jax'" in last or 'No module named "jax"' in last:
        fix = ("the profiler runs the benchmark under JAX's profiler: install jax into the Python that runs it "
               "(--python), or profile a benchmark that uses jax")
    return UserError(f"{what} (log {log}){': ' + last if last else ''}", fix, tail)


def trace_state(s: Settings, build: BuildResult, out: Path, options: TraceOptions, label: str,
                front_end_processes: int | None = None) -> Path:
    """With ``build`` installed into ``s.run_python()``, run the benchmark once under the JAX profiler into
    ``out``; the capture folder. A failed build or run is a :class:`UserError` naming ``label``
    (``good state of step-1``). Shared by the local profile and a profile job (hourly/worker.py).
    With a front-end target, then ``front_end_processes`` front-end processes in a row
    [default: ``options.front_end_processes``: a job holds one state, nothing to interleave with;
    a local profile runs the first here and interleaves the others, :func:`_capture_here`]."""
    if not build.ok:
        raise UserError(f"the {label} does not build ({build.log_path})", "profile another pair with --good/--bad")
    spec = s.bench_spec()
    cap = capture(spec.cmd, out, env=bench_env(spec), cwd=spec.cwd, python=spec.python,
                  options=options, timeout=spec.timeout, check=False)
    if not cap.ok:
        raise profiler_failed(f"the benchmark failed under the profiler for the {label}", cap.out_dir / "run.log",
                              "check that it runs without hourly trace")
    if options.front_end_target:
        # the Python-level profile of tracing, lowering and dispatch (hourly.harness.frontend_profile), one
        # process after another; a failure is noted by the comparison (no frontend-<k>.json, its log
        # named), never fatal
        frontend.clear(out)
        n = options.front_end_processes if front_end_processes is None else front_end_processes
        for k in range(1, n + 1):
            front_end_process(s, out, options, k)
    return cap.out_dir


def front_end_process(s: Settings, out: Path, options: TraceOptions, k: int) -> bool:
    """The ``k``-th front-end process (:mod:`hourly.harness.frontend_profile`) of the installed state, into
    ``out/frontend-<k>.json``; whether it wrote its profile."""
    spec = s.bench_spec()
    path = frontend.process_file(out, k)
    res = frontend.run_profile(spec.python, options.front_end_target or "", path, options.front_end_cwd or spec.cwd,
                               bench_env(spec), options.front_end_repeats, options.front_end_warmup,
                               options.front_end_iters, timeout=spec.timeout)
    return res.ok and path.is_file()


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
        remote = executor is not None and executor.capabilities.profiles
        how = "in a row in each state's job" if remote else "interleaved good, bad, good, …; each installs its state"
        handler.note(f"front-end profile ({front_end.why}): {front_end.target}, "
                     f"{options.front_end_processes} processes per state ({how}), {options.front_end_repeats} "
                     "repeats each (--front-end-processes, --front-end-repeats)")
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
    files = {side: frontend.process_files(dirs[side]) for side in SIDES}
    asked = options.front_end_processes
    failed = {side: [k for k in range(1, asked + 1) if not frontend.process_file(dirs[side], k).is_file()]
              for side in SIDES}
    logs = {f"{side} {k}": str(frontend.process_file(dirs[side], k).with_suffix(".log"))
            for side in SIDES for k in failed[side]}
    missing = [side for side in SIDES if not files[side]]
    if missing:
        return {"error": "the front-end profile failed at the " + " and the ".join(f"{m} state" for m in missing),
                "logs": {k: v for k, v in logs.items() if k.split()[0] in missing}, "target": options.front_end_target}
    rec = frontend.diff(frontend.load_state(dirs["good"]), frontend.load_state(dirs["bad"]), front_end.metric)
    for side in SIDES:
        if failed[side]:
            rec["notes"].append(f"{len(failed[side])} of the {side} state's {asked} front-end processes failed "
                                "(log " + ", ".join(logs[f'{side} {k}'] for k in failed[side]) + ")")
    rec.update(target=options.front_end_target, why=front_end.why, asked_processes=asked,
               files={side: [str(f) for f in files[side]] for side in SIDES})
    return rec


def _say_side(handler: Handler, target: Target, side: str, pair: Pair, where: str = "") -> None:
    handler.note(f"{target.name}: {side} state xla {cut_side(pair.xla, 10)} jax {pair.jax[:10]}{where}")


def _capture_here(host: MeasuringHost, sides: list[tuple[Target, str, Pair]], options: TraceOptions, handler: Handler) -> Iterator[Path]:
    """Each target's sides in turn, built in the user's trees: their capture folders. With a
    front-end target, each side's first front-end process runs after its capture, and the others
    interleaved — good, bad, good, bad, …, each state installed again before its process (from the
    cache: it was made for the capture) — so that a drift of the machine moves both states alike."""
    with host:
        for _, grouped in groupby(sides, key=lambda x: x[0].name):  # the sides come target by target
            group = list(grouped)
            outs: dict[str, Path] = {}
            for target, side, pair in group:
                _say_side(handler, target, side, pair)
                build = host.measurer().builder.prepare(pair)
                outs[side] = trace_state(host.s, build, host.store.workdir / "profiles" / target.name / side,
                                         options, f"{side} state of {target.name}",
                                         front_end_processes=1 if options.front_end_target else None)
            if options.front_end_target:
                _interleave_front_end(host, group, outs, options, handler)
            for _, side, _ in group:
                yield outs[side]


def _interleave_front_end(host: MeasuringHost, group: list[tuple[Target, str, Pair]], outs: dict[str, Path], options: TraceOptions,
                          handler: Handler) -> None:
    """Front-end processes 2…N of each side, alternating the sides; a state that does not install
    again loses that process (the other state would be profiled in its name), noted."""
    n = options.front_end_processes
    for k in range(2, n + 1):
        for target, side, pair in group:
            handler.progress(k - 1, n, f"{target.name}: front-end process {k} of {n}, {side} state")
            build = host.measurer().builder.prepare(pair)
            if not build.ok:
                handler.note(f"{target.name}: the {side} state did not install again ({build.log_path}): its "
                             f"front-end process {k} is left out")
                continue
            front_end_process(host.s, outs[side], options, k)


def _capture_remote(host: MeasuringHost, sides: list[tuple[Target, str, Pair]], options: TraceOptions, handler: Handler,
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
