"""Bisection: narrow each regression window to one commit of xla or jax.

For every window (from detection over the stored scan, from ``--good/--bad``, or in exit mode
from every good→bad transition of the scan: :mod:`hourly.bisect.windows`) the :class:`Bisector`
wires what a bisection needs — the settings, the checkouts and their walks, the pairing, the
store, the executor, the handler and the window's judge — and hands the window to the drive
(:class:`~hourly.bisect.drive.WindowDrive`): it probes the candidate states, reusing every
measurement in the store and every cached build, re-measures the last good and first bad states,
and, when that step moves both repositories, tests the mixed pair to say which one is to blame.
Which verdict a state gets is its judge's alone (hourly.analysis.judges: metric, exit, flaky,
printed, manual); the Bisector never knows which one decides.

Every verdict is a row of ``bisect_probes`` and every measurement a row of ``measurements``
(origin ``bisect``), each committed as it is reached: after ``kill -9`` the same command
continues from the stored verdicts, and a finished bisection prints its stored answer.
"""

from __future__ import annotations

import hashlib
import json
import time
from contextlib import ExitStack
from dataclasses import replace
from typing import Mapping, Sequence

from hourly.adapters.locks import holds_store_lock
from hourly.adapters.store import Measurement, Store
from hourly.adapters.store_tables.bisections import Spent
from hourly.analysis.bisection import COST_BUILD, COST_CACHED, COST_JAX_BUILD, COST_MEASURED
from hourly.analysis.judges import Evidence, Judge, JudgeOptions, judge, paired_judge
from hourly.analysis.process_stat import Choice, ProcessValue
from hourly.answers import Answer, Commit
from hourly.bisect.answer import commit
from hourly.bisect.drive import WindowDrive, Witness, every_step
from hourly.bisect.events import BisectHandler
from hourly.bisect.pairing import TimePairing, pairing_for
from hourly.bisect.records import BisectRequest, Probe, Taken, Window
from hourly.bisect.sampling import seed as seed_sizes
from hourly.bisect.sampling import tell_runs, window_figures
from hourly.bisect.windows import (
    _refuse_bad_sha,
    _require_complete_scan,
    _sha_end,
    default_mode,
    end_flag,
    evidence,
    flags_window,
    parse_end,
    parse_ends,
    states_between,
    windows_from_store,
)
from hourly.errors import UserError
from hourly.execute.executors import Executor, LocalExecutor
from hourly.execute.host import BuildSplit, Counted, measure_counted
from hourly.measure.build import Builder, Workspace, give_back_left_trees, kept_paths
from hourly.measure.measurer import Measurer, build_spec, open_repos, pin_of, trees
from hourly.measure.pinned import gate_for
from hourly.measure.settings import Settings
from hourly.model import Mode, Pair, Status, cut_side
from hourly.text.plurals import plural
from hourly.text.timeparse import parse_time

__all__ = ["Bisector", "check_new_window", "default_mode", "judge_for", "parse_end", "parse_ends", "run_bisect",
           "windows_from_store"]


class KeptRounds:
    """The rounds of a bisection's paired verdicts in the store (``bisect_rounds``), each kept as it
    ends, and handed back to the verdicts of a later call (the lab's ``keep_round`` and
    ``take_rounds``): read once a call, each round taken once."""

    def __init__(self, store: Store):
        self.store = store
        #: per bisection, the rounds the calls before this one kept that no verdict of this call has
        #: taken yet, by the states they compare
        self.left: dict[int, dict[str, list[list]]] = {}

    @staticmethod
    def key(pairs: Sequence[Pair]) -> str:
        """The states a kept round compares, in the verdict's order, as the store keeps them."""
        return json.dumps([[p.xla, p.jax] for p in pairs])

    def keep(self, bid: int, pairs: Sequence[Pair], block: Mapping[Pair, float | None]) -> None:
        """Each process's value as [value] or [value, samples] (its samples, for the statistic chosen
        on the window's ends); null: the process measured nothing."""
        def kept(v: float | None) -> list | None:
            samples = list(getattr(v, "samples", ()) or ())
            return None if v is None else [float(v), samples] if len(samples) > 1 else [float(v)]
        self.store.add_round(bid, self.key(pairs), json.dumps([kept(block[p]) for p in pairs]))

    def count(self, bid: int, pairs: Sequence[Pair]) -> int:
        return len(self._left(bid).get(self.key(pairs), []))

    def states(self, bid: int) -> list[list[Pair]]:
        return [[Pair(*p) for p in json.loads(k)] for k, blocks in self._left(bid).items() if blocks]

    def _left(self, bid: int) -> dict[str, list[list]]:
        if bid not in self.left:  # read once a call: what the calls before this one kept
            self.left[bid] = {k: [json.loads(b) for b in blocks] for k, blocks in self.store.rounds(bid).items()}
        return self.left[bid]

    def take(self, bid: int, pairs: Sequence[Pair], count: int) -> list[dict[Pair, float | None]]:
        left = self._left(bid).get(self.key(pairs))
        if not left:
            return []
        taken, left[:] = left[:count], left[count:]
        return [{p: None if v is None else ProcessValue(float(v[0]), v[1]) if len(v) > 1 else float(v[0])
                 for p, v in zip(pairs, b, strict=True)} for b in taken]


def judge_for(mode: Mode, req: BisectRequest, repeats: int, max_repeats: int, paired: bool = False) -> Judge:
    """The judge of a window of ``mode`` (the registry's: hourly.analysis.judges.JUDGES); metric
    mode's verdicts ``paired`` (measured in rounds of the states compared) where the executor can
    run states alternately, one machine, one request after another."""
    opts = JudgeOptions(invert=req.find_fix and mode is not Mode.METRIC, repeats=repeats, max_repeats=max_repeats)
    name = "flaky" if mode is Mode.EXIT and req.flaky else "paired" if mode is Mode.METRIC and paired else mode.value
    return judge(name, opts)


class Bisector:
    """Bisects windows under one set of settings; a context manager that holds the trees only
    while something has to be built or run. It is the host its executor measures for
    (hourly.execute.host.Host: ``s``, ``store``, ``key``, ``origin``, ``gate``, ``split``, ``measure``)
    and the lab its searches measure and record through (hourly.bisect.drive.Lab). ``judge``: who
    calls the verdicts (default: the judge of ``mode``); ``witness``: who gives them, when a person
    does (hourly.bisect.manual.Person)."""

    #: the origin of the bisection's measurement rows
    origin = "bisect"

    def __init__(self, s: Settings, store: Store, mode: Mode, req: BisectRequest | None = None,
                 handler: BisectHandler | None = None, executor: Executor | None = None,
                 pairing: TimePairing | None = None, judge: Judge | None = None, witness: Witness | None = None):
        req = req or BisectRequest()
        # finding a fix: the search looks for the first state that changed; in metric mode a change
        # for the better is a regression of the flipped direction, in the other modes verdicts flip
        self.find_fix = req.find_fix
        if req.find_fix and mode is Mode.METRIC:
            s = replace(s, higher_is_better=not s.higher_is_better)
        self.s, self.store, self.mode = s, store, mode
        #: the named metric followed (--metric: its rows read and measured, its own bisection, in its
        #: answer); None: the regex's one metric
        self.metric = s.primary_metric() or None
        self.min_change = req.min_change
        self.walk_skips = req.walk_skips  # read by the chain search (ChainDrive.jump_runs)
        self.max_repeats = max(req.max_repeats, s.repeats)
        self.witness = witness
        #: runs the builds and benchmarks (default: here, one after another); ``workers`` states a round
        self.executor = executor or LocalExecutor()
        #: why paired verdicts cannot interleave here (None: they can); set later when a build
        #: installs in place (hourly.bisect.metric_drive.measure_rounds)
        self.apart: str | None = self.cannot_interleave(s)
        paired = mode is Mode.METRIC and judge is None and witness is None and self.apart is None
        self.judge = judge or judge_for(mode, req, s.repeats, self.max_repeats, paired=paired)
        if mode is Mode.METRIC and not paired:
            self.apart = self.apart or "the verdicts are not paired"
        self.rounds = 0  # calls of measure_many
        self.seconds = 0.0  # the benchmark's seconds of the window bisected now, its every call (WindowDrive)
        self._states: list[Pair] = []  # the states of the window bisected now (seed_sizes)
        self._told = False  # whether a benchmark that does not follow HOURLY_SAMPLES was said
        self.jobs = 0    # (pair, count) requests sent through it
        # the rounds of paired verdicts, in the store as measured: a resumed call goes on from them
        self.kept = k = KeptRounds(store)
        self.keep_round, self.take_rounds, self.kept_rounds, self.kept_states = k.keep, k.take, k.count, k.states
        self.handler = handler or BisectHandler()
        if req.find_fix:
            self.handler.terms = {"good": "old", "bad": {Mode.EXIT: "fixed", Mode.PRINTED: "back"}.get(mode, "improved")}
        self.key = s.bench_key()
        #: when the --rerun under way began (BisectRequest.rerun_since; None: no rerun)
        self.rerun_since = req.rerun_since if req.rerun_since is not None else time.time() if req.rerun else None
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
        #: metric mode: the window search whose rest of the window goes on (hourly.bisect.metric_drive.Going)
        self.going = None
        self._measurer: Measurer | None = None
        self._held: str | None = None  # the per-process statistic the verdicts hold (hold_statistic)
        self._cache = Builder(None, self.jax, self.xla, build_spec(s), store)
        self.split = BuildSplit()  # jaxlib builds, jax package builds not yet in a recorded row
        self.gate = gate_for(self.jax, self.pin)
        from hourly.measure.cherry_pick import parse
        self.picks = parse(s.cherry_pick, self.repos)  # checked now: a bad spec fails before any build

    def __enter__(self) -> "Bisector":
        return self

    def __exit__(self, *exc: object) -> None:
        taken = self._measurer is not None
        self._stack.close()
        if not taken:  # nothing measured: the trees a killed run left are given back all the same
            give_back_left_trees(trees(self.xla, self.jax), self.s.force, kept_paths(self.s))

    def measurer(self) -> Measurer:
        if self._measurer is None:
            ws = self._stack.enter_context(Workspace(trees(self.xla, self.jax), force=self.s.force, keep=kept_paths(self.s)))
            self._measurer = Measurer(self.s, self.store, self.xla, self.jax, ws, self.pin,
                                      per_state=paired_judge(self.judge) is not None)
            self._measurer.sizes.statistic = self._held
            seed_sizes(self._measurer, [self.stored_measurements(p) for p in self._states])
            if paired_judge(self.judge) is None:  # paired rounds say each process themselves
                tell_runs(self, self._measurer)
        return self._measurer

    def cannot_interleave(self, s: Settings) -> str | None:
        """Why this bisection cannot run its states alternately (None: it can): each state needs an
        environment of its own, kept between rounds, on one machine."""
        caps = getattr(self.executor, "capabilities", None)  # an executor that says nothing: not asked
        if caps is None or not caps.interleaves or self.executor.workers > 1:
            return "the executor runs states apart, not alternately on one machine"
        from hourly.adapters.venvs import overlay_of
        from hourly.measure.settings import NO_BUILD
        if s.only == "jax" and s.jax_package_cmd().strip() == NO_BUILD:
            return "the JAX tree is installed in place (editable): two states cannot be installed at once"
        if overlay_of(s.python) is not None:
            return "--python is an overlay already: states cannot each get one of their own"
        return None

    @property
    def interleaves(self) -> bool:
        """Whether paired rounds run their states alternately (each kept in its own environment)."""
        if self.apart is not None:
            return False
        if self._measurer is not None and not self._measurer.coexist:
            self.apart = "the builds install in place (editable): two states cannot be installed at once"
            return False
        return True

    def crash_line(self, pair: Pair) -> str | None:
        """The last line a crashed run of ``pair`` printed, from its log."""
        for m in reversed(self.stored_measurements(pair)):
            for r in m.runs:
                if r.get("status") in ("crashed", "timeout") and r.get("log"):
                    try:
                        lines = [x.strip() for x in open(r["log"], errors="replace").read().splitlines() if x.strip()]
                    except OSError:
                        continue
                    while lines and lines[-1].startswith("# exit:"):  # the log's own last line (hourly.adapters.proc)
                        lines.pop()
                    if len(lines) > 2:  # past the log's two lines of header: the command, its folder
                        return lines[-1][:300]
        return None

    # -- what the searches read (hourly.bisect.drive.Lab) -----------------------------------------
    @property
    def workers(self) -> int:
        """States probed per round."""
        return self.executor.workers

    @property
    def repeats(self) -> int:
        return self.s.repeats

    @property
    def higher_is_better(self) -> bool:
        return self.s.higher_is_better

    @property
    def mixed_states(self) -> bool:
        return self.pairing.mixed_states

    @property
    def pairing_name(self) -> str:
        return self.pairing.name

    @property
    def pinned(self) -> dict | None:
        return self.pin.as_json() if self.pin else None

    def moved(self, old: Pair, new: Pair) -> dict[str, list[str]]:
        return self.pairing.moved(self.walks, old, new)

    def commit(self, repo: str, sha: str) -> Commit:
        return commit(self.repos, repo, sha)

    def cherry_picks(self, pair: Pair) -> dict[str, str] | None:
        """What each --cherry-pick did to a state (None without any)."""
        if not self.picks:
            return None
        from hourly.measure.cherry_pick import statuses
        return statuses(self.repos, pair.xla, pair.jax, self.picks)

    def probes(self, bid: int) -> list[dict]:
        return self.store.probes(bid)

    # -- measuring ----------------------------------------------------------------------------
    def measure_many(self, reqs: list[tuple[Pair, int]]) -> list[Taken]:
        """For each (pair, count): its evidence (the Measurement of the metric followed, already
        recorded in the store with origin 'bisect', exactly as Measurer.measure records it: one value
        per process, the median of its samples when it printed many), builds run, runs run (process
        starts) and the samples they printed — in the order asked. One round."""
        self.rounds += 1
        self.jobs += len(reqs)
        got = self.executor.measure_many(self, reqs)
        # the benchmark's wall time, every process (warm-up ones too): what the verdicts cost the chip
        self.seconds += sum(r.get("duration") or 0.0 for c in got for r in c.measurement.runs)
        m = self._measurer
        if m is not None and m.unfollowed and not self._told:  # said once, as it is seen
            self._told = True
            self.handler.note(m.unfollowed)
        return [Taken(evidence(c.measurement), c.builds, c.runs, c.samples) for c in got]

    def measure(self, pair: Pair, count: int) -> Counted:
        """The host protocol's measurement here (hourly.execute.host); jaxlib and jax package builds
        go into ``split``, carried by the next recorded row (answers report their sums)."""
        return measure_counted(self.measurer(), self.split, pair, count, self.origin)

    def sampling_figures(self, bid: int, pairs: list[Pair], this_call_s: float, choice: Choice | None = None) -> dict:
        """What the window cost and how each process was sampled (hourly.bisect.sampling.window_figures)."""
        return window_figures(self.spent(bid, pairs), self._measurer, this_call_s, choice)

    def spent(self, bid: int, pairs: list[Pair]) -> Spent:
        """What bisection ``bid`` ran of its window's states ``pairs``, in every call of it so far."""
        return self.store.spent(bid, self.key, {p.xla for p in pairs}, {p.jax for p in pairs}, self.origin,
                                self.s.primary_metric())

    def hold_statistic(self, statistic: str) -> None:
        """The statistic the verdicts hold (chosen on the ends): the samples a process gives follow its noise."""
        self._held = statistic
        if self._measurer is not None:  # else given it when made: holding it measures nothing
            self._measurer.sizes.statistic = statistic

    def stored_measurements(self, pair: Pair) -> list[Measurement]:
        ms = self.store.measurements(self.key, pair.xla, pair.jax, self.s.primary_metric())  # --metric's rows
        if self.s.retry_failed:  # every failure recorded before this run is measured again: builds and runs
            ms = [m for m in ms if not (m.status != Status.OK.value and (m.created or 0) < self._since)]
        return ms

    def stored(self, pair: Pair) -> list[Evidence]:
        return [evidence(m) for m in self.stored_measurements(pair)]

    def known_failed(self, pair: Pair) -> str | None:
        if self.gate is not None and self.gate.untestable(pair.jax):  # --only jax: too new for the jaxlib
            return self.gate.untestable(pair.jax)
        rec = self.store.build(pair.xla, pair.jax, self._cache.build_key(pair))
        if rec and rec.status == "failed" and not (self.s.retry_failed and (rec.finished or 0) < self._since):
            return f"build failed (log {rec.log_path})"
        return None

    def cost(self, pair: Pair) -> float:
        if self.known_failed(pair) or self.stored_measurements(pair):
            return COST_MEASURED
        # priced by what it rebuilds: jaxlib cached (same XLA commit and native inputs) is nearly free
        return {"cached": COST_CACHED, "jax": COST_JAX_BUILD}.get(self._cache.need(pair).value, COST_BUILD)

    def unbuilt_end(self, pair: Pair, role: str) -> UserError | None:
        """The line for an end (``role``: good, bad) whose build failed, naming its log, or that the
        jaxlib gate refuses (--only jax), naming the way through; None otherwise."""
        flag = end_flag(role, self.find_fix)  # the user's word for it: finding a fix, the old end is --bad
        why = self.gate.untestable(pair.jax) if self.gate is not None else None
        if why:
            from hourly.measure.pinned import GATE_FIX
            return UserError(f"the {flag} end {pair.short()} is {why}",
                             f"pass --{flag} at a state the installed jaxlib runs; {GATE_FIX}")
        rec = self.store.build(pair.xla, pair.jax, self._cache.build_key(pair))
        if rec is None or rec.status != "failed":
            return None
        return UserError(f"the {flag} end xla@{cut_side(pair.xla, 12)} jax@{pair.jax[:12]} failed to build (log {rec.log_path})",
                         f"pass --{flag} at a state that builds, or --cherry-pick REPO@SHA of the fix that makes it build")

    def record(self, bid: int, p: Probe) -> Probe:
        row = p.row()
        row["jaxlib_builds"], row["jax_builds"] = self.split.take()
        self.store.add_probe(bid, row)
        self.handler.verdict(p)
        if self.witness is not None:
            self.witness.recorded(bid, p)
        return p

    # -- windows ------------------------------------------------------------------------------
    def bisect(self, w: Window) -> list[Answer]:
        """Every regression in the window (:func:`~hourly.bisect.drive.every_step`)."""
        return every_step(self, w, self.bisect_one)

    def bisect_one(self, w: Window) -> Answer:
        """One window: its stored answer when it was bisected (not before a --rerun began), else the drive's."""
        states = states_between(self, w)
        self._states = [st.pair for st in states]
        good_pair, bad_pair = states[0].pair, states[-1].pair
        ident: dict[str, object] = {"bench": self.key, "mode": self.judge.mode, "good": [good_pair.xla, good_pair.jax],
                                    "bad": [bad_pair.xla, bad_pair.jax], "t": [w.good_time, w.bad_time],
                                    "ref": self.s.ref, "fp": self.s.first_parent}
        if any(r != self.s.ref for r in self.refs.values()):  # walked on a repository's own ref; without
            ident["refs"] = dict(self.refs)  # one, the key is the one bisections stored before had
        if self.find_fix:
            ident["find_fix"] = True
        ident.update(self.pairing.ident())
        ident.update(self.judge.identity())
        if self.metric:  # one named metric of several (--metric): its own bisection
            ident["metric"] = self.metric
        key = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:20]
        bid, status, result = self.store.bisection(key, {
            "bench_key": self.key, "mode": self.judge.mode, "good_time": w.good_time, "bad_time": w.bad_time,
            "good_xla": good_pair.xla, "good_jax": good_pair.jax, "bad_xla": bad_pair.xla, "bad_jax": bad_pair.jax})
        before = self.rerun_since is not None and self.store.bisection_updated(bid) < self.rerun_since
        if status == "done" and not before:  # before a --rerun began (done or stopped): bisected anew
            assert result is not None  # finish_bisection stores the answer with status 'done'
            return Answer.from_json(result)
        if before:
            self.store.restart_bisection(bid)
        self.store.resume_bisection(bid)  # a stopped one taken up again (a restarted one runs already)
        try:
            answer = WindowDrive(self, w, states, bid, self.store.probes(bid)).run()
        except UserError as e:  # why it stopped, for show and report (not only "no answer yet")
            self.store.stop_bisection(bid, e.one_line())
            raise
        self.store.finish_bisection(bid, answer.to_json())
        return answer


@holds_store_lock
def run_bisect(s: Settings, store: Store, req: BisectRequest, handler: BisectHandler | None = None,
               executor: Executor | None = None) -> list[Answer]:
    """Bisect the window ``req.good``..``req.bad`` (given as --good/--bad), or without them every
    regression and every crash window of the stored scan; returns one answer per regression or
    crash found (``kind``: ``regression`` or ``crash``). With ``req.find_fix``: every improvement
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
    plan = store_plan(store, s, mode, find_fix)
    if not any(ws for _, ws in plan):
        _require_complete_scan(store, s)
        if plan[0][0] is Mode.METRIC:  # too few pairs to tell noise from steps is not "nothing to bisect"
            from hourly.scan.resolution import require_resolved_report
            from hourly.scan.table import require_decided, stored_scan
            table = stored_scan(store, s)
            require_decided(table.points, s, then=", then run hourly bisect again")
            # nor is a scan whose noise hides steps of --min-change
            require_resolved_report(table, s, then=", then run hourly bisect again")
        if mode is not None:  # a --mode that none of the scan's windows is bisected in: not "nothing"
            _require_no_other_kind(store, s, mode, find_fix)
        handler.nothing_to_bisect()
    answers: list[Answer] = []
    for m, windows in plan:
        if windows:
            with Bisector(s, store, m, req, handler, executor) as b:
                answers += [a for w in windows for a in b.bisect(w)]
    return answers


def _require_no_other_kind(store: Store, s: Settings, mode: Mode, find_fix: bool) -> None:
    """The stored scan's windows of every kind, when --mode ``mode`` found none: a user error naming
    them (a regression is not "nothing to bisect" because --mode exit asked for crashes)."""
    others = [w for m, ws in store_plan(store, s, None, find_fix) if m is not mode for w in ws]
    if not others:
        return
    kinds = ", ".join(dict.fromkeys(w.kind for w in others))
    raise UserError(f"the stored scan holds no window that --mode {mode.value} bisects, but "
                    f"{plural(len(others), 'window')} of another kind ({kinds})",
                    "leave out --mode: each window is bisected in its own mode")


def check_new_window(s: Settings, good: str, bad: str, mode: Mode | None = None, find_fix: bool = False,
                     manual: bool = False) -> None:
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
    states_between(b, flags_window(b, good, bad, s.tz, find_fix, mode, find_fix_hint=not manual))


def store_plan(store: Store, s: Settings, mode: Mode | None, find_fix: bool = False) -> list[tuple[Mode, list[Window]]]:
    """The stored scan's windows, each with the mode it is bisected in: ``mode`` when asked for,
    else the scan's regressions (metric) and also its crash windows and the windows where the
    metric stops printing."""
    base = mode or default_mode(store, s)
    plan = [(base, windows_from_store(store, s, base, find_fix))]
    if mode is None and base is Mode.METRIC:
        plan.append((Mode.EXIT, windows_from_store(store, s, Mode.EXIT, find_fix)))
        plan.append((Mode.PRINTED, windows_from_store(store, s, Mode.PRINTED, find_fix)))
    return plan
