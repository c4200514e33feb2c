"""A bisection the person answers (``hourly bisect --manual``), as ``git bisect good|bad`` and
mozregression's "good or bad?" are.

:class:`ManualBisector` is the :class:`~hourly.bisect.search.Bisector` with the verdict taken from
a person instead of a benchmark: every probe is built and installed as usual (the same
:class:`~hourly.measure.measurer.Measurer`, build cache, tree locks and ``--python`` lock), the
trees are left at the probe, and then it waits for a verdict — typed at the prompt
(:class:`Prompt`, the command's terminal) or given from another shell with ``hourly mark``
(:func:`mark`, a row of ``manual_marks`` in the store that the waiting bisection polls). With
``--bench-cmd`` the benchmark runs first and its verdict is offered; the person confirms or
overrides it.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from hourly.adapters.locks import python_prefix
from hourly.adapters.store import Store
from hourly.adapters.venvs import overlay_of
from hourly.analysis.bisection import (
    COST_BUILD,
    COST_JAX_BUILD,
    Bounds,
    State,
    Verdict,
    bounds,
    classify,
    exit_verdict,
    next_probe,
)
from hourly.bisect.answer import commit, iso
from hourly.bisect.events import BisectHandler
from hourly.bisect.records import BisectRequest, Probe, Window
from hourly.bisect.search import (
    MIN_END_SAMPLES,
    Bisector,
    default_mode,
    parse_ends,
    printed_verdict,
    windows_from_store,
)
from hourly.errors import UserError
from hourly.execute.executors import Executor
from hourly.measure.build import BUILD_ATTEMPTS, BuildInterrupted, BuildStatus
from hourly.measure.settings import Settings
from hourly.model import Mode, Pair, Status
from hourly.plurals import plural

#: what a person may answer, and the words that stand for them
VERDICT_WORDS = {"good": Verdict.GOOD, "g": Verdict.GOOD, "bad": Verdict.BAD, "b": Verdict.BAD,
                 "skip": Verdict.SKIP, "s": Verdict.SKIP, "unsure": Verdict.UNSURE, "u": Verdict.UNSURE}
#: the start of every manual verdict's reason: how answers, reports and --log tell them apart
MANUAL = "manual verdict"
#: the benchmark command that names a manual bisection's key when there is no benchmark (never run)
NO_BENCH = "hourly-manual-verdicts-no-benchmark"
#: seconds between looks at the store for a verdict from ``hourly mark``
POLL_S = 0.5


def parse_verdict(text: str) -> Verdict | None:
    return VERDICT_WORDS.get(text.strip().lower())


def is_manual(row: dict) -> bool:
    """A probe row whose verdict a person gave."""
    return str(row.get("reason") or "").startswith(MANUAL)


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


class ManualBisector(Bisector):
    """A :class:`Bisector` whose verdicts a person gives (see the module's text)."""

    def __init__(self, s: Settings, store: Store, mode: Mode, req: BisectRequest, handler: BisectHandler,
                 prompt: Prompt, run_bench: bool = False, executor: Executor | None = None):
        super().__init__(s, store, mode, req, handler, executor)
        #: the mode the window came from (metric: a regression; exit: a crash; printed)
        self.window_mode = mode
        # the verdict-by-verdict search of bisect_one's non-metric branch; of those modes, printed is
        # the one with no exit-status extras (failure rates) in the answer
        self.mode = Mode.PRINTED
        self.prompt = prompt
        self.run_bench = run_bench
        #: the probe asked about now: its index, the states, the bounds so far, each state's cost
        self._where: tuple[int, list[State], Bounds, dict[int, float]] | None = None
        self._window: Window | None = None
        self._mark_id: int | None = None  # the hourly mark verdict the probe being recorded came from

    def identity_extra(self) -> dict:
        return {"manual": True, "window_mode": self.window_mode.value, "bench": self.run_bench}

    # -- the ends: taken as given ----------------------------------------------------------------
    def _exit_ends(self, bid: int, stored: dict, good_pair: Pair, bad_pair: Pair) -> None:
        w = self._window
        where = "--good/--bad" if w is None or w.origin == "flags" else f"the stored scan's window ({w.origin})"
        if self.run_bench and self.window_mode is Mode.METRIC:
            # the benchmark's verdict on each probe is offered against the ends' samples: measured
            # (or read from the store) as a measured bisection's are; the ends are still not judged
            want = max(self.s.repeats, MIN_END_SAMPLES)
            for pair, v in ((good_pair, Verdict.GOOD), (bad_pair, Verdict.BAD)):
                self._end_samples(bid, pair, v, want)
            return
        for pair, v in ((good_pair, Verdict.GOOD), (bad_pair, Verdict.BAD)):
            if ("end", pair) not in stored:
                self._record(bid, Probe("end", pair, v, f"taken as given: the {v.value} end of {where}, not built"))

    def bisect_one(self, w: Window) -> dict:
        self._window = w
        return super().bisect_one(w)

    # -- the search: one state at a time, waiting for each verdict ---------------------------------
    def _exit_search(self, bid: int, states: list[State], rows: list[dict]) -> tuple[Bounds, dict[Pair, Verdict]]:
        """The person's search: one state at a time over the window's own states (no mixed states:
        a person judges the states of the timeline), the stored verdicts of ``rows`` reused; returns
        the bounds and every verdict given, which the blame step reuses."""
        index = {st.pair: i for i, st in enumerate(states)}
        verdicts = {index[Pair(r["xla"], r["jax"])]: Verdict(r["verdict"]) for r in rows
                    if r["role"] == "probe" and Pair(r["xla"], r["jax"]) in index}
        # unsure leaves a state out of the search as skip does (its row keeps the word)
        search: dict[int, Verdict] = {i: Verdict.SKIP if v is Verdict.UNSURE else v for i, v in verdicts.items()}
        waited = self.store.waiting()
        first = None
        if waited and waited["bisection"] == bid and waited["role"] == "probe":
            i = index.get(Pair(waited["xla"], waited["jax"]))
            b = bounds(len(states), search)
            if i is not None and i not in search and b.lo < i < b.hi:
                first = i  # resumed: the probe it was waiting at, whatever the costs say now
        while True:
            b = bounds(len(states), search)
            costs = {i: self.cost(states[i].pair) for i in range(b.lo + 1, b.hi) if i not in search}
            nxt = first if first is not None else next_probe(len(states), search, costs)
            if nxt is None:
                break
            self._where = (nxt, states, b, costs)
            self._resumed = first is not None
            first = None
            v = self._record(bid, self.evaluate(states[nxt].pair, "probe", None)).verdict
            search[nxt] = Verdict.SKIP if v is Verdict.UNSURE else v
        self._where = None
        return bounds(len(states), search), {states[i].pair: v for i, v in search.items()}

    def _confirmation(self, bid: int, stored: dict, last_good: Pair, first_bad: Pair, refs, search, step) -> bool:
        """No re-measurement: the person's verdicts are the evidence (the answer says they were theirs)."""
        return True

    def evaluate(self, pair: Pair, role: str, refs, fresh: bool = False) -> Probe:
        failed = self._known_failed(pair)
        if failed:
            return Probe(role, pair, Verdict.SKIP, failed)
        builder = self.measurer().builder
        b0, l0, j0 = builder.builds_run, builder.jaxlib_builds, builder.jax_builds
        measured: list[str] = []
        proposal = None
        samples: list[float] = []
        rcs: list = []
        runs = 0
        if self.run_bench:
            m, builds, runs = self._measure_one(pair, self.s.repeats)
            if m.status in (Status.BUILD_FAILED.value, Status.UNTESTABLE.value):
                return Probe(role, pair, Verdict.SKIP, m.detail or m.status, builds=builds, runs=runs)
            samples = list(m.samples)
            rcs = [r.get("returncode") for r in m.runs if not r.get("warmup")]
            proposal, measured = self._proposal(m, samples, rcs)
            build_text = plural(builds, "build") if builds else "from the cache"
        else:
            res = builder.prepare(pair)
            self.split.add(builder.jaxlib_builds - l0, builder.jax_builds - j0)
            builds = builder.builds_run - b0
            if res.status is BuildStatus.INTERRUPTED:
                raise BuildInterrupted(
                    f"the build of {pair.short()} was interrupted {BUILD_ATTEMPTS} times (log {res.log_path}); "
                    "nothing was recorded for it", "free memory or raise --build-timeout, then run the same command again")
            if res.status is BuildStatus.FAILED:
                return Probe(role, pair, Verdict.SKIP, f"build failed (log {res.log_path})", builds=builds)
            self.measurer().installed = pair
            build_text = {BuildStatus.CACHED: "installed from the build cache",
                          BuildStatus.IN_PLACE: "the trees are installed in place"}.get(res.status, "built and installed now")
        asked = self._asked(role, pair, build_text, measured, proposal)
        verdict, how = self._wait(asked)
        said = f"{MANUAL} ({how})"
        if proposal is not None:
            said += f"; the benchmark said {proposal.value}"
        return Probe(role, pair, verdict, said, samples, rcs, builds=builds, runs=runs)

    def _proposal(self, m, samples: list[float], rcs: list) -> tuple[Verdict | None, list[str]]:
        """The benchmark's verdict on a state, by the window's own mode, and the lines that show it."""
        lines = [f"benchmark: {m.status}" + (f", value {m.value:.6g}" if m.value is not None else "")
                 + f", exit codes {rcs}"]
        logs = [r.get("log") for r in m.runs if r.get("log")]
        if logs:
            lines.append(f"  output of the last run ({logs[-1]}):")
            try:
                tail = Path(logs[-1]).read_text(errors="replace").splitlines()[-8:]
            except OSError:
                tail = ["(its log cannot be read)"]
            lines += [f"    | {ln}" for ln in tail]
        if self.window_mode is Mode.EXIT:
            return exit_verdict(rcs), lines
        if self.window_mode is Mode.PRINTED:
            return printed_verdict([r.get("status") for r in m.runs if not r.get("warmup")]), lines
        assert self._ends is not None  # set by bisect_one before any probe
        good, bad = ([x for mm in self._stored(p) if mm.status == Status.OK.value for x in mm.samples
                      if mm.id != m.id] for p in self._ends)
        if not samples or not good or not bad:
            lines.append("  no verdict offered: " + ("the state printed no metric" if not samples else
                                                     "an end has no stored measurement to compare with"))
            return None, lines
        c = classify(samples, good, bad)
        lines.append(f"  good end {_median(good):.6g} ({plural(len(good), 'sample')}), "
                     f"bad end {_median(bad):.6g} ({plural(len(bad), 'sample')}): {c.reason}")
        return (c.verdict if c.verdict is not Verdict.UNSURE else None), lines

    def _asked(self, role: str, pair: Pair, build: str, measured: list[str], proposal: Verdict | None) -> Asked:
        commits = {}
        for name in self.repos:
            sha = getattr(pair, name)
            try:
                commits[name] = commit(self.repos, name, sha)
            except Exception:  # a pinned jaxlib's commit may not be in the tree  # noqa: BLE001
                commits[name] = {"sha": sha, "subject": "(not in the tree)"}
        if "xla" not in commits:
            commits["xla"] = {"sha": pair.xla, "subject": "(pinned: the installed jaxlib)"}
        asked = Asked(role, pair, commits, {n: str(r.path) for n, r in self.repos.items()},
                      environment_line(self.s.run_python()), build=build, measured=measured, proposal=proposal,
                      workdir=str(self.store.workdir), resumed=getattr(self, "_resumed", False))
        if self._where is not None and role == "probe":
            i, states, b, costs = self._where
            k = b.hi - b.lo - 1
            asked.index, asked.states, asked.last_good, asked.first_bad = i, len(states), b.lo, b.hi
            asked.probes_left = max(1, math.ceil(math.log2(k + 1)))
            asked.builds_left = sum(1 for j, c in costs.items() if j != i and c in (COST_BUILD, COST_JAX_BUILD))
        return asked

    def _wait(self, asked: Asked) -> tuple[Verdict, str]:
        """The person's verdict: typed at the prompt, or given with ``hourly mark`` (polled)."""
        bid = self._bisection_id()
        pair = asked.pair
        self.store.set_waiting(bid, asked.role, pair.xla, pair.jax)
        self.prompt.show(asked)
        while True:
            got = self.store.given_mark(bid, asked.role, pair.xla, pair.jax)
            if got:
                self._mark_id = got["id"]  # taken once its probe row is written (_record)
                self.prompt.said(f"{got['verdict']}: from {got['source']}")
                return Verdict(got["verdict"]), f"hourly mark: {got['source']}"
            line = self.prompt.poll(POLL_S)
            if line is None:
                continue
            if not line.strip() and asked.proposal is not None:
                return asked.proposal, "the benchmark's verdict, confirmed at the prompt"
            v = parse_verdict(line)
            if v is None:
                self.prompt.said(f"not a verdict: {line.strip()!r} — type good, bad, skip or unsure"
                                 + (f" (or press Enter for {asked.proposal.value})" if asked.proposal else ""))
                continue
            if asked.proposal is not None and v is not asked.proposal:
                return v, f"typed at the prompt, overriding the benchmark's {asked.proposal.value}"
            return v, "typed at the prompt"

    def _record(self, bid: int, p: Probe) -> Probe:
        got = super()._record(bid, p)
        mark_id, self._mark_id = self._mark_id, None
        if mark_id is not None:
            self.store.took_mark(mark_id)
        w = self.store.waiting()
        if w and w["bisection"] == bid and w["role"] == p.role and Pair(w["xla"], w["jax"]) == p.pair:
            self.store.clear_waiting()  # judged: the next run does not resume here
        return got

    def probe_row(self, r: dict, states: list[State], b) -> dict:
        out = super().probe_row(r, states, b)
        out["manual"] = is_manual(r)
        out["reason"] = r.get("reason")
        return out

    def _answer(self, w, states, b, verdicts, moved, blame, confirmed, bid) -> dict:
        a = super()._answer(w, states, b, verdicts, moved, blame, confirmed, bid)
        rows = self.store.probes(bid)
        a["mode"] = "manual"
        a["manual"] = {"window_mode": self.window_mode.value, "benchmark": self.run_bench,
                       "verdicts": sum(1 for r in rows if is_manual(r)),
                       "ends": "measured for the benchmark's offered verdicts, not judged" if self.end_samples
                       else "taken as given, not built or judged"}
        return a


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


def run_manual(s: Settings, store: Store, req: BisectRequest, handler: BisectHandler, prompt: Prompt,
               run_bench: bool = False, executor: Executor | None = None) -> list[dict]:
    """``hourly bisect --manual``: the window ``req.good``..``req.bad``, or every window of the
    stored scan (regressions, crash windows and metrics that stop printing, each in its mode), each
    answered by the person at ``prompt`` or with ``hourly mark``."""
    from hourly.adapters.locks import store_lock
    check_request(req, executor)
    with store_lock(store.workdir):
        if req.good is not None:
            assert req.bad is not None
            mode = req.mode or default_mode(store, s)
            with ManualBisector(s, store, mode, req, handler, prompt, run_bench, executor) as b:
                g, x = parse_ends(b, req.good, req.bad, s.tz)
                if x <= g:
                    raise UserError(f"--bad {req.bad} is not later than --good {req.good}", "swap them")
                kind = {Mode.EXIT: "crash", Mode.PRINTED: "metric_lost"}.get(mode, "regression")
                return b.bisect(Window(g, x, "flags", kind=kind))
        base = req.mode or default_mode(store, s)
        plan = [(base, windows_from_store(store, s, base))]
        if req.mode is None and base is Mode.METRIC:
            plan += [(Mode.EXIT, windows_from_store(store, s, Mode.EXIT)),
                     (Mode.PRINTED, windows_from_store(store, s, Mode.PRINTED))]
        if not any(ws for _, ws in plan):
            handler.nothing_to_bisect()
        answers: list[dict] = []
        for m, windows in plan:
            if windows:
                with ManualBisector(s, store, m, req, handler, prompt, run_bench, executor) as b:
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
