"""``hourly explain``: what a culprit changed in the compiled program, the flag that works around it,
and whether reverting it restores the level.

For each bisected culprit (``hourly.explain.plan.targets_from_store``) the last-good and first-bad
states are made the installed build again (from the wheel cache when possible, through the
profile's :class:`~hourly.execute.host.MeasuringHost`), and

1. the benchmark runs once at each with ``XLA_FLAGS`` += ``--xla_dump_to=<workdir>/explain/<step>/<side>
   --xla_dump_hlo_as_text`` (the user's own flags kept first); the optimized modules are matched
   and diffed structurally (:mod:`hourly.analysis.hlo_diff`);
2. the module that changed most is written as a repro: the first-bad module, the fusion that
   changed most as a module of its own, and the ``run_hlo_module`` / ``hlo-opt`` lines;
3. with ``sweep``: per-pass dumps of both states give the passes whose effect differs; the
   first-bad state is measured with each disabled (``--xla_disable_hlo_passes``) and with each
   ``--try-flag``, against fresh samples of both states (``analysis.judges.metric.MetricJudge.classify``);
4. with ``revert_check``: the tip of the ref is built with the culprit reverted (``git revert
   --no-commit`` in the trees hourly holds, a build identity of its own in the cache) and measured
   against the unmodified tip.

Everything lands in ``<workdir>/explain/<step>/`` with ``explain.json``, which ``hourly report``
reads. Runs with changed XLA flags are never measurement rows: a scan's numbers stay its own.
"""

from __future__ import annotations

import shutil
import statistics
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import cast

from hourly.adapters import proc
from hourly.adapters.gitrepo import GitRepo
from hourly.adapters.locks import holds_store_lock
from hourly.adapters.store import Store
from hourly.analysis import hlo_diff, op_times
from hourly.analysis.judges import MetricJudge
from hourly.analysis.samples import separation
from hourly.answers import Answer
from hourly.errors import HourlyError, ProcessError, UserError
from hourly.events import SILENT, Handler
from hourly.execute.host import MeasuringHost
from hourly.explain.plan import (
    EXPLAIN_ORIGIN,
    RECORD,
    Options,
    Target,
    dump_flags,
    platform_of,
    repro_commands,
    restored_fraction,
    save_record,
    target_dir,
    xla_flags,
)
from hourly.measure.benchmark import BenchResult, BenchSpec, bench_env, read_run, run_benchmark
from hourly.measure.build import Builder, Workspace
from hourly.measure.measurer import build_spec, open_repos, pin_of
from hourly.measure.settings import Settings
from hourly.model import Pair, Status, cut_side
from hourly.options import command_line
from hourly.profile.capture import TraceOptions, capture, tracing_command
from hourly.profile.compare import load_capture, read_trace

SIDES = ("good", "bad")
#: the states as the answers name them
STATE = {"good": "last-good state", "bad": "first-bad state"}
#: the last lines of each dump run's output kept in the record (a culprit found by exit status)
OUTPUT_LINES = 40


@holds_store_lock
def run_explain(store: Store, s: Settings, targets: list[Target], opts: Options,
                handler: Handler = SILENT) -> list[dict]:
    """Explain each target; the records (also saved as ``explain.json`` per target)."""
    xla, jax = open_repos(s)
    host = MeasuringHost(s, store, xla, jax, pin_of(s, jax), EXPLAIN_ORIGIN)
    out = []
    with host:
        for t in targets:
            out.append(Explainer(host, t, opts, handler).run())
    return out


class Explainer:
    def __init__(self, host: MeasuringHost, target: Target, opts: Options, handler: Handler):
        self.host, self.t, self.opts, self.handler = host, target, opts, handler
        self.s = host.s
        self.dir = target_dir(host.store.workdir, target)
        self.repeats = opts.repeats or max(self.s.repeats, 3)
        self.baselines: dict[str, list[float]] = {}
        self.installed: Pair | None = None
        self.traces: dict[str, Path] = {}
        self.trace_skipped: str | None = None  # why the dump runs are not traced
        self.fails: dict | None = None  # a culprit found by exit status: the op times' absence, when a state fails
        self.status = ByStatus(self)

    # -- pieces ---------------------------------------------------------------------------------
    def install(self, pair: Pair, label: str) -> None:
        if self.installed == pair:
            return
        m = self.host.measurer()
        m.installed = None  # explain changes what is installed behind the measurer's back
        build = m.builder.prepare(pair)
        if not build.ok:
            raise UserError(f"the {label} of {self.t.name} does not build ({build.log_path})",
                            "run `hourly bisect --retry-failed` or explain another step")
        self.installed = pair

    @property
    def by_status(self) -> bool:
        """Whether the culprit was found by exit status (``--mode exit``, a crash window's edge, the
        ``printed`` mode): a state that fails is then the evidence, not an error of the run."""
        a = self.t.answer
        return self.s.mode == "exit" or bool(a and (a.mode in ("exit", "printed") or a.kind in ("crash", "fix")))

    def bench(self, extra: list[str], repeats: int, tag: str) -> BenchResult:
        spec = self.s.bench_spec()
        if extra:
            spec = replace(spec, env={**spec.env, "XLA_FLAGS": xla_flags(spec.env, *extra)})
        return run_benchmark(spec, repeats, self.host.store.logs, f"explain-{self.t.name}-{tag}")

    def dump(self, side: str, pair: Pair, passes: bool = False, modules: list[str] | None = None) -> Path:
        out = self.dir / (f"{side}-passes" if passes else side)
        shutil.rmtree(out, ignore_errors=True)
        self.install(pair, f"{side} state")
        traced = not passes and self.opts.op_times and self.trace_skipped is None
        self.handler.note(f"{self.t.name}: {side} state xla {cut_side(pair.xla, 10)} jax {pair.jax[:10]}, "
                          f"{'per-pass ' if passes else ''}dump into {out}{' under the JAX profiler' if traced else ''}")
        if not (traced and self.traced_dump(side, out)):
            res = self.bench(dump_flags(out, passes, modules), 1, f"{side}{'-passes' if passes else ''}-dump")
            if res.status is not Status.OK and not self.by_status:  # by status, a failing state is the evidence
                raise UserError(f"the benchmark failed at the {side} state of {self.t.name} with the dump flags "
                                f"({res.detail()})", "check that it runs with XLA_FLAGS=--xla_dump_to=DIR")
        if not any(out.glob("*")):
            raise UserError(f"the benchmark wrote no XLA dump at the {side} state of {self.t.name} ({out})",
                            "does it run JAX in the same process, and keep XLA_FLAGS from its environment?")
        return out

    def traced_dump(self, side: str, out: Path) -> bool:
        """The dump run of ``side`` under the JAX profiler (:mod:`hourly.harness.trace`) into
        ``<side>-trace/``, so the trace's op names are the dump's; False (``trace_skipped`` says why)
        when the benchmark is no Python command the profiler can wrap."""
        spec = self.s.bench_spec()
        spec = replace(spec, env={**spec.env, "XLA_FLAGS": xla_flags(spec.env, *dump_flags(out))})
        trace_dir = self.dir / f"{side}-trace"
        shutil.rmtree(trace_dir, ignore_errors=True)
        try:
            tracing_command(spec.cmd, trace_dir, python=spec.python)
        except UserError as e:
            self.trace_skipped = e.message
            return False
        # the Python tracer off, as `hourly profile` has it: the join reads the ops alone, and every
        # Python call traced slowed the dump run and made each trace ~0.5 s longer to read
        cap = capture(spec.cmd, trace_dir, env=bench_env(spec), cwd=spec.cwd, python=spec.python,
                      options=TraceOptions(python_tracer_level=0), timeout=spec.timeout, check=False)
        if not cap.ok:
            from hourly.profile.run import profiler_failed
            raise profiler_failed(f"the benchmark failed under the profiler at the {side} state of {self.t.name} "
                                  "with the dump flags", trace_dir / "run.log",
                                  "check that it runs with XLA_FLAGS=--xla_dump_to=DIR, or pass --no-op-times")
        self.traces[side] = trace_dir
        return True

    def op_times(self, modules: list[dict]) -> dict:
        """The changed instructions' times in both states (:mod:`hourly.analysis.op_times`)."""
        if not self.opts.op_times:
            return {"skipped": "--no-op-times"}
        if self.fails is not None:
            return self.fails
        if self.trace_skipped is not None:
            return {"skipped": self.trace_skipped,
                    "command": command_line("profile", {"workdir": self.host.store.workdir})}
        tables = {}
        for side in SIDES:
            table = read_trace(load_capture(self.traces[side]))  # device ops where the trace has a device timeline
            if table is None:
                return {"skipped": f"the profiler wrote no trace (*.xplane.pb, perfetto_trace.json.gz) in "
                                   f"{self.traces[side]}", "traces": {k: str(v) for k, v in self.traces.items()}}
            tables[side] = table
        g, b = tables["good"], tables["bad"]
        rec = op_times.join(modules, {k: v.durations for k, v in g.ops.items()},
                            {k: v.durations for k, v in b.ops.items()}, source=b.source)
        rec["traces"] = {k: str(v) for k, v in self.traces.items()}
        rec["reading"] = {"good": g.as_dict(), "bad": b.as_dict()}
        if g.source != b.source:
            rec["note"] = f"the traces differ in kind (good: {g.describe()}; bad: {b.describe()})"
        elif b.source == "host":
            rec["note"] = ("the traces carry no per-op events (no hlo_op, no device row): the times are host "
                           "events, not instructions")
        return rec

    def baseline(self, side: str) -> list[float]:
        if side not in self.baselines:
            pair = getattr(self.t, side)
            self.install(pair, f"{side} state")
            self.handler.note(f"{self.t.name}: measuring the {side} state ({self.repeats} runs)")
            res = self.bench([], self.repeats, f"{side}-baseline")
            if not res.samples:
                raise UserError(f"the benchmark measured nothing at the {side} state of {self.t.name} "
                                f"({res.detail()})", "check the benchmark at that state")
            self.baselines[side] = res.samples
        return self.baselines[side]

    # -- the stages ------------------------------------------------------------------------------
    def run(self) -> dict:
        t = self.t
        rec: dict = {"step": t.step, "name": t.name, "title": t.title(), "culprit": t.culprit.to_json() if t.culprit else None,
                     "good": asdict(t.good), "bad": asdict(t.bad), "dir": str(self.dir)}
        if self.by_status:
            found = self.status.dumps(rec)
            dirs = found or {side: self.dir / side for side in SIDES}
        else:
            found = dirs = {side: self.dump(side, getattr(t, side)) for side in SIDES}
        rec["dumps"] = {k: str(v) for k, v in dirs.items()}
        diffs = hlo_diff.diff_dumps(dirs["good"], dirs["bad"]) if found else []
        rec["modules"] = [d.as_dict() for d in diffs]
        rec["identical"] = bool(diffs) and all(d.identical for d in diffs)
        rec["no_modules"] = not diffs
        if diffs:
            rec["llvm_ir"] = _ir_differs(dirs["good"], dirs["bad"])
            rec["ptx"] = ptx_diff(dirs["good"], dirs["bad"], self.host.store.workdir, t.step)
        rec["op_times"] = self.op_times(rec["modules"])
        rec["repro"] = write_repro(diffs, self.dir / "repro")
        if self.opts.sweep or self.opts.try_flags:
            rec["sweep"] = self.sweep(diffs)
        if self.opts.revert_check:
            rec["revert"] = self.revert_check()
        if self.baselines:
            rec["baselines"] = {k: {"median": statistics.median(v), "samples": v} for k, v in self.baselines.items()}
        save_record(self.dir / RECORD, rec)
        return rec

    def sweep(self, diffs: list[hlo_diff.ModuleDiff]) -> dict:
        """Per-pass dumps of both states, the passes whose effect differs, each disabled in turn at
        the first-bad state, and every --try-flag."""
        passes: list[str] = []
        changed = sorted({d.key.split()[0] for d in diffs if not d.identical})
        if self.opts.sweep and changed:
            dumps = {side: hlo_diff.pass_dumps(self.dump(side, getattr(self.t, side), passes=True, modules=changed))
                     for side in SIDES}
            passes = hlo_diff.differing_passes(dumps["good"], dumps["bad"])
        settings = [(f"--xla_disable_hlo_passes={p}", "pass", p) for p in passes[:self.opts.max_passes]]
        settings += [(f, "flag", f) for f in self.opts.try_flags]
        if self.by_status:
            return self.status.sweep(passes, settings)
        self.baseline("good")
        self.baseline("bad")
        rows: list[dict] = []
        for flag, kind, what in settings:
            row: dict = {"flag": flag, "kind": kind, "what": what}
            samples, detail = self.sampled(flag, f"sweep-{len(rows) + 1}")
            if not samples:
                row.update(verdict="failed", detail=detail)
            else:
                good, bad = self.baselines["good"], self.baselines["bad"]
                mg, mb = statistics.median(good), statistics.median(bad)
                c = MetricJudge.classify(samples, good, bad)
                med = statistics.median(samples)
                row.update(verdict=MetricJudge.sweep(c),
                           median=med, samples=samples, restored=restored_fraction(med, mg, mb), why=c.reason)
            rows.append(row)
        found = [r for r in rows if r["verdict"] == "restores"]
        best = max(found, key=lambda r: r["restored"]) if found else None
        mg, mb = statistics.median(self.baselines["good"]), statistics.median(self.baselines["bad"])
        return {"passes": passes, "measured": rows, "good_median": mg, "bad_median": mb,
                "workaround": best["flag"] if best else None,
                "skipped_passes": passes[self.opts.max_passes:]}

    def sampled(self, flag: str, tag: str) -> tuple[list[float], str]:
        """Runs of the first-bad state under ``flag``; while they fit neither end, more, one run
        at a time interleaved with one of each end (good, first-bad with the flag, first-bad
        without it), up to twice ``--repeats`` rounds: a machine whose speed drifts (another job
        starting, clocks) then moves all three alike instead of the setting alone, as the ends
        measured minutes before would. The samples, or none and why."""
        self.install(self.t.bad, "bad state")
        self.handler.note(f"{self.t.name}: first-bad state with {flag} ({self.repeats} runs)")
        res = self.bench([flag], self.repeats, tag)
        if not res.samples:
            return [], res.detail() or "no samples"
        samples = list(res.samples)
        for k in range(2 * self.repeats):
            c = MetricJudge.classify(samples, self.baselines["good"], self.baselines["bad"])
            if c.decided:
                break
            if k == 0:
                self.handler.note(f"{self.t.name}: with {flag}: {c.reason}; interleaving runs of both ends "
                                  f"and the setting (up to {2 * self.repeats} rounds)")
            for side, extra in (("good", []), ("bad", [flag]), ("bad", [])):
                self.install(getattr(self.t, side), f"{side} state")
                one = self.bench(extra, 1, f"{tag}-round{k + 1}-{side}{'-flag' if extra else ''}")
                if extra:
                    samples += one.samples
                else:
                    self.baselines[side] = self.baselines[side] + one.samples
        return samples, ""

    def revert_check(self) -> dict:
        c = self.t.culprit
        if not c:
            return {"ref": self.opts.revert_ref or self.s.ref, "verdict": "no single culprit to revert", "culprit": None}
        ref = self.opts.revert_ref or self.s.ref_of(c.repo)
        m = self.host.measurer()
        repos = {r.name: r for r in (self.host.xla, self.host.jax) if r is not None}
        repo = repos[c.repo]
        # the culprit's repository at the ref's tip, the other at the tip of the workdir's ref
        tip = Pair(*(repos[n].rev_parse(ref if n == c.repo else self.s.ref_of(n)) if n in repos
                     else getattr(self.t.bad, n) for n in ("xla", "jax")))
        out: dict = {"ref": ref, "culprit": c.sha, "repo": c.repo, "subject": c.subject,
                     "tip": asdict(tip)}
        try:
            repo.git("merge-base", "--is-ancestor", c.sha, getattr(tip, c.repo))
        except ProcessError:
            out["verdict"] = f"is not on {ref}"
            return out
        # does it revert cleanly? tried in the tree hourly holds (its next checkout drops the attempt)
        m.installed = None
        self.installed = None
        ws = m.builder.workspace
        assert ws is not None  # a local measurer holds the trees
        ws.checkout(tip)
        if not _revert(repo, c.sha):
            out["verdict"] = "does not revert cleanly"
            return out
        # the step's size, from fresh samples of both ends (the share restored is of it)
        if not self.by_status:
            mg, mb = statistics.median(self.baseline("good")), statistics.median(self.baseline("bad"))
        self.handler.note(f"{self.t.name}: measuring {ref} at xla {cut_side(tip.xla, 10)} jax {tip.jax[:10]} ({self.repeats} runs)")
        if self.by_status:
            tip_ran, _ = self.status.passes(tip, f"tip of {ref}", [], "revert-tip")
        else:
            self.install(tip, f"tip of {ref}")
            plain = self.bench([], self.repeats, "revert-tip")
        spec = build_spec(self.s)
        spec = replace(spec, picks=[*spec.picks, f"revert {c.repo}@{c.sha}"])  # a build identity of its own
        # the builder only checks out through its workspace: a reverting one stands in for it
        builder = Builder(cast(Workspace, RevertingCheckout(ws, repo, c.sha)), self.host.jax, self.host.xla,
                          spec, self.host.store)
        self.handler.note(f"{self.t.name}: building {ref} with {c.repo} {c.sha[:10]} reverted")
        self.installed = None
        build = builder.prepare(tip)
        if not build.ok:
            out.update(verdict="does not build reverted", log=build.log_path)
            return out
        self.installed = None  # the reverted build is installed: not a pair anyone else measures
        if self.by_status:
            return {**out, **self.status.revert(tip_ran)}
        reverted = self.bench([], self.repeats, "revert-reverted")
        if not plain.samples or not reverted.samples:
            out.update(verdict="could not be measured", detail=plain.detail() or reverted.detail())
            return out
        mp, mr = statistics.median(plain.samples), statistics.median(reverted.samples)
        step = mg - mb
        better = (mr > mp) == self.s.higher_is_better and mr != mp
        apart = separation(plain.samples, reverted.samples) if len(plain.samples) > 1 else 0.0
        restores = better and apart >= 3.0
        frac = (mr - mp) / step if step else None
        out.update(tip_median=mp, tip_samples=plain.samples, reverted_median=mr, reverted_samples=reverted.samples,
                   separation=apart, restored=frac, verdict="restores" if restores else "does not restore it")
        return out


class ByStatus:
    """What explaining a culprit found by exit status adds (:attr:`Explainer.by_status`): plain
    dump runs whose failure is the evidence, and the sweep's and the revert check's runs judged
    passed or failed instead of measured."""

    def __init__(self, ex: "Explainer"):
        self.ex = ex

    def spec(self) -> BenchSpec:
        """The benchmark as the bisection judged it: by exit status alone, or (``printed``) by
        whether the metric was printed."""
        spec = self.ex.s.bench_spec()
        a = self.ex.t.answer
        return replace(spec, expect_metric=bool(a and a.mode == "printed"))

    def run(self, side: str, pair: Pair) -> tuple[Path, dict]:
        """The dump run of ``side`` of a culprit found by exit status: a plain run, as the bisection
        ran the state (no profiler around it), whose output is kept; its dump folder and how it
        ended. A failing run is recorded, not raised: it is what the bisection found."""
        out = self.ex.dir / side
        shutil.rmtree(out, ignore_errors=True)
        self.ex.install(pair, f"{side} state")
        self.ex.handler.note(f"{self.ex.t.name}: {side} state xla {cut_side(pair.xla, 10)} jax {pair.jax[:10]}, "
                             f"dump into {out}")
        spec = self.spec()
        if spec.cwd and not Path(spec.cwd).is_dir():
            raise UserError(f"--bench-cwd {spec.cwd} is not a directory", "pass an existing directory")
        spec = replace(spec, env={**spec.env, "XLA_FLAGS": xla_flags(spec.env, *dump_flags(out))})
        stamp = time.strftime("%Y%m%d-%H%M%S")
        log = Path(self.ex.host.store.logs) / f"bench-explain-{self.ex.t.name}-{side}-dump-{stamp}.log"
        res = proc.run(spec.cmd, cwd=spec.cwd, env=bench_env(spec), timeout=spec.timeout, log_path=log, check=False)
        run = read_run(res.output, res.returncode, res.timed_out, res.duration, str(log), spec)
        lines = res.output.splitlines()
        how = {Status.OK: "passed", Status.CRASHED: f"exit code {res.returncode}", Status.TIMEOUT: "timed out",
               Status.NO_METRIC: "metric never printed"}.get(run.status, run.status.value)
        return out, {"passed": run.status is Status.OK, "status": run.status.value, "how": how,
                     "returncode": res.returncode, "log": str(log), "lines": len(lines),
                     "tail": lines[-OUTPUT_LINES:], "dumped": any(out.glob("*"))}

    def dumps(self, rec: dict) -> dict[str, Path] | None:
        """Both states' dump runs of a culprit found by exit status (``rec["outcomes"]``: how each
        ended, its output's end); then, where both states run, the dump runs again under the JAX
        profiler for the op times. The dump folders, or None when a failing state dumped nothing."""
        dirs, outcomes = {}, {}
        for side in SIDES:
            dirs[side], outcomes[side] = self.run(side, getattr(self.ex.t, side))
        rec["outcomes"] = outcomes
        failed = [side for side in SIDES if not outcomes[side]["passed"]]
        for side in SIDES:
            if not outcomes[side]["dumped"] and side not in failed:
                raise UserError(f"the benchmark wrote no XLA dump at the {side} state of {self.ex.t.name} ({dirs[side]})",
                                "does it run JAX in the same process, and keep XLA_FLAGS from its environment?")
        if len(failed) != 1:
            rec["outcomes_note"] = (
                f"the dump runs did not show the difference the bisection found: both states "
                f"{'passed' if not failed else 'failed'} this time (a flaky failure? `hourly bisect --flaky` "
                "measures each state's failure rate)")
        if failed:
            said = "; ".join(f"the {STATE[side]} fails ({outcomes[side]['how']})" for side in failed)
            self.ex.fails = {"skipped": f"{said}: a state that fails has no op times to set beside the other's; "
                                        "they are joined only where both states run", "failed": failed}
        elif self.ex.opts.op_times:
            spec = self.ex.s.bench_spec()
            try:
                tracing_command(spec.cmd, self.ex.dir / "good-trace", python=spec.python)
            except UserError as e:
                self.ex.trace_skipped = e.message
            else:  # both states run: their dump runs again, traced, so that the trace's op names are the dump's
                dirs = {side: self.ex.dump(side, getattr(self.ex.t, side)) for side in SIDES}
        empty = [side for side in failed if not outcomes[side]["dumped"]]
        if empty:
            rec["no_dump"] = {"side": empty[0], "why": f"the {STATE[empty[0]]} failed ({outcomes[empty[0]]['how']}) "
                              "before XLA dumped a program: there is no compiled program of it to diff"}
            return None
        return dirs

    def passes(self, pair: Pair, label: str, extra: list[str], tag: str) -> tuple[list[bool], str | None]:
        """``--repeats`` runs of ``pair`` (with ``extra`` XLA flags), each judged as the bisection
        judged the states: passed or not; and the first failure's detail."""
        self.ex.install(pair, label)
        spec = self.spec()
        if extra:
            spec = replace(spec, env={**spec.env, "XLA_FLAGS": xla_flags(spec.env, *extra)})
        res = run_benchmark(spec, self.ex.repeats, self.ex.host.store.logs, f"explain-{self.ex.t.name}-{tag}")
        return [r.status is Status.OK for r in res.counted], res.detail()

    def bad_rate(self) -> float:
        """How often the first-bad state fails: the bisection's count where it kept one, else always."""
        a = self.ex.t.answer
        r = (a.failure_rates or {}).get("first_bad") if a else None
        return r.rate if r is not None and r.rate is not None else 1.0

    def verdict(self, ran: list[bool]) -> tuple[str, str]:
        return status_verdict(ran, self.bad_rate())

    def sweep(self, passes: list[str], settings: list[tuple[str, str, str]]) -> dict:
        """The sweep of a culprit found by exit status: the first-bad state run under each setting,
        each run judged passed or failed (:func:`status_verdict`)."""
        rows: list[dict] = []
        for flag, kind, what in settings:
            self.ex.handler.note(f"{self.ex.t.name}: first-bad state with {flag} ({self.ex.repeats} runs)")
            ran, detail = self.passes(self.ex.t.bad, "bad state", [flag], f"sweep-{len(rows) + 1}")
            verdict, why = self.verdict(ran) if ran else ("failed", detail or "no run")
            rows.append({"flag": flag, "kind": kind, "what": what, "verdict": verdict, "why": why,
                         "passed": ran.count(True), "runs": len(ran)})
        best = next((r for r in rows if r["verdict"] == "restores"), None)
        return {"by_status": True, "passes": passes, "measured": rows, "bad_rate": self.bad_rate(),
                "workaround": best["flag"] if best else None, "skipped_passes": passes[self.ex.opts.max_passes:]}

    def revert(self, tip_ran: list[bool]) -> dict:
        """The revert check of a culprit found by exit status, the reverted build installed: its
        runs and the plain tip's, each judged passed or failed."""
        spec = self.spec()
        res = run_benchmark(spec, self.ex.repeats, self.ex.host.store.logs, f"explain-{self.ex.t.name}-revert-reverted")
        ran = [r.status is Status.OK for r in res.counted]
        rec = {"by_status": True, "tip_runs": _passed(tip_ran), "reverted_runs": _passed(ran)}
        if not tip_ran or not ran:
            return {**rec, "verdict": "could not be measured", "detail": res.detail()}
        if all(tip_ran):
            return {**rec, "verdict": "does not fail at the tip"}
        verdict, why = self.verdict(ran)
        return {**rec, "verdict": "does not restore it" if verdict == "does not restore" else verdict, "why": why}


def status_verdict(ran: list[bool], rate: float) -> tuple[str, str]:
    """Whether runs of the first-bad state under a setting (or reverted), each passed or not,
    restore the passing state: every run passes, and that many passes would be unlikely (p < 0.05)
    at the first-bad state's own failure rate ``rate``; every run failing does not restore it;
    anything else is unsure. The verdict and why."""
    n, failed = len(ran), ran.count(False)
    if failed == n:
        return "does not restore", f"fails {failed} of {n} runs"
    if failed:
        return "unsure", f"fails {failed} of {n} runs"
    chance = (1 - rate) ** n
    if chance < 0.05:
        return "restores", f"passes {n} of {n} runs (the first-bad state fails {rate:.0%} of its runs)"
    return "unsure", (f"passes {n} of {n} runs, but the first-bad state fails only {rate:.0%} of its runs: "
                      f"{n} passes come by chance {chance:.0%} of the time (more --repeats tell)")


def _passed(ran: list[bool]) -> dict:
    return {"passed": ran.count(True), "runs": len(ran)}


def _revert(repo: GitRepo, sha: str) -> bool:
    """``git revert --no-commit`` of ``sha`` in ``repo`` (a merge commit against its first parent);
    False, with the tree put back, when it does not apply cleanly."""
    parents = repo.git("rev-list", "--parents", "-n", "1", sha).split()[1:]
    args = ["revert", "--no-commit"] + (["-m", "1"] if len(parents) > 1 else []) + [sha]
    try:
        repo.git(*args, env={"GIT_EDITOR": "true"})
        return True
    except ProcessError:
        for undo in (("revert", "--abort"), ("reset", "--quiet", "--hard")):
            try:
                repo.git(*undo)
            except ProcessError:
                pass
        return False


class RevertingCheckout:
    """A workspace whose checkouts have the culprit reverted on top (the builder checks out through it)."""

    def __init__(self, workspace: Workspace, repo: GitRepo, sha: str):
        self.workspace, self.repo, self.sha = workspace, repo, sha

    def checkout(self, pair: Pair) -> None:
        self.workspace.checkout(pair)
        if not _revert(self.repo, self.sha):
            raise UserError(f"{self.repo.name} {self.sha[:10]} no longer reverts cleanly", "run explain again")

    def clean(self) -> None:
        """As the workspace's: untracked and ignored outputs go; the revert is staged, so it stays."""
        self.workspace.clean()


def _ir_differs(good: Path, bad: Path) -> dict:
    """With identical optimized HLO: whether the LLVM IR the backend left (CPU ``*.ir-with-opt.ll``,
    GPU ``*.ll``/``*.ptx``) differs, file by file, numbering prefixes ignored."""
    def files(d: Path) -> dict[str, str]:
        out = {}
        for p in d.glob("*"):
            if p.suffix in (".ll", ".ptx") and p.is_file():
                out[hlo_diff.strip_prefix(p.name)] = p.read_text(errors="replace")
        return out
    g, b = files(good), files(bad)
    differ = sorted(k for k in set(g) & set(b) if _ir_body(g[k]) != _ir_body(b[k]))
    return {"compared": len(set(g) & set(b)), "differ": differ,
            "only_good": sorted(set(g) - set(b)), "only_bad": sorted(set(b) - set(g))}


def ptx_diff(good: Path, bad: Path, workdir: Path, step: int) -> dict:
    """The PTX the GPU backend left (``*.ptx``, one per module), kernel by kernel (``.entry``); on a
    dump without PTX (the CPU backend) the record says that the diff needs a GPU, and the command."""
    def files(d: Path) -> dict[str, str]:
        return {hlo_diff.strip_prefix(p.name): p.read_text(errors="replace") for p in d.glob("*.ptx") if p.is_file()}
    g, b = files(good), files(bad)
    if not g and not b:
        return {"made": False,
                "why": "the dumps hold no PTX (this backend writes none; the CPU never does)",
                "command": command_line("explain", {"workdir": workdir, "step": step}),
                "needs": "a machine with an NVIDIA GPU and a CUDA jaxlib at both states (the wheel cache or "
                         "--build-cmd builds them)"}
    out: list[dict] = []
    for name in sorted(set(g) & set(b)):
        kg, kb = _ptx_kernels(g[name]), _ptx_kernels(b[name])
        out.append({"file": name, "kernels": len(set(kg) | set(kb)),
                    "differ": sorted(k for k in set(kg) & set(kb) if kg[k] != kb[k]),
                    "only_good": sorted(set(kg) - set(kb)), "only_bad": sorted(set(kb) - set(kg))})
    return {"made": True, "files": out, "only_good": sorted(set(g) - set(b)), "only_bad": sorted(set(b) - set(g))}


def _ptx_kernels(text: str) -> dict[str, str]:
    """``{kernel name: its body}`` of a PTX file (``.visible .entry name(`` … up to the next entry);
    comments and the file's header are left out."""
    import re
    kernels: dict[str, str] = {}
    name: str | None = None
    body: list[str] = []
    for line in text.splitlines():
        m = re.match(r"\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+([\w$.]+)", line)
        if m:
            if name is not None:
                kernels[name] = "\n".join(body)
            name, body = m.group(1), []
        elif name is not None and not line.lstrip().startswith("//"):
            body.append(line)
    if name is not None:
        kernels[name] = "\n".join(body)
    return kernels


def _ir_body(text: str) -> str:
    # source file names and module ids carry paths and numbering
    return "\n".join(line for line in text.splitlines()
                     if not line.startswith(("; ModuleID", "source_filename", "!")))


def write_repro(diffs: list[hlo_diff.ModuleDiff], out: Path) -> dict | None:
    """For the module that changed most: the first-bad module as written, the fusion or computation
    that changed most as a module of its own, and the command lines that replay them."""
    changed = [d for d in diffs if not d.identical and d.bad_path]
    if not changed:
        return None
    d = max(changed, key=lambda d: sum(c.weight() for c in d.changes))
    src = Path(d.bad_path or "")
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    stem = hlo_diff.strip_prefix(src.name).removesuffix(".txt")
    optimized = out / f"{stem}.hlo"
    shutil.copyfile(src, optimized)
    before_src = src.with_name(src.name.split(".")[0] + "." + d.key.split()[0] + ".before_optimizations.txt")
    before = None
    if before_src.is_file():
        before = out / f"{hlo_diff.strip_prefix(before_src.name).removesuffix('.txt')}.hlo"
        shutil.copyfile(before_src, before)
    platform = platform_of(src)
    rec: dict = {"module": d.key, "optimized": str(optimized), "before": str(before) if before else None,
                 "commands": repro_commands(optimized, before, platform)}
    largest = d.largest()
    if largest is not None:
        rec["largest"] = largest.name
        module = hlo_diff.read_module(src)
        inst = module.entry.by_name().get(largest.bad or "")
        called = [c for c in (inst.calls() if inst else []) if c in module.computations]
        if called:
            part = out / f"{stem}.{_safe(largest.name)}.hlo"
            part.write_text(hlo_diff.extract_computation(module, called[0]))
            rec["computation"] = called[0]
            rec["fusion_file"] = str(part)
            rec["fusion_commands"] = repro_commands(part, None, platform)
    lines = [f"# {d.key}: the first-bad module (optimized) and how to replay it", *rec["commands"]]
    if rec.get("fusion_file"):
        lines += [f"# {rec['largest']} ({rec['computation']}), the change that moved most, on its own",
                  *rec["fusion_commands"]]
    (out / "README.txt").write_text("\n".join(lines) + "\n")
    rec["readme"] = str(out / "README.txt")
    return rec


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)


#: the kinds of bisected answer the --explain stage of `hourly bisect` explains (the good end
#: before the culprit, the bad end at it); --find-fix answers run the other way
EXPLAINED_KINDS = ("regression", "crash", "")


@holds_store_lock
def explain_answers(store: Store, s: Settings, answers: list[Answer], opts: Options | None = None,
                    handler: Handler = SILENT) -> list[Answer]:
    """The ``--explain`` stage of ``hourly bisect``: each answer that names a culprit gets
    ``explained`` — its explain record (saved as ``hourly explain --step N`` saves it, so ``hourly
    report`` carries it), ``{"error": …, "fix": …}`` when explaining it failed (the bisection's answer
    stands), or ``{"skipped": …}`` saying why it was not explained. Returns ``answers``."""
    from hourly.explain.plan import targets_from_store
    wanted = [a for a in answers if a.culprit and a.last_good and a.first_bad]
    for a in answers:
        if any(a is x for x in wanted) and a.kind not in EXPLAINED_KINDS:
            a.explained = {"skipped": f"a {a.kind} answer: run `{command_line('explain', {'workdir': store.workdir})}` "
                                      "on a bisection of the regression"}
        elif not any(a is x for x in wanted) and not a.error:
            a.explained = {"skipped": "no single culprit commit to explain"}
    wanted = [a for a in wanted if a.kind in EXPLAINED_KINDS]
    if not wanted:
        return answers
    try:
        stored, _ = targets_from_store(store, s, key=s.bench_key())  # the answers just measured: this build's
    except UserError as e:
        for a in wanted:
            a.explained = {"error": e.message, "fix": e.fix}
        return answers
    opts = opts or Options()
    xla, jax = open_repos(s)
    host = MeasuringHost(s, store, xla, jax, pin_of(s, jax), EXPLAIN_ORIGIN)
    with host:
        for a in wanted:
            ends = (a.last_good, a.first_bad)
            target = next((t for t in reversed(stored) if (t.good, t.bad) == ends), None)
            if target is None:
                a.explained = {"error": "its bisection is not among the store's finished ones",
                                  "fix": f"run `{command_line('explain', {'workdir': store.workdir})}`"}
                continue
            handler.note(f"explaining {target.name}: {target.title()}")
            try:
                a.explained = Explainer(host, target, opts, handler).run()
            except HourlyError as e:  # a failed build or run: the bisection's answer stands, the retry is named
                a.explained = {"error": e.message if isinstance(e, UserError) else str(e),
                                  "fix": e.fix if isinstance(e, UserError) else None,
                                  "command": command_line("explain", {"workdir": store.workdir, "step": target.step})}
    return answers
