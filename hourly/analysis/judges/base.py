"""What every judge shares: the verdict words, the evidence a judge reads, and the call it makes.

A judge turns *evidence* of one state — the samples a benchmark printed, the exit status and the
class of each run, or a person's word — into a *call*: good, bad, skip (untestable) or unsure, with
the reason in words. The searches (hourly.analysis.bisection, hourly.bisect.drive) never decide a
verdict themselves: they ask the window's judge (docs/architecture.md, "Judges").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Protocol

from hourly.model import DEFAULT_MAX_REPEATS, Named


class Verdict(Named):
    GOOD = "good"
    BAD = "bad"
    UNSURE = "unsure"  # more samples may decide
    SKIP = "skip"      # untestable: build failed, benchmark could not say, or unsure after all repeats


#: Good ↔ bad (finding a fix: the state before it is the "old" one, as git bisect's terms).
_FLIPPED = {Verdict.GOOD: Verdict.BAD, Verdict.BAD: Verdict.GOOD}


def flip(v: Verdict) -> Verdict:
    return _FLIPPED.get(v, v)


@dataclass(frozen=True)
class Run:
    """One benchmark run as a judge reads it: its exit code (None: timed out), its class (a
    ``hourly.model.Status`` value: ok, crashed, timeout, no_metric) and whether it was a warm-up."""

    returncode: int | None
    status: str | None = "ok"
    warmup: bool = False
    #: it printed the metric as a number hourly will not guess at (``MLUPS: 1,234``): printed, no value
    unread: bool = False
    #: the samples the process printed, when it printed many (its value is their median): what a
    #: paired verdict reduces by the statistic it chose (hourly.analysis.process_stat)
    samples: tuple[float, ...] = ()

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> "Run":
        """A run as the store keeps it (``hourly.measure.benchmark.Run.as_dict``)."""
        return cls(row.get("returncode"), row.get("status"), bool(row.get("warmup")), bool(row.get("unread")),
                   tuple(float(x) for x in row.get("samples") or ()))


@dataclass(frozen=True)
class Word:
    """A person's verdict on a state (``hourly bisect --manual``), how it was given, and the
    benchmark's verdict that was offered first (None: none was)."""

    verdict: Verdict
    how: str
    proposal: Verdict | None = None


@dataclass(frozen=True)
class Evidence:
    """One measurement of a state as a judge reads it: its class (a ``Status`` value), the samples,
    every run, why it failed (``detail``), where it came from (``origin``: scan, bisect) and its
    row id; or a person's ``word``."""

    status: str = "ok"
    samples: tuple[float, ...] = ()
    runs: tuple[Run, ...] = ()
    detail: str | None = None
    origin: str = "bisect"
    id: int | None = None
    word: Word | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def returncodes(self) -> list[int | None]:
        """Every run's exit code, warm-up runs included."""
        return [r.returncode for r in self.runs]

    @property
    def counted(self) -> list[int | None]:
        """The exit codes of the runs that count (warm-up runs left out)."""
        return [r.returncode for r in self.runs if not r.warmup]


def samples_of(evidence: Iterable[Evidence]) -> list[float]:
    """Every sample of the measurements that measured."""
    return [x for e in evidence if e.ok for x in e.samples]


@dataclass(frozen=True)
class Call:
    """A judge's verdict on one state, and why. ``between``: bad, and not yet as bad as the bad end
    (metric: another step comes later). ``more``: unsure, and this many more samples may decide."""

    verdict: Verdict
    reason: str
    between: bool = False
    more: int = 0
    llr: float = 0.0  # metric: log likelihood ratio, bad vs good (positive: looks bad)

    @property
    def decided(self) -> bool:
        """Good, bad or untestable: more samples would not change it."""
        return self.verdict is not Verdict.UNSURE


@dataclass(frozen=True)
class JudgeOptions:
    """What a bisection tells its judge (every judge takes the same, so the registry makes any):
    ``invert``: finding a fix, good and bad turned round (the changed state is "bad", as git
    bisect's terms; the metric judge is given the flipped direction instead); the samples a state
    gets first (``repeats``) and at most while unsure (``max_repeats``); for a manual bisection, the
    mode its window came from and whether a benchmark offers its verdict first (``bench``)."""

    invert: bool = False
    repeats: int = 1
    max_repeats: int = DEFAULT_MAX_REPEATS
    window_mode: str = "metric"
    bench: bool = False


#: a judge told nothing: the defaults
DEFAULT_OPTIONS = JudgeOptions()


class BaseJudge:
    """What most judges do alike (a judge need not inherit it: :class:`Judge` is the protocol)."""

    name = "base"
    mode = "base"
    answer_mode = "base"
    steps = False

    def identity(self) -> dict:
        return {}

    def steer(self, v: Verdict) -> Verdict:
        return v

    def confirmed(self, good: Verdict, bad: Verdict) -> bool:
        return good is Verdict.GOOD and bad is Verdict.BAD

    @staticmethod
    def untestable(why: str) -> Call:
        """A state that cannot be measured (its build failed, known before it is tried): skip."""
        return Call(Verdict.SKIP, why)

    @staticmethod
    def given_end(side: Verdict, origin: str) -> Call:
        """An end as git bisect takes it: what the window says it is."""
        where = "--good/--bad" if origin == "flags" else f"the stored scan's window ({origin})"
        return Call(side, f"taken as given: the {side.value} end of {where}, not built")


class Judge(Protocol):
    """How the states of one window are called (one implementation per mode, registered in
    :data:`hourly.analysis.judges.JUDGES`). The search asks; it never maps a verdict itself."""

    #: its name in the registry (hourly.analysis.judges.JUDGES)
    name: str
    #: the mode a bisection's stored key and row name (manual: printed, the search it walks)
    mode: str
    #: the mode its answers name
    answer_mode: str
    #: the window search (every step of the window, metric), else one verdict at a time
    steps: bool

    def identity(self) -> dict:
        """What the judge adds to a bisection's stored key (most: nothing)."""
        ...

    def call(self, ev: Evidence) -> Call:
        """The verdict on a state from its evidence."""
        ...

    def steer(self, v: Verdict) -> Verdict:
        """A state's verdict as the search takes it (a manual ``unsure`` leaves the state out)."""
        ...

    def confirmed(self, good: Verdict, bad: Verdict) -> bool:
        """Whether fresh verdicts on the last good and first bad states confirm the answer."""
        ...

    def untestable(self, why: str) -> Call:
        """A state known untestable before it is tried (a recorded build failure)."""
        ...
