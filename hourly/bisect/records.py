"""The records of a bisection: a window to bisect, a measurement taken for it and a judged state (a probe)."""

from __future__ import annotations

from dataclasses import dataclass, field

from hourly.analysis.bisection import Verdict
from hourly.analysis.judges import Evidence
from hourly.errors import UserError
from hourly.model import BISECT_MIN_CHANGE, DEFAULT_MAX_REPEATS, Mode, Pair, check_min_change


@dataclass(frozen=True)
class BisectRequest:
    """What a bisection is asked, besides the scan's settings: the window (``good``/``bad`` as
    --good/--bad give them; None: every window of the stored scan), the ``mode`` (None: the
    stored scan's), how many samples a state may get while unsure (``max_repeats``), whether
    finished windows are done again (``rerun``), the smallest step worth pinning
    (``min_change``) and whether it finds what made things better (``find_fix``)."""

    good: str | None = None
    bad: str | None = None
    mode: Mode | None = None
    max_repeats: int = DEFAULT_MAX_REPEATS
    rerun: bool = False
    min_change: float = BISECT_MIN_CHANGE
    find_fix: bool = False
    #: exit mode: a state's verdict from its failure rate over repeated runs (also on by itself
    #: once a state shows both outcomes)
    flaky: bool = False
    #: exit mode: probe every untestable state, as ``git bisect skip`` does, instead of jumping a run
    #: of them (hourly.analysis.bisection.run_probes)
    walk_skips: bool = False
    #: when the --rerun under way began (the command's: hourly.commands.bisect, SettingsTables.rerun):
    #: windows finished before it are bisected again, those finished since are its own; None with
    #: ``rerun``: it begins as the search does (every finished window again)
    rerun_since: float | None = None

    def __post_init__(self) -> None:
        if self.max_repeats < 1:
            raise UserError(f"--max-repeats must be 1 or more, not {self.max_repeats}", "pass --max-repeats 10")
        check_min_change(self.min_change)
        if (self.good is None) != (self.bad is None):
            raise UserError("--good and --bad go together",
                            "pass both, or neither to bisect every detected regression")


@dataclass
class Window:
    good_time: int
    bad_time: int
    origin: str  # "detect", "flags" or "exit transitions"
    note: str = ""
    #: "regression" (metric, worse after) or "crash" (exit status good → bad); with --find-fix,
    #: "improvement" (metric, better after) or "fix" (exit status bad → good)
    kind: str = "regression"


@dataclass(frozen=True)
class Taken:
    """One measurement taken for a request: what it showed (the ``evidence``), the ``builds`` and the
    benchmark ``runs`` (process starts) it cost, and the ``samples`` those runs printed (counted apart:
    many per run when a run prints its metric once per iteration)."""

    evidence: Evidence
    builds: int
    runs: int
    samples: int


@dataclass
class Probe:
    role: str  # end, probe, confirm, blame
    pair: Pair
    verdict: Verdict
    reason: str = ""
    samples: list[float] = field(default_factory=list)
    returncodes: list = field(default_factory=list)
    builds: int = 0
    runs: int = 0  # benchmark runs started for it now: process starts, warm-up runs included
    between: bool = False  # between the ends: another step comes after this state
    #: the samples those runs printed (``samples`` holds one value per counted run: its median)
    run_samples: int = 0
    #: the ends' rows of a paired search: the per-process statistic chosen on them (statistic, why,
    #: candidates), restored when the search resumes
    statistic: dict | None = None

    def row(self) -> dict:
        return {"role": self.role, "xla": self.pair.xla, "jax": self.pair.jax, "verdict": self.verdict.value,
                "between": self.between, "reason": self.reason, "samples": self.samples, "returncodes": self.returncodes,
                "builds": self.builds, "runs": self.runs, "run_samples": self.run_samples,
                **({"statistic": self.statistic} if self.statistic else {})}



@dataclass(frozen=True)
class Where:
    """Where a probe of a verdict-by-verdict search stands, for a person asked about it: its index
    among the window's ``states``, the last good and first bad so far (``lo``, ``hi``), each untried
    state's cost, and whether the search resumed at it."""

    index: int
    states: int
    lo: int
    hi: int
    costs: dict[int, float]
    resumed: bool = False
