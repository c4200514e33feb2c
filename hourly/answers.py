"""The answer of a bisection: one window's culprit (or candidate, or range), its ends, the probes it
rests on and what they cost — a record, written to JSON in one place (:meth:`Answer.to_json`: what
``hourly bisect --json`` prints, what the store keeps, what the report and ``hourly explain``
read back with :meth:`Answer.from_json`).

Answers stored by an older hourly lack some fields: they read back with their defaults.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, TypeVar

from hourly.model import Pair
from hourly.options import join

T = TypeVar("T")

Json = dict[str, Any]


def _opt(d: Mapping[str, Any], key: str, make: Callable[[Any], T]) -> T | None:
    v = d.get(key)
    return make(v) if v is not None else None


@dataclass
class Merged:
    """A commit a merged pull request brought."""

    sha: str
    subject: str = ""
    author: str = ""

    def to_json(self) -> Json:
        return {"sha": self.sha, "subject": self.subject, "author": self.author}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Merged":
        return cls(d["sha"], d.get("subject", ""), d.get("author", ""))


@dataclass
class Commit:
    """One commit as an answer names it (a merged pull request also names what it brought)."""

    repo: str
    sha: str
    subject: str = ""
    author: str = ""
    committer_time: str = ""
    link: str = ""
    merged: list[Merged] = field(default_factory=list)

    def to_json(self) -> Json:
        out: Json = {"repo": self.repo, "sha": self.sha, "subject": self.subject, "author": self.author,
                     "committer_time": self.committer_time, "link": self.link}
        if self.merged:
            out["merged"] = [m.to_json() for m in self.merged]
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Commit":
        return cls(d.get("repo", ""), d["sha"], d.get("subject", ""), d.get("author", ""), d.get("committer_time", ""),
                   d.get("link", ""), [Merged.from_json(m) for m in d.get("merged") or []])


@dataclass
class AnswerWindow:
    """The window bisected: its ends (UTC labels), where it came from (detect, flags, exit
    transitions, metric windows, descent) and a note."""

    good_time: str
    bad_time: str
    origin: str = ""
    note: str = ""

    def to_json(self) -> Json:
        return {"good_time": self.good_time, "bad_time": self.bad_time, "origin": self.origin, "note": self.note}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "AnswerWindow":
        return cls(d.get("good_time", ""), d.get("bad_time", ""), d.get("origin", ""), d.get("note", ""))


@dataclass
class ProbeRow:
    """A judged state as the answer lists it: its role (end, probe, ahead, confirm_good, confirm_bad,
    blame), the pair and the verdict as the answer's step sees it; per ``--cherry-pick`` what it did
    to the state; for a manual bisection whether the verdict was the person's, and its reason."""

    role: str
    xla: str
    jax: str
    verdict: str
    cherry_picks: dict[str, str] | None = None
    manual: bool | None = None
    reason: str | None = None
    #: what measuring it cost now: benchmark runs started (process starts) and the samples they
    #: printed, counted apart (0 and 0: judged from measurements in hand)
    runs: int = 0
    run_samples: int = 0

    @property
    def pair(self) -> Pair:
        return Pair(self.xla, self.jax)

    def to_json(self) -> Json:
        out: Json = {"role": self.role, "xla": self.xla, "jax": self.jax, "verdict": self.verdict,
                     "runs": self.runs, "run_samples": self.run_samples}
        if self.cherry_picks is not None:
            out["cherry_picks"] = self.cherry_picks
        if self.manual is not None:
            out["manual"] = self.manual
            out["reason"] = self.reason
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "ProbeRow":
        return cls(d["role"], d["xla"], d["jax"], d["verdict"], d.get("cherry_picks"), d.get("manual"),
                   d.get("reason"), d.get("runs") or 0, d.get("run_samples") or 0)


@dataclass
class Measured:
    """One measurement of a state an unconfirmed answer rests on (the search's or the re-measurement's)."""

    role: str
    verdict: str
    samples: list[float] = field(default_factory=list)
    returncodes: list[int | None] = field(default_factory=list)
    reason: str | None = None

    def to_json(self) -> Json:
        return {"role": self.role, "verdict": self.verdict, "samples": self.samples, "returncodes": self.returncodes,
                "reason": self.reason}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Measured":
        return cls(d["role"], d["verdict"], list(d.get("samples") or []), list(d.get("returncodes") or []),
                   d.get("reason"))


@dataclass
class EndSamples:
    """How many samples an end's verdicts were compared with, and where they came from (origin: count)."""

    n: int
    from_: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> Json:
        return {"n": self.n, "from": self.from_}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "EndSamples":
        return cls(d.get("n", 0), dict(d.get("from") or {}))


@dataclass
class Rate:
    """A state's failure rate (exit mode): failed runs of the runs that count."""

    failed: int
    runs: int
    rate: float | None

    def to_json(self) -> Json:
        return {"failed": self.failed, "runs": self.runs, "rate": self.rate}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Rate":
        return cls(d.get("failed", 0), d.get("runs", 0), d.get("rate"))


@dataclass
class Rest:
    """The rest of a window after its step, bisected with no further step named, and why."""

    from_: str
    to: str
    why: str
    fix: str | None = None

    def to_json(self) -> Json:
        return {"from": self.from_, "to": self.to, "why": self.why, "fix": self.fix}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Rest":
        return cls(d.get("from", ""), d.get("to", ""), d.get("why", ""), d.get("fix"))


@dataclass
class ManualNote:
    """A manual bisection's part of the answer: the window's own mode, whether a benchmark ran,
    how many verdicts the person gave, and how the ends were taken."""

    window_mode: str
    benchmark: bool
    verdicts: int
    ends: str

    def to_json(self) -> Json:
        return {"window_mode": self.window_mode, "benchmark": self.benchmark, "verdicts": self.verdicts,
                "ends": self.ends}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "ManualNote":
        return cls(d.get("window_mode", ""), bool(d.get("benchmark")), d.get("verdicts", 0),
                   d.get("ends", "taken as given"))


def _pair(d: Mapping[str, Any]) -> Pair:
    return Pair(d["xla"], d["jax"])


def _pair_json(p: Pair | None) -> Json | None:
    return {"xla": p.xla, "jax": p.jax} if p is not None else None


@dataclass
class Answer:
    """One window's answer (docs/bisect.md, "The answer"). ``culprit``: the commit, confirmed by
    re-measuring both ends; ``candidate``: one the re-measurement did not confirm (``measurements``
    and ``next`` say what it rests on and what to do); neither: ``range`` and ``reason``. ``error``:
    a window of the store that could not be bisected."""

    window: AnswerWindow
    mode: str
    kind: str = ""
    #: the named metric bisected (``--metric``: one window bisected per metric); None: the regex's
    #: one metric, or exit codes (the same in every metric's rows)
    metric: str | None = None
    pairing: str | None = None
    culprit: Commit | None = None
    candidate: Commit | None = None
    measurements: dict[str, list[Measured]] | None = None
    next: str | None = None
    range: list[str] = field(default_factory=list)
    range_commits: list[Commit] = field(default_factory=list)
    reason: str | None = None
    blame: str | None = None
    confirmed: bool = False
    last_good: Pair | None = None
    first_bad: Pair | None = None
    states: int = 0
    end_samples: dict[str, EndSamples] = field(default_factory=dict)
    probes: list[ProbeRow] = field(default_factory=list)
    builds: int = 0
    jaxlib_builds: int = 0
    jax_builds: int = 0
    runs: int = 0
    #: every counted sample the runs printed (many per run with --metric-samples all or named
    #: metrics; else one per counted run): the runs are process starts, their samples counted apart
    run_samples: int = 0
    pinned: Json | None = None
    manual: ManualNote | None = None
    continues_at: int | None = None
    #: exit mode: whether states were judged by failure rate, and both states' rates
    flaky: bool | None = None
    failure_rates: dict[str, Rate] | None = None
    rounds: int = 0
    jobs: int = 0
    rest: Rest | None = None
    error: str | None = None
    #: a descent into a pin bump (hourly.bisect.descent): the chain, its text, the levels' answers
    chain: list[Json] | None = None
    chain_text: str | None = None
    descent: list["Answer"] | None = None
    descent_stopped: str | None = None
    descent_of: Json | None = None
    build_failed_behind_pin: list[Json] | None = None
    behind_pin_reason: str | None = None
    #: ``hourly bisect --explain``: what the culprit changed, or why it was not explained
    explained: Json | None = None
    #: metric mode: how its verdicts were measured ("interleaved": paired rounds, drift cancelled;
    #: else why one state after another), the machine's drift said on the way, and the crash windows
    #: the search met (each: its first and last crashing states, the crash's last line, the
    #: --cherry-pick of the commit that ends it, whether the change lies inside)
    measured: str | None = None
    drift: list[str] | None = None
    crash_windows: list[Json] | None = None
    #: metric mode: what the verdicts cost and how each process was sampled (hourly.bisect.search.
    #: Bisector.sampling_figures): processes, samples, chip-seconds, the samples asked of each process
    #: and how they were chosen, the per-process statistic and why, a process's measured cost
    sampling: Json | None = None

    @property
    def unconfirmed(self) -> bool:
        """A candidate the re-measurement did not confirm (exit 4), not a culprit."""
        return self.candidate is not None and self.culprit is None

    @property
    def named(self) -> Commit | None:
        """The commit the answer names: the culprit, else the candidate."""
        return self.culprit or self.candidate

    # -- JSON ---------------------------------------------------------------------------------------
    def to_json(self) -> Json:
        if self.error is not None:
            out: Json = {"window": self.window.to_json(), "mode": self.mode, "metric": self.metric,
                         "error": self.error, "culprit": None,
                         "range": self.range, "range_commits": [c.to_json() for c in self.range_commits],
                         "reason": self.reason, "blame": self.blame, "confirmed": self.confirmed,
                         "last_good": _pair_json(self.last_good), "first_bad": _pair_json(self.first_bad),
                         "states": self.states, "probes": [p.to_json() for p in self.probes], "builds": self.builds,
                         "runs": self.runs, "run_samples": self.run_samples, "continues_at": self.continues_at,
                         "pinned": self.pinned,
                         "jaxlib_builds": self.jaxlib_builds, "jax_builds": self.jax_builds, "rounds": self.rounds,
                         "jobs": self.jobs, "kind": self.kind}
            return out
        out = {
            "kind": self.kind,
            "window": self.window.to_json(),
            "mode": self.mode,
            "pairing": self.pairing,
            "culprit": self.culprit.to_json() if self.culprit else None,
            "candidate": self.candidate.to_json() if self.candidate else None,
            "measurements": ({side: [m.to_json() for m in ms] for side, ms in self.measurements.items()}
                             if self.measurements is not None else None),
            "next": self.next,
            "range": self.range,
            "range_commits": [c.to_json() for c in self.range_commits],
            "reason": self.reason,
            "blame": self.blame,
            "confirmed": self.confirmed,
            "last_good": _pair_json(self.last_good),
            "first_bad": _pair_json(self.first_bad),
            "states": self.states,
            "end_samples": {side: e.to_json() for side, e in self.end_samples.items()},
            "probes": [p.to_json() for p in self.probes],
            "builds": self.builds,
            "jaxlib_builds": self.jaxlib_builds,
            "jax_builds": self.jax_builds,
            "runs": self.runs,
            "run_samples": self.run_samples,
            "pinned": self.pinned,
            "metric": self.metric,
        }
        if self.manual is not None:
            out["manual"] = self.manual.to_json()
        out["continues_at"] = self.continues_at
        if self.flaky is not None:
            out["flaky"] = self.flaky
        if self.failure_rates is not None:
            out["failure_rates"] = {side: r.to_json() for side, r in self.failure_rates.items()}
        out["rounds"], out["jobs"] = self.rounds, self.jobs
        if self.rest is not None:
            out["rest"] = self.rest.to_json()
        for key in ("build_failed_behind_pin", "behind_pin_reason", "descent_stopped", "chain", "chain_text"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.descent is not None:
            out["descent"] = [a.to_json() for a in self.descent]
        if self.descent_of is not None:
            out["descent_of"] = self.descent_of
        if self.explained is not None:
            out["explained"] = self.explained
        for key in ("measured", "drift", "crash_windows", "sampling"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Answer":
        ms = d.get("measurements")
        return cls(
            window=AnswerWindow.from_json(d.get("window") or {}), mode=d.get("mode", ""), kind=d.get("kind") or "",
            metric=d.get("metric"),
            pairing=d.get("pairing"), culprit=_opt(d, "culprit", Commit.from_json),
            candidate=_opt(d, "candidate", Commit.from_json),
            measurements=({side: [Measured.from_json(m) for m in rows] for side, rows in ms.items()}
                          if ms is not None else None),
            next=d.get("next"), range=list(d.get("range") or []),
            range_commits=[Commit.from_json(c) for c in d.get("range_commits") or []], reason=d.get("reason"),
            blame=d.get("blame"), confirmed=bool(d.get("confirmed")), last_good=_opt(d, "last_good", _pair),
            first_bad=_opt(d, "first_bad", _pair), states=d.get("states", 0),
            end_samples={side: EndSamples.from_json(e) for side, e in (d.get("end_samples") or {}).items()},
            probes=[ProbeRow.from_json(p) for p in d.get("probes") or []], builds=d.get("builds", 0),
            jaxlib_builds=d.get("jaxlib_builds") or 0, jax_builds=d.get("jax_builds") or 0, runs=d.get("runs", 0),
            run_samples=d.get("run_samples") or 0,
            pinned=d.get("pinned"), manual=_opt(d, "manual", ManualNote.from_json), continues_at=d.get("continues_at"),
            flaky=d.get("flaky"),
            failure_rates=({side: Rate.from_json(r) for side, r in d["failure_rates"].items()}
                           if d.get("failure_rates") is not None else None),
            rounds=d.get("rounds") or 0, jobs=d.get("jobs") or 0, rest=_opt(d, "rest", Rest.from_json),
            error=d.get("error"), chain=d.get("chain"), chain_text=d.get("chain_text"),
            descent=[cls.from_json(a) for a in d["descent"]] if d.get("descent") is not None else None,
            descent_stopped=d.get("descent_stopped"), descent_of=d.get("descent_of"),
            build_failed_behind_pin=d.get("build_failed_behind_pin"), behind_pin_reason=d.get("behind_pin_reason"),
            explained=d.get("explained"), measured=d.get("measured"), drift=d.get("drift"),
            crash_windows=d.get("crash_windows"), sampling=d.get("sampling"))

    @classmethod
    def of(cls, a: "Answer | Mapping[str, Any]") -> "Answer":
        """An answer, from itself or from its JSON (a stored answer, an answer file)."""
        return a if isinstance(a, Answer) else cls.from_json(a)


@dataclass(frozen=True)
class HuntRow:
    """One window of ``hourly hunt`` and its answer: what ``hourly hunt --json`` prints per window
    (``steps``), what the store keeps for ``hourly report`` and what the renderers read. The first
    regression's ``culprit`` (its ``range`` when none), the others in ``more``; ``error``: the
    window could not be bisected; ``release``: the release steps whose days held the window
    (--from-release); ``explained``: --explain's records of each culprit."""

    good_date: str
    bad_date: str
    kind: str  # "regression" | "crash"
    metric: str | None = None
    from_value: float | None = None
    to_value: float | None = None
    culprit: Commit | None = None
    range: list[str] | None = None
    reason: str | None = None
    environment: list[Json] | None = None  # the two images' differences (name, good, bad)
    builds: int = 0
    runs: int = 0  # benchmark processes started
    run_samples: int = 0  # the samples they printed, counted apart
    more: list[Json] = field(default_factory=list)  # the other regressions: a culprit's JSON, or {"range": ...}
    bisected_in: str | None = None
    scan: Json | None = None  # --scan-step: instants, step, pairs, from, to
    log: str | None = None
    error: str | None = None
    explained: list[Json] | None = None
    release: list[Json] | None = None  # each: last_good, first_bad, kind

    def to_json(self) -> Json:
        out: Json = {"good_date": self.good_date, "bad_date": self.bad_date, "kind": self.kind, "metric": self.metric,
                     "from_value": self.from_value, "to_value": self.to_value,
                     "culprit": self.culprit.to_json() if self.culprit else None, "range": self.range,
                     "reason": self.reason, "environment": self.environment, "builds": self.builds,
                     "runs": self.runs, "run_samples": self.run_samples, "more": self.more,
                     "bisected_in": self.bisected_in, "scan": self.scan, "log": self.log, "error": self.error}
        if self.explained:
            out["explained"] = self.explained
        if self.release:
            out["release"] = self.release
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "HuntRow":
        return cls(d["good_date"], d["bad_date"], d["kind"], d.get("metric"), d.get("from_value"), d.get("to_value"),
                   _opt(d, "culprit", Commit.from_json), d.get("range"), d.get("reason"), d.get("environment"),
                   d.get("builds") or 0, d.get("runs") or 0, d.get("run_samples") or 0, list(d.get("more") or []),
                   d.get("bisected_in"), d.get("scan"), d.get("log"), d.get("error"), d.get("explained") or None,
                   d.get("release") or None)


def build_difference(ident: dict | None, current: dict | None, key: str, code: Callable[[str], str] = str) -> str:
    """What another measurement key's build (or benchmark) was: the parts that differ from the
    current one's (``current``), with their values then; ``code`` quotes a value (the report's
    markdown: hourly.render.markdown.code)."""
    if not ident:
        return f"another build or benchmark (key {code(key[:12])}; what it was made of is not recorded in this store)"
    ob, cb = ident.get("build") or {}, (current or {}).get("build") or {}
    parts = []
    if current is None or ob.get("cmd") != cb.get("cmd") or ob.get("jax_package") != cb.get("jax_package"):
        parts.append(f"build command {code(join(ob.get('cmd') or []))}"
                     + (f" (jax package: {code(join(ob['jax_package']))})" if ob.get("jax_package")
                        and ob.get("jax_package") != cb.get("jax_package") else ""))
    oe, ce = dict(map(tuple, ob.get("env") or [])), dict(map(tuple, cb.get("env") or []))
    changed = sorted(k for k in set(oe) | set(ce) if oe.get(k) != ce.get(k))
    if changed:
        parts.append("build environment " + ", ".join(code(f"{k}={oe[k]}" if k in oe else f"{k} unset")
                                                      for k in changed))
    if ob.get("python_abi") != cb.get("python_abi"):
        parts.append(f"Python ABI {code(ob.get('python_abi') or '?')}")
    if ob.get("cherry_pick") != cb.get("cherry_pick"):
        parts.append("cherry-picks " + (", ".join(code(c) for c in ob.get("cherry_pick") or []) or "none"))
    ob_, cb_ = dict(ident.get("bench") or {}), dict((current or {}).get("bench") or {})
    gate, current_gate = ob_.pop("jaxlib_gate", None), cb_.pop("jaxlib_gate", None)
    if gate != current_gate:  # --only jax: the states JAX's own check refuses were run, or not
        parts.append("the jaxlib gate overridden (--no-jaxlib-gate)" if gate else "the jaxlib gate on")
    if current is not None and ob_ != cb_:
        parts.append(f"benchmark {code(join(ob_.get('cmd') or []))}")
    return "; ".join(parts) or f"another build or benchmark (key {code(key[:12])})"
