"""The records that flow between the stages (no I/O, no heavy imports).

resolve → plan gives :class:`Pair` per instant; bench/store give a :class:`Status` and samples per
pair; scan and show turn them into :class:`PointResult` rows of a :class:`ScanReport`; detection
(hourly.analysis.steps) turns rows into :class:`Step` objects; the nightly level has one
:class:`NightlyPoint` per date, the release level one :class:`ReleasePoint` per jax release. Every module that passes these around imports them from here.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

#: Repository names hourly knows, in the order pairs are written: (xla, jax).
REPOS = ("xla", "jax")
#: Where each repository's commit is read on the web.
COMMIT_URLS = {
    "xla": "https://github.com/openxla/xla/commit/{sha}",
    "jax": "https://github.com/jax-ml/jax/commit/{sha}",
    "llvm": "https://github.com/llvm/llvm-project/commit/{sha}",
    "triton": "https://github.com/openxla/triton/commit/{sha}",
}


class Named(str, Enum):
    """An enum of words: its members compare equal to their values and print as them (every
    verdict, status and kind in hourly; stored and shown as the word)."""

    def __str__(self) -> str:
        return self.value


class Status(Named):
    """The outcome of a run, of a point, of a nightly date and of a release.

    Runs are ``ok``, ``crashed``, ``timeout`` or ``no_metric``; a point adds ``build_failed`` and
    ``untestable`` (hourly scan), a date adds ``missing`` (its nightly image does not exist) and a
    release adds ``missing`` (no installable wheel here) and ``install_failed`` (the installer failed).
    """

    OK = "ok"
    CRASHED = "crashed"
    TIMEOUT = "timeout"
    NO_METRIC = "no_metric"
    BUILD_FAILED = "build_failed"
    UNTESTABLE = "untestable"  # cannot run at all (--only jax: the installed jaxlib is older than it needs)
    MISSING = "missing"
    INSTALL_FAILED = "install_failed"


def median(values: Any) -> float:
    """``statistics.median``, but never an overflow: the middle two of an even count near the
    float's limit (1e308 and 1.7e308) are averaged as halves, not summed to inf."""
    m = statistics.median(values)
    if isinstance(m, float) and not math.isfinite(m):
        xs = sorted(values)
        a, b = xs[len(xs) // 2 - 1], xs[len(xs) // 2]
        if math.isfinite(a) and math.isfinite(b):
            return a / 2 + b / 2
    return m


def spread(samples: list[float]) -> float | None:
    """Half the range relative to the median (0.01 = ±1%); None for fewer than two samples."""
    if len(samples) < 2:
        return None
    med = median(samples)
    half = (max(samples) - min(samples)) / 2
    if not math.isfinite(half):  # two values near the float's limit, of opposite signs
        half = max(samples) / 2 - min(samples) / 2
    return half / abs(med) if med else None


@dataclass(frozen=True)
class Pair:
    xla: str
    jax: str

    def short(self) -> str:
        return f"{cut_side(self.xla, 8)}/{cut_side(self.jax, 8)}"

    def key(self) -> str:
        return f"{cut_side(self.xla, 12)}-{cut_side(self.jax, 12)}"


def cut_side(side: str, n: int) -> str:
    """A commit cut to n characters; a pinned side's label (``jaxlib-0.4.18``, ``jaxlib-0.4.14@<sha>``,
    see measure/pinned.py) whole, since cutting it names another version (``jaxlib-0.4.1``)."""
    return side if side.startswith("jaxlib-") else side[:n]


@dataclass
class PointResult:
    time: str
    xla: str
    jax: str
    status: str  # Status value, or "planned"/"built"/"cached" in a dry run
    value: float | None = None
    samples: list[float] = field(default_factory=list)
    detail: str | None = None
    #: every counted sample of the runs behind ``samples`` when a run printed many
    #: (``--metric-samples all``, named metrics); None: one value per run
    run_samples: int | None = None

    def as_json(self) -> dict:
        out = {"time": self.time, "xla": self.xla, "jax": self.jax, "status": self.status,
               "value": self.value, "samples": self.samples}
        if self.run_samples is not None:  # runs are processes; their samples counted apart
            out["runs"] = len(self.samples)
            out["run_samples"] = self.run_samples
        return out

    @property
    def spread(self) -> float | None:
        return spread(self.samples)


def run_sample_counts(runs: list[dict[str, Any]]) -> dict[str, int]:
    """``{"runs": counted runs that measured, "run_samples": their samples}`` when a run printed many
    samples (its entry in ``runs`` keeps them); ``{}`` for one value per run. A run is a process:
    the unit hourly counts (and prices) everywhere; its samples are counted apart."""
    counted = [r for r in runs if not r.get("warmup") and r.get("status") == Status.OK.value]
    if not any("samples" in r for r in counted):
        return {}
    return {"runs": len(counted), "run_samples": sum(len(r.get("samples") or []) for r in counted)}


@dataclass
class MetricPoints:
    """One named metric of a scan (``--metrics``): its direction and its points (each a view of
    the measurements of that metric), its edge steps' checks as the scan's own."""

    name: str
    higher_is_better: bool
    points: list[PointResult]
    edge_checks: dict | None = None
    edge_json: list[dict] | None = None


@dataclass
class DryRunPlan:
    """What a scan would do: builds to run (distinct pairs whose wheels are not cached, among those it
    would measure), pairs already built, and pairs already measured (None without a benchmark
    command: measurements are kept per benchmark)."""

    builds: int
    built: int
    measured: int | None


@dataclass
class ScanReport:
    points: list[PointResult]
    distinct_pairs: int
    builds: int
    pinned: dict | None = None  # --only: the side that stayed put and what it was (hourly.measure.pinned.Pin.as_json)
    jaxlib_builds: int = 0  # of ``builds``: runs of --build-cmd (each builds jaxlib; docs/builds.md)
    jax_builds: int = 0     # of ``builds``: the jax package alone (--only jax, or its jaxlib was cached)
    plan: DryRunPlan | None = None  # set by a dry run
    #: why the scan stopped early (fail fast: its first measured pair never worked), as the
    #: hourly.errors.UserError the command raises after printing what was measured
    stopped: Any = None
    #: edge steps measured again (hourly.scan.table.edge_checks): {(before time, after time): EdgeCheck}
    edge_checks: dict | None = None
    edge_json: list[dict] | None = None   # the same for --json
    #: how JAX and XLA were paired (hourly.scan.run.pairing_notes): {"pairing": "time"|"pin",
    #: "behind_pin": {"<xla>:<jax>": pin}, "unknown": {jax: pin the XLA checkout lacks}}; None: a scan
    #: stored before pairings (time)
    pairing: dict | None = None
    #: named metrics (``--metrics``): each metric's points, in the order first recorded; ``points``
    #: is then the primary metric's (``--metric``), else the first's. None: the regex's one metric
    metrics: list[MetricPoints] | None = None

    def behind_pin(self, p: PointResult) -> str | None:
        """The pin of ``p``'s JAX commit when its XLA commit is older (time pairing), else None."""
        return ((self.pairing or {}).get("behind_pin") or {}).get(f"{p.xla}:{p.jax}")

    def as_json(self) -> dict:
        out = {"points": [self._point_json(p) for p in self.points], "distinct_pairs": self.distinct_pairs,
               "builds": self.builds, "jaxlib_builds": self.jaxlib_builds, "jax_builds": self.jax_builds,
               "pinned": self.pinned}
        out["pairing"] = (self.pairing or {}).get("pairing", "time")
        if (self.pairing or {}).get("unknown"):
            out["pins_not_in_xla_checkout"] = self.pairing["unknown"]  # type: ignore[index]
        if self.edge_json is not None:
            out["edge_checks"] = self.edge_json
        if self.plan is not None:
            out["plan"] = asdict(self.plan)
        return out

    def _point_json(self, p: PointResult) -> dict:
        out = p.as_json()
        pin = self.behind_pin(p)
        out["behind_pin"] = pin  # the JAX commit's own pin when this XLA commit is older than it
        if pin and p.status == Status.BUILD_FAILED.value:
            out["build_failure_reason"] = (f"xla {p.xla[:12]} is older than jax {p.jax[:12]}'s pin {pin[:12]}: "
                                           "JAX may need an XLA feature it does not have yet")
        return out


class ChangeKind(Enum):
    """Whether a step made things worse or better, given the metric's direction."""

    REGRESSION = "regression"
    IMPROVEMENT = "improvement"


@dataclass(frozen=True)
class Change:
    """One step: between ``before_index`` (last good point before) and ``after_index``.

    Indices are positions in the series as given (failed points included). ``strength`` is the
    step divided by its standard error (a z-score; >= ``z_min`` for every reported change).
    ``edge`` is True when one side of the step holds a single good point at the end (or start)
    of the series: the step may be a lone slow run, so measure that point again to confirm it.
    """

    before_index: int
    after_index: int
    level_before: float
    level_after: float
    relative_change: float
    strength: float
    kind: ChangeKind
    edge: bool = False
    #: points (pairs) and samples each level rests on (its segment, outliers set aside)
    n_before: int = 0
    n_after: int = 0
    samples_before: int = 0
    samples_after: int = 0


@dataclass(frozen=True)
class StepNumbers:
    """A step's levels (medians of the scan's points on each side) and what they rest on."""

    before: float
    after: float
    relative_change: float
    n_before: int          # points (pairs) on each side
    n_after: int
    samples_before: int    # samples of those points
    samples_after: int

    def levels(self) -> str:
        """``576.4 → 540.1``"""
        return f"{self.before:.4g} → {self.after:.4g}"

    def counts(self) -> str:
        """``n=3 / n=4 points`` (with samples when points were repeated)."""
        out = f"n={self.n_before} / n={self.n_after} point{'s' if self.n_after != 1 else ''}"
        if (self.samples_before, self.samples_after) != (self.n_before, self.n_after):
            out += f" ({self.samples_before} / {self.samples_after} samples)"
        return out


@dataclass
class Step:
    """A step detection found in a series of points: the change and the points on either side."""

    change: Change
    before: PointResult   # last instant before the step
    after: PointResult    # first instant after it
    before_index: int     # indices into the scan's points
    after_index: int

    @property
    def kind(self) -> ChangeKind:
        return self.change.kind

    def numbers(self) -> StepNumbers:
        """The step's numbers, the same for every command (show, detect, bisect, report)."""
        c = self.change
        return StepNumbers(c.level_before, c.level_after, c.relative_change, c.n_before, c.n_after,
                           c.samples_before, c.samples_after)

    def as_json(self) -> dict:
        c = self.change
        return {"before": self.before.time, "after": self.after.time, "from_value": c.level_before,
                "to_value": c.level_after, "relative_change": c.relative_change, "kind": c.kind.value,
                "strength": c.strength, "edge": c.edge, "n_before": c.n_before, "n_after": c.n_after,
                "before_pair": {"xla": self.before.xla, "jax": self.before.jax},
                "after_pair": {"xla": self.after.xla, "jax": self.after.jax}}


@dataclass
class NightlyPoint:
    date: str
    image: str
    status: Status
    digest: str | None = None
    value: float | None = None
    samples: list[float] = field(default_factory=list)
    xla: str | None = None
    jax: str | None = None
    runs: list[dict[str, Any]] = field(default_factory=list)
    detail: str | None = None
    metric: str = ""  # '': the metric the regex reads; else a named METRIC line's (--metrics)

    def as_json(self) -> dict[str, Any]:
        return {"date": self.date, "image": self.image, "digest": self.digest,
                "status": self.status.value, "value": self.value, "samples": self.samples,
                "xla": self.xla, "jax": self.jax, **run_sample_counts(self.runs)}

    @property
    def spread(self) -> float | None:
        return spread(self.samples)


#: Most samples of one state while a bisection's verdict on it is unsure (--max-repeats).
DEFAULT_MAX_REPEATS = 20
#: The smallest step a bisection pins, as a fraction of the level (``--min-change`` of bisect).
BISECT_MIN_CHANGE = 0.02
#: The daily level's nightly images (``--image``: a template with ``{date}``) and its benchmark.
DEFAULT_IMAGE = "ghcr.io/nvidia/jax:nightly-{date}"
DEFAULT_BENCH_CMD = "/bin/bash /dir/test.sh"


def check_min_change(value: float, error: type[Exception] | None = None) -> float:
    """``--min-change`` of a bisection or a hunt: a fraction of the level strictly between 0 and 1
    (the one check; ``error``: the kind of error to raise, a UserError by default)."""
    if not 0 < value < 1:
        from hourly.errors import UserError
        raise (error or UserError)(f"--min-change must lie between 0 and 1 (a fraction of the level), not {value}",
                                   "pass --min-change 0.02 for 2 %")
    return value


class Mode(Named):
    """What a bisection compares: the metric against the ends, the exit status, or (bisection
    only) whether each run printed the metric (``printed``: a benchmark whose metric stops, as
    ``MLUPS: nan`` or no line, while it still exits 0)."""

    METRIC = "metric"
    EXIT = "exit"
    PRINTED = "printed"


class ExecutorKind(Named):
    """Where pairs are built and measured (hourly.execute.executors): here in turn, or as Slurm jobs."""

    LOCAL = "local"
    SLURM = "slurm"


class RequestKind(Named):
    """What one executor job does (hourly/worker.py): build a pair and benchmark it (scan, bisect), or
    build it and capture one run of the benchmark under the JAX profiler (profile)."""

    MEASURE = "measure"
    PROFILE = "profile"


class Blame(Named):
    """Which repository's change alone brings a regression (bisection, when a step moves both)."""

    XLA = "xla"
    JAX = "jax"
    #: exit mode's chain: old xla + new jax (a state of the search's chain) is good and the first bad
    #: state bad, so the xla commit brings the change on the new jax; xla with the old jax is not built
    XLA_ON_NEW_JAX = "xla_on_new_jax"
    BOTH = "both"        # neither change alone regresses: the pair of them does
    UNKNOWN = "unknown"  # a mixed pair could not be tested

    @property
    def repo(self) -> str | None:
        """The repository whose commit this blame names (None: both, unknown)."""
        return {"xla": "xla", "xla_on_new_jax": "xla", "jax": "jax"}.get(self.value)


class InstallerKind(Named):
    """What makes and fills the release level's environments (``auto``: uv when installed)."""

    AUTO = "auto"
    UV = "uv"
    PIP = "pip"


@dataclass
class ReleasePoint:
    """The result of one jax release at the release level (``hourly releases``)."""

    version: str
    jaxlib: str | None
    released: str | None     # ISO 8601 UTC: the index's upload time, or the wheel's build time
    status: Status
    value: float | None = None
    samples: list[float] = field(default_factory=list)
    runs: list[dict[str, Any]] = field(default_factory=list)
    detail: str | None = None
    installer: str | None = None  # "uv" | "pip"
    env: str | None = None        # the environment's directory
    metric: str = ""  # '': the metric the regex reads; else a named METRIC line's (--metrics)

    def as_json(self) -> dict[str, Any]:
        return {"version": self.version, "jaxlib": self.jaxlib, "released": self.released,
                "status": self.status.value, "value": self.value, "samples": self.samples,
                "detail": self.detail, "installer": self.installer, **run_sample_counts(self.runs)}

    @property
    def spread(self) -> float | None:
        return spread(self.samples)

    @property
    def date(self) -> str | None:
        return self.released[:10] if self.released else None
