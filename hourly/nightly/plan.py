"""``hourly nightly``: the guide's daily scan, one nightly container per date.

For each date of the window (both ends included, every ``--every`` days): make the image
available (local, else pulled; a tag that does not exist is recorded as *missing*), read the JAX
and XLA commits and the digest out of it, run the benchmark ``--repeats`` times in fresh
containers (always removed), keep each run's full output under ``<workdir>/logs/nightly/``, and
store the date's result in the workdir's SQLite store (table ``nightly``, and the ``points`` table
at level "nightly" for dates whose commits are known). The report names the good day → bad day
boundary with the exact commits on both sides and the next commands to run.

This module holds the settings, the pure parts (dates, GPU slots, the boundary, the report record)
and the report of what the store holds (:func:`show`); hourly/nightly/run.py runs the containers;
hourly/render/nightly.py prints.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field, replace
from datetime import date, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hourly import options
from hourly.adapters.proc import parse_env, split_command
from hourly.adapters.store import Store
from hourly.errors import UserError
from hourly.measure.settings import ReadsMetrics
from hourly.metric import DEFAULT_METRIC_REGEX, compile_metric_regex
from hourly.model import DEFAULT_BENCH_CMD, DEFAULT_IMAGE, NightlyPoint, PointResult, Status
from hourly.text.timeparse import parse_time

if TYPE_CHECKING:
    from hourly.analysis.detect import Detection
    from hourly.analysis.resolution import Resolution

LEVEL = "nightly"
DEFAULT_MOUNT_TARGET = "/dir"
#: the detail of a date of the window that has no stored result yet
NOT_MEASURED = "not measured"


# --------------------------------------------------------------------------------------------
# settings

@dataclass(frozen=True)
class NightlySettings(ReadsMetrics):
    """The daily level's settings: frozen; :meth:`validate` returns them checked, the default mount
    pinned (derive others with ``dataclasses.replace``)."""

    from_: str
    to: str
    image: str = DEFAULT_IMAGE
    mounts: list[str] = field(default_factory=list)  # SRC:DST; [] means $PWD:/dir
    gpus: str = "all"
    env: list[str] = field(default_factory=list)
    bench_cmd: str = DEFAULT_BENCH_CMD
    metric_regex: str = DEFAULT_METRIC_REGEX
    repeats: int = 1
    timeout: float | None = None
    every: int = 1
    workdir: str = "hourly-work"
    pull: bool = True
    parallel: int = 1
    rerun: bool = False
    higher_is_better: bool = True
    #: named metrics (``--metrics``): None reads the regex's one metric; "all" or "a,b" records
    #: every (or each listed) ``METRIC name:`` line, each line a sample
    metrics: str | None = None
    metric_samples: str = "last"  # the regex's metric: "all" takes every match as a sample
    warmup_samples: int = 0       # each run's first K matches (per name) are its warm-up

    def effective_mounts(self) -> list[str]:
        return list(self.mounts) or [f"{os.getcwd()}:{DEFAULT_MOUNT_TARGET}"]

    def container_workdir(self) -> str | None:
        """Runs start in /dir when something is mounted there (so relative commands work)."""
        targets = [m.split(":")[1] for m in self.effective_mounts() if m.count(":") >= 1]
        return DEFAULT_MOUNT_TARGET if DEFAULT_MOUNT_TARGET in targets else None

    def argv(self) -> list[str]:
        return split_command(self.bench_cmd, "--bench-cmd", f"pass the benchmark command, e.g. {DEFAULT_BENCH_CMD!r}")

    def key(self) -> str:
        """What makes two nightly results comparable: images, command, mounts, env, regex.

        GPU selection and parallelism are left out: they change where a run happens, not what.
        """
        mounts = []
        for m in self.effective_mounts():
            src, _, rest = m.partition(":")
            mounts.append(f"{Path(src).expanduser().absolute()}:{rest}")
        ident: dict[str, Any] = {"image": self.image, "cmd": self.argv(), "mounts": mounts,
                                 "env": sorted(self.env), "regex": self.metric_regex}
        self.add_reading(ident)
        return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:16]

    def validate(self) -> NightlySettings:
        """These settings checked before anything runs, returned with the default mount pinned to
        $PWD now, so the stored settings (and `--show` from elsewhere) keep meaning the same
        directory."""
        if "{date}" not in self.image:
            raise UserError(f"--image {self.image!r} has no {{date}}",
                            "write it like ghcr.io/nvidia/jax:nightly-{date}")
        options.refuse("nightly", {"repeats": self.repeats, "every": self.every, "parallel": self.parallel,
                                   "timeout": self.timeout, "metric_samples": self.metric_samples,
                                   "warmup_samples": self.warmup_samples})
        date_range(self.from_, self.to, self.every)  # the dates parse and are in order
        compile_metric_regex(self.metric_regex)
        self.named_metrics()
        parse_env(self.env)
        from hourly.adapters import containers  # the Docker SDK only when a nightly scan is set up
        for m in self.effective_mounts():
            containers.parse_mount(m)
        containers.parse_gpus(self.gpus)
        gpu_slots(self.gpus, self.parallel)
        self.argv()
        return replace(self, mounts=self.effective_mounts())

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# --------------------------------------------------------------------------------------------
# pure parts

def parse_date(text: str) -> date:
    """A calendar date: 2023-07-06, "Jul 6 2023", … (times are not allowed)."""
    p = parse_time(text)
    if not p.date_only:
        raise UserError(f"{text!r} is a time, the nightly scan takes dates",
                        "pass a date like 2023-07-06")
    return p.when.date()


def date_range(from_: str, to: str, every: int = 1) -> list[date]:
    """Dates from ``from_`` to ``to``, both included, ``every`` days apart; the last date is always
    one, on the ``every`` grid or not (``--every 2`` from the 6th to the 9th: 6, 8 and 9; a change
    on the 9th is not left out)."""
    d0, d1 = parse_date(from_), parse_date(to)
    if d1 < d0:
        raise UserError(f"--to {to} is before --from {from_}", "swap them")
    out, d = [], d0
    while d < d1:
        out.append(d)
        d += timedelta(days=every)
    out.append(d1)
    return out


def image_ref(template: str, d: date) -> str:
    return template.format(date=d.isoformat())


def gpu_slots(gpus: str, parallel: int) -> list[str]:
    """The ``--gpus`` value each of ``parallel`` workers uses, one GPU set per worker (pure).

    ``all`` → GPU i for worker i; ``0,3,5`` (or ``device=0,3,5``) → one listed id each; ``N`` →
    N consecutive GPUs each; ``none`` → none for all.
    """
    g = str(gpus).strip().lower()
    if parallel == 1:
        return [g]
    if g in ("none", "0", ""):
        return ["none"] * parallel
    # "device=…" because a bare number means a count to Docker (and to parse_gpus)
    if g == "all":
        return [f"device={i}" for i in range(parallel)]
    if g.isdigit():
        k = int(g)
        return ["device=" + ",".join(str(i * k + j) for j in range(k)) for i in range(parallel)]
    ids = [p.strip() for p in g.removeprefix("device=").split(",") if p.strip()]
    if len(ids) < parallel:
        raise UserError(f"--parallel {parallel} needs at least {parallel} GPUs, --gpus names {len(ids)}",
                        "name more GPUs or lower --parallel")
    return [f"device={i}" for i in ids[:parallel]]


@dataclass
class Boundary:
    good: NightlyPoint
    bad: NightlyPoint
    kind: str  # "slower" | "crash"
    change: float | None  # relative change of the metric from good to bad
    #: named metrics (--metrics): the metric whose regression it is; None: the regex's one metric, or a crash
    metric: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "change": self.change, "metric": self.metric,
                "good": {k: getattr(self.good, k) for k in ("date", "image", "digest", "xla", "jax")},
                "bad": {k: getattr(self.bad, k) for k in ("date", "image", "digest", "xla", "jax")}}


def detect_steps(points: list[NightlyPoint], higher_is_better: bool = True) -> list:
    """hourly's detection (hourly.analysis.steps) over the dates; missing and broken dates are gaps.

    Each image is its own point: two dates merge only when they ran the same image (same digest),
    not merely the same (xla, jax) commits, since images built from the same commits can still
    differ in their environment (CUDA, cuDNN, NCCL, Python packages) and so in speed — such a step
    is kept, and `hourly hunt` answers it with the difference of the two images' environments.

    Returns :class:`hourly.analysis.steps.Step` objects whose indices are positions in ``points``.
    """
    return detect_dates(points, higher_is_better)[0]


def detect_dates(points: list[NightlyPoint], higher_is_better: bool = True) -> tuple[list, Any]:
    """:func:`detect_steps` and the detection behind it (None without a measured date): its
    ``too_short`` says when the dates cannot tell noise from steps."""
    steps, detection, _ = _detect_groups(points, higher_is_better)
    return steps, detection


def _detect_groups(points: list[NightlyPoint], higher_is_better: bool) -> tuple[list, Any, list]:
    from hourly.analysis.steps import find_steps
    if not any(p.status is Status.OK for p in points):
        return [], None, []
    rows, keys = rows_and_keys(points)
    return find_steps(rows, higher_is_better, keys=keys)


def date_resolution(detection: Detection | None, groups: list) -> Resolution | None:
    """The smallest step the dates' noise lets show between any two neighbouring dates
    (hourly.analysis.resolution.Resolution; None under two measured images)."""
    from hourly.analysis.resolution import resolution
    return None if detection is None else resolution(detection, [len(g.samples or []) for g in groups])


def resolution_fix(r: Resolution, s: NightlySettings) -> str:
    """The same dates measured often enough to see a step of the default --min-change (1 %)."""
    from hourly.analysis.detect import DEFAULT_MIN_CHANGE
    from hourly.analysis.resolution import repeats_fix
    return repeats_fix(r, DEFAULT_MIN_CHANGE, "date", lambda n: nightly_command(replace(s, repeats=n), rerun=True))


def rows_and_keys(points: list[NightlyPoint]) -> tuple[list[PointResult], list]:
    """The dates as detection's points, and what tells them apart: the image (its digest), so that
    two dates merge only when they ran the same image; a date without commits is its own."""
    rows = [PointResult(p.date, p.xla or f"unknown-{p.date}", p.jax or f"unknown-{p.date}",
                        p.status.value, p.value, list(p.samples)) for p in points]
    keys = [(r.xla, r.jax, p.digest or p.date) for r, p in zip(rows, points, strict=True)]
    return rows, keys


#: Runs of each date asked for when one value per date cannot tell noise from steps.
UNDECIDED_REPEATS = 3


def undecided_note(detection: Detection | None, s: NightlySettings, metric: str | None = None) -> str | None:
    """One line when the dates are too few to tell noise from steps (Detection.too_short), with
    the command that tells: the same dates measured several times each; else None. ``metric``:
    the named metric whose dates these are."""
    from hourly.analysis.steps import too_short
    why = too_short(detection, "date") if detection is not None else None
    if why is None or detection is None:
        return None
    if metric:
        why = f"{metric}: {why}"
    if detection.repeated:
        more = (f"measure every date (--every 1, not {s.every})" if s.every > 1
                else "measure the days before and after the window too")
        return f"{why}; {more}, or scan a window hour by hour inside a day's container (`hourly hunt`)"
    return (f"{why}; measure each date {UNDECIDED_REPEATS} times to tell: "
            f"{nightly_command(replace(s, repeats=max(UNDECIDED_REPEATS, s.repeats)), rerun=True)}")


def nightly_command(s: NightlySettings, rerun: bool = False) -> str:
    """The ``hourly nightly`` command of these settings, through the one encoder (values of
    secret-looking --env redacted); the default mount as pinned when it ran, so the command works
    from anywhere."""
    default = NightlySettings(s.from_, s.to)

    def given(name: str) -> Any:
        v = getattr(s, name)
        return v if v is not None and v != getattr(default, name) else None

    return options.command_line("nightly", [
        ("from_", s.from_), ("to", s.to), *((n, given(n)) for n in (
            "image", "gpus", "bench_cmd", "metric_regex", "metrics", "metric_samples", "warmup_samples",
            "repeats", "timeout", "every", "parallel")),
        ("mount", list(s.mounts)), ("env", list(s.env)), ("pull", None if s.pull else False),
        ("higher_is_better", None if s.higher_is_better else False), ("workdir", s.workdir),
        ("rerun", rerun or None)])


def find_boundary(points: list[NightlyPoint],
                  regressions: list[tuple[int, int, float]]) -> Boundary | None:
    """The good day → bad day to hand to the next phase (pure).

    ``regressions`` are detected slowdowns as (index of the last date before, index of the
    first date after, relative change); the largest wins. Without one, the first OK date
    followed by a crash or timeout.
    """
    if regressions:
        before, after, change = max(regressions, key=lambda r: abs(r[2]))
        return Boundary(points[before], points[after], "slower", change)
    last_ok = None
    for p in points:
        if p.status is Status.OK:
            last_ok = p
        elif p.status in (Status.CRASHED, Status.TIMEOUT) and last_ok is not None:
            return Boundary(last_ok, p, "crash", None)
    return None


def next_commands(b: Boundary, s: NightlySettings) -> list[str]:
    """What to run next: the good day's container, then the hourly scan inside it."""
    container = {"date": b.good.date, "image": s.image if s.image != DEFAULT_IMAGE else None,
                 "gpus": s.gpus if s.gpus != "all" else None}
    # the scan reads each run's output as the daily level did, following the metric that regressed
    scan = {"from_": b.good.date, "to": b.bad.date, "bench_cmd": s.bench_cmd,
            "metric_regex": s.metric_regex if s.metric_regex != DEFAULT_METRIC_REGEX else None,
            "metric_samples": s.metric_samples if s.metric_samples != "last" else None,
            "warmup_samples": s.warmup_samples or None, "metrics": s.metrics, "metric": b.metric}
    return [options.command_line("container", container), options.command_line("scan", scan)]


@dataclass
class NightlyMetric:
    """One named metric of the daily level (``--metrics``): its dates, its steps, what it did."""

    name: str
    higher_is_better: bool
    points: list[NightlyPoint]
    steps: list = field(default_factory=list)  # hourly.analysis.steps.Step, indices into points
    moved: Any = None  # hourly.analysis.moved.Moved

    def as_json(self) -> dict[str, Any]:
        return {"higher_is_better": self.higher_is_better, "points": [p.as_json() for p in self.points],
                **(self.moved.as_json() if self.moved else {}), "steps": [st.as_json() for st in self.steps]}


@dataclass
class NightlyReport:
    points: list[NightlyPoint]
    boundary: Boundary | None
    settings: NightlySettings
    measured: int = 0  # dates run now (not from the store)
    steps: list = field(default_factory=list)  # hourly.analysis.steps.Step, indices into points
    #: named metrics: each metric's dates and steps (``points`` and ``steps`` are the first's); the
    #: boundary is the largest regression of any of them
    metrics: list[NightlyMetric] | None = None
    #: too few dates to tell noise from steps, and the command that tells (undecided_note); None: they can
    undecided: str | None = None
    #: the smallest step the dates' noise lets show (hourly.analysis.resolution.Resolution; None under
    #: two measured images, and with named metrics: each says its own bound)
    resolution: Any = None

    def unresolved(self) -> bool:
        """Whether no step was found, no date is undecided, no boundary was found, and a step of
        the default --min-change (1 %) could not have shown through the measured dates' noise:
        "no steps found" (and a hunt's "nothing to hunt", or "no step found among the dates
        measured" beside a gap) from such dates would say more than the runs can
        (:meth:`require_decided` says so, with :func:`resolution_fix`)."""
        from hourly.analysis.detect import DEFAULT_MIN_CHANGE
        r = self.resolution
        return not (r is None or r.resolves(DEFAULT_MIN_CHANGE) or self.steps or self.boundary is not None
                    or self.undecided or self.metrics is not None)

    def as_json(self) -> dict[str, Any]:
        gaps = self.gaps()
        out: dict[str, Any] = {"points": [p.as_json() for p in self.points],
                               "steps": [st.as_json() for st in self.steps],
                               "boundary": self.boundary.as_json() if self.boundary else None,
                               "complete": not any(g["kind"] == NOT_MEASURED for g in gaps), "gaps": gaps,
                               "undecided": self.undecided}
        if self.resolution is not None:
            from hourly.analysis.detect import DEFAULT_MIN_CHANGE
            out["resolution"] = self.resolution.as_json(DEFAULT_MIN_CHANGE)
            out["resolution"]["fix"] = None if self.resolution.resolves(DEFAULT_MIN_CHANGE) else \
                resolution_fix(self.resolution, self.settings)
        if self.metrics is not None:
            from hourly.analysis.moved import summary
            out["metrics"] = {m.name: m.as_json() for m in self.metrics}
            out["moved"] = summary([m.moved for m in self.metrics])
        return out

    def gaps(self) -> list[dict[str, Any]]:
        """Where the window holds no evidence a step could show in: runs of dates not measured yet
        (an interrupted run: the same command measures them), and runs of dates without a usable
        image at either end of the window (a step there would not show; inside the window a step
        across missing days is still found between the days around them)."""
        usable = [i for i, p in enumerate(self.points) if p.status is not Status.MISSING]
        out: list[dict[str, Any]] = []
        i = 0
        while i < len(self.points):
            p = self.points[i]
            if p.status is not Status.MISSING:
                i += 1
                continue
            j = i
            kind = NOT_MEASURED if p.detail == NOT_MEASURED else "no image"
            while j + 1 < len(self.points) and self.points[j + 1].status is Status.MISSING and \
                    (self.points[j + 1].detail == NOT_MEASURED) == (kind == NOT_MEASURED):
                j += 1
            edge = not usable or j < usable[0] or i > usable[-1]
            if kind == NOT_MEASURED or edge:
                out.append({"kind": kind, "from": self.points[i].date, "to": self.points[j].date,
                            "dates": j - i + 1, "where": "edge" if edge else "inside"})
            i = j + 1
        return out

    def next_commands(self) -> list[str]:
        return next_commands(self.boundary, self.settings) if self.boundary else []

    def none_measured(self) -> bool:
        """Whether dates ran (an image was there) but none of them measured the metric: every run
        crashed, timed out or printed no metric, so no step could show."""
        ran = [p for p in self.points if p.status is not Status.MISSING]
        return bool(ran) and not any(p.status is Status.OK and p.value is not None for p in ran)

    def require_decided(self) -> None:
        """No boundary over dates too few to tell noise from steps is no answer (exit 1 with the
        command that measures each date several times), not "nothing to hand over"; nor is one
        over a window where no date has an image."""
        if self.boundary is None and self.points and all(p.status is Status.MISSING for p in self.points):
            raise UserError(f"no boundary to hand over: no nightly image for any of the {len(self.points)} dates "
                            f"({self.points[0].image} .. {self.points[-1].image})",
                            f"check --image (`docker pull {self.points[0].image}` says why), or pick dates "
                            "that have an image")
        if self.boundary is None and self.points and self.none_measured():
            failed = [p for p in self.points if p.status is not Status.MISSING]
            raise UserError(f"no boundary to hand over: no date measured the metric ({len(failed)} of "
                            f"{len(self.points)} dates ran and failed: {failed[0].date} {failed[0].status.value}"
                            + (f" .. {failed[-1].date} {failed[-1].status.value})" if len(failed) > 1 else ")"),
                            f"see why in the runs' logs under {self.settings.workdir}, or open a date's container "
                            "and try the benchmark: " + options.command_line("container", {"date": failed[0].date}))
        if self.undecided and self.boundary is None:
            why, _, fix = self.undecided.partition("; ")
            raise UserError(f"no boundary to hand over: {why}", fix)
        if self.unresolved():
            from hourly.analysis.detect import DEFAULT_MIN_CHANGE
            from hourly.analysis.resolution import size
            x = size(self.resolution.relative, DEFAULT_MIN_CHANGE)
            raise UserError(f"no boundary to hand over: no step of {x} or more among the dates, and steps from "
                            f"{size(DEFAULT_MIN_CHANGE)} to {x} cannot be told from the noise",
                            resolution_fix(self.resolution, self.settings))


def stored_nightly(store: Store, s: NightlySettings | None = None, measured: int = 0,
         dates: list[date] | None = None) -> NightlyReport:
    """The stored nightly results (of the last nightly run's settings unless ``s``)."""
    if s is None:
        saved = store.load_settings(LEVEL)
        if not saved:
            raise UserError(f"no nightly results in {store.workdir}",
                            "run `hourly nightly --from ... --to ...` first")
        s = NightlySettings(**saved)
    if dates is None:
        dates = date_range(s.from_, s.to, s.every)
    named = s.named_metrics()
    if named is not None:
        return _named_report(store, s, measured, dates, named)
    points = _dates(store.nightly_points(s.key()), s, dates)
    steps, detection, groups = _detect_groups(points, s.higher_is_better)
    from hourly.analysis.detect import ChangeKind  # numpy: only when a report is made
    regressions = [(st.before_index, st.after_index, st.change.relative_change) for st in steps
                   if st.kind is ChangeKind.REGRESSION]
    return NightlyReport(points, find_boundary(points, regressions), s, measured, steps,
                         undecided=undecided_note(detection, s), resolution=date_resolution(detection, groups))


def _dates(have: dict[str, NightlyPoint], s: NightlySettings, dates: list[date]) -> list[NightlyPoint]:
    return [have.get(d.isoformat()) or NightlyPoint(d.isoformat(), image_ref(s.image, d), Status.MISSING,
                                                    detail=NOT_MEASURED) for d in dates]


def _named_report(store: Store, s: NightlySettings, measured: int, dates: list[date],
                  named: list[str]) -> NightlyReport:
    """Every named metric's dates and steps; the boundary: the largest regression of any metric
    (their dates are the same dates of the same images; the boundary names that metric), else the
    first crash. Dates too few to tell noise from steps in a metric that found no step: undecided,
    with the command that tells."""
    from hourly.analysis.detect import ChangeKind
    from hourly.analysis.moved import what_moved
    key = s.key()
    names = store.nightly_metric_names(key) if "all" in named else named
    any_row = store.nightly_points(key, metric=None)
    metrics = []
    undecided = None
    for name in names:
        have = store.nightly_points(key, metric=name)
        for day, p in any_row.items():  # a date measured without a row of this metric: not printed there
            if day not in have:
                have[day] = NightlyPoint(p.date, p.image, Status.NO_METRIC, p.digest, xla=p.xla, jax=p.jax,
                                         detail=f"{name} never printed; the runs printed other metrics", metric=name)
        points = _dates(have, s, dates)
        direction = s.direction_of(name)
        rows, keys = rows_and_keys(points)
        incomplete = any(p.detail == NOT_MEASURED for p in points)
        moved, detection = what_moved(name, rows, direction, incomplete=incomplete, keys=keys)
        metrics.append(NightlyMetric(name, direction, points, moved.steps, moved))
        if undecided is None and not moved.steps and detection is not None:
            undecided = undecided_note(detection, s, name)
    points = metrics[0].points if metrics else _dates(store.nightly_points(key, metric=None), s, dates)
    regressions = [(st.before_index, st.after_index, st.change.relative_change, m.name) for m in metrics
                   for st in m.steps if st.kind is ChangeKind.REGRESSION]
    boundary = find_boundary(points, [r[:3] for r in regressions])
    if boundary is not None and boundary.kind == "slower":  # the metric whose regression it is
        boundary.metric = max(regressions, key=lambda r: abs(r[2]))[3]
    return NightlyReport(points, boundary, s, measured, metrics[0].steps if metrics else [], metrics, undecided)
