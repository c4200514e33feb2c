"""A bisection the person answers (``hourly bisect --manual``), as ``git bisect good|bad`` and
mozregression's "good or bad?" are.

A manual bisection is a :class:`~hourly.bisect.search.Bisector` like any other, given the manual
judge (:class:`~hourly.analysis.judges.manual.ManualJudge`: the person's word is the verdict) and a
:class:`Person` who gives the words, as mozregression swaps its test runner for a manual one: every
probe is built and installed as usual (the same :class:`~hourly.measure.measurer.Measurer`, build
cache, tree locks and ``--python`` lock), the trees are left at the probe, and then the person is
asked — at the prompt (:class:`Prompt`, the command's terminal) or from another shell with
``hourly mark`` (:func:`mark`, a row of ``manual_marks`` in the store that the waiting bisection
polls). With ``--bench-cmd`` the benchmark runs first and its verdict (the window's own judge's) is
offered; the person confirms or overrides it.

The search is the verdict-by-verdict one of the exit-status modes (one state at a time, git
bisect's): ``good`` and ``bad`` place the state, ``skip`` leaves it out as untestable, ``unsure``
leaves it out as undecided (its neighbours are tried instead, and an answer that stops at it says
so). Every verdict is a ``bisect_probes`` row committed as it is given, and the probe waited at is
the store's ``manual_waiting`` row: after Ctrl-C, a lost terminal or ``kill -9`` the same command
resumes at that probe (its build comes from the cache), with a verdict ``hourly mark`` gave
meanwhile taken at once.

The ends are taken as given (``--good``/``--bad``, or the stored scan's window and its
measurements), as git bisect takes them; the answer says so, and which verdicts were the person's.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from hourly.adapters.locks import python_prefix
from hourly.adapters.store import Store
from hourly.adapters.venvs import overlay_of
from hourly.analysis.bisection import COST_BUILD, COST_JAX_BUILD
from hourly.analysis.judges import Evidence, JudgeOptions, Verdict, Word
from hourly.analysis.judges.manual import MANUAL, VERDICT_WORDS, ManualJudge
from hourly.analysis.judges.metric import MetricJudge
from hourly.answers import Answer
from hourly.bisect.answer import commit, iso
from hourly.bisect.events import BisectHandler
from hourly.bisect.records import BisectRequest, Probe, Taken, Where
from hourly.bisect.search import Bisector, store_plan
from hourly.bisect.windows import default_mode, flags_window
from hourly.errors import UserError
from hourly.execute.executors import Executor
from hourly.measure.build import BUILD_ATTEMPTS, BuildInterrupted, BuildStatus
from hourly.measure.settings import Settings
from hourly.model import Mode, Pair, Status
from hourly.text.plurals import plural

__all__ = ["MANUAL", "NO_BENCH", "VERDICT_WORDS", "Asked", "Person", "Prompt", "check_request", "is_manual", "mark",
           "parse_verdict", "run_manual"]

#: the benchmark command that names a manual bisection's key when there is no benchmark (never run)
NO_BENCH = "hourly-manual-verdicts-no-benchmark"
#: seconds between looks at the store for a verdict from ``hourly mark``
POLL_S = 0.5

parse_verdict = ManualJudge.parse
is_manual = ManualJudge.given


@dataclass
class Asked:
    """A state waiting for the person's verdict: what the prompt shows."""

    role: str            # probe (or blame: a mixed pair)
    pair: Pair
    commits: dict[str, dict]  # repo -> commit record (sha, subject verbatim, author, link)
    trees: dict[str, str]     # repo -> the working tree now checked out at this state
    environment: str          # how to use the installed build
    index: int | None = None  # the state's place in the window (0 = good end)
    states: int = 0
    last_good: int | None = None
    first_bad: int | None = None
    probes_left: int = 0      # halvings left, this one included (about)
    builds_left: int = 0      # states between the bounds whose build is not cached
    build: str = ""           # what making it the installed build took
    measured: list[str] = field(default_factory=list)  # --bench-cmd: value, exit codes, output tail
    proposal: Verdict | None = None  # --bench-cmd: the benchmark's verdict, offered
    workdir: str = ""
    resumed: bool = False


class Prompt(Protocol):
    """Where the person is asked (the command's terminal: hourly.commands.prompt.TerminalPrompt)."""

    def show(self, asked: Asked) -> None:
        """Print the state and ask for a verdict."""

    def poll(self, timeout: float) -> str | None:
        """A line the person typed within ``timeout`` seconds, or None."""

    def said(self, text: str) -> None:
        """One line of feedback (an unknown word, a verdict from ``hourly mark``)."""


def environment_line(python: str) -> str:
    """How a person uses the build installed into ``python``'s environment."""
    overlay = overlay_of(python)
    if overlay is not None:  # --only jax: the state's jax in the workdir's overlay over --python
        return (f"PYTHONPATH={overlay.site}${{PYTHONPATH:+:$PYTHONPATH}} {python}   (the state's jax in an "
                f"overlay over {overlay.base_python}; its packages first on PYTHONPATH, so no other jax shadows it)")
    prefix = Path(python_prefix(python))
    activate = prefix / "bin" / "activate"
    if activate.exists():
        return f"source {activate}   (or run {python})"
    return f"{python} (installed into {prefix}; nothing to activate)"


class Person:
    """The person who gives a manual bisection's verdicts (its witness, hourly.bisect.drive.Witness):
    the state is built and installed (with ``judge.bench``, its benchmark run first and the window's
    own verdict offered), the trees left at it, and the person asked at ``prompt`` or with
    ``hourly mark``; the word comes back as evidence for the manual judge."""

    def __init__(self, store: Store, prompt: Prompt, judge: ManualJudge):
        self.store, self.prompt, self.judge = store, prompt, judge
        self._mark_id: int | None = None  # the hourly mark verdict the probe being recorded came from
        self._resumed = False  # the search resumed at the probe asked last

    def resume_at(self, bid: int) -> Pair | None:
        w = self.store.waiting()
        if w and w["bisection"] == bid and w["role"] == "probe":
            return Pair(w["xla"], w["jax"])
        return None

    def recorded(self, bid: int, p: Probe) -> None:
        mark_id, self._mark_id = self._mark_id, None
        if mark_id is not None:
            self.store.took_mark(mark_id)
        w = self.store.waiting()
        if w and w["bisection"] == bid and w["role"] == p.role and Pair(w["xla"], w["jax"]) == p.pair:
            self.store.clear_waiting()  # judged: the next run does not resume here

    def ask(self, lab: Bisector, bid: int, pair: Pair, role: str, where: Where | None,
            ends: tuple[Pair, Pair]) -> Taken:
        builder = lab.measurer().builder
        b0, l0, j0 = builder.builds_run, builder.jaxlib_builds, builder.jax_builds
        measured: list[str] = []
        proposal = None
        ev, runs, sampled = Evidence(), 0, 0
        if self.judge.bench:
            t = lab.measure_many([(pair, lab.repeats)])[0]
            ev, builds, runs, sampled = t.evidence, t.builds, t.runs, t.samples
            if ev.status in (Status.BUILD_FAILED.value, Status.UNTESTABLE.value):
                return t
            proposal, measured = self.proposal(lab, pair, ev, ends)
            build_text = plural(builds, "build") if builds else "from the cache"
        else:
            res = builder.prepare(pair)
            lab.split.add(builder.jaxlib_builds - l0, builder.jax_builds - j0)
            builds = builder.builds_run - b0
            if res.status is BuildStatus.INTERRUPTED:
                raise BuildInterrupted(
                    f"the build of {pair.short()} was interrupted {BUILD_ATTEMPTS} times (log {res.log_path}); "
                    "nothing was recorded for it", "free memory or raise --build-timeout, then run the same command again")
            if res.status is BuildStatus.FAILED:
                return Taken(Evidence(Status.BUILD_FAILED.value, detail=f"build failed (log {res.log_path})"), builds, 0, 0)
            lab.measurer().installed = pair
            build_text = {BuildStatus.CACHED: "installed from the build cache",
                          BuildStatus.IN_PLACE: "the trees are installed in place"}.get(res.status, "built and installed now")
        if where is not None:
            self._resumed = where.resumed
        asked = self.asked(lab, role, pair, build_text, measured, proposal, where)
        verdict, how = self.wait(bid, asked)
        return Taken(replace(ev, word=Word(verdict, how, proposal)), builds, runs, sampled)

    def proposal(self, lab: Bisector, pair: Pair, ev: Evidence, ends: tuple[Pair, Pair]) -> tuple[Verdict | None, list[str]]:
        """The benchmark's verdict on a state, by the window's own mode, and the lines that show it."""
        m = next(x for x in lab.stored_measurements(pair) if x.id == ev.id)
        rcs = ev.counted
        lines = [f"benchmark: {m.status}" + (f", value {m.value:.6g}" if m.value is not None else "")
                 + f", exit codes {rcs}"]
        logs = [r.get("log") for r in m.runs if r.get("log")]
        if logs:
            lines.append(f"  output of the last run ({logs[-1]}):")
            try:
                tail = Path(str(logs[-1])).read_text(errors="replace").splitlines()[-8:]
            except OSError:
                tail = ["(its log cannot be read)"]
            lines += [f"    | {ln}" for ln in tail]
        good, bad = ([x for e in lab.stored(p) if e.ok and e.id != ev.id for x in e.samples] for p in ends)
        verdict, why = self.judge.propose(ev, good, bad)
        if self.judge.window_mode == MetricJudge.mode:
            if not ev.samples or not good or not bad:
                lines.append(f"  no verdict offered: {why}")
            else:
                lines.append(f"  good end {_median(good):.6g} ({plural(len(good), 'sample')}), "
                             f"bad end {_median(bad):.6g} ({plural(len(bad), 'sample')}): {why}")
        return verdict, lines

    def asked(self, lab: Bisector, role: str, pair: Pair, build: str, measured: list[str], proposal: Verdict | None,
              where: Where | None) -> Asked:
        commits = {}
        for name in lab.repos:
            sha = getattr(pair, name)
            try:
                commits[name] = commit(lab.repos, name, sha).to_json()
            except Exception:  # a pinned jaxlib's commit may not be in the tree  # noqa: BLE001
                commits[name] = {"sha": sha, "subject": "(not in the tree)"}
        if "xla" not in commits:
            commits["xla"] = {"sha": pair.xla, "subject": "(pinned: the installed jaxlib)"}
        asked = Asked(role, pair, commits, {n: str(r.path) for n, r in lab.repos.items()},
                      environment_line(lab.s.run_python()), build=build, measured=measured, proposal=proposal,
                      workdir=str(self.store.workdir), resumed=self._resumed)
        if where is not None and role == "probe":
            i, k = where.index, where.hi - where.lo - 1
            asked.index, asked.states, asked.last_good, asked.first_bad = i, where.states, where.lo, where.hi
            asked.probes_left = max(1, math.ceil(math.log2(k + 1)))
            asked.builds_left = sum(1 for j, c in where.costs.items() if j != i and c in (COST_BUILD, COST_JAX_BUILD))
        return asked

    def wait(self, bid: int, asked: Asked) -> tuple[Verdict, str]:
        """The person's verdict: typed at the prompt, or given with ``hourly mark`` (polled)."""
        pair = asked.pair
        self.store.set_waiting(bid, asked.role, pair.xla, pair.jax)
        self.prompt.show(asked)
        while True:
            got = self.store.given_mark(bid, asked.role, pair.xla, pair.jax)
            if got:
                self._mark_id = got["id"]  # taken once its probe row is written (recorded)
                self.prompt.said(f"{got['verdict']}: from {got['source']}")
                return Verdict(got["verdict"]), f"hourly mark: {got['source']}"
            line = self.prompt.poll(POLL_S)
            if line is None:
                continue
            reply = self.judge.reply(line, asked.proposal)
            if reply is None:
                self.prompt.said(f"not a verdict: {line.strip()!r} — type good, bad, skip or unsure"
                                 + (f" (or press Enter for {asked.proposal.value})" if asked.proposal else ""))
                continue
            return reply


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def check_request(req: BisectRequest, executor: Executor | None) -> None:
    """What a manual bisection refuses: the person answers one state at a time, here."""
    if req.find_fix:
        raise UserError("--manual with --find-fix: with manual verdicts the words are yours (git bisect's old/new)",
                        "leave out --find-fix: pass --good at the old state and --bad at the changed one, and "
                        "answer `good` for a state still as it was and `bad` for one that changed")
    if req.flaky:
        raise UserError("--manual with --flaky: the verdicts are yours, not failure rates",
                        "leave out --flaky (answer `unsure` for a state you cannot decide)")
    if executor is not None and not executor.capabilities.here:
        raise UserError("--manual builds each probe here, one at a time, and waits for you",
                        "leave out --executor and --workers")


def _bisector(s: Settings, store: Store, mode: Mode, req: BisectRequest, handler: BisectHandler, prompt: Prompt,
              run_bench: bool, executor: Executor | None) -> Bisector:
    """The Bisector of one mode's windows, its verdicts the person's."""
    judge = ManualJudge(JudgeOptions(window_mode=mode.value, bench=run_bench))
    return Bisector(s, store, mode, req, handler, executor, judge=judge, witness=Person(store, prompt, judge))


def run_manual(s: Settings, store: Store, req: BisectRequest, handler: BisectHandler, prompt: Prompt,
               run_bench: bool = False, executor: Executor | None = None) -> list[Answer]:
    """``hourly bisect --manual``: the window ``req.good``..``req.bad``, or every window of the
    stored scan (regressions, crash windows and metrics that stop printing, each in its mode), each
    answered by the person at ``prompt`` or with ``hourly mark``."""
    from hourly.adapters.locks import store_lock
    check_request(req, executor)
    with store_lock(store.workdir):
        if req.good is not None:
            assert req.bad is not None
            mode = req.mode or default_mode(store, s)
            with _bisector(s, store, mode, req, handler, prompt, run_bench, executor) as b:
                return b.bisect(flags_window(b, req.good, req.bad, s.tz, False, mode, find_fix_hint=False))
        plan = store_plan(store, s, req.mode)
        if not any(ws for _, ws in plan):
            handler.nothing_to_bisect()
        answers: list[Answer] = []
        for m, windows in plan:
            if windows:
                with _bisector(s, store, m, req, handler, prompt, run_bench, executor) as b:
                    answers += [a for w in windows for a in b.bisect(w)]
        return answers


# -- hourly mark -------------------------------------------------------------------------------------

def mark(store: Store, verdict: Verdict) -> dict:
    """A verdict for the probe a manual bisection of ``store`` waits at (or waited at when it was
    stopped: the same command takes it when it resumes). Returns what was marked and whether the
    bisection that waits there is alive."""
    source = f"pid {os.getpid()} on {_host()}"
    w, pending = store.mark_waiting(verdict.value, source)
    if w is None:
        raise UserError(f"no manual bisection waits for a verdict in {store.workdir}",
                        "start one with `hourly bisect --manual --good ... --bad ...` (or over the stored scan's windows)")
    state = f"xla {w['xla'][:12]} jax {w['jax'][:12]}"
    if pending is not None:
        raise UserError(f"the probe {state} has a verdict waiting to be taken already ({pending['verdict']}, "
                        f"from {pending['source']})",
                        "run the same `hourly bisect --manual` command again: it takes that verdict and asks the next probe")
    return {"bisection": w["bisection"], "role": w["role"], "xla": w["xla"], "jax": w["jax"],
            "verdict": verdict.value, "waiting_pid": w["pid"], "alive": _alive(w), "since": iso(int(w["since"]))}


def _host() -> str:
    import socket
    return socket.gethostname()


def _alive(w: dict) -> bool | None:
    """Whether the bisection that waits is running (None: on another host, unknown)."""
    if w.get("host") != _host():
        return None
    try:
        os.kill(int(w["pid"]), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
