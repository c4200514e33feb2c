"""Bisection: narrow each regression window to one commit of xla or jax.

For every window (from detection over the stored scan, from ``--good/--bad``, or in exit mode
from every good→bad transition of the scan) it lists the candidate states
(:func:`hourly.analysis.bisection.candidate_states`), probes them in the order
:func:`~hourly.analysis.bisection.next_probe` chooses — reusing every measurement in the store and
every cached build — then re-measures the last good and first bad states, and, when that step
moves both repositories, tests the mixed pair to say which one is to blame.

Every verdict is a row of ``bisect_probes`` and every measurement a row of ``measurements``
(origin ``bisect``), each committed as it is reached: after ``kill -9`` the same command
continues from the stored verdicts, and a finished bisection prints its stored answer.

This module decides; it reports what it does as events to a
:class:`~hourly.bisect.events.BisectHandler` (the command renders them), and
:mod:`hourly.bisect.answer` builds the answers and their text.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections import Counter
from contextlib import ExitStack
from dataclasses import replace
from datetime import datetime
from typing import overload

from hourly.adapters.gitrepo import GitRepo
from hourly.adapters.locks import holds_store_lock
from hourly.adapters.store import Measurement, Store
from hourly.analysis.bisection import (
    COST_BUILD,
    COST_CACHED,
    COST_JAX_BUILD,
    COST_MEASURED,
    COST_NEAR_BREAK,
    Bounds,
    Level,
    State,
    Step,
    StepSearch,
    Verdict,
    bounds,
    classify,
    exit_transitions,
    exit_verdict,
    failure_rates,
    failures,
    first_round_samples,
    flaky_verdict,
    near_breaks,
    next_blame,
    next_probe,
    plan_probes,
    separation,
    split_points,
    timeline_bounds,
    with_mixed_states,
    worse,
)
from hourly.analysis.steps import group_points
from hourly.analysis.timeline import Resolver
from hourly.bisect.answer import commit, error_answer, iso
from hourly.bisect.events import BisectHandler
from hourly.bisect.pairing import TimePairing, pairing_for
from hourly.bisect.records import BisectRequest, Probe, Window
from hourly.errors import UserError
from hourly.execute.executors import Executor, LocalExecutor
from hourly.execute.host import BuildSplit, measure_counted
from hourly.measure.build import Builder, Workspace, give_back_left_trees, kept_paths
from hourly.measure.measurer import Measurer, build_spec, open_repos, pin_of, trees
from hourly.measure.pinned import Pin, gate_for
from hourly.measure.settings import Settings
from hourly.model import REPOS, Blame, Mode, Pair, PointResult, Status, cut_side
from hourly.plurals import plural
from hourly.scan.table import LEVEL, SCAN_ORIGIN
from hourly.timeparse import parse_time

#: The ends' means must lie this many standard errors apart.
SEPARATION_MIN = 3.0
#: Samples each end needs before probes are classified against it (capped by --max-repeats).
MIN_END_SAMPLES = 3
#: A verdict of the window search as a probe row's verdict: the earlier level is good, the later bad
#: (and a probe between two steps is bad: a regression came before it).
_VERDICT_OF = {Level.LOW: Verdict.GOOD, Level.HIGH: Verdict.BAD, Level.NEITHER: Verdict.BAD}


def _ts(label: str) -> int:
    return int(datetime.fromisoformat(label.replace("Z", "+00:00")).timestamp())


# -- windows ----------------------------------------------------------------------------------

_SHA_END = re.compile(r"^(?P<repo>xla|jax)@(?P<sha>[0-9a-fA-F]{4,40})$")


def _sha_end(text: str) -> bool:
    """``xla@<sha>``, ``jax@<sha>`` or both, comma-separated (not a time)."""
    return all(_SHA_END.match(p.strip()) for p in text.split(","))


_REPO_END = re.compile(r"^\s*(?P<repo>xla|jax)@(?P<sha>\S*)\s*$", re.I)


def _refuse_bad_sha(text: str) -> None:
    """``xla@<not a sha>`` (alone or in a comma list): one line naming the part that is no sha."""
    for part in text.split(","):
        m = _REPO_END.match(part)
        if m and not _SHA_END.match(part.strip()):
            raise UserError(f"{text}: {m['sha']!r} is not a commit sha (4 to 40 hex digits after {m['repo']}@)",
                            f"give {m['repo'].lower()}@<sha> with a commit of the {m['repo'].lower()} repository "
                            "(git log --first-parent shows them), or a time such as 2023-08-24T12:00:00Z")


def parse_end(text: str, tz: str, repos: dict[str, GitRepo], walks: dict[str, list[tuple[str, int]]],
              refs: dict[str, str] | None = None) -> int:
    """A window end as a unix time: a time as in the scan, or ``xla@<sha>`` / ``jax@<sha>``
    (the state at that commit's committer time), or both, ``xla@<sha>,jax@<sha>`` (the state
    once both had landed, as a nightly image pins them). A commit off the first-parent history of
    its repository's ref (``refs``) is an :class:`~hourly.bisect.branches.OffHistory`."""
    if "," in text and _sha_end(text):
        return max(parse_end(p, tz, repos, walks, refs) for p in text.split(","))
    m = _SHA_END.match(text.strip())
    if not m:
        _refuse_bad_sha(text)  # xla@zzzz is a commit that is none, not a time to be told the formats of
        return int(parse_time(text, tz).when.timestamp())
    name = m["repo"]
    if name not in repos or len(walks[name]) == 1 and walks[name][0][1] == 0:
        raise UserError(f"{text}: {name} is pinned in this hunt (--only), its commits are not candidates",
                        "pass a time, or a commit of the repository being hunted")
    sha = repos[name].resolve_sha(m["sha"])
    times = dict(walks[name])
    if sha not in times:
        from hourly.bisect.branches import OffHistory
        raise OffHistory(name, sha, f"{name}@{sha[:12]}", (refs or {}).get(name, "the ref"))
    if Resolver(walks[name]).at(times[sha]) != sha:
        raise UserError(f"{name}@{m['sha']} never stood alone at the tip: a later commit has an earlier time",
                        "pass a time instead")
    return times[sha]


def parse_ends(b: "Bisector", good: str, bad: str, tz: str, find_fix: bool = False) -> tuple[int, int]:
    """``--good`` and ``--bad`` as unix times; an end off the first-parent history of its ref is
    refused with the commands that bisect it (hourly.bisect.branches.refusal)."""
    from hourly.bisect.branches import OffHistory, refusal
    got: dict[str, int | OffHistory] = {}
    for flag, text in (("--good", good), ("--bad", bad)):
        try:
            got[flag] = parse_end(text, tz, b.repos, b.walks, b.refs)
        except OffHistory as e:
            got[flag] = e
    later = "--good" if find_fix else "--bad"
    for flag in (later, "--bad" if find_fix else "--good"):
        off = got[flag]
        if isinstance(off, OffHistory):
            other = got["--bad" if flag == "--good" else "--good"]
            peer: int | str | None = other.sha if isinstance(other, OffHistory) and other.repo == off.repo else \
                other if isinstance(other, int) else None
            raise refusal(off, b.repos[off.repo], b.walks[off.repo], peer, flag, flag == later)
    g, x = got["--good"], got["--bad"]
    assert isinstance(g, int) and isinstance(x, int)  # every OffHistory was raised above
    return g, x


def collapsed_points(store: Store) -> list[tuple[str, str, Pair]]:
    """The scan's instants with consecutive equal pairs merged: (first label, last label, pair)."""
    rows = [PointResult(label, x, j, "planned") for label, x, j in store.points(LEVEL)]
    return [(rows[g.first].time, rows[g.last].time, Pair(g.point.xla, g.point.jax)) for g in group_points(rows)]


def windows_from_store(store: Store, s: Settings, mode: Mode, find_fix: bool = False) -> list[Window]:
    """Every regression of the stored scan: detection's regressions (metric) or good→bad
    transitions of the exit status (exit); with ``find_fix``, its improvements or bad→good
    transitions."""
    points = collapsed_points(store)
    if len(points) < 2:
        raise UserError("the store holds no scan of two or more pairs",
                        "run `hourly scan` first, or pass --good and --bad")
    latest = store.all_latest(s.bench_key(), origin=SCAN_ORIGIN)
    ms = [latest.get((p.xla, p.jax)) for _, _, p in points]
    out = []
    if mode is Mode.PRINTED:  # where the metric stops printing (ok → no_metric), or comes back
        from hourly.analysis.steps import metric_windows
        from hourly.scan.table import stored_scan
        for cw in metric_windows(stored_scan(store, s).points):
            if cw.bad != find_fix:
                out.append(Window(_ts(cw.before.time), _ts(cw.after.time), "metric windows",
                                  "metric printed → not printed" if cw.bad else "metric not printed → printed",
                                  kind=cw.kind))
    elif mode is Mode.METRIC:
        from hourly.analysis.detect import ChangeKind, EdgeVerdict, percent
        from hourly.analysis.steps import find_steps, step_key
        from hourly.scan.table import stored_scan
        table = stored_scan(store, s)
        checks = table.edge_checks or {}
        for st in find_steps(table.points, s.higher_is_better)[0]:
            c, n = st.change, st.numbers()
            check = checks.get(step_key(st))
            if check is not None and check.verdict is EdgeVerdict.OUTLIER:
                continue  # an edge step that measuring again called an outlier: nothing to bisect
            if c.kind is (ChangeKind.IMPROVEMENT if find_fix else ChangeKind.REGRESSION):
                out.append(Window(_ts(st.before.time), _ts(st.after.time), "detect",
                                  f"{n.levels()} ({percent(n.relative_change)}; scan: {n.counts()})",
                                  kind="improvement" if find_fix else "regression"))
    else:
        verdicts = [_exit_of(m) if m else None for m in ms]
        if find_fix:  # a fix is a good→bad transition of the flipped verdicts
            verdicts = [_flip(v) for v in verdicts]
        for a, b in exit_transitions(verdicts):
            out.append(Window(_ts(points[a][1]), _ts(points[b][0]), "exit transitions",
                              "exit status bad → good" if find_fix else "exit status good → bad",
                              kind="fix" if find_fix else "crash"))
    return out


_FLIPPED: dict[Verdict | None, Verdict | None] = {Verdict.GOOD: Verdict.BAD, Verdict.BAD: Verdict.GOOD}


@overload
def _flip(v: Verdict) -> Verdict: ...
@overload
def _flip(v: None) -> None: ...
def _flip(v: Verdict | None) -> Verdict | None:
    """Good ↔ bad (finding a fix: the state before it is the "old" one, as git bisect's terms)."""
    return _FLIPPED.get(v, v)


def printed_verdict(statuses: list) -> Verdict:
    """``--mode printed``, git bisect run's rule over whether runs printed the metric: a run that
    exited 0 without it is bad, every run printing it is good; crashes and time-outs say nothing
    about the metric (skip: they are crash windows of their own), and so does no run at all."""
    if not statuses:
        return Verdict.SKIP
    if any(st == Status.NO_METRIC.value for st in statuses):
        return Verdict.BAD
    if any(st != Status.OK.value for st in statuses):
        return Verdict.SKIP
    return Verdict.GOOD


def _exit_of(m: Measurement) -> Verdict | None:
    if m.status == Status.BUILD_FAILED.value:
        return Verdict.SKIP
    return exit_verdict([r.get("returncode") for r in m.runs])


def default_mode(store: Store, s: Settings) -> Mode:
    """Exit status for an exit-status scan (``--mode exit``); metric when the scan measured a
    metric; else exit status."""
    if s.mode == Mode.EXIT.value:
        return Mode.EXIT
    latest = store.all_latest(s.bench_key(), origin=SCAN_ORIGIN)
    rows = store.points(LEVEL)
    if not rows:
        return Mode.METRIC
    return Mode.METRIC if any(latest.get((x, j)) and latest[(x, j)].status == Status.OK.value
                              for _, x, j in rows) else Mode.EXIT


# -- the bisector -----------------------------------------------------------------------------

class Bisector:
    """Bisects windows under one set of settings; a context manager that holds the trees only
    while something has to be built or run. It is the host its executor measures for
    (hourly.execute.host.Host: ``s``, ``store``, ``key``, ``origin``, ``gate``, ``split``, ``measure``)."""

    #: the origin of the bisection's measurement rows
    origin = "bisect"

    def __init__(self, s: Settings, store: Store, mode: Mode, req: BisectRequest | None = None,
                 handler: BisectHandler | None = None, executor: Executor | None = None,
                 pairing: TimePairing | None = None):
        req = req or BisectRequest()
        find_fix, rerun, min_change, max_repeats = req.find_fix, req.rerun, req.min_change, req.max_repeats
        # finding a fix: the search looks for the first state that changed; in metric mode a change
        # for the better is a regression of the flipped direction, in exit mode verdicts flip
        self.find_fix = find_fix
        if find_fix and mode is Mode.METRIC:
            s = replace(s, higher_is_better=not s.higher_is_better)
        self.invert = find_fix and mode is not Mode.METRIC
        #: exit mode: verdicts from failure rates (--flaky, or on by itself once a state shows both
        #: outcomes); ``rates``: the clean end's and the crashing end's failure rates
        self.flaky = bool(getattr(req, "flaky", False))
        self.rates: tuple[float, float] | None = None
        self.s, self.store, self.mode, self.rerun = s, store, mode, rerun
        #: runs the builds and benchmarks (default: here, one after another); ``workers`` states a round
        self.executor = executor or LocalExecutor()
        self.rounds = 0  # calls of measure_many
        self.jobs = 0    # (pair, count) requests sent through it
        self.handler = handler or BisectHandler()
        if find_fix:
            self.handler.terms = {"good": "old", "bad": {Mode.EXIT: "fixed", Mode.PRINTED: "back"}.get(mode, "improved")}
        self.min_change = min_change
        self.max_repeats = max(max_repeats, s.repeats)
        self.key = s.bench_key()
        self.xla, self.jax = open_repos(s)
        self.repos = {r.name: r for r in trees(self.xla, self.jax)}
        #: how JAX and XLA are paired into states (--pairing; a descent lists its own: bisect/pairing.py)
        self.pairing = pairing or pairing_for(s, self.xla, self.jax)
        self.pin = pin_of(s, self.jax)  # --only: the side that stays put walks one commit
        hunted = [r for n, r in self.repos.items() if not self.pin or n != self.pin.side]
        for r in hunted:
            r.rev_parse(s.ref_of(r.name))
        #: each hunted repository's walked ref (--xla-ref, --jax-ref, else --ref)
        self.refs = {r.name: s.ref_of(r.name) for r in hunted}
        self.walks = {r.name: r.history(self.refs[r.name], s.first_parent) for r in hunted}
        if self.pin:
            self.walks[self.pin.side] = self.pin.walk()
        self._stack = ExitStack()
        self._since = time.time()  # --retry-failed: failures recorded before this are built again
        self._bid: int | None = None
        #: metric mode: (search, its states, offset of the current window in them)
        self._going: tuple[StepSearch, list[State], int] | None = None
        self._ahead_of_ends: list[Pair] = []  # probes for the ends' round (_plan_ends_round)
        self._ends_want = 0  # and the samples each state of that round gets
        self._ends: tuple[Pair, Pair] | None = None  # the current window's good and bad states
        self._measurer: Measurer | None = None
        #: per end of the current window: how many samples the verdicts compared against, and from where
        self.end_samples: dict[str, dict] = {}
        self._cache = Builder(None, self.jax, self.xla, build_spec(s), store)
        self.split = BuildSplit()  # jaxlib builds, jax package builds not yet in a recorded row
        self.gate = gate_for(self.jax, self.pin)
        from hourly.measure.cherry_pick import parse
        self.picks = parse(s.cherry_pick, self.repos)  # checked now: a bad spec fails before any build

    def __enter__(self) -> "Bisector":
        return self

    def identity_extra(self) -> dict:
        """More of the bisection's identity (a manual bisection's, hourly.bisect.manual): none here,
        so the keys of bisections stored before stay theirs."""
        return {}

    def __exit__(self, *exc) -> None:
        taken = self._measurer is not None
        self._stack.close()
        if not taken:  # nothing measured: the trees a killed run left are given back all the same
            give_back_left_trees(trees(self.xla, self.jax), self.s.force, kept_paths(self.s))

    def measurer(self) -> Measurer:
        if self._measurer is None:
            ws = self._stack.enter_context(Workspace(trees(self.xla, self.jax), force=self.s.force, keep=kept_paths(self.s)))
            self._measurer = Measurer(self.s, self.store, self.xla, self.jax, ws, self.pin)
        return self._measurer

    # -- measuring ----------------------------------------------------------------------------
    @property
    def workers(self) -> int:
        """States probed per round."""
        return self.executor.workers

    def measure_many(self, reqs: list[tuple[Pair, int]]) -> list[tuple[Measurement, int, int]]:
        """For each (pair, count): its Measurement (already recorded in the store with origin 'bisect',
        exactly as Measurer.measure records it), builds run, runs run — in the order asked. One round."""
        self.rounds += 1
        self.jobs += len(reqs)
        return self.executor.measure_many(self, reqs)

    def _measure_one(self, pair: Pair, repeats: int) -> tuple[Measurement, int, int]:
        """One state measured: a round of its own."""
        return self.measure_many([(pair, repeats)])[0]

    def measure(self, pair: Pair, count: int) -> tuple[Measurement, int, int]:
        """The host protocol's measurement here (hourly.execute.host); jaxlib and jax package builds
        go into ``split``, carried by the next recorded row (answers report their sums)."""
        return measure_counted(self.measurer(), self.split, pair, count, self.origin)

    def _stored(self, pair: Pair) -> list[Measurement]:
        ms = self.store.measurements(self.key, pair.xla, pair.jax)
        if self.s.retry_failed:  # every failure recorded before this run is measured again: builds and runs
            ms = [m for m in ms if not (m.status != Status.OK.value and (m.created or 0) < self._since)]
        return ms

    def _known_failed(self, pair: Pair) -> str | None:
        if self.gate is not None and self.gate.untestable(pair.jax):  # --only jax: too new for the jaxlib
            return self.gate.untestable(pair.jax)
        rec = self.store.build(pair.xla, pair.jax, self._cache.build_key(pair))
        if rec and rec.status == "failed" and not (self.s.retry_failed and (rec.finished or 0) < self._since):
            return f"build failed (log {rec.log_path})"
        return None

    def cost(self, pair: Pair) -> float:
        if self._known_failed(pair) or self._stored(pair):
            return COST_MEASURED
        # priced by what it rebuilds: jaxlib cached (same XLA commit and native inputs) is nearly free
        return {"cached": COST_CACHED, "jax": COST_JAX_BUILD}.get(self._cache.need(pair).value, COST_BUILD)

    def evaluate(self, pair: Pair, role: str, refs: tuple[list[float], list[float]] | None,
                 fresh: bool = False) -> Probe:
        """The verdict on one state: from stored measurements when they decide, else measured
        (more repeats while unsure, up to --max-repeats)."""
        failed = self._known_failed(pair)
        if failed:
            return Probe(role, pair, Verdict.SKIP, failed)
        stored = [] if fresh else self._stored(pair)
        builds = runs = 0
        if self.mode is not Mode.METRIC:  # exit status, or whether the metric was printed
            runs_ = [r for m in stored for r in m.runs]
            if any(m.status == Status.BUILD_FAILED.value for m in stored):
                return Probe(role, pair, Verdict.SKIP, "build failed")
            rcs = [r.get("returncode") for r in runs_]
            if self.mode is Mode.EXIT and not self.flaky and _both(rcs) and self.rates is None and role != "end":
                self.flaky = True  # one state both passes and fails: one run decides nothing
            if self.mode is Mode.EXIT and self.flaky and role != "end":
                return self._flaky_probe(role, pair, rcs)
            if not runs_:
                return self._exit_probe(role, pair, *self._measure_one(pair, self.s.repeats))
            return self._runs_probe(role, pair, runs_)
        assert refs is not None  # metric mode: every caller passes the ends' samples
        good, bad = refs
        samples = [x for m in stored if m.status == Status.OK.value for x in m.samples]
        if not samples and any(m.status != Status.OK.value for m in stored):
            why = next(m for m in stored if m.status != Status.OK.value)
            return Probe(role, pair, Verdict.SKIP, f"{why.status}: {why.detail}")
        while True:
            if samples:
                c = classify(samples, good, bad)
                if c.verdict is not Verdict.UNSURE:
                    return Probe(role, pair, c.verdict, c.reason, samples, builds=builds, runs=runs,
                                 between=c.between)
                if len(samples) >= self.max_repeats:
                    return Probe(role, pair, Verdict.SKIP, f"unsure after {plural(len(samples), 'sample')}: {c.reason}",
                                 samples, builds=builds, runs=runs)
                need = min(len(samples), self.max_repeats - len(samples))
                # the ends' means are as uncertain as the probe's: measure them as often (runs, no builds)
                self._grow_ends(good, bad, len(samples) + need)
            else:
                need = self.s.repeats
            m, b, r = self._measure_one(pair, need)
            builds, runs = builds + b, runs + r
            if m.status != Status.OK.value:
                return Probe(role, pair, Verdict.SKIP, f"{m.status}: {m.detail}", samples, builds=builds, runs=runs)
            samples = samples + m.samples

    def _flaky_probe(self, role: str, pair: Pair, rcs: list, builds: int = 0, runs: int = 0) -> Probe:
        """Exit mode, flaky: more runs (doubling, up to --max-repeats) until the state's failure rate
        is told apart from one end's; still unsure then: untestable, "unsure after N samples"."""
        if self.rates is None:
            self.rates = self._end_rates()
        p0, p1 = self.rates
        while True:
            if rcs:
                c = flaky_verdict(rcs, p0, p1)
                if c.verdict is not Verdict.UNSURE:
                    v = _flip(c.verdict) if self.invert else c.verdict
                    return Probe(role, pair, v, c.reason, returncodes=rcs, builds=builds, runs=runs)
                if failures(rcs)[1] >= self.max_repeats or len(rcs) >= self.max_repeats:
                    return Probe(role, pair, Verdict.SKIP, f"unsure after {plural(len(rcs), 'sample')}: {c.reason}",
                                 returncodes=rcs, builds=builds, runs=runs)
            need = min(max(len(rcs), self.s.repeats, 1), self.max_repeats - len(rcs))
            m, b, r = self._measure_one(pair, need)
            builds, runs = builds + b, runs + r
            if m.status in (Status.BUILD_FAILED.value, Status.UNTESTABLE.value):
                return Probe(role, pair, Verdict.SKIP, m.detail or "build failed", returncodes=rcs, builds=builds, runs=runs)
            rcs = rcs + [x.get("returncode") for x in m.runs if not x.get("warmup")]

    def _rcs(self, pair: Pair) -> list:
        return [r.get("returncode") for m in self._stored(pair) for r in m.runs if not r.get("warmup")]

    def _end_rates(self) -> tuple[float, float]:
        """The clean end's and the crashing end's failure rates (--find-fix: the old end crashes)."""
        assert self._ends is not None  # set when a window's ends are judged, before any rate is asked
        good, bad = self._ends
        clean, crashing = (bad, good) if self.invert else (good, bad)
        return failure_rates(self._rcs(clean), self._rcs(crashing))

    def _flaky_ends(self, bid: int, good_pair: Pair, bad_pair: Pair) -> None:
        """Flaky: each end measured FLAKY_END_RUNS times (the crashing one more, up to --max-repeats,
        until it has failed once); the crashing end must fail more often than the clean one."""
        want = min(FLAKY_END_RUNS, self.max_repeats)
        clean, crashing = (bad_pair, good_pair) if self.invert else (good_pair, bad_pair)
        for pair in (clean, crashing):
            while True:
                rcs = self._rcs(pair)
                k, n = failures(rcs)
                short = want - len(rcs)
                if short <= 0 and (pair == clean or k or len(rcs) >= self.max_repeats):
                    break
                more = short if short > 0 else min(len(rcs), self.max_repeats - len(rcs))
                self._record(bid, self._exit_probe("end", pair, *self._measure_one(pair, more)))
        kc, nc = failures(self._rcs(clean))
        kb, nb = failures(self._rcs(crashing))
        if not nb or kb / nb <= (kc / nc if nc else 0.0):
            raise UserError(f"the failing end {crashing.short()} fails in {kb} of {nb} runs, the other in {kc} of {nc}",
                            "pass ends on either side of the change in failure rate, or a larger --max-repeats")
        self.rates = self._end_rates()

    def _exit_probe(self, role: str, pair: Pair, m: Measurement, builds: int, runs: int) -> Probe:
        """The exit-mode verdict on a state just measured."""
        if m.status in (Status.BUILD_FAILED.value, Status.UNTESTABLE.value):
            return Probe(role, pair, Verdict.SKIP, m.detail or "build failed", builds=builds, runs=runs)
        return self._runs_probe(role, pair, m.runs, builds, runs)

    def _runs_probe(self, role: str, pair: Pair, runs_: list[dict], builds: int = 0, runs: int = 0) -> Probe:
        """The verdict on a state by its runs: their exit codes (exit mode; by failure rate when
        flaky) or whether they printed the metric (printed mode)."""
        rcs = [r.get("returncode") for r in runs_]
        if self.mode is Mode.PRINTED:
            statuses = [r.get("status") for r in runs_]
            v = printed_verdict(statuses)
            return Probe(role, pair, _flip(v) if self.invert else v, f"runs {statuses}", returncodes=rcs,
                         builds=builds, runs=runs)
        if self.flaky and role != "end":
            return self._flaky_probe(role, pair, rcs, builds, runs)
        return Probe(role, pair, self._exit_verdict(rcs), f"exit codes {rcs}", returncodes=rcs, builds=builds, runs=runs)

    def _exit_verdict(self, rcs: list) -> Verdict:
        """Good or bad by these exit codes (turned round with --find-fix in exit mode)."""
        return _flip(exit_verdict(rcs)) if self.invert else exit_verdict(rcs)

    def _evaluate_many(self, pairs: list[Pair], role: str) -> list[Probe]:
        """Exit mode: the verdicts on several states, those to measure measured in one round."""
        if self.flaky:  # each state takes the runs its own sequential test needs
            return [self.evaluate(p, role, None) for p in pairs]
        todo = [p for p in pairs if not self._known_failed(p) and not any(
            m.status == Status.BUILD_FAILED.value or m.runs for m in self._stored(p))]
        got = dict(zip(todo, self.measure_many([(p, self.s.repeats) for p in todo]), strict=True)) if todo else {}
        return [self._exit_probe(role, p, *got[p]) if p in got else self.evaluate(p, role, None) for p in pairs]

    def _bisection_id(self) -> int:
        """The store's id of the bisection under way (bisect_one sets it before any probe)."""
        if self._bid is None:
            raise RuntimeError("no bisection under way: bisect_one sets the id before any probe")
        return self._bid

    def _record(self, bid: int, p: Probe) -> Probe:
        row = p.row()
        row["jaxlib_builds"], row["jax_builds"] = self.split.take()
        self.store.add_probe(bid, row)
        self.handler.verdict(p)
        return p

    def _grow_ends(self, good: list[float], bad: list[float], want: int) -> None:
        if self._ends is None:
            return
        for ref, pair, v in ((good, self._ends[0], Verdict.GOOD), (bad, self._ends[1], Verdict.BAD)):
            if len(ref) < want:
                ref[:] = self._end_samples(self._bisection_id(), pair, v, want)[0]

    def _end_samples(self, bid: int, pair: Pair, verdict: Verdict, want: int,
                     got: tuple[Measurement, int, int] | None = None) -> tuple[list[float], int, int]:
        """The end's samples — the scan's and any earlier bisection's, never changed — measuring
        more (rows of their own, origin ``bisect``) until it has ``want``; ``got``: that measurement,
        taken already in a round with the other end."""
        stored = [m for m in self._stored(pair) if m.status == Status.OK.value and not (got and m.id == got[0].id)]
        samples = [x for m in stored for x in m.samples]
        origins = [m.origin for m in stored for _ in m.samples]
        builds = runs = 0
        if len(samples) < want:
            m, builds, runs = got or self._measure_one(pair, want - len(samples))
            new = m.samples if m.status == Status.OK.value else []
            samples += new
            origins += [m.origin] * len(new)
            self._record(bid, Probe("end", pair, verdict if samples else Verdict.SKIP,
                                    f"{plural(len(samples), 'sample')} of the {verdict.value} end ({_from(origins)})",
                                    m.samples, builds=builds, runs=runs))
        self.end_samples[verdict.value] = {"n": len(samples), "from": dict(sorted(Counter(origins).items()))}
        return samples, builds, runs

    # -- one window ---------------------------------------------------------------------------
    def bisect(self, w: Window) -> list[dict]:
        """Every regression in the window: the search pins the earliest and says whether the rest
        of the window (from its first bad state) still holds a step; then that rest is bisected in
        turn, reusing every measurement."""
        answers: list[dict] = []
        self._going = None  # metric mode: the search, its states, and where this window starts in them
        while True:
            try:
                a = self.bisect_one(w)
            except UserError as e:
                if answers:  # the rest of the window: no further step named, and why (said, never dropped)
                    answers[-1]["rest"] = {"from": iso(w.good_time), "to": iso(w.bad_time), "why": e.message,
                                           "fix": e.fix}
                    return answers
                if w.origin == "flags":
                    raise
                # one window of many (from the store) that cannot be bisected: say why, go on
                self.handler.cannot_bisect(w, e)
                return [dict(error_answer(w, self.mode.value, e), kind=w.kind)]
            a["kind"] = a.get("kind") or w.kind  # answers stored before kinds existed
            answers.append(a)
            nxt = a.get("continues_at")
            if nxt is None or nxt >= w.bad_time or (self.mode is not Mode.METRIC and not a.get("confirmed")):
                return answers
            w = Window(nxt, w.bad_time, w.origin, "the rest of the window, after the step above")

    def bisect_one(self, w: Window) -> dict:
        states = self.pairing.states(self.walks, w.good_time, w.bad_time)
        if len(states) < 2:
            raise UserError(f"nothing changed between {iso(w.good_time)} and {iso(w.bad_time)}",
                            "pass a good end before the bad end with commits between them")
        good_pair, bad_pair = states[0].pair, states[-1].pair
        ident: dict[str, object] = {"bench": self.key, "mode": self.mode.value, "good": [good_pair.xla, good_pair.jax],
                                    "bad": [bad_pair.xla, bad_pair.jax], "t": [w.good_time, w.bad_time],
                                    "ref": self.s.ref, "fp": self.s.first_parent}
        if any(r != self.s.ref for r in self.refs.values()):  # walked on a repository's own ref; without
            ident["refs"] = dict(self.refs)  # one, the key is the one bisections stored before had
        if self.find_fix:
            ident["find_fix"] = True
        ident.update(self.pairing.ident())
        ident.update(self.identity_extra())
        key = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:20]
        bid, status, result = self.store.bisection(key, {
            "bench_key": self.key, "mode": self.mode.value, "good_time": w.good_time, "bad_time": w.bad_time,
            "good_xla": good_pair.xla, "good_jax": good_pair.jax, "bad_xla": bad_pair.xla, "bad_jax": bad_pair.jax})
        if status == "done" and not self.rerun:
            assert result is not None  # finish_bisection stores the answer with status 'done'
            return result
        if status == "done":
            self.store.restart_bisection(bid)
        rows = self.store.probes(bid)
        rounds0, jobs0 = self.rounds, self.jobs
        self._bid, self._ends = bid, (good_pair, bad_pair)
        self.end_samples = {}
        self.handler.started(w, len(states), len(rows))
        index = {st.pair: i for i, st in enumerate(states)}
        stored = {(r["role"], Pair(r["xla"], r["jax"])): r for r in rows}
        verdicts: dict[int, Verdict] = {}
        for r in rows:
            if r["role"] == "probe" and Pair(r["xla"], r["jax"]) in index:
                verdicts[index[Pair(r["xla"], r["jax"])]] = Verdict(r["verdict"])

        # the ends (unless this is the rest of a window whose search goes on: it knows a step is left)
        refs = None
        going = self._going
        if going is not None and [st.pair for st in going[1][going[2]:]] != [st.pair for st in states]:
            going = self._going = None
        if self.mode is Mode.METRIC and going is not None:
            pass
        elif self.mode is Mode.METRIC:
            self._plan_ends_round(states, rows)
            refs = self._metric_ends(w, bid, good_pair, bad_pair)
        else:
            self._exit_ends(bid, stored, good_pair, bad_pair)

        # the search
        more_after = False
        known: dict[Pair, Verdict] = {}  # exit mode: the search's verdicts, mixed states included
        if self.mode is Mode.METRIC:
            step, search, off = self._search_steps(w, states, rows, going)
            b = Bounds(step.lo - off, step.hi - off)
            more_after = search.more_after
            parent = going[1] if going else states
            self._going = (search, parent, step.hi)
        else:
            b, known = self._exit_search(bid, states, rows)
        last_good, first_bad = states[b.lo].pair, states[b.hi].pair

        # confirmation: fresh measurements of the two states the answer rests on
        if self.mode is Mode.METRIC:
            self._parent_pairs = [st.pair for st in parent]
        confirmed = self._confirmation(bid, stored, last_good, first_bad, refs,
                                       *((search, step) if self.mode is Mode.METRIC else (None, None)))
        if self.mode is Mode.METRIC:  # blame compares the mixed pairs with the step's two levels
            self._flush(search, [st.pair for st in parent])
            refs, self._ends = (search.ref(step.lo), search.ref(step.hi)), (last_good, first_bad)

        # blame
        moved = self.pairing.moved(self.walks, last_good, first_bad)
        blame = None
        if b.adjacent and moved["xla"] and moved["jax"]:
            blame = self._blame(bid, last_good, first_bad, stored, refs, known)
        answer = self._answer(w, states, b, verdicts, moved, blame, confirmed, bid)
        answer["continues_at"] = states[b.hi].time if more_after and b.hi < len(states) - 1 else None
        if self.mode is Mode.EXIT:  # each end's failure rate: what a flaky answer rests on
            answer["flaky"] = self.flaky
            answer["failure_rates"] = {name: _rate(self._rcs(p)) for name, p in
                                       (("last_good", last_good), ("first_bad", first_bad))}
        # rounds of measure_many (one state each without workers) and the requests they carried
        answer["rounds"], answer["jobs"] = self.rounds - rounds0, self.jobs - jobs0
        self.store.finish_bisection(bid, answer)
        return answer

    def _exit_search(self, bid: int, states: list[State], rows: list[dict]) -> tuple[Bounds, dict[Pair, Verdict]]:
        """Exit mode: probes until the last good and first bad state are settled, over the chain of
        :func:`~hourly.analysis.bisection.with_mixed_states` (a step moving both repositories holds
        its mixed state old xla + new jax, which the blame step then reuses); stored probe verdicts
        are reused, and a state sharing a commit with one that failed to build costs a little more.
        With workers, k states a round splitting the span into equal parts. Returns the bounds on
        ``states`` and every verdict of the chain."""
        # a time pairing's step moving both repositories holds a mixed state; a pin pairing's states
        # are what JAX pinned (old xla + new jax is no state of it) and a descent's move one repository
        chain = with_mixed_states(states) if self.pairing.mixed_states else list(states)
        pairs = [st.pair for st in chain]
        index = {p: i for i, p in enumerate(pairs)}
        verdicts: dict[int, Verdict] = {}
        for r in rows:
            if r["role"] == "probe" and Pair(r["xla"], r["jax"]) in index:
                verdicts[index[Pair(r["xla"], r["jax"])]] = Verdict(r["verdict"])
        while True:
            near = near_breaks(pairs, [pairs[i] for i, v in verdicts.items() if v is Verdict.SKIP],
                               [pairs[i] for i, v in verdicts.items() if v in (Verdict.GOOD, Verdict.BAD)]
                               + [pairs[0], pairs[-1]])
            costs = {i: self.cost(pairs[i]) + (COST_NEAR_BREAK if i in near else 0.0)
                     for i in range(1, len(pairs) - 1) if i not in verdicts}
            if self.workers > 1:
                plan = plan_probes(len(pairs), verdicts, self.workers, costs)
                if not plan:
                    break
                for i, p in zip(plan, self._evaluate_many([pairs[i] for i in plan], "probe"), strict=True):
                    verdicts[i] = self._record(bid, p).verdict
                continue
            nxt = next_probe(len(pairs), verdicts, costs, later_on_ties=True)
            if nxt is None:
                break
            verdicts[nxt] = self._record(bid, self.evaluate(pairs[nxt], "probe", None)).verdict
        known = {pairs[i]: v for i, v in verdicts.items()}
        return timeline_bounds(chain, states, bounds(len(pairs), verdicts)), known

    def _metric_ends(self, w: Window, bid: int, good_pair: Pair, bad_pair: Pair) -> tuple[list[float], list[float]]:
        """Both ends' samples, taken until they separate (Pinpoint's adaptive attempts) and checked
        to differ in the direction of the hunt; they are the references of the verdicts that follow."""
        want = min(max(MIN_END_SAMPLES, self._ends_want), self.max_repeats)  # with probes beside: as they need
        while True:  # noisy ends get more samples until they separate (Pinpoint's adaptive attempts)
            got = self._ends_round(want, good_pair, bad_pair)
            good, _, _ = self._end_samples(bid, good_pair, Verdict.GOOD, want, got.get(good_pair))
            bad, _, _ = self._end_samples(bid, bad_pair, Verdict.BAD, want, got.get(bad_pair))
            if not good or not bad:
                raise self._unbuilt_end(bad_pair if good else good_pair, "bad" if good else "good") or UserError(f"an end of {iso(w.good_time)} .. {iso(w.bad_time)} has no metric "
                                f"(good {plural(len(good), 'sample')}, bad {len(bad)})",
                                "pick ends that measure, or use --mode exit for crashes")
            sep = separation(good, bad)
            if sep >= SEPARATION_MIN or want >= self.max_repeats:
                break
            want = min(2 * want, self.max_repeats)
        if sep < SEPARATION_MIN:
            raise UserError(f"the ends of {iso(w.good_time)} .. {iso(w.bad_time)} do not differ "
                            f"({_mean(good):.4g} vs {_mean(bad):.4g}, {sep:.1f} standard errors)",
                            "pass ends on either side of the regression, or a larger --max-repeats")
        if not worse(good, bad, self.s.higher_is_better) and self.find_fix:
            raise UserError(f"the later end ({_mean(bad):.4g}) is not better than the earlier end ({_mean(good):.4g})",
                            "pass --bad before the improvement and --good after it, or set "
                            "--higher-is-better/--lower-is-better")
        if not worse(good, bad, self.s.higher_is_better):
            raise UserError(f"the bad end ({_mean(bad):.4g}) is not worse than the good end ({_mean(good):.4g})",
                            "swap --good and --bad, or set --higher-is-better/--lower-is-better")
        return good, bad

    def _ends_round(self, want: int, *pairs: Pair) -> dict[Pair, tuple[Measurement, int, int]]:
        """With workers, the ends short of ``want`` samples measured in one round."""
        if self.workers < 2:
            return {}
        short = {p: want - n for p in pairs
                 if (n := sum(len(m.samples) for m in self._stored(p) if m.status == Status.OK.value)) < want}
        if len(short) < 2:
            return {}
        extra = [p for p in self._ahead_of_ends if p not in short][:self.workers - len(short)]
        self._ahead_of_ends = []
        got = self.measure_many(list(short.items()) + [(p, want) for p in extra])
        for pair, (m, builds, runs) in zip(extra, got[len(short):], strict=True):
            self._record_ahead(pair, m, builds, runs, "measured ahead in the ends' round, not judged yet")
        return dict(zip(short, got[:len(short)], strict=True))

    def _plan_ends_round(self, states: list[State], rows: list[dict]) -> None:
        """With more workers than the two ends, the first round of a fresh window carries probes
        too: the states that split it into equal parts of expected cost (:func:`split_points`),
        measured beside the ends and handed to the search as stored samples."""
        self._ahead_of_ends, self._ends_want = [], 0
        if self.workers > 2 and not rows and len(states) > 2:
            costs = {i: self.cost(st.pair) for i, st in enumerate(states)}
            self._ahead_of_ends = [states[i].pair for i in split_points(len(states), self.workers - 2, (), costs)]
            self._ends_want = first_round_samples(self.min_change, self.s.repeats, self.max_repeats)

    def _record_ahead(self, pair: Pair, m: Measurement, builds: int, runs: int, why: str) -> None:
        """The row of a state measured ahead of the search: its verdict row follows when the search
        judges it; one that failed is untestable now (the search never probes it)."""
        if m.status != Status.OK.value:
            self._record(self._bisection_id(), Probe("probe", pair, Verdict.SKIP, f"{m.status}: {m.detail}",
                                                     builds=builds, runs=runs))
        else:
            self._record(self._bisection_id(), Probe("ahead", pair, Verdict.UNSURE, why, list(m.samples),
                                                     builds=builds, runs=runs))

    def _exit_ends(self, bid: int, stored: dict, good_pair: Pair, bad_pair: Pair) -> None:
        """Both ends judged by exit status (stored verdicts reused): the good end passes, the bad fails.
        Flaky (--flaky, or an end that both passes and fails): by their failure rates."""
        if not self.flaky and (_both(self._rcs(good_pair)) or _both(self._rcs(bad_pair))):
            self.flaky = True
        if self.flaky:
            return self._flaky_ends(bid, good_pair, bad_pair)
        for role_pair, want in ((good_pair, Verdict.GOOD), (bad_pair, Verdict.BAD)):
            p = stored.get(("end", role_pair))
            v = Verdict(p["verdict"]) if p else self._record(bid, self.evaluate(role_pair, "end", None)).verdict
            by = "by whether it printed the metric" if self.mode is Mode.PRINTED else "by exit status"
            if v is not want and self.find_fix:
                said = {"good": "bad (still failing)", "bad": "good (fixed)"}[want.value]
                raise self._unbuilt_end(role_pair, {"good": "bad", "bad": "good"}[want.value]) or UserError(
                    f"the {said} end {role_pair.short()} is not, {by}",
                    "pass --bad at a state that fails and a later --good at one that passes")
            if v is not want:
                raise self._unbuilt_end(role_pair, want.value) or UserError(
                    f"the {want.value} end {role_pair.short()} is {v.value} {by}",
                    "pass --good at a state that passes and --bad at one that fails")

    def _unbuilt_end(self, pair: Pair, role: str) -> UserError | None:
        """The line for an end (``role``: good, bad) whose build failed, naming its log; None otherwise."""
        rec = self.store.build(pair.xla, pair.jax, self._cache.build_key(pair))
        if rec is None or rec.status != "failed":
            return None
        return UserError(f"the {role} end xla@{cut_side(pair.xla, 12)} jax@{pair.jax[:12]} failed to build (log {rec.log_path})",
                         f"pass --{role} at a state that builds, or --cherry-pick REPO@SHA of the fix that makes it build")

    def _confirmation(self, bid: int, stored: dict, last_good: Pair, first_bad: Pair, refs, search, step) -> bool:
        """Fresh measurements of the two states the answer rests on (stored ones reused). With
        workers (metric mode), both are measured in one round, with the samples a verdict has taken
        so far, beside the next round of the search when the window goes on (:meth:`_round_ahead`)."""
        confirm = {}
        todo = [(role, pair) for role, pair in (("confirm_good", last_good), ("confirm_bad", first_bad))
                if not stored.get((role, pair))]
        first = self._round_ahead(search, [p for _, p in todo]) if self.mode is Mode.METRIC and todo else {}
        spare: dict[Pair, list[tuple[Measurement, int, int]]] = {}
        for role, pair in (("confirm_good", last_good), ("confirm_bad", first_bad)):
            r = stored.get((role, pair))
            if r:
                confirm[role] = Verdict(r["verdict"])
            elif self.mode is Mode.METRIC:
                partner = first_bad if role == "confirm_good" and len(todo) == 2 else None
                confirm[role] = self._record(bid, self._confirm(search, step, role, pair, first.get(pair),
                                                                spare, partner)).verdict
            else:
                confirm[role] = self._record(bid, self.evaluate(pair, role, refs, fresh=True)).verdict
        return confirm["confirm_good"] is Verdict.GOOD and confirm["confirm_bad"] is Verdict.BAD

    def _round_ahead(self, search: StepSearch, fresh: list[Pair]) -> dict[Pair, tuple[Measurement, int, int]]:
        """With workers: one round holding fresh samples of ``fresh`` (the states to confirm, as many
        as a verdict has taken so far) and, in the slots left, the states the search of the rest of
        the window will probe first (:meth:`StepSearch.plan_ahead`), their samples handed to it as
        samples measured ahead. Without workers: nothing (each state is measured as it is asked)."""
        if self.workers < 2 or not fresh:
            return {}
        n = search.typical()
        pairs = self._parent_pairs
        mine = {i for i, p in enumerate(pairs) if p in fresh}
        ahead = search.plan_ahead(self.workers - len(fresh), mine) if search.more_after else []
        more = search.top_ups(self.workers - len(fresh) - len(ahead), mine) if search.more_after else {}
        got = self.measure_many([(p, n) for p in fresh] + [(pairs[i], n) for i in ahead]
                                + [(pairs[i], c) for i, c in more.items()])
        for i, (m, builds, runs) in zip([*ahead, *more], got[len(fresh):], strict=True):
            acc = self._pending.setdefault(i, [0, 0])
            acc[0] += builds
            acc[1] += runs
            if m.status != Status.OK.value:
                search.failed[i] = f"{m.status}: {m.detail}"
            else:
                search._ready.setdefault(i, []).extend(m.samples)
        return dict(zip(fresh, got[:len(fresh)], strict=True))

    def _search_steps(self, w: Window, states: list[State], rows: list[dict], going) -> tuple[Step, StepSearch, int]:
        """The earliest regression of the window (metric mode), by :class:`StepSearch` over the
        states: every stored measurement is reused, every verdict recorded as it is reached.
        ``going``: (search, its states, offset) when this window is the rest of one whose search
        goes on from where it pinned the previous regression (then its indices are offset)."""
        recorded = {Pair(r["xla"], r["jax"]) for r in rows if r["role"] == "probe"}
        self._recorded = recorded
        if going is not None:
            search, parent, off = going
            return self._next_regression(w, search, [st.pair for st in parent]), search, off
        pairs = [st.pair for st in states]
        known: dict[int, list[float]] = {}
        failed: dict[int, str] = {}
        for i, pair in enumerate(pairs):
            why = self._known_failed(pair)
            ms = self._stored(pair)
            samples = [x for m in ms if m.status == Status.OK.value for x in m.samples]
            if samples:
                known[i] = samples
            elif why or ms:
                failed[i] = why or next(f"{m.status}: {m.detail}" for m in ms if m.status != Status.OK.value)
        pending: dict[int, list[int]] = {}  # builds and runs not yet in a recorded row
        self._pending = pending

        def measure(i: int, count: int) -> list[float] | None:
            return many({i: count})[i]

        def many(reqs: dict[int, int]) -> dict[int, list[float] | None]:
            """One round: every state asked for, through measure_many."""
            out: dict[int, list[float] | None] = {}
            for i, (m, builds, runs) in zip(reqs, self.measure_many([(pairs[i], c) for i, c in reqs.items()]), strict=True):
                acc = pending.setdefault(i, [0, 0])
                acc[0] += builds
                acc[1] += runs
                if m.status != Status.OK.value:
                    search.failed[i] = f"{m.status}: {m.detail}"
                    out[i] = None
                else:
                    out[i] = list(m.samples)
            return out
        self._many = many

        def on_verdict(i: int, j) -> None:
            builds, runs = pending.pop(i, [0, 0])
            v = _VERDICT_OF.get(j.level, Verdict.SKIP)
            role = "end" if pairs[i] in self._recorded else "probe"  # resumed: the state has its row already
            if role == "probe" or builds or runs:
                self._recorded.add(pairs[i])
                self._record(self._bisection_id(), Probe(role, pairs[i], v, j.reason, list(search.samples.get(i, [])),
                                        builds=builds, runs=runs, between=j.level is Level.NEITHER))

        search = StepSearch(len(states), measure, repeats=self.s.repeats, max_repeats=self.max_repeats,
                            min_change=self.min_change, higher_is_better=self.s.higher_is_better,
                            cost=lambda i: self.cost(pairs[i]), known=known, failed=failed,
                            on_verdict=on_verdict, stop_at_regression=True)
        return self._next_regression(w, search, pairs), search, 0

    def _next_regression(self, w: Window, search: StepSearch, pairs: list[Pair]) -> Step:
        seen = len(search.steps)
        # with workers, round by round (the same search, W states measured together)
        steps = (search.run_rounds(self._many, self.workers)[0] if self.workers > 1 else search.run())[seen:]
        self._flush(search, pairs)
        regressions = [st for st in steps if st.regression(self.s.higher_is_better)]
        if not regressions:
            raise UserError(f"no step of {self.min_change * 100:g} % or more between {iso(w.good_time)} and "
                            f"{iso(w.bad_time)}: the ends differ, but no probe confirmed a step",
                            "pass a smaller --min-change, or a larger --max-repeats for a noisy benchmark")
        return regressions[0]

    def _flush(self, search: StepSearch, pairs: list[Pair]) -> None:
        """Rows for the runs (and builds) that went to more samples of an interval's end."""
        for i, (builds, runs) in self._pending.items():
            if not (builds or runs):
                continue
            ahead = search._ready.get(i)
            unjudged = i not in search.verdicts and 0 < i < len(pairs) - 1  # an inner state, measured ahead
            if unjudged and i in search.failed:
                # measured ahead in a round and untestable: the search never probes it, this is its verdict
                self._recorded.add(pairs[i])
                self._record(self._bisection_id(), Probe("probe", pairs[i], Verdict.SKIP, search.failed[i], builds=builds, runs=runs))
            elif unjudged and ahead:
                # measured ahead in a round and not judged yet: its verdict row comes when it is
                self._record(self._bisection_id(), Probe("ahead", pairs[i], Verdict.UNSURE, f"{plural(len(ahead), 'sample')} "
                                              "measured ahead in a round, not judged yet", list(ahead),
                                              builds=builds, runs=runs))
            else:
                judged = search.verdicts.get(i)
                v = Verdict.GOOD if i == 0 else Verdict.BAD if i == len(pairs) - 1 else \
                    _VERDICT_OF.get(judged.level, Verdict.UNSURE) if judged is not None else Verdict.UNSURE
                samples = list(search.samples.get(i, []))
                self._record(self._bisection_id(), Probe("end", pairs[i], v, f"{plural(len(samples), 'sample')} of an interval's end",
                                              samples, builds=builds, runs=runs))
        self._pending.clear()

    def _confirm(self, search: StepSearch, step: Step, role: str, pair: Pair,
                 first: tuple[Measurement, int, int] | None = None,
                 spare: dict[Pair, list[tuple[Measurement, int, int]]] | None = None,
                 partner: Pair | None = None) -> Probe:
        """Fresh runs of one of the step's two states (no build: the wheel is cached), judged between
        the step's two levels: the last good state must be at the earlier, the first bad at the later.
        ``first``: a fresh measurement of it taken already (in a round with others), used first;
        ``spare``: fresh measurements per state taken already, each used first (all of them);
        ``partner``: the step's other state, confirmed next: with workers, each round of more fresh
        runs of this one carries as many of the partner's (into ``spare``), so the two sequential
        tests take their doublings in the same rounds, not one after the other."""
        got: list[float] = []
        cost = [0, 0]
        spare = spare if spare is not None else {}
        given = spare.setdefault(pair, [])
        if first is not None:
            given.insert(0, first)

        def sample(want: int) -> list[float] | None:
            while given or len(got) < want:
                if given:
                    m, builds, runs = given.pop(0)
                elif partner is not None and self.workers > 1:
                    have = sum(len(x[0].samples) for x in spare.get(partner, []))
                    reqs = [(pair, want - len(got))] + ([(partner, want - have)] if want > have else [])
                    both = self.measure_many(reqs)
                    (m, builds, runs), rest = both[0], both[1:]
                    spare.setdefault(partner, []).extend(rest)
                else:
                    m, builds, runs = self._measure_one(pair, want - len(got))
                cost[0] += builds
                cost[1] += runs
                if m.status != Status.OK.value:
                    return None
                got.extend(m.samples)
            return got
        j = search.sequential(sample, step.lo, step.hi)
        v = Verdict.SKIP if j.level is Level.SKIP else Verdict.UNSURE if j.level is Level.NEITHER \
            else _VERDICT_OF.get(j.level, Verdict.UNSURE)
        return Probe(role, pair, v, j.reason, got, builds=cost[0], runs=cost[1])

    def _blame(self, bid: int, good: Pair, bad: Pair, stored: dict, refs,
               known: dict[Pair, Verdict] | None = None) -> Blame:
        """Old xla + new jax, then new xla + old jax: which change alone brings the regression
        (:func:`~hourly.analysis.bisection.next_blame`). A mixed pair the search measured already
        (``known``: its verdicts) is not measured again: its verdict is recorded as the blame's; old
        xla + new jax measured by the search is a state of its chain, and good it settles the blame
        (``on_chain``: XLA_ON_NEW_JAX, the step from it moving xla alone)."""
        seen: dict[Pair, Verdict] = {}
        on_chain = known is not None and Pair(good.xla, bad.jax) in known
        while True:
            nxt = next_blame(good, bad, seen, on_chain)
            if isinstance(nxt, Blame):
                return nxt
            r = stored.get(("blame", nxt))
            if r:
                seen[nxt] = Verdict(r["verdict"])
            elif known and known.get(nxt) in (Verdict.GOOD, Verdict.BAD, Verdict.SKIP):
                seen[nxt] = self._record(bid, Probe("blame", nxt, known[nxt], "measured by the search "
                                                    "(the mixed state inside the step)")).verdict
            else:
                seen[nxt] = self._record(bid, self.evaluate(nxt, "blame", refs)).verdict

    def _answer(self, w: Window, states: list[State], b, verdicts, moved, blame, confirmed, bid) -> dict:
        return answer(self, w, states, b, moved, blame, confirmed, bid)

    def _side(self, row: dict, states: list[State], b) -> str:
        """A probe's verdict as this answer's step sees it (metric mode): good before the step, bad
        from its first bad state on. A window may hold several steps, and a probe is judged against
        the two ends of the interval it split, not against this step; git bisect's terms are this."""
        index = {st.pair: i for i, st in enumerate(states)}
        i = index.get(Pair(row["xla"], row["jax"]))
        if self.mode is not Mode.METRIC or row["role"] not in ("probe", "end") or i is None \
                or row["verdict"] not in (Verdict.GOOD.value, Verdict.BAD.value, Verdict.UNSURE.value):
            return row["verdict"]
        if i <= b.lo:
            return Verdict.GOOD.value
        if i >= b.hi:
            return Verdict.BAD.value
        return row["verdict"]

    def probe_row(self, r: dict, states: list[State], b) -> dict:
        out = {"role": r["role"], "xla": r["xla"], "jax": r["jax"], "verdict": self._side(r, states, b)}
        if self.picks:  # per probe, what --cherry-pick did to it
            from hourly.measure.cherry_pick import statuses
            out["cherry_picks"] = statuses(self.repos, r["xla"], r["jax"], self.picks)
        return out


#: Runs of each end before a flaky bisection compares states with their failure rates.
FLAKY_END_RUNS = 10


def _both(rcs: list) -> bool:
    """The runs both passed and failed (125 aside)."""
    k, n = failures(rcs)
    return 0 < k < n


def _rate(rcs: list) -> dict:
    k, n = failures(rcs)
    return {"failed": k, "runs": n, "rate": round(k / n, 4) if n else None}


def _from(origins: list[str]) -> str:
    """``3 from the scan, 2 from bisect``"""
    c = Counter(origins)
    return ", ".join(f"{n} from {'the scan' if o == SCAN_ORIGIN else o}" for o, n in sorted(c.items())) or "none"


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def flags_window(b: Bisector, good: str, bad: str, tz: str, find_fix: bool, mode: Mode) -> Window:
    """The window ``--good``..``--bad`` names (the good end later with ``find_fix``), refused when its
    ends are the wrong way round."""
    g, x = parse_ends(b, good, bad, tz, find_fix)
    if find_fix:  # the search runs from the old (bad) state to the fixed (good) one
        if g <= x:
            raise UserError(f"--good {good} is not later than --bad {bad}: with --find-fix the good "
                            "(fixed) end comes after the bad one", "swap them")
        w = Window(x, g, "flags", kind={Mode.EXIT: "fix", Mode.PRINTED: "metric_back"}.get(mode, "improvement"))
    else:
        w = Window(g, x, "flags", kind={Mode.EXIT: "crash", Mode.PRINTED: "metric_lost"}.get(mode, "regression"))
    if w.bad_time <= w.good_time:
        raise UserError(f"--bad {bad} is not later than --good {good}",
                        "swap them, or pass --find-fix to find what fixed it")
    return w


def check_new_window(s: Settings, good: str, bad: str, mode: Mode | None = None, find_fix: bool = False) -> None:
    """What a bisection of ``good``..``bad`` into a new workdir can check before creating it, so bad
    input leaves no workdir behind: the benchmark, its environment and regex, times, repositories,
    refs, cherry-picks and wheel folder (a Bisector made without a store: it reads the repositories
    only), the ends against the walked history and their order, and that states lie between them."""
    from hourly.metric import compile_metric_regex
    s.bench_argv()
    s.env_dict()
    compile_metric_regex(s.metric_regex)
    for end in (good, bad):
        if not _sha_end(end):
            _refuse_bad_sha(end)
            parse_time(end, s.tz)
    open_repos(s)
    mode = mode or (Mode.EXIT if s.mode == Mode.EXIT.value else Mode.METRIC)  # default_mode of an empty store
    b = Bisector(s, None, mode)  # type: ignore[arg-type]  # nothing is stored or built: never entered
    w = flags_window(b, good, bad, s.tz, find_fix, mode)
    if len(b.pairing.states(b.walks, w.good_time, w.bad_time)) < 2:
        raise UserError(f"nothing changed between {iso(w.good_time)} and {iso(w.bad_time)}",
                        "pass a good end before the bad end with commits between them")


@holds_store_lock
def run_bisect(s: Settings, store: Store, req: BisectRequest, handler: BisectHandler | None = None,
               executor: Executor | None = None) -> list[dict]:
    """Bisect the window ``req.good``..``req.bad`` (given as --good/--bad), or without them every
    regression and every crash window of the stored scan; returns one answer per regression or
    crash found (``"kind"``: ``regression`` or ``crash``). With ``req.find_fix``: every improvement
    and every fix (exit status bad → good) instead, the good end later than the bad end.
    ``executor``: where builds and benchmarks run (None: here; see :attr:`Bisector.workers`)."""
    handler = handler or BisectHandler()
    good, bad, mode, find_fix = req.good, req.bad, req.mode, req.find_fix
    if good is not None:
        assert bad is not None  # BisectRequest: the two go together
        mode = mode or default_mode(store, s)
        with Bisector(s, store, mode, req, handler, executor) as b:
            return b.bisect(flags_window(b, good, bad, s.tz, find_fix, mode))
    # every regression of the stored scan, and (unless a mode was asked for) every crash window,
    # each in its own mode: the metric for regressions, the exit status for crashes
    base = mode or default_mode(store, s)
    plan = [(base, windows_from_store(store, s, base, find_fix))]
    if mode is None and base is Mode.METRIC:
        plan.append((Mode.EXIT, windows_from_store(store, s, Mode.EXIT, find_fix)))
        plan.append((Mode.PRINTED, windows_from_store(store, s, Mode.PRINTED, find_fix)))
    if not any(ws for _, ws in plan):
        _require_complete_scan(store, s)
        if base is Mode.METRIC:  # too few pairs to tell noise from steps is not "nothing to bisect"
            from hourly.scan.table import require_decided, stored_scan
            require_decided(stored_scan(store, s).points, s, then=", then run hourly bisect again")
        handler.nothing_to_bisect()
    answers: list[dict] = []
    for m, windows in plan:
        if windows:
            with Bisector(s, store, m, req, handler, executor) as b:
                answers += [a for w in windows for a in b.bisect(w)]
    return answers


def _require_complete_scan(store: Store, s: Settings) -> None:
    """No window to bisect in a scan with unmeasured (planned) points is not "nothing to bisect":
    the step may lie in them (exit 1, naming the command that resumes the scan)."""
    from hourly.scan.table import scan_command, stored_scan, unmeasured_pairs
    points = stored_scan(store, s).points
    n = unmeasured_pairs(points)
    if n:
        total = len({(p.xla, p.jax) for p in points})
        raise UserError(f"no window to bisect in the part of the scan that was measured, but the scan is incomplete "
                        f"({n} of {total} pairs not measured yet): a step may lie there",
                        f"resume the scan with the same command, {scan_command(s)}, then run hourly bisect again")


#: What to do about a candidate that re-measurement did not confirm.
UNCONFIRMED_NEXT = ("measure again with more runs (hourly bisect --rerun --max-repeats 40), on a quieter machine, "
                    "or bisect a wider window (--good earlier, --bad later)")


def _measurements(rows: list[dict], last_good: Pair, first_bad: Pair) -> dict:
    """Both measurements of the two states an unconfirmed answer rests on: the search's (role
    ``probe``/``end``) and the re-measurement's (``confirm_good``/``confirm_bad``)."""
    out = {}
    for side, pair in (("last_good", last_good), ("first_bad", first_bad)):
        out[side] = [{"role": r["role"], "verdict": r["verdict"], "samples": r.get("samples") or [],
                      "returncodes": r.get("returncodes") or [], "reason": r.get("reason")}
                     for r in rows if Pair(r["xla"], r["jax"]) == pair and r["role"] in
                     ("end", "probe", "confirm_good", "confirm_bad")]
    return out


def answer(bisector: Bisector, w: Window, states: list[State], b, moved, blame, confirmed, bid) -> dict:
    """The answer for one window, as stored and printed with --json."""
    rows = bisector.store.probes(bid)
    last_good, first_bad = states[b.lo].pair, states[b.hi].pair
    culprit, reason = None, None
    if b.adjacent:
        repos = [n for n in REPOS if moved[n]]
        if blame is not None and blame.repo:
            repos = [blame.repo]
        if len(repos) == 1 and len(moved[repos[0]]) == 1:
            culprit = commit(bisector.repos, repos[0], moved[repos[0]][0])
        elif len(repos) == 1:
            reason = (f"{len(moved[repos[0]])} {repos[0]} commits arrived in one step (their committer "
                      "times are out of order), so no state between them existed")
        elif blame is Blame.BOTH:
            reason = "neither repository's change alone regresses: the combination does"
        else:
            reason = "both repositories moved in one step and the mixed pairs could not be tested"
    else:
        skipped = [(i, next((r for r in rows if r["role"] == "probe" and
                             Pair(r["xla"], r["jax"]) == states[i].pair), None)) for i in range(b.lo + 1, b.hi)]
        whys = sorted({r["reason"].split(" (log")[0] if r else "not tested" for _, r in skipped})
        k = b.hi - b.lo - 1
        reason = (f"{k} untestable state{'s' if k != 1 else ''} between last good and first bad: "
                  + "; ".join(whys))
    pin: Pin | None = getattr(bisector, "pin", None)
    all_moved = bisector.pairing.moved(bisector.walks, last_good, first_bad)
    range_commits = [] if culprit else [commit(bisector.repos, n, sha) for n in REPOS for sha in all_moved[n]]
    # only a confirmed culprit is a culprit: ends that do not differ again on re-measurement make
    # it a candidate, with both measurements of both states and what to do next
    candidate = None
    if culprit is not None and not confirmed:
        candidate, culprit = culprit, None
        reason = "the last good and first bad states did not differ again when measured afresh"
    return {
        "kind": w.kind,
        "window": {"good_time": iso(w.good_time), "bad_time": iso(w.bad_time), "origin": w.origin,
                   "note": w.note},
        "mode": bisector.mode.value,
        "pairing": bisector.pairing.name,
        "culprit": culprit,
        "candidate": candidate,
        "measurements": _measurements(rows, last_good, first_bad) if candidate else None,
        "next": (UNCONFIRMED_NEXT if candidate else None),
        "range": [c["sha"] for c in range_commits],
        "range_commits": range_commits,
        "reason": reason,
        "blame": blame.value if blame else None,
        "confirmed": confirmed,
        "last_good": {"xla": last_good.xla, "jax": last_good.jax},
        "first_bad": {"xla": first_bad.xla, "jax": first_bad.jax},
        "states": len(states),
        # metric mode: the samples each end's verdicts were compared with, and where they came from
        "end_samples": dict(bisector.end_samples),
        "probes": [bisector.probe_row(r, states, b) for r in rows],
        "builds": sum(r["builds"] for r in rows),
        # priced builds (docs/builds.md): runs of --build-cmd (each builds jaxlib) and builds of the
        # jax package alone (--only jax, or a state whose jaxlib was cached)
        "jaxlib_builds": sum(r.get("jaxlib_builds") or 0 for r in rows),
        "jax_builds": sum(r.get("jax_builds") or 0 for r in rows),
        "runs": sum(r["runs"] for r in rows),
        "pinned": pin.as_json() if pin else None,
    }
