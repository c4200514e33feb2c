"""What ``hourly report`` says, as facts: :class:`ReportData`, gathered first
(:func:`hourly.report.gather.gather_report`: the store read, the steps detected, the commits listed,
the environment captured) and turned into markdown and plots by hourly/render/report.py alone."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from hourly.analysis.resolution import Resolution
    from hourly.analysis.steps import CrashWindow
    from hourly.answers import Answer
    from hourly.measure.settings import Settings
    from hourly.model import PointResult, Step
    from hourly.releases.plan import ReleaseReport
    from hourly.scan.table import MetricFinding

#: The most commits of one repository a step's section lists (the rest are counted).
MAX_COMMITS = 50


@dataclass(frozen=True)
class CommitRow:
    """One first-parent commit of a step's window as the report lists it: a merge of a pull request
    by the pull request's author, its subject with the merged commits' subjects (``merged``)."""

    sha: str
    committed: str  # UTC, ``%Y-%m-%d %H:%M``
    author: str
    subject: str
    merged: tuple[str, ...] = ()

    def known(self) -> dict:
        """The commit as hourly.render.markdown.subject reads it."""
        return {"subject": self.subject, "merged": [{"subject": m} for m in self.merged]}


@dataclass(frozen=True)
class Commits:
    """The first-parent commits of one repository between a step's two points: ``total`` of them,
    ``shown`` the newest :data:`MAX_COMMITS` of those, oldest first."""

    total: int
    shown: tuple[CommitRow, ...]


#: A step's commits per repository, keyed by (repository, commit before, commit after); None where
#: the repository could not be opened.
CommitsByStep = dict[tuple[str, str, str], Optional[Commits]]


@dataclass(frozen=True)
class Answers:
    """The store's finished bisections, split by the build they were measured under: ``current``,
    under the build the report speaks for (hourly.scan.identity.answer_key, ``key``), and
    ``others``, each with the key of its own build (``idents``: what each key was made of) —
    listed apart, never a step's answer."""

    current: list[Answer]
    others: list[tuple[str, Answer]]
    idents: dict = field(default_factory=dict)
    key: str | None = None


@dataclass(frozen=True)
class ProfileCapture:
    """One regression ``hourly profile`` traced: its folder, its comparison, its ``profile.json``
    (None when unreadable)."""

    folder: Path
    comparison: Path
    record: dict | None


@dataclass(frozen=True)
class ScanData:
    """The stored scan's table and what detection found in it: ``points`` (every named metric's
    in ``findings`` when the scan recorded several), the steps of at least ``--min-change``
    (``left_out``: the smaller ones), the crash and metric-lost ``windows``, the unmeasured
    ``gaps``, and why no step can be told (``undecided``: from the noise; ``resolution``: not at
    1 %) — the two asked only where no step was found."""

    points: list[PointResult]
    windows: list[CrashWindow]
    gaps: list[dict]
    unmeasured: int
    edge_checks: dict
    metric: str = "metric"
    steps: list[Step] = field(default_factory=list)
    left_out: list[Step] = field(default_factory=list)
    undecided: str | None = None
    resolution: Resolution | None = None  # when a step of 1 % could not have shown through the noise
    resolution_fix: str | None = None  # the scan that measures each pair often enough
    pinned: str | None = None  # what a one-repository hunt held (hourly.measure.pinned.pinned_line)
    findings: list[MetricFinding] | None = None  # each named metric's (hourly.scan.table.findings)


@dataclass(frozen=True)
class ReportData:
    """Everything the report says of a workdir: its settings, the scan (None: no scan, the release
    level's or ``hourly bisect --good --bad``'s workdir), the bisections' answers (None: the
    release level alone) and those not finished, each step's commits, the environment (``env_now``:
    captured when the report was made, no scan recorded it), ``hourly explain``'s records, ``hourly
    profile``'s captures and the release level's results."""

    workdir: Path
    settings: Settings
    anonymous: bool = False
    min_change: float | None = None
    scan: ScanData | None = None
    answers: Answers | None = None
    unfinished: list[dict] = field(default_factory=list)
    commits: CommitsByStep = field(default_factory=dict)
    scan_command: str = ""  # the stored scan's command line as it reproduces the measurement
    resume_command: str = ""  # the stored scan's command line as it resumes it (an incomplete scan)
    env: dict = field(default_factory=dict)
    env_now: bool = False
    explained: list[dict] = field(default_factory=list)
    profiles: list[ProfileCapture] = field(default_factory=list)
    releases: ReleaseReport | None = None
    #: {measurement key: states measured} of the keys other than the scan's: another benchmark or build
    #: hunted in this workdir too (labelled against the scan's key, ``answers.key``)
    other_measurements: dict[str, int] = field(default_factory=dict)
