"""The bisection's orchestration over a table of evidence: no git, no builds, no processes.

The drive (hourly.bisect.drive: ends, search, confirmation, blame, the rest of a window, the
answer) and every judge (hourly.analysis.judges) run here exactly as ``hourly bisect`` runs them,
but the lab they measure and record through is a table: each state's samples or exit codes come
from a lambda of the planted history, every verdict is a row of a list. Exhaustive histories —
every culprit position, every untestable neighbour — as JAX-Toolbox's triage tests drive its
``logic.py`` (.github/triage/tests/test_triage_logic.py). tests/test_bisect.py keeps a few
bisections of each mode end to end (real repositories, builds and benchmark processes).
"""

from __future__ import annotations

import itertools
import math
import re
import statistics

import numpy as np
import pytest

from hourly.analysis.bisection import COST_BUILD, COST_MEASURED, candidate_states, step_commits
from hourly.analysis.judges import JUDGES, Evidence, ExitJudge, JudgeOptions, Run, Verdict, Word, judge
from hourly.analysis.judges.paired import MIN_ROUNDS
from hourly.analysis.paired_verdicts import PairedVerdicts
from hourly.answers import Answer, Commit
from hourly.bisect.answer import bisect_log
from hourly.bisect.drive import WindowDrive, every_step
from hourly.bisect.events import BisectHandler
from hourly.bisect.records import BisectRequest, Taken, Window
from hourly.bisect.search import judge_for
from hourly.bisect.step_session import take_riding
from hourly.errors import UserError
from hourly.model import Mode, Pair

H = 3600


def walk(name: str, times: list[int]) -> list[tuple[str, int]]:
    """A first-parent walk (newest first) of commits named name0, name1, ... at the given times."""
    return [(f"{name}{i}", t) for i, t in reversed(list(enumerate(times)))]


def index(sha: str) -> int:
    return int(sha[1:])


class Events(BisectHandler):
    def __init__(self):
        self.log: list[tuple] = []

    def started(self, w, states, resumed):
        self.log.append(("started", states, resumed))

    def verdict(self, p):
        self.log.append(("verdict", p.role, p.pair, p.verdict))

    def cannot_bisect(self, w, e):
        self.log.append(("cannot", e.message))


class Table:
    """The lab of a bisection (hourly.bisect.drive.Lab) as a table: ``value(pair, k)`` a sample of
    the pair's k-th measurement, or ``rc(pair, k)`` an exit code; ``fails``: pairs whose build
    fails when measured; ``known``: pairs known untestable before (a recorded build failure)."""

    def __init__(self, walks, mode: Mode, *, value=None, rc=None, status=None, fails=(), known=None,
                 workers=1, repeats=1, max_repeats=20, min_change=0.02, find_fix=False, flaky=False,
                 higher_is_better=True, witness=None, judge_=None, raise_after=None, samples_per_run=1, metric=None,
                 paired=None, interleaves=True):
        self.walks, self.value, self.rc, self.status = walks, value, rc, status
        #: the samples each run prints (its value is one: their median); the metric followed
        self.samples_per_run, self.metric = samples_per_run, metric
        req = BisectRequest(max_repeats=max_repeats, min_change=min_change, find_fix=find_fix, flaky=flaky)
        self.max_repeats = max(max_repeats, repeats)
        self._repeats, self._workers, self.min_change, self.find_fix = repeats, workers, min_change, find_fix
        self._hib = (not higher_is_better) if find_fix and mode is Mode.METRIC else higher_is_better
        # as the Bisector's: metric verdicts paired one state a round (measured in alternation)
        paired = workers == 1 if paired is None else paired
        self.judge = judge_ or judge_for(mode, req, repeats, self.max_repeats, paired=paired)
        self.interleaves, self.apart = interleaves, None
        self.crash_lines: dict = {}
        self.handler, self.witness = Events(), witness
        self.rounds = self.jobs = 0
        self.going = None
        self.fails, self.known = set(fails), dict(known or {})
        self.measured: dict[Pair, list[Evidence]] = {}
        self.rows: dict[int, list[dict]] = {}   # the verdict rows of each bisection (the store's)
        self.bids: dict[tuple[int, int], int] = {}  # each window's bisection
        self.sizes: list[int] = []  # requests per round
        self.raise_after = raise_after
        self.kept: dict[int, dict[tuple, list[dict]]] = {}  # kept rounds, every call's (the store's)
        self.left: dict[int, dict[tuple, list[dict]]] = {}  # and those no verdict of this call took yet
        self._ids = itertools.count(1)

    # the lab's read-only part
    workers = property(lambda self: self._workers)
    repeats = property(lambda self: self._repeats)
    higher_is_better = property(lambda self: self._hib)
    mixed_states = True
    pairing_name = "time"
    pinned = None

    def measure_many(self, reqs):
        if self.raise_after is not None and self.rounds >= self.raise_after:
            raise KeyboardInterrupt  # killed: what was recorded stays
        self.rounds += 1
        self.jobs += len(reqs)
        self.sizes.append(len(reqs))
        out = []
        for pair, count in reqs:
            k = len(self.measured.get(pair, []))
            if pair in self.fails:
                ev = Evidence("build_failed", detail="build failed: boom (log /logs/b)", id=next(self._ids))
                taken = Taken(ev, int(k == 0), 0, 0)
            else:
                runs, samples = [], []
                for _ in range(count):
                    if self.rc is not None:
                        code = self.rc(pair, k)
                        st = self.status(pair, k) if self.status else ("ok" if code == 0 else "crashed")
                        runs.append(Run(code, st))
                        if self.value is not None and st == "ok":
                            samples.append(self.value(pair, k))
                    else:
                        samples.append(self.value(pair, k))
                        runs.append(Run(0, "ok"))
                bad = [r for r in runs if r.status != "ok"]
                st = "ok" if samples or not bad else bad[0].status
                ev = Evidence(st, tuple(samples), tuple(runs), f"{st} (log /logs/r)" if bad else None, "bisect",
                              next(self._ids))
                taken = Taken(ev, int(k == 0), count, len(samples) * self.samples_per_run)
            self.measured.setdefault(pair, []).append(taken.evidence)
            out.append(taken)
        return out

    def stored(self, pair):
        return list(self.measured.get(pair, []))

    def known_failed(self, pair):
        return self.known.get(pair)

    def cost(self, pair):
        return COST_MEASURED if self.known_failed(pair) or self.stored(pair) else COST_BUILD

    def record(self, bid, p):
        row = dict(p.row(), jaxlib_builds=0, jax_builds=0)
        self.rows.setdefault(bid, []).append(row)
        self.handler.verdict(p)
        if self.witness is not None:
            self.witness.recorded(bid, p)
        return p

    def unbuilt_end(self, pair, role):
        return None

    def probes(self, bid):
        return list(self.rows.get(bid, []))

    # the kept rounds of paired verdicts, as the store keeps them: every call's, each handed back once a call
    def keep_round(self, bid, pairs, block):
        self.kept.setdefault(bid, {}).setdefault(tuple(pairs), []).append(dict(block))

    def take_rounds(self, bid, pairs, count):
        q = self._left(bid).setdefault(tuple(pairs), [])
        taken, q[:] = q[:count], q[count:]
        return taken

    def kept_rounds(self, bid, pairs):
        return len(self._left(bid).get(tuple(pairs), []))

    def kept_states(self, bid):
        return [list(k) for k, q in self._left(bid).items() if q]

    def _left(self, bid):
        if bid not in self.left:
            self.left[bid] = {k: list(v) for k, v in self.kept.get(bid, {}).items()}
        return self.left[bid]

    def moved(self, old, new):
        return step_commits(self.walks, old, new)

    def commit(self, repo, sha):
        return Commit(repo, sha, f"subject of {sha}", "An Author", "2023-08-24T00:00:00Z", f"https://x/{sha}")

    def cherry_picks(self, pair):
        return None

    def crash_line(self, pair):
        return self.crash_lines.get(pair)


def bisect(lab: Table, good: int, bad: int, kind: str = "regression", origin: str = "flags") -> list[Answer]:
    """``hourly bisect --good good --bad bad`` on the table: every step of the window, each
    window's rows kept under its own id (a second call resumes from them, as the store does)."""
    lab.left = {}  # a new call: every kept round can be taken again

    def one(w: Window) -> Answer:
        states = candidate_states(lab.walks, w.good_time, w.bad_time)
        if len(states) < 2:
            raise UserError("nothing changed", "pass a wider window")
        bid = lab.bids.setdefault((w.good_time, w.bad_time), len(lab.bids) + 1)
        return WindowDrive(lab, w, states, bid, lab.probes(bid)).run()
    return every_step(lab, Window(good, bad, origin, kind=kind), one)


def line(n: int, jax: int = 1) -> dict[str, list[tuple[str, int]]]:
    """xla commits x0..x(n-1), one an hour; jax j0 only: n states, each step one xla commit."""
    return {"xla": walk("x", [k * H for k in range(n)]), "jax": walk("j", [0])}


def level(*steps: tuple[str, int, float], base: float = 100.0):
    """A metric: ``base`` times each factor whose commit (repo, index) the pair holds."""
    def value(pair: Pair, k: int = 0) -> float:
        v = base
        for repo, i, f in steps:
            if index(getattr(pair, repo)) >= i:
                v *= f
        return v
    return value


def noisy(value, sigma: float, seed: int = 0):
    rng = np.random.default_rng(seed)
    return lambda pair, k: value(pair) * (1 + sigma * rng.standard_normal())


def probed(a: Answer) -> list[Pair]:
    return [p.pair for p in a.probes if p.role == "probe"]


# -- the registry ---------------------------------------------------------------------------------

def test_every_mode_has_its_judge_in_the_registry():
    assert set(JUDGES) == {"metric", "paired", "exit", "flaky", "printed", "manual"}
    for name, cls in JUDGES.items():
        j = judge(name, JudgeOptions(repeats=2, max_repeats=8))
        assert isinstance(j, cls) and j.name == name
    assert judge_for(Mode.EXIT, BisectRequest(flaky=True), 1, 10).name == "flaky"
    assert judge_for(Mode.EXIT, BisectRequest(find_fix=True), 1, 10).invert  # type: ignore[attr-defined]
    assert judge_for(Mode.METRIC, BisectRequest(), 1, 10, paired=True).name == "paired"
    assert judge_for(Mode.METRIC, BisectRequest(), 1, 10).name == "metric"


# -- exit mode: exhaustive histories ------------------------------------------------------------

def test_exit_mode_in_rounds_names_the_sequential_culprit_in_fewer_rounds():
    """Three states a round: the culprit the sequential search names, confirmed, in fewer rounds,
    never more than three states in one."""
    for c in range(1, 16):
        rc = (lambda p, k, c=c: 3 if index(p.xla) >= c else 125 if index(p.xla) == 2 else 0)
        (seq,) = bisect(Table(line(16), Mode.EXIT, rc=rc), 0, 15 * H, "crash")
        par_lab = Table(line(16), Mode.EXIT, rc=rc, workers=3)
        (par,) = bisect(par_lab, 0, 15 * H, "crash")
        assert (seq.culprit and seq.culprit.sha) == (par.culprit and par.culprit.sha), c
        assert par.confirmed and par.rounds < seq.rounds and max(par_lab.sizes) <= 3


@pytest.mark.parametrize("workers", [1, 3])
def test_exit_mode_names_the_culprit_at_every_position(workers):
    """Every culprit position of every window of 2..12 states, one state a round and three: the
    first bad commit, confirmed, builds near log2 of the states, every probe a state of the window."""
    for n in range(2, 13):
        for c in range(1, n):
            lab = Table(line(n), Mode.EXIT, rc=lambda p, k, c=c: 3 if index(p.xla) >= c else 0, workers=workers)
            (a,) = bisect(lab, 0, (n - 1) * H, "crash")
            assert a.culprit is not None and a.culprit.sha == f"x{c}", (n, c, a.reason)
            assert a.confirmed and a.mode == "exit" and a.kind == "crash" and a.flaky is False
            assert a.last_good == Pair(f"x{c - 1}", "j0") and a.first_bad == Pair(f"x{c}", "j0")
            states = {st.pair for st in candidate_states(lab.walks, 0, (n - 1) * H)}
            assert {p.pair for p in a.probes} <= states
            if workers == 1:
                assert a.builds <= math.ceil(math.log2(n)) + 2, (n, c, a.builds)
                assert a.rounds == a.jobs  # one state a round
            assert [p.role for p in a.probes[:2]] == ["end", "end"]
            assert {p.role for p in a.probes[-2:]} == {"confirm_good", "confirm_bad"}
            assert a.failure_rates is not None and a.failure_rates["first_bad"].failed == a.failure_rates["first_bad"].runs >= 1


def test_exit_mode_every_untestable_neighbour_gives_the_culprit_or_the_smallest_range():
    """125 (git bisect run's skip) on every single state of a 9-state window, the culprit at every
    position: the culprit when the skip does not hide it, else the range of the culprit and the
    skipped state, said with why (the replayable log says skip for it)."""
    n = 9
    for c, s in itertools.product(range(1, n), range(1, n - 1)):
        def rc(p, k, c=c, s=s):
            i = index(p.xla)
            return 3 if i >= c else 125 if i == s else 0
        lab = Table(line(n), Mode.EXIT, rc=rc)
        (a,) = bisect(lab, 0, (n - 1) * H, "crash")
        if s == c - 1:  # the last good state itself untestable: the range reaches back to it
            assert a.culprit is None and a.range == [f"x{s}", f"x{c}"], (c, s, a.range)
            assert "untestable" in (a.reason or "")
            log = bisect_log(a)[1]
            assert f"git bisect skip x{s}" in log and f"git bisect bad x{c}" in log
        else:
            assert a.culprit is not None and a.culprit.sha == f"x{c}", (c, s, a.reason)
            log = bisect_log(a)[1]
            assert f"git bisect bad x{c}" in log and f"git bisect good x{c - 1}" in log


def test_exit_mode_skips_around_the_culprit_and_a_replayable_log():
    """The stand-in of test_bisect's exit-mode window: a state that exits 125 and the one after it
    testable again, then the crash: named, and the log replays it (skip, good, bad marks)."""
    lab = Table(line(10), Mode.EXIT, rc=lambda p, k: 3 if index(p.xla) >= 7 else 125 if index(p.xla) in (2, 3) else 0)
    (a,) = bisect(lab, 0, 9 * H, "crash")
    assert a.culprit.sha == "x7" and a.mode == "exit"
    repo, log = bisect_log(a)
    assert repo == "xla" and "git bisect start" in log and "git bisect bad x7" in log and "git bisect good x6" in log


def test_build_failures_next_to_the_culprit_and_hiding_it():
    """A state that fails to build beside the culprit is left out and the culprit still named;
    failures on both sides of it leave the smallest range, said as build failures."""
    n = 10
    lab = Table(line(n), Mode.METRIC, value=level(("xla", 6, 0.9)), fails={Pair("x4", "j0")}, repeats=2)
    (a,) = bisect(lab, 0, (n - 1) * H)
    assert a.culprit.sha == "x6" and a.confirmed
    # the break lands just before the culprit and is fixed just after it: only the range is left
    lab = Table(line(n), Mode.METRIC, value=level(("xla", 6, 0.9)), fails={Pair("x5", "j0"), Pair("x6", "j0")},
                repeats=2)
    (a,) = bisect(lab, 0, (n - 1) * H)
    assert a.culprit is None and a.range == ["x5", "x6", "x7"]
    assert a.reason.startswith("2 untestable states between last good and first bad") and "build failed" in a.reason
    # a build failure known before (a recorded one) is never built again: its reason is the record's
    lab = Table(line(n), Mode.EXIT, rc=lambda p, k: 3 if index(p.xla) >= 4 else 0,
                known={Pair("x4", "j0"): "build failed (log /logs/x4)"})
    (a,) = bisect(lab, 0, (n - 1) * H, "crash")
    assert a.culprit is None and a.range == ["x4", "x5"] and "build failed" in a.reason
    assert Pair("x4", "j0") not in lab.measured


def test_every_build_failure_placement_exit_mode():
    """Every pair of a culprit and a state that fails to build: the culprit when the failure does
    not border it, else a range holding the culprit; never a wrong commit."""
    n = 9
    for c, f in itertools.product(range(1, n), range(1, n - 1)):
        lab = Table(line(n), Mode.EXIT, rc=lambda p, k, c=c: 3 if index(p.xla) >= c else 0, fails={Pair(f"x{f}", "j0")})
        (a,) = bisect(lab, 0, (n - 1) * H, "crash")
        if f in (c - 1, c):
            assert a.culprit is None and f"x{c}" in a.range and "build failed" in a.reason, (c, f)
        else:
            assert a.culprit is not None and a.culprit.sha == f"x{c}", (c, f)


# -- metric mode ---------------------------------------------------------------------------------

@pytest.mark.parametrize("workers", [1, 4])
def test_metric_mode_names_the_culprit_at_every_position(workers):
    """Exact samples, every culprit position of windows of 3..10 states: the culprit, confirmed by
    fresh samples of both states, the ends' samples said, builds near log2 of the states."""
    for n in range(3, 11):
        for c in range(1, n):
            lab = Table(line(n), Mode.METRIC, value=lambda p, k, c=c: level(("xla", c, 0.9))(p), repeats=2,
                        workers=workers)
            answers = bisect(lab, 0, (n - 1) * H)
            assert [a.culprit.sha for a in answers] == [f"x{c}"], (n, c, [a.reason for a in answers])
            (a,) = answers
            assert a.confirmed and a.mode == "metric" and a.end_samples["good"].n >= 2 and a.rest is None
            assert {p.role for p in a.probes} <= {"end", "probe", "ahead", "confirm_good", "confirm_bad"}
            assert [p.verdict for p in a.probes if p.role in ("confirm_good", "confirm_bad")] == ["good", "bad"]
            if workers == 1:
                assert a.builds <= math.ceil(math.log2(n)) + 2, (n, c, a.builds)
            else:
                assert max(lab.sizes) <= 4


def test_two_steps_inside_one_window_are_both_found():
    """Every pair of culprit positions in a 9-state window: both named, earliest first, each
    answer continuing where the one before stopped."""
    n = 9
    for c1, c2 in itertools.combinations(range(1, n), 2):
        lab = Table(line(n), Mode.METRIC, value=lambda p, k, c1=c1, c2=c2: level(("xla", c1, 0.9), ("xla", c2, 0.9))(p),
                    repeats=3)
        answers = bisect(lab, 0, (n - 1) * H)
        assert [a.culprit.sha for a in answers if a.culprit] == [f"x{c1}", f"x{c2}"], (c1, c2)
        assert answers[0].continues_at == c1 * H and all(a.confirmed for a in answers)


def test_under_noise_the_steps_are_found_and_noise_costs_runs_not_builds():
    """-7 % then -2 % under 0.4 % noise per run, many seeds: both found, a probe takes more than one
    sample, and the builds stay near the limit for two steps."""
    n = 14
    for seed in range(6):
        value = noisy(level(("xla", 4, 0.93), ("xla", 10, 0.98)), 0.004, seed)
        lab = Table(line(n), Mode.METRIC, value=value, repeats=1, max_repeats=24)
        answers = bisect(lab, 0, (n - 1) * H)
        assert [a.culprit.sha for a in answers if a.culprit] == ["x4", "x10"], seed
        assert sum(a.builds for a in answers) <= math.ceil(math.log2(math.comb(n - 1, 2))) + 4
        assert sum(a.runs for a in answers) > 2 * sum(a.builds for a in answers)
        rows = lab.rows[1]
        assert max(len(r["samples"]) for r in rows if r["role"] == "probe") > 1


def test_a_regression_an_improvement_and_a_regression():
    """An improvement between two regressions hides part of them from the window's ends; a probe
    that fits neither end splits the search, and both regressions are named, never the improvement."""
    lab = Table(line(12), Mode.METRIC, value=level(("xla", 3, 0.92), ("xla", 6, 1.05), ("xla", 9, 0.97)), repeats=2)
    answers = bisect(lab, 0, 11 * H)
    assert [a.culprit.sha for a in answers if a.culprit] == ["x3", "x9"]


def test_a_rest_of_the_window_that_names_nothing_is_said_not_dropped():
    from hourly.render.bisect import describe
    lab = Table(line(12), Mode.METRIC, value=level(("xla", 3, 0.9), ("xla", 8, 1.05)), repeats=2)
    (a,) = bisect(lab, 0, 11 * H)
    assert a.culprit.sha == "x3" and a.continues_at == 3 * H
    assert a.rest is not None and (a.rest.from_, a.rest.to) == ("1970-01-01T03:00:00Z", "1970-01-01T11:00:00Z")
    assert any(w in a.rest.why for w in ("no probe confirmed a step", "not worse", "do not differ"))
    text = "\n".join(str(x) for x in describe(a))
    assert "rest of the window" in text and "no further step named" in text


def test_the_ends_must_differ_in_the_direction_of_the_hunt():
    with pytest.raises(UserError, match="do not differ"):
        bisect(Table(line(6), Mode.METRIC, value=noisy(level(), 0.002), repeats=2, max_repeats=8), 0, 5 * H)
    with pytest.raises(UserError, match="is not worse than the good end"):
        bisect(Table(line(6), Mode.METRIC, value=level(("xla", 3, 1.1)), repeats=2), 0, 5 * H)
    # finding the fix: the improvement is the change, the later end the better one
    fixing = Table(line(6), Mode.METRIC, value=level(("xla", 3, 1.1)), repeats=2, find_fix=True)
    (a,) = bisect(fixing, 0, 5 * H, "improvement")
    assert a.culprit.sha == "x3" and a.kind == "improvement"
    # each end's row names its partner as the other end: finding a fix, the old end's partner is
    # the user's --good, which "the bad end" (its role in the search) misnamed
    ends = fixing.rows[1][:2]  # the window's two ends, first
    assert [r["role"] for r in ends] == ["end", "end"]
    assert all("in alternation with the other end" in r["reason"] for r in ends), ends
    # a window of the store that cannot be bisected is an answer saying why; the others go on
    lab = Table(line(6), Mode.METRIC, value=level(("xla", 3, 1.1)), repeats=2)
    (e,) = bisect(lab, 0, 5 * H, origin="detect")
    assert e.error and "not worse" in e.error and e.to_json()["culprit"] is None
    assert ("cannot", e.reason) in lab.handler.log


# -- blame: a step that moves both repositories ------------------------------------------------------

def both(at: int = 3, n: int = 6) -> dict[str, list[tuple[str, int]]]:
    """xla and jax commits every hour; at hour ``at`` both land at the same time (one step)."""
    return {"xla": walk("x", [k * H for k in range(n)]), "jax": walk("j", [k * H + (0 if k == at else 1800)
                                                                              for k in range(n)])}


@pytest.mark.parametrize("repo", ["xla", "jax"])
def test_metric_blame_by_the_mixed_pairs(repo):
    lab = Table(both(), Mode.METRIC, value=level((repo, 3, 0.9)), repeats=2)
    (a,) = bisect(lab, 2 * H + 1800, 4 * H)
    assert a.first_bad == Pair("x3", "j3") and a.last_good == Pair("x2", "j2")
    assert a.blame == repo and a.culprit.sha == f"{repo[0]}3" and a.confirmed
    mixed = [(p.xla, p.jax, p.verdict) for p in a.probes if p.role == "blame"]
    if repo == "xla":
        assert mixed == [("x2", "j3", "good"), ("x3", "j2", "bad")]
    else:
        assert mixed == [("x2", "j3", "bad")]
    if repo == "xla":  # the log pins jax at the first bad state's commit, where the mixed pair was good
        log = bisect_log(a)[1]
        assert "git bisect bad x3" in log and "git bisect good x2" in log


def test_the_second_step_of_a_window_is_blamed_against_its_own_levels():
    walks = both(at=5, n=8)
    lab = Table(walks, Mode.METRIC, value=level(("xla", 2, 0.92), ("xla", 5, 0.95)), repeats=2)
    answers = bisect(lab, 0, 7 * H)
    assert [a.culprit.sha for a in answers] == ["x2", "x5"]
    assert answers[1].blame == "xla" and answers[1].confirmed


@pytest.mark.parametrize("repo", ["jax", "xla"])
def test_exit_mode_walks_the_mixed_state_and_blame_reuses_it(repo):
    """Exit mode's chain holds old xla + new jax inside the step; the blame takes its verdict from
    the search's probe, and no state is built twice; an xla crash is named from the chain
    (xla_on_new_jax) and new xla + old jax is never built."""
    lab = Table(both(at=3, n=8), Mode.EXIT, rc=lambda p, k: 3 if index(getattr(p, repo)) >= 3 else 0)
    (a,) = bisect(lab, 0, 7 * H + 1800, "crash")
    assert a.first_bad == Pair("x3", "j3") and a.culprit.sha == f"{repo[0]}3"
    mixed = Pair("x2", "j3")
    by_role = {p.role: p.verdict for p in a.probes if p.pair == mixed}
    if repo == "jax":
        assert a.blame == "jax" and by_role == {"probe": "bad", "blame": "bad"}
        assert [(p.role, p.pair, p.verdict) for p in a.probes if p.role == "blame"] == [("blame", mixed, "bad")]
    else:
        assert a.blame == "xla_on_new_jax" and by_role == {"probe": "good", "blame": "good"}
        assert Pair("x3", "j2") not in lab.measured  # new xla + old jax: not built
        from hourly.render.bisect import describe
        text = "\n".join(str(x) for x in describe(a))
        assert "bad on the new jax" in text and "new xla + old jax was not built" in text
        # the log pins jax at the first bad state's commit, where the mixed state was good
        log = bisect_log(a)[1]
        assert "git bisect bad x3" in log and "git bisect good x2" in log
    assert a.builds == len({p.pair for p in a.probes})  # each state built once


# -- confirmation ------------------------------------------------------------------------------------

def test_an_answer_the_re_measurement_does_not_confirm_is_a_candidate():
    """The first bad state crashes only the first time it runs: the search names it, its fresh run
    passes, and the answer is a candidate (exit 4) with both measurements and what to do next."""
    from hourly.render.bisect import describe
    lab = Table(line(8), Mode.EXIT, rc=lambda p, k: 1 if index(p.xla) >= 5 and k == 0 else 0)
    # the bad end crashes on every run; the states from x5 on crash the first time only
    lab.rc = lambda p, k: 1 if index(p.xla) == 7 or (index(p.xla) >= 5 and k == 0) else 0
    (a,) = bisect(lab, 0, 7 * H, "crash")
    assert a.culprit is None and a.unconfirmed and not a.confirmed
    assert a.candidate.sha == "x5"
    bad = a.measurements["first_bad"]
    assert bad[0].verdict == "bad" and bad[-1].role == "confirm_bad" and bad[-1].verdict == "good"
    assert "--max-repeats" in a.next and "quieter machine" in a.next and "wider window" in a.next
    text = "\n".join(str(x) for x in describe(a))
    assert "candidate (NOT confirmed on re-measurement): xla x5" in text and "culprit" not in text
    # an unconfirmed answer in exit mode ends the window: its rest is not searched
    assert a.continues_at is None


# -- flaky and printed ---------------------------------------------------------------------------

@pytest.mark.parametrize("workers", [1, 3])
def test_a_flaky_crash_is_named_by_its_failure_rate(workers):
    """A crash in 2 of 5 runs from the culprit on, never before: named by its failure rate against the
    ends' (each end run 10 times first), never a wrong commit; an unlucky re-measurement (seed 2:
    2 of 16 fresh runs failed) leaves a candidate, not a culprit."""
    named = []
    for seed in range(5):
        rng = np.random.default_rng(seed)
        lab = Table(line(10), Mode.EXIT, rc=lambda p, k, rng=rng: 134 if index(p.xla) >= 6 and rng.random() < 0.4 else 0,
                    flaky=True, workers=workers)
        (a,) = bisect(lab, 0, 9 * H, "crash")
        assert a.named is not None and a.named.sha == "x6", (seed, a.reason)
        assert a.flaky is True
        assert a.failure_rates["last_good"].failed == 0 and a.failure_rates["last_good"].runs >= 10
        assert 0.1 < a.failure_rates["first_bad"].rate < 0.8
        named.append(a.culprit is not None)
    assert sum(named) >= 4


def test_exit_mode_turns_flaky_when_an_end_both_passes_and_fails():
    """The scan's runs of the crashing end both pass and fail: one run decides nothing, and the
    bisection judges by failure rate without being asked to."""
    rng = np.random.default_rng(5)
    lab = Table(line(10), Mode.EXIT, rc=lambda p, k: 134 if index(p.xla) >= 6 and rng.random() < 0.5 else 0,
                repeats=6)
    lab.measure_many([(Pair("x0", "j0"), 6), (Pair("x9", "j0"), 6)])  # the scan's measurements
    assert ExitJudge.both(lab.stored(Pair("x9", "j0"))[0].counted)
    (a,) = bisect(lab, 0, 9 * H, "crash")
    # exit mode turned to the failure-rate test for the rest of the bisection (the judge itself keeps it)
    assert lab.judge.name == "exit" and lab.judge.rate() is not None and a.flaky is True and a.culprit.sha == "x6"


@pytest.mark.parametrize("find_fix", [False, True])
def test_a_metric_that_stops_printing_is_bisected_by_whether_it_prints(find_fix):
    lost = lambda p, k: "no_metric" if 4 <= index(p.xla) < (8 if find_fix else 99) else "ok"  # noqa: E731
    lab = Table(line(11), Mode.PRINTED, rc=lambda p, k: 0, status=lost, value=lambda p, k: 500.0, find_fix=find_fix)
    good, bad = (5 * H, 10 * H) if find_fix else (0, 10 * H)
    (a,) = bisect(lab, good, bad, "metric_back" if find_fix else "metric_lost")
    assert a.mode == "printed" and a.confirmed and a.culprit.sha == ("x8" if find_fix else "x4")
    assert a.flaky is None  # exit mode's failure rates are not printed mode's


# -- kill -9 and resume ------------------------------------------------------------------------------

@pytest.mark.parametrize("mode, workers", [(Mode.EXIT, 1), (Mode.METRIC, 1), (Mode.METRIC, 3)])
def test_a_killed_bisection_resumes_from_its_rows_to_the_same_answer(mode, workers):
    """Killed after every possible round: the rerun keeps every row written before, probes no state
    twice, and names the culprit the uninterrupted bisection names."""
    kw = dict(rc=lambda p, k: 3 if index(p.xla) >= 9 else 0) if mode is Mode.EXIT else \
        dict(value=level(("xla", 9, 0.9)), repeats=2)
    whole = Table(line(20), mode, workers=workers, **kw)
    (want,) = bisect(whole, 0, 19 * H)
    for cut in range(1, whole.rounds):
        lab = Table(line(20), mode, workers=workers, raise_after=cut, **kw)
        with pytest.raises(KeyboardInterrupt):
            bisect(lab, 0, 19 * H)
        before = [dict(r) for r in lab.rows.get(1, [])]
        lab.raise_after = None
        (a,) = bisect(lab, 0, 19 * H)
        assert a.culprit.sha == want.culprit.sha == "x9", cut
        after = lab.rows[1]
        assert after[:len(before)] == before
        probes = [(r["xla"], r["jax"]) for r in after if r["role"] == "probe"]
        assert len(set(probes)) == len(probes), (cut, probes)


def test_a_paired_bisection_stopped_inside_a_verdict_goes_on_from_its_kept_rounds():
    """Stopped after any process of a noisy paired bisection (the ends and probes needing several
    rounds each, as on an accelerator), the next call takes the rounds the first kept — of the ends,
    of a probe's unfinished verdict, of a step's check — and measures none of them again: the two calls
    together run about the processes of the bisection that was never stopped, where a call that
    started each unfinished verdict over ran more. Each call names the culprit. (Each process's value
    is a function of the state and how many processes of it ran before, so the calls see the same
    noise the uninterrupted bisection saw, bar the round under way at the stop.)"""
    kw = dict(repeats=1, max_repeats=30, min_change=0.05)
    value = level(("xla", 9, 0.9))

    def sample(pair, k):
        return value(pair) * (1 + 0.02 * np.random.default_rng([index(pair.xla), k, 7]).standard_normal())

    class StartsOver(Table):  # a lab that keeps no round: each unfinished verdict starts over
        def take_rounds(self, bid, pairs, count):
            return []

    whole = Table(line(20), Mode.METRIC, value=sample, **kw)
    (want,) = bisect(whole, 0, 19 * H)
    assert want.culprit.sha == "x9"
    totals: dict[type, list[int]] = {Table: [], StartsOver: []}
    said = set()
    for cut in range(2, whole.rounds):
        for kind in totals:
            lab = kind(line(20), Mode.METRIC, value=sample, raise_after=cut, **kw)
            with pytest.raises(KeyboardInterrupt):
                bisect(lab, 0, 19 * H)
            lab.raise_after = None
            notes: list[str] = []
            lab.handler.note = notes.append
            (a,) = bisect(lab, 0, 19 * H)
            assert a.culprit.sha == "x9", (kind, cut)
            totals[kind].append(lab.rounds)  # one process a measure_many call here
            said |= {n.split(":")[0].split(" of ")[0] for n in notes if "measured before the stop taken up again" in n}
    kept, over = (float(np.mean(totals[k])) for k in (Table, StartsOver))
    assert kept <= whole.rounds + 2 and kept < over - 3, (kept, over, whole.rounds)
    assert said >= {"ends", "probe 1", "step check"}, said  # every kind of verdict went on from its rounds


def test_a_resumed_verdict_reads_every_round_kept_for_it_at_once():
    """Stopped after several rounds of a verdict, the next call's verdict takes every round kept of
    its states at once, however few it asks for first: one that read the first two of four kept
    rounds could decide on them while the other two, measured already, said otherwise (the TPU
    front-end case: a step's check stopped after 4 rounds was decided on 2 when resumed)."""
    kw = dict(repeats=1, max_repeats=30, min_change=0.05)
    value = level(("xla", 9, 0.9))

    def sample(pair, k):
        return value(pair) * (1 + 0.02 * np.random.default_rng([index(pair.xla), k, 7]).standard_normal())

    class Spy(Table):
        def take_rounds(self, bid, pairs, count):
            there = self.kept_rounds(bid, pairs)
            got = super().take_rounds(bid, pairs, count)
            self.takes.append((count, there, len(got)))
            return got

    whole = Table(line(20), Mode.METRIC, value=sample, **kw)
    bisect(whole, 0, 19 * H)
    more_than_asked = 0
    for cut in range(2, whole.rounds):
        lab = Spy(line(20), Mode.METRIC, value=sample, raise_after=cut, **kw)
        lab.takes = []
        with pytest.raises(KeyboardInterrupt):
            bisect(lab, 0, 19 * H)
        lab.raise_after, lab.takes = None, []
        (a,) = bisect(lab, 0, 19 * H)
        assert a.culprit.sha == "x9", cut
        assert all(got == there for _, there, got in lab.takes), (cut, lab.takes)
        more_than_asked += any(there > MIN_ROUNDS for _, there, _ in lab.takes)  # a verdict asks for 2 first
    assert more_than_asked, "no stop left a verdict more kept rounds than it first asks for"


def test_a_resumed_search_judges_by_the_noise_of_every_verdict_decided_before(monkeypatch):
    """Stopped after two probes' verdicts were stored, the next call pools their rounds' noise (the
    first probe's rounds ridden in the ends' included) with the ends': its next verdict judges by
    the noise the uninterrupted search had there. Before, it pooled the ends' alone and the verdicts
    of its own call: on the TPU a step's check was judged at a noise of 0.9 % or 1.27 % by where the
    calls had stopped, 0.99 % had none stopped."""
    value = level(("xla", 13, 0.9))

    def sample(pair, k):
        return value(pair) * (1 + 0.01 * np.random.default_rng([index(pair.xla), k, 5]).standard_normal())

    pooled: list[tuple[int, int]] = []  # (the state a verdict probes, the noise's degrees of freedom then)
    decide = PairedVerdicts.decide

    def spy(self, i, a, b):
        pooled.append((i, sum(dof for _, _, dof in self.groups)))
        return decide(self, i, a, b)
    monkeypatch.setattr(PairedVerdicts, "decide", spy)
    whole = Table(line(20), Mode.METRIC, value=sample, max_repeats=30)
    heard: list = []
    whole.handler.process = heard.append
    (a,) = bisect(whole, 0, 19 * H)
    labels = list(dict.fromkeys(e.what for e in heard if e.what.startswith("probe")))
    assert len(labels) >= 3 and "probe 1 of" in labels[0], labels
    third = next(k for k, e in enumerate(heard) if e.what == labels[2])  # its first process
    # each state's last entry: a throwaway search (the first probe's, for the ends' rounds) asks too
    probed = [int(r["xla"][1:]) for r in whole.rows[1] if r["role"] == "probe"]
    want = dict(pooled)[probed[2]]
    assert want > dict(pooled)[probed[0]]  # the first two probes' rounds were pooled by then
    lab = Table(line(20), Mode.METRIC, value=sample, max_repeats=30, raise_after=third + 1)
    with pytest.raises(KeyboardInterrupt):
        bisect(lab, 0, 19 * H)
    assert [int(r["xla"][1:]) for r in lab.rows[1] if r["role"] == "probe"] == probed[:2]
    lab.raise_after, pooled[:] = None, []
    (b,) = bisect(lab, 0, 19 * H)
    assert b.culprit.sha == a.culprit.sha == "x13"
    assert dict(pooled)[probed[2]] == want, (pooled, want)


def test_a_resumed_search_pools_a_confirmed_steps_check_too(monkeypatch):
    """Two steps in a window; stopped once the first step's confirmation is stored, the next call
    answers that step from its rows and searches on past it, pooling the first step's check with
    its probes: the first verdict after it is judged at the noise the uninterrupted search had."""
    value = level(("xla", 6, 0.9), ("xla", 14, 0.9))

    def sample(pair, k):
        return value(pair) * (1 + 0.01 * np.random.default_rng([index(pair.xla), k, 9]).standard_normal())

    pooled: list[tuple[int, int]] = []  # (the state a verdict probes, the noise's degrees of freedom); -1: confirmed
    decide = PairedVerdicts.decide

    def spy(self, i, a, b):
        pooled.append((i, sum(dof for _, _, dof in self.groups)))
        return decide(self, i, a, b)
    monkeypatch.setattr(PairedVerdicts, "decide", spy)

    class Confirms(Table):  # when (after how many processes) each confirmation row was stored
        def record(self, bid, p):
            if p.role == "confirm_bad":
                self.confirmed.append(self.rounds)
                pooled.append((-1, 0))
            return super().record(bid, p)
    whole = Confirms(line(20), Mode.METRIC, value=sample, max_repeats=30)
    whole.confirmed = []
    answers = bisect(whole, 0, 19 * H)
    assert [a.culprit.sha for a in answers] == ["x6", "x14"], [a.reason for a in answers]
    cut = whole.confirmed[0]
    after = pooled[pooled.index((-1, 0)) + 1:]  # the verdicts decided past the first step
    state, want = after[0]
    lab = Confirms(line(20), Mode.METRIC, value=sample, max_repeats=30, raise_after=cut)
    lab.confirmed = []
    with pytest.raises(KeyboardInterrupt):
        bisect(lab, 0, 19 * H)
    lab.raise_after, pooled[:] = None, []
    again = bisect(lab, 0, 19 * H)
    assert [a.culprit.sha for a in again] == ["x6", "x14"]
    resumed = [dof for i, dof in pooled if i == state]
    assert resumed and resumed[-1] == want, (pooled, state, want)


def test_a_resumed_search_numbers_its_probes_on_from_those_decided_before():
    """Stopped after its first probe's verdict was stored, the next call's first probe is "probe 2",
    not "probe 1" again: the person reading the lines counts the probes of the whole bisection."""
    value = level(("xla", 9, 0.9))
    whole = Table(line(20), Mode.METRIC, value=value)
    heard: list = []
    whole.handler.process = heard.append
    (a,) = bisect(whole, 0, 19 * H)
    labels = list(dict.fromkeys(e.what for e in heard if e.what.startswith("probe")))
    assert len(labels) >= 3 and labels[0].startswith("probe 1 of") and labels[1].startswith("probe 2 of"), labels
    # stop inside the second probe's rounds: its first process
    first_of_second = next(k for k, e in enumerate(heard) if e.what == labels[1])
    lab = Table(line(20), Mode.METRIC, value=value, raise_after=first_of_second + 1)
    with pytest.raises(KeyboardInterrupt):
        bisect(lab, 0, 19 * H)
    assert sum(r["role"] == "probe" for r in lab.rows[1]) == 1  # the first probe's verdict is stored
    lab.raise_after, again = None, []
    lab.handler.process = again.append
    (b,) = bisect(lab, 0, 19 * H)
    assert b.culprit.sha == a.culprit.sha == "x9"
    resumed = list(dict.fromkeys(e.what.split(" of ")[0] for e in again if e.what.startswith("probe")))
    assert resumed and resumed[0] == "probe 2", resumed


def test_a_verdict_that_min_change_makes_long_says_so_once_with_what_shortens_it():
    """On a machine where a process costs 30 s and processes spread by 2 %, a probe at an end's level
    takes many rounds to tell a 1 % step from none: the bisection says so once, naming --min-change;
    at 6 % it settles in a few rounds and says nothing."""
    class Chip(Table):  # 30 s of the machine a process
        seconds = 0.0

        def measure_many(self, reqs):
            self.seconds += 30.0 * len(reqs)
            return super().measure_many(reqs)

    value = level(("xla", 9, 0.9))

    def sample(pair, k):
        return value(pair) * (1 + 0.02 * np.random.default_rng([index(pair.xla), k, 11]).standard_normal())

    said = {}
    for min_change in (0.01, 0.06):
        lab = Chip(line(20), Mode.METRIC, value=sample, max_repeats=30, min_change=min_change)
        notes: list[str] = []
        lab.handler.note = notes.append
        (a,) = bisect(lab, 0, 19 * H)
        assert a.culprit.sha == "x9"
        said[min_change] = [n for n in notes if "a larger --min-change" in n]
    assert len(said[0.01]) == 1 and said[0.06] == [], said
    # a probe at the later end's level whose reading strays past halfway to a level of its own
    # (0.75 %, from --min-change) says that; one near its end, the rounds a step of 1 % takes
    assert re.match(r"probe \d+ of ~\d+: (at this noise \(±\d+\.\d % a round\) telling a step of 1 % \(--min-change\) "
                    r"from none takes about \d+ rounds|it reads \d+\.\d % from the (earlier|later) end, nearer a step of "
                    r"its own \(0\.7 %, three quarters of --min-change 1 %\) than that end's level: at this noise "
                    r"\(±\d+\.\d % a round\) it is taken at the end's level only when its reading moves back, and told a "
                    r"level of its own after (about \d+|more than --max-repeats \(30\)) rounds), ~\d+ min of the benchmark more; "
                    r"a larger --min-change", said[0.01][0]), said[0.01][0]


def test_the_first_probe_rides_in_the_ends_rounds_once_they_read_apart():
    """Where a process is expensive, the ends' verdict takes several rounds and the first probe's
    rounds hold the ends again: once the ends read apart the probe the search will ask for first is
    measured in their rounds (A P B), and its verdict takes them first. The same culprit for fewer
    processes; the probe's row owns its processes; said once. (Over many noisy windows:
    benchmarks/README.md.)"""
    value = level(("xla", 13, 0.9))

    def sample(pair, k):
        return value(pair) * (1 + 0.005 * np.random.default_rng([index(pair.xla), k, 3]).standard_normal())
    jobs = {}
    for rides in (True, False):
        lab = Table(line(20), Mode.METRIC, value=sample, max_repeats=30)
        lab.rides = rides
        notes: list[str] = []
        lab.handler.note = notes.append
        (a,) = bisect(lab, 0, 19 * H)
        assert a.culprit.sha == "x13", rides
        jobs[rides] = lab.jobs
        said = [n for n in notes if "measured beside the window's ends taken up" in n]
        rows = lab.rows[1]
        first = next(r for r in rows if r["role"] == "probe")
        assert first["xla"] == "x9"  # the state the ends' rounds carried is the one the search probed
        if rides:
            assert len(said) == 1 and said[0].startswith("probe 1 of ~"), notes
            # every process of it (those rounds its verdict did not need too) is its row's
            assert first["runs"] >= len(first["samples"]) >= 2, first
            assert all(r["runs"] == len(r["samples"]) for r in rows[:2]), rows[:2]  # the window's ends'
            # its verdict read every round it rode in (the note's count), not the first it asked for
            rode = int(re.search(r": (\d+) rounds? measured beside", said[0]).group(1))
            assert int(re.search(r"paired over (\d+) round", first["reason"]).group(1)) >= rode, (said, first)
        else:
            assert not said
    assert jobs[True] < jobs[False], jobs


def test_a_probe_takes_every_round_it_rode_in_whatever_it_asks_for_first():
    """The ends' verdict carried the first probe in three of its rounds; the probe's verdict asks
    for two first, and is handed all three (it reads every round it was measured in), said once."""
    a, p, b = Pair("x0", "j0"), Pair("x5", "j0"), Pair("x9", "j0")
    rode = [{a: 1.0 + k / 100, p: 0.95, b: 0.9} for k in range(3)]
    riding = {(a, p, b): list(rode)}
    notes: list[str] = []
    assert take_riding(riding, [a, p, b], notes.append, "probe 1 of ~4") == rode
    assert riding[(a, p, b)] == [] and notes == ["probe 1 of ~4: 3 rounds measured beside the window's ends taken up"]
    assert take_riding(riding, [a, p, b], notes.append, None) == [] and len(notes) == 1


def test_a_search_resumed_after_its_ridden_first_probe_was_decided_still_takes_the_ends_rounds_it_rode_in():
    """Stopped inside the second probe, after the first — which rode in the ends' rounds — was
    decided and stored: the next call's first probe is another state, and the ends' rounds kept with
    the first (A P B) are the ends' still. The resumed search takes them with the ends' own (the ends'
    verdict's every round seeds the window's noise and change), as the TPU machine's resumed front-end
    bisection did not: it was seeded with the ends' first 4 rounds of 7."""
    value = level(("xla", 13, 0.9))

    def sample(pair, k):
        return value(pair) * (1 + 0.005 * np.random.default_rng([index(pair.xla), k, 3]).standard_normal())

    class Taking(Table):
        def take_rounds(self, bid, pairs, count):
            got = super().take_rounds(bid, pairs, count)
            self.took.append((tuple(p.xla for p in pairs), len(got)))
            return got
    whole = Table(line(20), Mode.METRIC, value=sample, max_repeats=30)
    heard: list = []
    whole.handler.process = heard.append
    (a,) = bisect(whole, 0, 19 * H)
    labels = list(dict.fromkeys(e.what for e in heard if e.what.startswith("probe")))
    assert heard[0].what.startswith("ends") and any(e.what.startswith("ends and probe 1") for e in heard)
    second = next(k for k, e in enumerate(heard) if e.what == labels[1])  # probe 1 rode, then was decided
    lab = Taking(line(20), Mode.METRIC, value=sample, max_repeats=30, raise_after=second + 1)
    lab.took = []
    with pytest.raises(KeyboardInterrupt):
        bisect(lab, 0, 19 * H)
    ends = [r for r in lab.rows[1] if r["role"] == "end"]
    rode = [r["xla"] for r in lab.rows[1] if r["role"] == "probe"]
    assert len(ends) == 2 and rode == ["x9"], lab.rows[1]
    lab.raise_after, lab.took = None, []
    (b,) = bisect(lab, 0, 19 * H)
    assert b.culprit.sha == a.culprit.sha == "x13"
    ridden = [n for keys, n in lab.took if keys == ("x0", "x9", "x19")]
    own = sum(n for keys, n in lab.took if keys == ("x0", "x19"))
    assert ridden and ridden[0] >= 1 and own + ridden[0] >= len(ends[0]["samples"]), (lab.took, ends[0]["samples"])


def test_ends_that_do_not_read_apart_take_no_rider():
    """A window whose ends do not differ: no third process a round for a probe that may never run."""
    def sample(pair, k):
        return 100 * (1 + 0.03 * np.random.default_rng([index(pair.xla), k, 5]).standard_normal())
    lab = Table(line(20), Mode.METRIC, value=sample, max_repeats=12)
    with pytest.raises(UserError):
        bisect(lab, 0, 19 * H)
    assert len(lab.measured) == 2, list(lab.measured)  # the two ends alone


def test_a_probe_nearer_a_level_of_its_own_than_the_end_is_not_said_to_be_settling():
    """The TPU front-end window's first probe read +2.6, +2.7, +3.3, +2.2 % from the earlier end at
    --min-change 5 %: nearer "a level of its own" (3.7 %, three quarters of --min-change) than the
    end's level, so the judge took it at the end's level only when its reading fell back, after 7
    rounds — while the line said "settling" from the fourth (the guess told the reading from
    --min-change at three standard errors). Once the reading is two standard errors past halfway,
    the guess is Wald's bound for that level, the line says where the probe reads, and the
    long-verdict note says it once; a probe at the end's level is guessed as before.""" 
    from hourly.bisect.paired_rounds import Progress
    from hourly.render.bisect import process_words

    class Lab:  # what Progress reads of a lab: 24 s of the chip a process
        min_change, max_repeats, seconds = 0.05, 20, 0.0

        def __init__(self):
            self.events, self.notes = [], []
            self.handler = type("H", (), {"process": self.events.append, "note": self.notes.append})()

    a, p, b = Pair("a", "x0"), Pair("a", "x5"), Pair("a", "x10")
    wobble = [0.0, 0.03, -0.03, 0.015, -0.015, 0.0, 0.03, -0.03]  # a round's spread of ≈2.5 %, as there

    def run(probe: float) -> Lab:
        lab = Lab()
        progress = Progress(lab, "probe 1 of ~4", [a, p, b], p, [])
        now: list = []
        for r, w in enumerate(wobble):
            block: dict = {}
            now.append(block)
            for pair, v in ((a, 100.0), (p, probe * (1 + w)), (b, 91.0)):
                lab.seconds += 24.0
                block[pair] = v
                progress.tell(pair, now, r + 1, 3)
        return lab

    hovering = run(102.6)
    late = [e for e in hovering.events if e.round >= 6]  # two standard errors past halfway from here
    assert late and all(e.midway is not None and abs(e.midway - 0.0373) < 1e-3 and e.near == "earlier" for e in late)
    assert all(e.settle_s is not None and e.settle_s > 0 for e in late), [e.settle_s for e in late]  # not "settling"
    assert "(it reads nearer a step of its own, 3.7 % from the earlier end, than that end's level)" in process_words(late[-1])
    (note,) = hovering.notes  # once
    assert re.match(r"probe 1 of ~4: it reads \d\.\d % from the earlier end, nearer a step of its own \(3\.7 %, "
                    r"three quarters of --min-change 5 %\) than that end's level: at this noise", note), note
    at_end = run(100.4)  # at the end's level: the guess as before, nothing said
    assert all(e.midway is None for e in at_end.events) and not at_end.notes
    assert at_end.events[-1].settle_s == 0 and "settling" in process_words(at_end.events[-1])
    apart = run(95.5)  # far from both (4.6 % and 4.8 %): a level of its own, soon told
    assert apart.events[-1].midway is not None and apart.events[-1].settle_s < 600 and not apart.notes


# -- the manual judge: the person's word ------------------------------------------------------------

class Person:
    """A person at the prompt: the word of ``says(pair)``; ``waiting``: the probe a stopped run waited at."""

    def __init__(self, says, waiting=None):
        self.says, self.waiting = says, waiting
        self.asked: list = []

    def ask(self, lab, bid, pair, role, where, ends):
        self.asked.append((role, pair, where))
        return Taken(Evidence(word=Word(self.says(pair), "typed at the prompt")), 1, 0, 0)

    def resume_at(self, bid):
        return self.waiting

    def recorded(self, bid, p):
        if self.waiting == p.pair:
            self.waiting = None


def manual_lab(says, walks=None, waiting=None, window_mode="metric") -> Table:
    j = judge("manual", JudgeOptions(window_mode=window_mode))
    return Table(walks or line(12), Mode.METRIC, value=level(), judge_=j, witness=Person(says, waiting))


def test_a_manual_bisection_names_the_state_the_person_calls_bad_first():
    for c in range(1, 12):
        lab = manual_lab(lambda p, c=c: Verdict.BAD if index(p.xla) >= c else Verdict.GOOD)
        (a,) = bisect(lab, 0, 11 * H)
        assert a.culprit.sha == f"x{c}" and a.mode == "manual" and a.confirmed
        assert a.manual.verdicts == len(lab.witness.asked) and a.manual.ends == "taken as given, not built or judged"
        assert [p.role for p in a.probes[:2]] == ["end", "end"] and not lab.measured  # nothing measured
        assert all(p.manual for p in a.probes if p.role == "probe")
        # the person is told where the probe stands
        role, pair, where = lab.witness.asked[0]
        assert role == "probe" and where.states == 12 and (where.lo, where.hi) == (0, 11)


def test_unsure_leaves_a_state_out_as_skip_does_and_its_row_keeps_the_word():
    lab = manual_lab(lambda p: Verdict.UNSURE if index(p.xla) == 6 else Verdict.BAD if index(p.xla) >= 6
                     else Verdict.GOOD)
    (a,) = bisect(lab, 0, 11 * H)
    assert a.culprit is None and a.range == ["x6", "x7"]
    assert [p.verdict for p in a.probes if p.xla == "x6"] == ["unsure"]
    # unsure away from the step: its neighbours are asked instead, and it is never asked again
    lab = manual_lab(lambda p: Verdict.UNSURE if index(p.xla) == 5 else Verdict.BAD if index(p.xla) >= 8
                     else Verdict.GOOD)
    (a,) = bisect(lab, 0, 11 * H)
    asked = [pair for _, pair, _ in lab.witness.asked]
    assert a.culprit.sha == "x8" and Pair("x5", "j0") in asked and len(asked) == len(set(asked))
    assert [(p.verdict, p.manual) for p in a.probes if p.xla == "x5"] == [("unsure", True)]


def test_a_manual_bisection_resumes_at_the_probe_it_waited_at():
    lab = manual_lab(lambda p: Verdict.BAD if index(p.xla) >= 3 else Verdict.GOOD, waiting=Pair("x9", "j0"))
    (a,) = bisect(lab, 0, 11 * H)
    assert lab.witness.asked[0][1] == Pair("x9", "j0") and lab.witness.asked[0][2].resumed
    assert a.culprit.sha == "x3"


# -- answers as JSON -------------------------------------------------------------------------------

def test_an_answer_reads_back_from_its_json_as_it_was():
    lab = Table(both(), Mode.METRIC, value=level(("xla", 3, 0.9)), repeats=2)
    (a,) = bisect(lab, 2 * H + 1800, 4 * H)
    j = a.to_json()
    assert Answer.from_json(j).to_json() == j
    assert list(j)[:5] == ["kind", "window", "mode", "pairing", "culprit"]
    old = {k: v for k, v in j.items() if k not in ("kind", "pairing", "rounds", "jobs", "end_samples", "metric",
                                                    "run_samples")}
    again = Answer.from_json(old)  # an answer stored by an older hourly
    assert again.culprit == a.culprit and again.kind == "" and again.rounds == 0
    assert again.metric is None and again.run_samples == 0


# -- the person behind a manual bisection: the prompt and hourly mark, on a real store ------------

class Typed:
    """A terminal: the lines typed, one per poll (None: nothing typed yet); ``between`` runs at
    each poll first (another shell giving a verdict with ``hourly mark``)."""

    def __init__(self, lines, between=None):
        self.lines, self.between = list(lines), between
        self.shown, self.said_lines = [], []

    def show(self, asked):
        self.shown.append(asked)

    def poll(self, timeout):
        if self.between is not None:
            self.between()
        return self.lines.pop(0) if self.lines else None

    def said(self, text):
        self.said_lines.append(text)


def _waiting_store(tmp_path):
    from hourly.adapters.store import Store
    store = Store(tmp_path / "work", create=True)
    bid, _, _ = store.bisection("k", {"bench_key": "b", "mode": "printed", "good_time": 0, "bad_time": 1,
                                      "good_xla": "x0", "good_jax": "j0", "bad_xla": "x9", "bad_jax": "j0"})
    return store, bid


def test_a_word_that_is_no_verdict_is_said_and_the_next_one_taken(tmp_path):
    from hourly.bisect.manual import Asked, Person
    store, bid = _waiting_store(tmp_path)
    prompt = Typed(["maybe", "", "u"])
    person = Person(store, prompt, judge("manual", JudgeOptions()))
    asked = Asked("probe", Pair("x4", "j0"), {}, {}, "env")
    assert person.wait(bid, asked) == (Verdict.UNSURE, "typed at the prompt")
    assert prompt.said_lines == ["not a verdict: 'maybe' — type good, bad, skip or unsure",
                                 "not a verdict: '' — type good, bad, skip or unsure"]
    assert store.waiting()["xla"] == "x4"  # waits there until its verdict is recorded
    # with the benchmark's verdict offered, Enter takes it and another word overrides it
    asked.proposal = Verdict.BAD
    assert Person(store, Typed([""]), judge("manual", JudgeOptions())).wait(bid, asked) == \
        (Verdict.BAD, "the benchmark's verdict, confirmed at the prompt")
    assert Person(store, Typed(["g"]), judge("manual", JudgeOptions())).wait(bid, asked) == \
        (Verdict.GOOD, "typed at the prompt, overriding the benchmark's bad")


def test_hourly_mark_answers_the_waiting_person_once(tmp_path):
    """``hourly mark`` from another shell (another connection to the store) answers the probe the
    bisection waits at; the verdict is taken once its row is written, and the probe is no longer
    waited at; a mark with nobody waiting is one line saying so."""
    from hourly.adapters.store import Store
    from hourly.bisect.manual import Asked, Person, mark
    from hourly.bisect.records import Probe
    store, bid = _waiting_store(tmp_path)
    with pytest.raises(UserError, match="no manual bisection waits for a verdict"):
        mark(store, Verdict.GOOD)
    other = Store(tmp_path / "work", create=False)
    given: list[dict] = []
    prompt = Typed([], between=lambda: given or given.append(mark(other, Verdict.BAD)))
    person = Person(store, prompt, judge("manual", JudgeOptions()))
    v, how = person.wait(bid, Asked("probe", Pair("x4", "j0"), {}, {}, "env"))
    assert v is Verdict.BAD and how.startswith("hourly mark: pid ")
    assert given[0]["verdict"] == "bad" and given[0]["alive"] is True and given[0]["xla"] == "x4"
    assert prompt.said_lines == [f"bad: from {how.split(': ', 1)[1]}"]
    person.recorded(bid, Probe("probe", Pair("x4", "j0"), v, how))
    assert store.waiting() is None and store.given_mark(bid, "probe", "x4", "j0") is None
    with pytest.raises(UserError, match="no manual bisection waits"):
        mark(other, Verdict.GOOD)


def test_the_report_of_a_manual_bisection_says_the_verdicts_were_a_persons(tmp_path):
    from hourly.adapters.store import Store
    from hourly.render.report import bisect_sections
    from hourly.report.gather import split_answers

    class Marked(Person):
        def ask(self, lab, bid, pair, role, where, ends):
            return Taken(Evidence(word=Word(self.says(pair), "hourly mark: pid 7 on host")), 1, 0, 0)
    lab = manual_lab(lambda p: Verdict.BAD if index(p.xla) >= 5 else Verdict.GOOD)
    lab.witness = Marked(lab.witness.says)
    (a,) = bisect(lab, 0, 11 * H)
    store, bid = _waiting_store(tmp_path)
    store.finish_bisection(bid, a.to_json())
    md = "\n".join(bisect_sections(split_answers(Store(tmp_path / "work", create=False))))
    assert "by hand (`hourly bisect --manual`)" in md and "hourly mark: pid" in md
    assert "confirmed by re-measuring both ends" not in md
    assert all(p.manual and "hourly mark: pid" in p.reason for p in a.probes if p.role == "probe")


def test_exit_mode_jumps_a_run_of_failed_builds_and_says_what_it_did_not_build():
    """A break that holds 30 of 40 states (issue 35 item 5): the search finds the run's edges
    instead of building each state in it. The culprit outside the run is named as walking names
    it; inside it, the range is walking's, and the answer says how many states it did not build and
    the command that builds them. --walk-skips (``walk_skips`` on the lab) builds every one."""
    from hourly.bisect.answer import JUMPED_NEXT
    n = 40
    run = {Pair(f"x{i}", "j0") for i in range(5, 35)}
    for c in (37, 20, 3):
        got = {}
        for walk_skips in (False, True):
            lab = Table(line(n), Mode.EXIT, rc=lambda p, k, c=c: 3 if index(p.xla) >= c else 0, fails=run)
            lab.walk_skips = walk_skips
            (a,) = bisect(lab, 0, (n - 1) * H, "crash")
            got[walk_skips] = (a, len(lab.measured))
            if walk_skips and c == 20:
                assert run <= set(lab.measured)  # every state of the run built
        (jumped, built_j), (walked, built_w) = got[False], got[True]
        assert (jumped.culprit and jumped.culprit.sha) == (walked.culprit and walked.culprit.sha)
        assert jumped.range == walked.range and jumped.last_good == walked.last_good
        assert built_j < built_w, c
        if c == 20:  # inside the run: the range across it
            assert walked.reason.startswith("30 untestable states between last good and first bad: build failed")
            assert walked.next is None
            assert jumped.range == [f"x{i}" for i in range(5, 36)] and built_j <= 25 < built_w
            k = sum(1 for p in jumped.probes if p.role == "probe" and p.verdict == "skip")
            assert jumped.reason == (f"30 states between last good and first bad: {k} untestable (build failed: boom), "
                                     f"{30 - k} not built — they lie inside that run of untestable states, which the "
                                     "search jumped instead of building every one of them")
            assert jumped.next == JUMPED_NEXT and "--walk-skips" in JUMPED_NEXT
        else:
            assert jumped.culprit.sha == f"x{c}" and jumped.next is None


def test_a_jumped_run_is_built_when_the_bisection_goes_on_walking():
    """``hourly bisect --rerun --walk-skips`` after a jumped run: the states built before are not
    built again, the rest of the run is, and the answer is a range of untestable states only."""
    n = 40
    lab = Table(line(n), Mode.EXIT, rc=lambda p, k: 3 if index(p.xla) >= 20 else 0,
                fails={Pair(f"x{i}", "j0") for i in range(5, 35)})
    (a,) = bisect(lab, 0, (n - 1) * H, "crash")
    first = dict(lab.measured)
    assert a.next is not None and len(first) < 32
    lab.walk_skips = True
    (b,) = bisect(lab, 0, (n - 1) * H, "crash")  # resumes from the stored verdicts, as --rerun reuses them
    assert all(len(lab.measured[p]) == 1 for p in first if p in lab.fails)  # no build twice
    assert lab.fails <= set(lab.measured) and b.next is None and b.range == a.range
    assert b.reason.startswith("30 untestable states between last good and first bad")


# -- named metrics and many samples per run -----------------------------------------------------------

def test_the_answer_and_its_probes_count_runs_and_samples_apart_and_name_the_metric_followed():
    """Each run printed 5 samples of the metric followed (--metric lower_ms): the verdicts are made
    from one value per run, as with one sample per run, and the answer, its probe rows and the
    store's rows count the runs (process starts) and their samples apart."""
    many = Table(both(), Mode.METRIC, value=level(("xla", 3, 0.9)), repeats=2, samples_per_run=5, metric="lower_ms")
    one = Table(both(), Mode.METRIC, value=level(("xla", 3, 0.9)), repeats=2)
    (a,) = bisect(many, 2 * H + 1800, 4 * H)
    (b,) = bisect(one, 2 * H + 1800, 4 * H)
    assert a.culprit == b.culprit and a.culprit is not None and a.runs == b.runs > 0
    assert a.run_samples == 5 * a.runs and b.run_samples == b.runs
    assert a.metric == "lower_ms" and b.metric is None and a.to_json()["metric"] == "lower_ms"
    measured = [p for p in a.probes if p.runs]
    assert measured and all(p.run_samples == 5 * p.runs for p in measured)
    rows = [r for rs in many.rows.values() for r in rs]
    assert sum(r["run_samples"] for r in rows) == a.run_samples and sum(r["runs"] for r in rows) == a.runs


def test_an_exit_status_answer_names_no_metric():
    """An exit-status bisection reads exit codes, the same in every named metric's rows: its answer
    names no metric even when the bisection followed one."""
    lab = Table(line(12), Mode.EXIT, rc=lambda p, k: 3 if index(p.xla) >= 5 else 0, metric="lower_ms")
    (a,) = bisect(lab, 0, 11 * H, "crash")
    assert a.culprit is not None and a.metric is None


# -- paired verdicts: a drifting machine ----------------------------------------------------------

class Drifting:
    """A machine whose speed moves while it measures: every benchmark process advances its clock
    one tick, and every state's value is multiplied by the machine's speed at that tick — a ramp of
    ``drift`` over ``span`` processes, or a wave of that amplitude and ``period`` — with ``noise``
    per process on top."""

    def __init__(self, value, drift: float, span: int = 150, period: int | None = None, noise: float = 0.005,
                 seed: int = 0):
        self.value, self.drift, self.span, self.period, self.noise = value, drift, span, period, noise
        self.rng = np.random.default_rng(seed)
        self.t = 0

    def speed(self, t: int) -> float:
        if self.period:
            return 1 + self.drift * math.sin(2 * math.pi * t / self.period)
        return 1 + self.drift * min(t / self.span, 1.0)

    def __call__(self, pair, k):
        t, self.t = self.t, self.t + 1
        return self.value(pair) * self.speed(t) * (1 + self.noise * self.rng.standard_normal())


DRIFTS = [dict(drift=-0.15), dict(drift=0.15), dict(drift=0.12, period=80), dict(drift=-0.2, span=300)]


# quick: the [wave] case covers the same verdicts on the wave (where 13 of the 15 paired answers say
# the machine drifted, so it alone carries "drifted >= 10"); the ramps are slow. Both cases' bounds
# together are at least as strict as the sweep's over all four shapes (sequential exact: 3 + 11 <= 15).
@pytest.mark.parametrize(("shapes", "min_drifted"), [pytest.param(DRIFTS[2:3], 10, id="wave"),
                                                     pytest.param(DRIFTS[:2] + DRIFTS[3:], 0, id="ramps",
                                                                  marks=pytest.mark.slow)])
def test_paired_verdicts_on_a_drifting_machine_name_the_commit_the_sequential_ones_cannot(shapes, min_drifted):
    """-10 % at every position of a 16-state window while the machine's speed moves 12-20 % (a ramp
    down or up, a wave), 0.5 % noise per process: the paired verdicts (probe, ends and step compared
    in alternating rounds) name every culprit, confirmed, and say the machine drifted; the sequential
    ones (each state's samples taken at its own time) name none of them — only candidates their own
    re-measurement did not confirm, or ranges — and never a wrong commit as a culprit."""
    n = 16
    exact = {True: 0, False: 0}
    drifted = 0
    for shape, c in itertools.product(shapes, range(1, n)):
        for paired in (True, False):
            lab = Table(line(n), Mode.METRIC, value=Drifting(level(("xla", c, 0.9)), **shape, seed=c), paired=paired)
            answers = bisect(lab, 0, (n - 1) * H)
            a = answers[0]
            assert a.culprit is None or a.culprit.sha == f"x{c}", (shape, c, paired)
            exact[paired] += a.culprit is not None
            if paired:
                assert a.confirmed and a.culprit.sha == f"x{c}", (shape, c, a.reason)
                assert a.measured == "interleaved"
                assert [p.verdict for p in a.probes if p.role.startswith("confirm")] == ["good", "bad"]
                drifted += bool(a.drift)
            else:
                assert a.measured.startswith("not paired: drift not cancelled")
    assert exact[True] == len(shapes) * (n - 1)
    assert exact[False] <= len(shapes) * (n - 1) // 4
    assert drifted >= min_drifted  # "the machine drifted by N %": said where a state read 1 % or more (4 SE) apart


def test_paired_rounds_alternate_their_order_and_cost_fewer_processes_on_a_quiet_machine():
    """On a quiet machine (no drift, 1 % noise per process) a 19-state window costs under 100
    processes, every culprit exact; each round runs its states in turn, the next round reversed."""
    n = 19
    runs = []
    for c in range(1, n):
        lab = Table(line(n), Mode.METRIC, value=Drifting(level(("xla", c, 1 / 1.09)), drift=0.0, noise=0.01, seed=c))
        order: list = []
        measure = lab.measure_many
        lab.measure_many = lambda reqs, measure=measure, order=order: (order.extend(reqs), measure(reqs))[1]
        answers = bisect(lab, 0, (n - 1) * H)
        assert answers[0].culprit.sha == f"x{c}" and answers[0].confirmed, c
        runs.append(sum(a.runs for a in answers))
        assert all(count == 1 for _, count in order)  # one process a request: a round's states in turn
        ends = [p for p, _ in order[:6]]
        g, b = Pair("x0", "j0"), Pair(f"x{n - 1}", "j0")
        assert ends == [g, b, b, g, g, b]  # the ends' three rounds: forward, reversed, forward
    assert statistics.mean(runs) < 100 and max(runs) < 200


def test_paired_rounds_fall_back_to_one_state_after_another_and_say_so():
    """A lab that cannot run its states alternately (an in-place build): each state's rounds measured
    at once, the culprit still named, and the answer says the drift was not cancelled."""
    lab = Table(line(10), Mode.METRIC, value=level(("xla", 6, 0.9)), interleaves=False)
    (a,) = bisect(lab, 0, 9 * H)
    assert a.culprit.sha == "x6" and a.confirmed
    assert a.measured == "measured one after another: drift not cancelled (the states cannot be run alternately here)"
    from hourly.render.bisect import describe
    text = "\n".join(str(x) for x in describe(a))
    assert "measured one after another: drift not cancelled" in text


def test_the_ends_of_a_drifting_window_are_compared_in_rounds_and_the_scans_samples_are_context():
    """The scan measured the ends long before, when the machine ran 15 % faster: those samples are
    not evidence (a sequential check would compare the bad end now with the good end then), the
    ends are compared afresh in rounds, and the answer says how much the machine drifted."""
    machine = Drifting(level(("xla", 5, 0.9)), drift=-0.15, span=1, noise=0.002)
    lab = Table(line(10), Mode.METRIC, value=machine)
    machine.t = -1  # the scan's: before the drift
    lab.measure_many([(Pair("x0", "j0"), 3)])
    (a,) = bisect(lab, 0, 9 * H)
    assert a.culprit.sha == "x5" and a.confirmed
    assert a.drift and a.drift[0].startswith("the machine drifted by -1")
    assert 13 < -float(a.drift[0].split("by ")[1].split(" %")[0]) < 17  # the ramp's 15 %
    ends = [p for p in lab.rows[1][:2]]
    assert all("in alternation with the" in r["reason"] for r in ends)


# -- crash windows: jumped, and their edges found by exit status ------------------------------------

#: every crash window (first, last crashing state) of a 12-state window, split in two: the quick run
#: takes every third (windows at the start, the middle and the end, of every length from 1 to 10),
#: the slow set the rest, so that CI still drives every window once
CRASH_WINDOWS = [(f, last) for f in range(1, 11) for last in range(f, 11)]


# quick: the [third] case covers the same search on every third window (19 of 55, each with the
# culprit at every position)
@pytest.mark.parametrize("windows", [pytest.param(CRASH_WINDOWS[::3], id="third"),
                                     pytest.param([w for w in CRASH_WINDOWS if w not in CRASH_WINDOWS[::3]],
                                                  id="rest", marks=pytest.mark.slow)])
def test_a_crash_window_costs_at_most_two_logarithmic_searches(windows):
    """Every crash window of every length at every place of a 12-state window (the two cases
    together), the culprit at every position: outside the window (and not its first state after it)
    the culprit is named exactly; inside it, or the first state after it, the answer is the range
    holding the culprit, said to lie in the crash window; the probes that crashed plus the
    exit-status probes of its edges never exceed two logarithmic searches (2·⌈log2 n⌉ + 2: the two
    crashes in a row and two searches)."""
    n = 12
    bound = 2 * math.ceil(math.log2(n)) + 2
    assert len(CRASH_WINDOWS) == (n - 2) * (n - 1) // 2 and all(last <= n - 2 for _, last in CRASH_WINDOWS)
    for f, last in windows:
        for c in range(1, n):
            lab = Table(line(n), Mode.METRIC, value=level(("xla", c, 0.9)),
                        rc=lambda p, k, f=f, last=last: 1 if f <= index(p.xla) <= last else 0)
            (a,) = bisect(lab, 0, (n - 1) * H)
            rows = lab.rows[1]
            cost = sum(1 for r in rows if r["role"] == "edge" or (r["role"] == "probe" and r["verdict"] == "skip"))
            assert cost <= bound, (f, last, c, cost)
            assert not any(r["role"] == "probe" and Pair(r["xla"], r["jax"]) in
                           {Pair(f"x{i}", "j0") for i in (0, n - 1)} for r in rows)
            if f <= c <= last + 1:
                assert a.culprit is None and f"x{c}" in a.range, (f, last, c)
                (w,) = [w for w in a.crash_windows if w.get("holds_change")]
                assert (w["first"]["xla"], w["last"]["xla"]) == (f"x{f}", f"x{last}"), (f, last, c, w)
                assert a.reason.startswith(f"the change lies inside the crash window xla@x{f} .. xla@x{last}")
                assert w["cherry_pick"] == f"--cherry-pick xla@x{last + 1}"
                assert f"{w['cherry_pick']} (the commit that ends the window) would let its states run" in a.reason
            else:
                assert a.culprit is not None and a.culprit.sha == f"x{c}", (f, last, c, a.reason)


def test_a_crashing_probe_is_not_followed_by_its_neighbour():
    """A long crash window in the middle of a 40-state window: the probe after the first crash jumps
    well away from it (not a neighbour), and two crashes in a row find the window's edges by exit
    status: the window's 16 states are not walked one by one."""
    n, f, last = 40, 12, 27
    lab = Table(line(n), Mode.METRIC, value=level(("xla", 20, 0.9)),
                rc=lambda p, k: 1 if f <= index(p.xla) <= last else 0)
    lab.crash_lines = {Pair(f"x{f}", "j0"): "RuntimeError: valid_dtypes is not set"}
    (a,) = bisect(lab, 0, (n - 1) * H)
    probes = [index(r["xla"]) for r in lab.rows[1] if r["role"] in ("probe", "edge")]
    crashed = [index(r["xla"]) for r in lab.rows[1] if r["role"] in ("probe", "edge") and r["verdict"] == "skip"]
    first = probes.index(crashed[0])
    assert abs(probes[first + 1] - probes[first]) > 2  # jumped, not the neighbour
    assert len(crashed) <= 2 * math.ceil(math.log2(n)) and len(crashed) < last - f + 1
    (w,) = a.crash_windows
    assert w["holds_change"] and w["last_line"] == "RuntimeError: valid_dtypes is not set"
    assert "RuntimeError: valid_dtypes is not set" in a.reason and "--cherry-pick xla@x28" in a.reason
    from hourly.render.bisect import describe
    text = "\n".join(str(x) for x in describe(a))
    assert "crash window xla@x12 .. xla@x27" in text


def test_two_crash_windows_with_a_runnable_stretch_between_are_found_apart():
    """The shape of the real 2026 history (docs/real-history.md): a window, a runnable stretch
    holding the change, a second window — the change is named exactly (its state runs), and
    neither window is taken for one spanning the stretch."""
    n = 51

    def rc(p, k):
        i = index(p.xla)
        return 1 if 1 <= i <= 16 or 25 <= i <= 42 else 0
    for c in (17, 20, 24, 45):
        lab = Table(line(n), Mode.METRIC, value=level(("xla", c, 0.9)), rc=rc)
        (a,) = bisect(lab, 0, (n - 1) * H)
        if c == 17:  # the first state after window 1: the range of window 1 and it
            assert a.culprit is None and a.range == [f"x{i}" for i in range(1, 18)]
            (w,) = [w for w in a.crash_windows if w.get("holds_change")]
            assert (w["first"]["xla"], w["last"]["xla"]) == ("x1", "x16")
        else:
            assert a.culprit is not None and a.culprit.sha == f"x{c}", (c, a.reason)
        for w in a.crash_windows or []:
            assert not (w["first_index"] <= 20 <= w["last_index"]), w  # the runnable stretch is no window



def test_a_number_hourly_will_not_guess_at_is_still_printed_in_printed_mode():
    """issue 44: a run that prints `MLUPS: 1,000` has no value (1000 or 1.000), but it printed the
    metric: printed mode calls it good, never "metric lost" (a culprit where the value passed 1000)."""
    printed = judge("printed")
    unread = Run(0, "no_metric", unread=True)
    assert Run.of({"returncode": 0, "status": "no_metric", "unread": "captured '1', followed by ',000'"}) == unread
    assert printed.runs([Run(0, "ok"), unread]).verdict is Verdict.GOOD
    assert printed.runs([Run(0, "ok"), Run(0, "no_metric")]).verdict is Verdict.BAD
