"""``hourly report``'s facts gathered (:func:`gather_report`): the store read, the steps detected in
the stored scan, each step's commits listed from the checkouts, the environment captured when no
scan recorded it, ``hourly explain``'s and ``hourly profile``'s records read — everything
hourly/render/report.py needs to write the report from a :class:`~hourly.report.data.ReportData`
alone."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from hourly.adapters.gitrepo import GitRepo
from hourly.adapters.store import Store
from hourly.analysis.detect import DEFAULT_MIN_CHANGE
from hourly.analysis.steps import all_windows, find_steps
from hourly.errors import UserError
from hourly.explain.plan import load_records
from hourly.measure import machine as environment
from hourly.measure.pinned import pinned_line
from hourly.measure.settings import Settings
from hourly.model import REPOS, PointResult, Step
from hourly.profile.run import RECORD as PROFILE_RECORD
from hourly.releases.plan import LEVEL as RELEASE_LEVEL
from hourly.releases.plan import stored_releases
from hourly.report.data import (
    MAX_COMMITS,
    Answers,
    CommitRow,
    Commits,
    CommitsByStep,
    ProfileCapture,
    ReportData,
    ScanData,
)
from hourly.scan.identity import other_scans
from hourly.scan.table import REPRODUCE, findings, gaps, has_scan, stored_scan, undecided_note, unmeasured_pairs
from hourly.scan.table import scan_command as table_scan_command


def scan_command(s: Settings) -> str:
    """The `hourly scan` command line that reproduces the stored measurement (the one encoder,
    hourly.options, through :func:`hourly.scan.table.scan_command`: secret-looking values redacted)."""
    return table_scan_command(s, explicit=REPRODUCE)


def split_answers(store: Store, s: Settings | None = None) -> Answers:
    """The store's answers split by build (:class:`~hourly.report.data.Answers`, from
    hourly.scan.identity.answers_by_build); ``s``: the stored scan's settings (read from the store
    when not given)."""
    from hourly.measure.settings import stored_settings
    from hourly.scan.identity import answers_by_build
    split = answers_by_build(store, s if s is not None else stored_settings(store))
    return Answers(split.current, split.others, store.measure_keys(), split.key)


def gather_report(store: Store, s: Settings, min_change: float | None = None, anonymous: bool = False) -> ReportData:
    """What the report of ``store``'s workdir says (``s``: its stored settings; ``min_change``: the
    smallest step it lists; ``anonymous``: no host name); a workdir with nothing to report is a
    :class:`~hourly.errors.UserError`."""
    releases = stored_releases(store) if store.load_settings(RELEASE_LEVEL) else None
    bisected = bool(store.bisection_answers() or store.unfinished_bisections())
    if not has_scan(store) and releases is None and not bisected:
        raise UserError(f"no scan and no bisection in {store.workdir}: nothing to report",
                        "run hourly scan (or hourly bisect --good --bad) there first")
    data = ReportData(store.workdir, s, anonymous, min_change, releases=releases)
    if not has_scan(store) and bisected:
        # `hourly bisect --good --bad` alone: its answers, never a scanned window it did not measure
        return replace(data, answers=split_answers(store, s), unfinished=store.unfinished_bisections(),
                       **_surroundings(store, s))
    if releases is not None and not store.points("hourly"):  # the release level alone
        return data
    table = stored_scan(store, s)
    points = table.points
    base = ScanData(points, all_windows(points), gaps(points), unmeasured_pairs(points), table.edge_checks or {})
    if table.metrics is not None:  # every named metric (--metrics, the per-phase harness)
        found = findings(table, min_change)
        scan = replace(base, findings=found)
        steps = [st for f in found for st in f.moved.steps]
    else:
        scan = _one_metric(base, s, min_change)
        scan = replace(scan, pinned=pinned_line(store.load_settings("pinned")))
        steps = scan.steps
    return replace(data, scan=scan, answers=split_answers(store, s), commits=_commits(s, steps),
                   scan_command=scan_command(s), resume_command=table_scan_command(s),
                   other_measurements=other_scans(store, s.bench_key()),
                   **_surroundings(store, s))


def _one_metric(base: ScanData, s: Settings, min_change: float | None) -> ScanData:
    """The steps of the scan's one metric (those of ``min_change`` or more; the smaller ones left
    out), and, where none was found, why none can be told."""
    points = base.points
    ok = [p for p in points if p.status == "ok"]
    steps = find_steps(points, s.higher_is_better, min_change)[0] if ok else []
    # the steps --min-change leaves out are said, never "no step change was detected"
    left_out = [st for st in find_steps(points, s.higher_is_better)[0]
                if abs(st.change.relative_change) < min_change] if ok and min_change else []
    scan = replace(base, metric="MLUPS" if "MLUPS" in s.metric_regex else "metric", steps=steps, left_out=left_out)
    if steps or (left_out and min_change) or (points and not ok) or base.windows or base.gaps:
        return scan  # the report says why before it would ask the noise
    undecided = _undecided(points, s)
    if undecided:
        return replace(scan, undecided=undecided)
    from hourly.scan.resolution import fix, of_points
    r = of_points(points, s.higher_is_better)[0]
    if r is None or r.resolves(DEFAULT_MIN_CHANGE):
        return scan
    return replace(scan, resolution=r, resolution_fix=fix(r, s))


def _undecided(points: list[PointResult], s: Settings) -> str | None:
    """Why the scan's table cannot tell noise from steps, with the command that can (None: it can)."""
    if not any(p.status == "ok" and p.value is not None for p in points):
        return None
    return undecided_note(find_steps(points, s.higher_is_better)[1], s)


def _surroundings(store: Store, s: Settings) -> dict:
    """The environment (as a scan recorded it, else captured now), explain's records, profile's
    captures: every report's closing sections."""
    stored = store.load_settings("environment")
    return {"env": stored or environment.capture(s.python, s.env_dict(), s.only), "env_now": not stored,
            "explained": load_records(store.workdir), "profiles": _profiles(store.workdir)}


def _profiles(workdir: Path) -> list[ProfileCapture]:
    """``hourly profile``'s captures of the workdir, each with its ``profile.json`` (None when
    missing or unreadable)."""
    folder = workdir / "profiles"
    out = []
    for comp in sorted(folder.glob("*/comparison.txt")) if folder.is_dir() else []:
        path = comp.parent / PROFILE_RECORD
        try:
            record = json.loads(path.read_text()) if path.is_file() else None
        except (OSError, ValueError):
            record = None
        out.append(ProfileCapture(comp.parent, comp, record))
    return out


def _open_repos(s: Settings) -> dict[str, GitRepo | None]:
    out: dict[str, GitRepo | None] = {}
    for name, path in (("xla", s.xla_repo), ("jax", s.jax_repo)):
        try:
            out[name] = GitRepo(path, name)
        except Exception:
            out[name] = None
    return out


def _commits(s: Settings, steps: list[Step]) -> CommitsByStep:
    """Each step's first-parent commits per repository that moved (None: the checkout could not be
    opened): a merge of a pull request by its own author, with the merged commits' subjects."""
    repos = _open_repos(s)
    out: CommitsByStep = {}
    for step in steps:
        for name in REPOS:
            old, new = getattr(step.before, name), getattr(step.after, name)
            if old == new or (name, old, new) in out:
                continue
            repo = repos.get(name)
            if repo is None:
                out[(name, old, new)] = None
                continue
            commits = repo.log(old, new)
            merges = set(repo.merges(old, new))
            rows = []
            for c in reversed(commits[:MAX_COMMITS]):
                brought = repo.merged_by(c.sha) if c.sha in merges else []
                rows.append(CommitRow(c.sha, datetime.fromtimestamp(c.committer_time, timezone.utc).strftime("%Y-%m-%d %H:%M"),
                                      brought[-1].author if brought else c.author, c.subject,
                                      tuple(m.subject for m in brought)))
            out[(name, old, new)] = Commits(len(commits), tuple(rows))
    return out
