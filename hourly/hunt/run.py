"""``hourly hunt``: from "it got slower between these dates" to the commit, in one command.

The funnel has two levels:

1. **Daily**: exactly ``hourly nightly`` (:func:`hourly.nightly.run.run_nightly`, same settings,
   same ``nightly`` table): one container per date, each date stored as it is reached.
2. **Commits**: every step (regression) and every crash window the daily level finds becomes a
   :class:`HuntWindow` — the good image's (xla, jax) commits → the bad image's. For each one,
   hourly starts ONE container of the image to bisect in (the bad day's by default: its trees
   hold both ends' commits; the good day's with ``bisect_in="good"``, then ``git fetch`` brings
   its trees up to the bad image's commits), with hourly inside as ``hourly container`` puts it
   (hourly/nightly/image.py) and the host's hunt workdir mounted at ``/hourly-work``, and
   runs ``hourly bisect --good xla@..,jax@.. --bad xla@..,jax@.. --json`` there through
   ``docker exec``, in metric mode for a step and exit mode for a crash window. The bisection's
   store (``<workdir>/bisect/<good>..<bad>/``) is on the host, so it survives the container and
   an interrupted bisection continues from its stored verdicts.

   The bisection measures both ends first. When they do not differ, the change is not in the
   sources: the answer says so, with the difference between the two images' environments
   (variables — CUDA, cuDNN, NCCL versions are variables in the JAX images — and Python packages).

Each window's answer is stored in the workdir's store (settings table, name ``hunt/<key>``) when
it is reached, so a rerun of the same command redoes neither finished dates nor finished windows.
Every container carries ``hourly.level=hunt``, ``hourly.scan=<this run>`` and the owner labels of
hourly/adapters/locks.py; the run holds its owner lock while it lives and the workdir's store lock, so a
new run first removes the containers of dead runs (``kill -9`` of the host process leaves its
bisection container running) through hourly/adapters/stale_runs.py, as ``hourly nightly`` does.

Pure parts here: :func:`windows_of` (windows from the daily report), :func:`env_diff`,
:func:`bisect_argv`, :func:`step_row`. hourly/render/hunt.py prints the answer table.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import time
import uuid
from dataclasses import dataclass, field, fields, replace
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from hourly import options
from hourly.adapters.locks import holds_store_lock
from hourly.adapters.store import Store
from hourly.adapters.store_tables.settings import Rerun
from hourly.answers import Answer, HuntRow
from hourly.errors import UsageError, UserError
from hourly.events import SILENT, Handler
from hourly.model import BISECT_MIN_CHANGE, Mode, NightlyPoint, Status, check_min_change
from hourly.nightly.plan import LEVEL as NIGHTLY_LEVEL
from hourly.nightly.plan import NightlySettings, image_ref, parse_date

if TYPE_CHECKING:  # docker is imported where a container is started
    from hourly.adapters.containers import RunResult

LEVEL = "hunt"
WORKDIR_TARGET = "/hourly-work"
BISECT_IN = ("bad", "good")
#: what `hourly bisect` says when its ends do not differ (hourly/bisect/search.py): then the step is
#: not in the sources
ENDS_ALIKE = ("do not differ", "is not worse than the good end", "by exit status")
#: what it says when its ends were neither shown to differ nor shown alike: the noise hid the
#: answer, and "the change is in the container's environment" would be a guess
ENDS_UNTOLD = ("were not shown to differ",)


@dataclass(frozen=True)
class HuntSettings:
    """What a hunt is asked to do: frozen; :meth:`validate` returns them checked (the daily level's
    validated, its default mount pinned). What one run of it holds is a :class:`HuntRun`'s."""

    nightly: NightlySettings
    bisect_in: str = "bad"
    good_date: str | None = None  # entering at the commit level: skip the daily search
    bad_date: str | None = None
    build_cmd: str | None = None  # inside the container [default: bisect's, build-jax.sh]
    xla_repo: str | None = None
    jax_repo: str | None = None
    ref: str | None = None
    xla_ref: str | None = None  # each repository's own ref inside [default: ref]
    jax_ref: str | None = None
    max_repeats: int | None = None
    min_change: float | None = None
    rerun: bool = False
    #: --samples: the samples each process of the bisection inside is asked for [default: it chooses]
    samples: int | None = None
    dates: str = "all"  # all: the full daily scan; search: one boundary, few dates (search_dates)
    scan_step: str | None = None  # e.g. "1h": an hourly scan of each window inside the container first
    releases: Any = None  # hourly.hunt.from_releases.ReleaseEntry: enter at the release level
    explain: bool = False  # --explain: the bisection inside explains each culprit (hourly bisect --explain)
    #: --metric: the named metric (--metrics) the hunt's scans and bisections follow [default: each metric's
    #: regressions, each window its own metric]
    metric: str | None = None

    def validate(self) -> HuntSettings:
        """These settings checked before anything runs (the daily level's, or with --from-release
        the release level's too), returned with the daily level's as :meth:`NightlySettings.validate`
        returns them."""
        options.refuse("hunt", {"dates": self.dates, "bisect_in": self.bisect_in})
        if self.scan_step is not None:
            from hourly.text.timeparse import parse_step
            parse_step(self.scan_step)
        if self.min_change is not None:
            check_min_change(self.min_change)
        self._check_metric()
        if (self.good_date is None) != (self.bad_date is None):
            raise UsageError("--good-date and --bad-date go together", "pass both, or neither")
        if self.good_date and self.bad_date and parse_date(self.good_date) >= parse_date(self.bad_date):
            raise UserError(f"--bad-date {self.bad_date} is not after --good-date {self.good_date}",
                            "swap them")
        if self.releases is None:
            return replace(self, nightly=self.nightly.validate())
        if self.good_date or self.dates != "all":
            raise UsageError("--from-release finds the days itself", "drop --good-date/--bad-date and --dates")
        from packaging.version import InvalidVersion, Version

        from hourly.hunt.from_releases import release_settings
        r = self.releases
        try:
            lo, hi = Version(r.from_release), Version(r.to_release)
        except InvalidVersion as e:
            raise UserError(f"{e}: --from-release and --to-release take jax versions",
                            "pass e.g. --from-release 0.4.13 --to-release 0.4.20") from e
        if hi < lo:
            raise UserError(f"--to-release {r.to_release} is before --from-release {r.from_release}", "swap them")
        # the days come from the release level; every other daily setting is checked now
        nightly = replace(self.nightly, from_="2000-01-01", to="2000-01-01").validate()
        checked = replace(self, nightly=replace(self.nightly, mounts=nightly.mounts))
        release_settings(checked.nightly, self.releases, self.rerun).validate()
        return checked

    def as_dict(self) -> dict[str, Any]:
        """As the store keeps them (the hunt's settings row)."""
        return {"nightly": self.nightly.as_dict(), "releases": self.releases.as_dict() if self.releases else None,
                **{f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("nightly", "releases")}}

    def _check_metric(self) -> None:
        """--metric names a metric the daily level records (named metrics: --metrics, or the
        per-phase harness)."""
        if self.metric is None:
            return
        import re

        from hourly.metric import METRIC_NAME
        if not re.fullmatch(METRIC_NAME, self.metric):
            raise UsageError(f"--metric {self.metric!r} is not a metric's name",
                             "pass the name of a METRIC line, e.g. --metric lower_ms")
        named = self.nightly.named_metrics()
        if named is None:
            raise UsageError(f"--metric {self.metric} follows a named metric, but the daily level reads the "
                             "--metric-regex's one metric", f"pass --metrics all (or --metrics {self.metric})")
        if "all" not in named and self.metric not in named:
            raise UsageError(f"--metric {self.metric} is not one of --metrics {self.nightly.metrics}",
                             f"add it: --metrics {self.nightly.metrics},{self.metric}")

    def rerun_scope(self) -> dict[str, Any]:
        """What a --rerun of this hunt is of (SettingsTables.rerun): its benchmark, dates and windows."""
        r = self.releases
        return {"level": LEVEL, "nightly": self.nightly.key(), "from": self.nightly.from_, "to": self.nightly.to,
                "good_date": self.good_date, "bad_date": self.bad_date, "dates": self.dates,
                "releases": [r.from_release, r.to_release] if r is not None else None, "bisect_in": self.bisect_in,
                "scan_step": self.scan_step, "build_cmd": self.build_cmd, "metric": self.metric}

    def workdir_id(self) -> str:
        """The identity of this workdir's hunts (labels of their containers)."""
        wd = str(Path(self.nightly.workdir).expanduser().absolute())
        return hashlib.sha256(wd.encode()).hexdigest()[:12]


@dataclass
class HuntRun:
    """What one run of a hunt holds (never its settings): its identity (container labels, the owner
    lock) and its --rerun under way."""

    run_id: str = field(default_factory=lambda: f"h{uuid.uuid4().hex[:8]}")
    #: the hunt's --rerun under way (SettingsTables.rerun): dates and windows stored before it began
    #: are measured and bisected again, those stored since are its own (None: no rerun)
    rerun: Rerun | None = None

    def again(self, stored_at: float | None) -> bool:
        """Whether something stored at ``stored_at`` (None: not known, before any rerun) is done again."""
        return self.rerun is not None and (stored_at is None or stored_at < self.rerun.since)


# --------------------------------------------------------------------------------------------
# pure parts

@dataclass
class HuntWindow:
    good: NightlyPoint
    bad: NightlyPoint
    kind: str  # "regression" | "crash"
    from_value: float | None = None
    to_value: float | None = None
    release: list | None = None  # the release steps whose days held this window (--from-release)
    #: named metrics (--metrics): the metric whose regression this is (its bisection follows it,
    #: --metric); None: the regex's one metric, or a crash (exit codes are every metric's)
    metric: str | None = None

    @property
    def mode(self) -> Mode:
        return Mode.EXIT if self.kind == "crash" else Mode.METRIC

    @property
    def name(self) -> str:
        return f"{self.good.date}..{self.bad.date}"

    def key(self, nightly_key: str, bisect_in: str, scan_step: str | None = None, build_cmd: str | None = None,
            per_metric: bool = True) -> str:
        """The window's answer's key (``per_metric``: the metric it follows too; without it, the key
        of the window's workdir, which every metric's bisection of the same dates shares: one
        measurement records every named metric)."""
        ident = [nightly_key, self.good.date, self.good.xla, self.good.jax, self.bad.date,
                 self.bad.xla, self.bad.jax, self.kind, bisect_in]
        if scan_step:  # a scanned window's answer is its own, apart from a direct bisection's
            ident.append(f"scan {scan_step}")
        if build_cmd:  # another build's answer is not this build's (the default build keeps the keys stored before)
            ident.append(f"build {build_cmd}")
        if per_metric and self.metric:  # one window bisected per named metric
            ident.append(f"metric {self.metric}")
        return hashlib.sha256(json.dumps(ident).encode()).hexdigest()[:16]

    @property
    def same_sources(self) -> bool:
        return (self.good.xla, self.good.jax) == (self.bad.xla, self.bad.jax)

    def end(self, which: str) -> str:
        p = self.good if which == "good" else self.bad
        return f"xla@{p.xla},jax@{p.jax}"


def windows_of(points: list[NightlyPoint], steps: list, metric: str | None = None) -> list[HuntWindow]:
    """Every regression the daily detection found and every crash window (the last OK date
    before each run of crashed or timed-out dates → its first date), in date order (pure).

    ``steps`` are :class:`hourly.model.Step` objects with indices into ``points``; improvements
    are left out. Dates whose commits are unknown cannot bound a bisection and are skipped.
    ``metric``: the named metric whose points and steps these are (its regressions' windows follow it).
    """
    out = []
    for st in steps:
        if st.kind.value != "regression":
            continue
        g, b = points[st.before_index], points[st.after_index]
        out.append(HuntWindow(g, b, "regression", st.change.level_before, st.change.level_after, metric=metric))
    last_ok, in_crash = None, False
    for p in points:
        if p.status is Status.OK:
            last_ok, in_crash = p, False
        elif p.status in (Status.CRASHED, Status.TIMEOUT):
            if last_ok is not None and not in_crash:
                out.append(HuntWindow(last_ok, p, "crash", last_ok.value, None))
            in_crash = True
    out = [w for w in out if w.good.xla and w.good.jax and w.bad.xla and w.bad.jax]
    return sorted(out, key=lambda w: (w.good.date, w.bad.date))


def daily_windows(report: Any, metric: str | None = None) -> list[HuntWindow]:
    """The windows of a daily report (hourly.nightly.plan.NightlyReport, pure): with named metrics,
    every metric's regressions (only ``metric``'s when given), each window following its metric,
    and the crash windows once (a crash is every metric's); else :func:`windows_of`."""
    if report.metrics is None:
        return windows_of(report.points, report.steps)
    chosen = [m for m in report.metrics if metric is None or m.name == metric]
    if metric is not None and not chosen and report.metrics:
        raise UserError(f"--metric {metric} is not a metric the daily level recorded "
                        f"({', '.join(m.name for m in report.metrics)})", "pass one of them")
    out = [w for m in chosen for w in windows_of(m.points, m.steps, m.name) if w.kind == "regression"]
    out += windows_of(report.points, [])
    return sorted(out, key=lambda w: (w.good.date, w.bad.date, w.kind, w.metric or ""))


def search_dates(n: int, is_good: Callable[[int], bool | None]) -> tuple[int, int]:
    """``--dates search``: the last good and first bad of ``n`` dates, the last one bad, with few
    measurements (pure given ``is_good``): an exponential back-search from the bad end (1, 2, 4, …
    dates back) until a good date, then a bisection of the dates between. ``is_good(i)`` is None
    for a date that cannot be judged (missing image, no commits): the search steps past it.
    Finds one boundary (as JAX-Toolbox's triage does), not every step."""
    bad, back, good = n - 1, 1, None
    while good is None:
        i = max(bad - back, 0)
        v = is_good(i)
        if v:
            good = i
        elif v is False:
            bad = i
        if i == 0 and good is None:
            raise UserError("no good date found before the bad date", "pass an earlier --from")
        back *= 2
    while bad - good > 1:
        mid = (good + bad) // 2
        v, j = None, mid
        while v is None and j < bad:  # unjudgeable dates: try the next one towards bad
            v = is_good(j)
            if v is None:
                j += 1
        if v is None:  # every date between mid and bad is unjudgeable: look below mid
            j = mid - 1
            while v is None and j > good:
                v = is_good(j)
                if v is None:
                    j -= 1
            if v is None:
                break
        if v:
            good = j
        else:
            bad = j
    return good, bad


def env_diff(a: dict[str, str], b: dict[str, str]) -> list[dict[str, str | None]]:
    """What differs between two environments, one row per name: {name, good, bad} (pure); the
    CUDA, cuDNN and NCCL lines (hourly/hunt/cuda_versions.py) first, then the rest by name."""
    from hourly.hunt.cuda_versions import NAMES
    order = sorted(set(a) | set(b), key=lambda k: (NAMES.index(k) if k in NAMES else len(NAMES), k))
    return [{"name": k, "good": a.get(k), "bad": b.get(k)} for k in order if a.get(k) != b.get(k)]


def bisect_argv(w: HuntWindow, h: HuntSettings, workdir_inside: str) -> list[str]:
    """The `hourly bisect` command run inside the container for ``w`` (pure; the one encoder,
    hourly.options.argv: exact, since it runs)."""
    return options.argv("bisect", {"good": w.end("good"), "bad": w.end("bad"), "json_out": True, "progress": True,
                                   "mode": w.mode, "workdir": workdir_inside, **_common(h, w.mode, w.metric),
                                   **_bisect_options(h, w)})


#: the share of the day's step that the bisection inside the container is asked to pin, unless
#: --min-change is given: the question is whether the commits hold the day's step
DAY_STEP_SHARE = 0.25


def window_min_change(h: HuntSettings, w: HuntWindow | None) -> float | None:
    """The --min-change the bisection of ``w`` is given (pure): the hunt's own when given, else a
    quarter of the day's step when that is more than the bisection's default (None: its default).
    Ends that do not differ by that much are then "alike" by Wald's test within a few rounds where
    the day's step is many times the noise — against the default 2 %, ends alike within 0.2 % in
    6 rounds were not shown alike, and the hunt could not say the change was the environment's."""
    if h.min_change is not None:
        return h.min_change
    if w is None or w.mode is Mode.EXIT or not w.from_value or w.to_value is None:
        return None
    share = round(DAY_STEP_SHARE * abs(w.to_value / w.from_value - 1), 4)
    return share if BISECT_MIN_CHANGE < share < 1 else None


def _bisect_options(h: HuntSettings, w: HuntWindow | None = None) -> dict[str, Any]:
    """The bisection's own options that the hunt passes on when given (--min-change: see
    :func:`window_min_change`). --rerun too: the window's store on the host keeps its bisection
    finished, and without it the bisection inside answered from there at once — a `hunt --rerun`
    printed the stored culprit as if bisected again (its measurements are still reused)."""
    return {"max_repeats": h.max_repeats, "min_change": window_min_change(h, w), "explain": h.explain or None,
            "samples": h.samples, "rerun": h.rerun or None}


def _common(h: HuntSettings, mode: Mode | None = None, metric: str | None = None) -> dict[str, Any]:
    """What the commands inside the container share: benchmark, how a run's output is read (the
    named metrics, the metric followed: ``metric``, else --metric), direction, cache, trees (an
    exit-status run reads no metric: no --metric-regex then, which the commands refuse with it)."""
    s = h.nightly
    exit_ = mode is Mode.EXIT
    followed = None if exit_ else metric or h.metric
    return {"bench_cmd": s.bench_cmd, "metric_regex": None if exit_ else s.metric_regex,
            "metric_samples": None if exit_ or s.metric_samples == "last" else s.metric_samples,
            "warmup_samples": None if exit_ else s.warmup_samples or None,
            "metrics": None if exit_ else s.metrics, "metric": followed,
            "repeats": s.repeats, "force": True,
            # a named metric's direction is its unit's (else the hunt's, as the daily level read it)
            "higher_is_better": s.direction_of(followed) if followed else s.higher_is_better,
            # the build cache on the host too: a resumed or later window never rebuilds a pair
            "cache_dir": f"{WORKDIR_TARGET}/cache", "bench_cwd": s.container_workdir(),
            "bench_timeout": s.timeout or None, "build_cmd": h.build_cmd, "xla_repo": h.xla_repo,
            "jax_repo": h.jax_repo, "ref": h.ref, "xla_ref": h.xla_ref, "jax_ref": h.jax_ref}


def scan_window(good_time: datetime, bad_time: datetime, step: timedelta) -> tuple[datetime, datetime]:
    """The hourly scan's window for ``--scan-step`` (pure): it ends exactly at the bad pair's instant
    (the later commit time of the bad image's two commits), so its last instant resolves to the bad
    image's pair and never to a commit after it, and starts a whole number of steps earlier, at or
    before the good pair's instant (the first instants may resolve to pairs the good image already
    held: known-good history)."""
    if bad_time <= good_time:
        return bad_time - step, bad_time
    n = -(-(bad_time - good_time) // step)  # ceil
    return bad_time - n * step, bad_time


def scan_argv(w: HuntWindow, h: HuntSettings, workdir_inside: str, t0: datetime, t1: datetime) -> list[str]:
    """The `hourly scan` run inside the container before the bisection, with ``--scan-step`` (pure).

    ``--no-sync``: the trees the image holds (fetched for ``--bisect-in good``) are the history;
    ``--keep-going``: the daily level already showed the benchmark runs."""
    from hourly.text.timeparse import iso_utc
    return options.argv("scan", {"from_": iso_utc(t0), "to": iso_utc(t1), "step": str(h.scan_step), "json_out": True,
                                 "sync": False, "keep_going": True, "mode": w.mode, "workdir": workdir_inside,
                                 **_common(h, w.mode, w.metric)})


def scanned_bisect_argv(h: HuntSettings, workdir_inside: str, w: HuntWindow | None = None) -> list[str]:
    """The plain `hourly bisect` after the scan: every regression and crash window it found (pure);
    a window of a named metric: that metric's (--metric)."""
    metric = (w.metric if w is not None else None) or h.metric
    return options.argv("bisect", {"json_out": True, "progress": True, "force": True, "workdir": workdir_inside,
                                   "metric": metric, **_bisect_options(h, w)})


def step_row(w: HuntWindow, answer: dict[str, Any]) -> HuntRow:
    """One row of the hunt's answer from a window and its stored answer (the typed answers of its
    bisection: the first regression's culprit, or its range)."""
    regressions = [Answer.from_json(r) for r in answer.get("regressions") or []]
    first = regressions[0] if regressions else None
    culprit = first.culprit if first else None
    return HuntRow(w.good.date, w.bad.date, w.kind, w.metric, w.from_value, w.to_value, culprit,
                   range=None if culprit or not first else first.range,
                   reason=answer.get("reason") or (first.reason if first else None),
                   environment=answer.get("environment"),
                   builds=sum(r.builds for r in regressions), runs=sum(r.runs for r in regressions),
                   run_samples=sum(r.run_samples for r in regressions),
                   more=[r.culprit.to_json() if r.culprit else {"range": r.range} for r in regressions[1:]],
                   bisected_in=answer.get("bisected_in"), scan=answer.get("scan"), log=answer.get("log"),
                   error=answer.get("error"),
                   # --explain: what each culprit changed, as the bisection inside explained it
                   explained=[r.explained for r in regressions if r.explained] or None)


def unexplained(answer: dict[str, Any]) -> bool:
    """Whether a stored window answer names a culprit that no ``--explain`` stage explained (pure)."""
    return any(r.culprit and not r.explained for r in (Answer.from_json(x) for x in answer.get("regressions") or []))


def host_paths(value: Any, inside: str, outside: str) -> Any:
    """``value`` (a bisection's JSON answer) with the paths under the container's mount ``inside``
    written as the host's ``outside`` (pure): the explain records name dumps and repros the user
    opens on the host."""
    if isinstance(value, str):
        return outside + value[len(inside):] if value == inside or value.startswith(inside + "/") else value
    if isinstance(value, list):
        return [host_paths(v, inside, outside) for v in value]
    if isinstance(value, dict):
        return {k: host_paths(v, inside, outside) for k, v in value.items()}
    return value


# --------------------------------------------------------------------------------------------
# running

@dataclass
class HuntReport:
    rows: list[HuntRow] = field(default_factory=list)
    nightly: Any = None  # hourly.nightly.plan.NightlyReport of the daily level (None when entered below)
    bisected: int = 0  # windows bisected now (not from the store)
    releases: Any = None  # hourly.releases.plan.ReleaseReport of the release level (--from-release)
    answered: int = 0  # windows answered now without a bisection (the same commits at both ends, ...)

    def answered_now(self, answer: dict[str, Any]) -> None:
        """Count a window answered by this run: bisected, or answered without a bisection
        (``"bisected": False``: both images hold the same commits, or their trees could not be
        fetched), which is not "bisected now"."""
        if answer.get("bisected", True):
            self.bisected += 1
        else:
            self.answered += 1

    def counts(self) -> str:
        """How the windows were answered, in words: "2 windows: 1 bisected now, 1 from the store"."""
        failed = len(self.failed)
        stored = len(self.rows) - self.bisected - self.answered - failed
        parts = [f"{self.bisected} bisected now" if self.bisected else "",
                 f"{self.answered} answered now without a bisection" if self.answered else "",
                 f"{failed} not bisected" if failed else "",
                 f"{stored} from the store" if stored else ""]
        n = len(self.rows)
        return f"{n} window{'s' if n != 1 else ''}: " + (", ".join(p for p in parts if p) or "none answered")

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"steps": [r.to_json() for r in self.rows]}
        if self.releases is not None:
            out["releases"] = self.releases.as_json()
        # too few dates (or releases) to tell noise from steps: not "nothing to hunt"
        out["undecided"] = getattr(self.nightly, "undecided", None) or getattr(self.releases, "undecided", None)
        return out

    @property
    def failed(self) -> list[HuntRow]:
        return [r for r in self.rows if r.error]


def _entered(h: HuntSettings, run: HuntRun, store: Store, docker_client: Any) -> list[HuntWindow]:
    """--good-date/--bad-date: the two images' commits (each date measured and stored as the
    daily level would, so their values and commits are known)."""
    s = h.nightly
    store.save_settings(NIGHTLY_LEVEL, s.as_dict())
    ends = []
    metric = h.metric
    for d in (h.good_date, h.bad_date):
        assert d is not None  # entered at the commit level: both dates (they go together)
        day = parse_date(d)
        p = _point(day, h, run, store, docker_client, metric)
        if p.status is Status.MISSING:
            raise UserError(f"no image for {d}: {image_ref(s.image, day)} ({p.detail})",
                            "pick dates that have a nightly")
        if not (p.xla and p.jax):
            raise UserError(f"the image of {d} has no JAX/XLA source trees to read commits from",
                            "use images that hold /opt/jax-source and /opt/xla-source (or /opt/jax, /opt/xla)")
        ends.append(p)
        if metric is None:
            metric = _followed(h, store, "--good-date/--bad-date")
            if metric:  # the named metric both dates are read in
                ends[-1] = _point(day, h, run, store, docker_client, metric)
    good, bad = ends
    kind = "crash" if good.status is Status.OK and bad.status in (Status.CRASHED, Status.TIMEOUT) else "regression"
    return [HuntWindow(good, bad, kind, good.value, bad.value, metric=metric if kind == "regression" else None)]


def _followed(h: HuntSettings, store: Store, what: str) -> str | None:
    """The named metric a hunt that judges dates by one value follows when no --metric was given:
    the one name the daily level recorded; None for the regex's one metric. Several names: a user
    error naming them (every date measured is kept)."""
    if h.nightly.named_metrics() is None:
        return None
    names = store.nightly_metric_names(h.nightly.key())
    if len(names) == 1:
        return names[0]
    if not names:
        return None  # nothing printed a named metric yet: the dates say why (crashed, no metric)
    raise UserError(f"{what} judges each date by one metric, and this benchmark records several "
                    f"({', '.join(names)})",
                    "pass --metric NAME (the dates measured are kept), or --dates all to hunt every metric's steps")


def _point(day: date, h: HuntSettings, run: HuntRun, store: Store, docker_client: Any, metric: str | None = None) -> NightlyPoint:
    """One date of the daily level: from the store, else measured and stored as `nightly` does
    (every named metric's row); the row of ``metric`` (named metrics; a date that measured no name
    has one row for every metric), else the regex's."""
    from hourly.nightly import run as nightly_run
    s = h.nightly
    key = s.key()
    named = s.named_metrics() is not None
    want = metric if named else ""
    p = store.nightly_points(key, metric=want).get(day.isoformat())
    fresh = run.rerun is not None and day.isoformat() in store.nightly_dates_since(key, run.rerun.since)
    if p is None or p.status is Status.MISSING or (run.rerun is not None and not fresh):
        log_dir = store.logs / "nightly"
        log_dir.mkdir(parents=True, exist_ok=True)
        got = nightly_run.measure_day(day, s, run.run_id, s.gpus, log_dir, docker_client,
                                      known=store.nightly_metric_names(key) if named else None)
        store.add_nightlies(key, got, NIGHTLY_LEVEL)
        p = next((x for x in got if want is None or x.metric in (want, "")), got[0])
    return p


def _searched(h: HuntSettings, run: HuntRun, store: Store, docker_client: Any,
              say: Callable[[str], None]) -> list[HuntWindow]:
    """``--dates search``: one boundary, found by :func:`search_dates` from the last date back."""
    from hourly.nightly.plan import date_range
    s = h.nightly
    store.save_settings(NIGHTLY_LEVEL, s.as_dict())
    dates = date_range(s.from_, s.to, s.every)
    points: dict[int, NightlyPoint] = {}

    metric: str | None = None

    def point(i: int) -> NightlyPoint:
        if i not in points:
            say(f"date {dates[i].isoformat()}")
            points[i] = _point(dates[i], h, run, store, docker_client, metric)
        return points[i]

    metric = h.metric
    bad = point(len(dates) - 1)
    if metric is None and s.named_metrics() is not None:
        metric = _followed(h, store, "--dates search")
        if metric:  # the last date's row of the metric followed
            points.clear()
            bad = point(len(dates) - 1)
    if bad.status in (Status.MISSING,) or not (bad.xla and bad.jax):
        raise UserError(f"the last date {dates[-1]} has no usable image ({bad.status.value})",
                        "pass a --to date that has a nightly")
    crash = bad.status in (Status.CRASHED, Status.TIMEOUT)
    if not crash and bad.value is None:
        raise UserError(f"the last date {dates[-1]} neither measured nor crashed ({bad.status.value})",
                        "pass a --to date whose run measures or crashes")
    threshold = h.min_change if h.min_change is not None else BISECT_MIN_CHANGE

    def is_good(i: int) -> bool | None:
        p = point(i)
        if p.status is Status.MISSING or not (p.xla and p.jax):
            return None
        if crash:
            return p.status is Status.OK
        if p.value is None:
            return False if p.status in (Status.CRASHED, Status.TIMEOUT) else None
        assert bad.value is not None  # not a crash: the last date measured (checked above)
        change = (bad.value - p.value) / p.value
        return (-change if higher else change) >= threshold

    higher = s.direction_of(metric) if metric else s.higher_is_better
    g, b = search_dates(len(dates), is_good)
    good, bad_p = point(g), point(b)
    kind = "crash" if bad_p.status in (Status.CRASHED, Status.TIMEOUT) else "regression"
    return [HuntWindow(good, bad_p, kind, good.value, bad_p.value, metric=metric if kind == "regression" else None)]


def _from_releases(h: HuntSettings, run: HuntRun, store: Store, report: HuntReport, handler: Handler,
                   c: Any) -> list[HuntWindow]:
    """``--from-release``: the release level (hourly/hunt/from_releases.py), then the daily level over
    the days of each release step; the windows of every range, each marked with its releases."""
    from dataclasses import replace

    from hourly.hunt.from_releases import release_settings, run_release_level
    from hourly.nightly.run import run_nightly
    report.releases, ranges = run_release_level(release_settings(h.nightly, h.releases, h.rerun), h.metric,
                                                h.releases.margin_days, store, handler, run.rerun)
    windows: list[HuntWindow] = []
    for first, last, steps in ranges:
        handler.note(f"daily level: {first.isoformat()} → {last.isoformat()}")
        report.nightly = run_nightly(replace(h.nightly, from_=first.isoformat(), to=last.isoformat()),
                                     store, handler, docker_client=c, within=run.rerun)
        release = [{"last_good": st.before.version, "first_bad": st.after.version, "kind": st.kind}
                   for st in steps]
        for w in daily_windows(report.nightly, h.metric):
            w.release = release
            windows.append(w)
    return windows


@holds_store_lock
def run_hunt(h: HuntSettings, store: Store, handler: Handler = SILENT, docker_client: Any = None) -> HuntReport:
    """The whole funnel: the daily level (or the entered dates), then one bisection per window.
    ``handler`` hears the dates as progress and each stage as a note."""
    from hourly.adapters import containers
    from hourly.adapters.locks import run_lock
    from hourly.adapters.stale_runs import remove_dead_runs
    h = h.validate()
    c = docker_client or containers.client()
    # a dead run (kill -9) may have left its bisection container running: its owner lock is free
    remove_dead_runs(c)
    run = HuntRun()
    owner = run_lock(run.run_id).acquire()  # while held, this run's containers are known to be alive
    try:
        return _run_hunt(h, run, store, handler, c)
    finally:
        owner.release()
        owner.path.unlink(missing_ok=True)


def _run_hunt(h: HuntSettings, run: HuntRun, store: Store, handler: Handler, c: Any) -> HuntReport:
    from hourly.nightly.run import run_nightly
    say = handler.note
    store.save_settings(LEVEL, h.as_dict())
    scope = h.rerun_scope()
    run.rerun = store.rerun(scope, h.rerun)
    if run.rerun is not None and run.rerun.resumed:
        say(run.rerun.going_on("the dates it has measured and the windows it has bisected",
                               "the others are measured and bisected again"))
    report = HuntReport()
    if h.releases is not None:
        windows = _from_releases(h, run, store, report, handler, c)
    elif h.good_date:
        windows = _entered(h, run, store, c)
    elif h.dates == "search":
        windows = _searched(h, run, store, c, say)
    else:
        report.nightly = run_nightly(h.nightly, store, handler, docker_client=c, within=run.rerun)
        windows = daily_windows(report.nightly, h.metric)
    run_id = run.run_id
    for i, w in enumerate(windows, 1):
        key = w.key(h.nightly.key(), h.bisect_in, h.scan_step, h.build_cmd)
        answer = store.load_settings(f"{LEVEL}/{key}")
        if answer is not None and run.again((store.load_settings(f"{LEVEL}/{key}/at") or {}).get("at")):
            answer = None  # answered before the --rerun under way began: bisected again
        if answer is not None and h.explain and unexplained(answer):
            answer = None  # bisected before without --explain: again (the bisection inside reuses its store)
        if answer is None:
            say(f"window {i}/{len(windows)}: {w.name} ({w.kind}{f' of {w.metric}' if w.metric else ''}), "
                f"bisecting in the {h.bisect_in} day's image")
            try:
                answer = bisect_window(w, h, store, run_id, key, c, say, rerun=run.rerun is not None)
            except UserError as e:  # the other windows are still hunted; this one is retried next time
                say(f"window {w.name} failed: {e.message}")
                report.rows.append(step_row(w, {"regressions": [], "error": str(e)}))
                continue
            store.save_settings(f"{LEVEL}/{key}", answer)
            store.save_settings(f"{LEVEL}/{key}/at", {"at": time.time()})
            report.answered_now(answer)
        row = step_row(w, answer)
        report.rows.append(replace(row, release=w.release) if w.release else row)
    store.save_settings("hunt-rows", report.as_json())  # for `hourly report` (hourly/render/hunt_markdown.py)
    if run.rerun is not None and not any(r.error for r in report.rows):
        store.end_rerun(scope)  # every date and window done again: the rerun has ended
    return report


def bisect_window(w: HuntWindow, h: HuntSettings, store: Store, run_id: str, key: str,
                  docker_client: Any, say: Callable[[str], None] = lambda line: None,
                  rerun: bool = False) -> dict[str, Any]:
    """Start the image to bisect in, run `hourly bisect` inside it (after `hourly scan` with
    ``--scan-step``), remove it; the answer. ``rerun``: the hunt's --rerun under way bisects the
    window again (the bisection inside is given --rerun; its own store keeps a stopped one's
    progress)."""
    h = replace(h, rerun=rerun)
    from hourly.adapters import containers
    s = h.nightly
    image = (w.bad if h.bisect_in == "bad" else w.good).image
    if w.same_sources:  # nothing to bisect: both images were built from the same commits
        return {"regressions": [], "bisected_in": None, "log": None, "bisected": False,
                "reason": "the change is in the container's environment: both images hold the same "
                          "xla and jax commits",
                "environment": image_environment_diff(w.good.image, w.bad.image, docker_client)}
    name = f"hourly-{run_id}-{w.good.date}-{w.bad.date}"
    # every named metric's bisection of these dates shares one workdir: a measurement records them all
    shared = w.key(s.key(), h.bisect_in, h.scan_step, h.build_cmd, per_metric=False) if w.metric else key
    sub = f"bisect/{w.good.date}..{w.bad.date}-{shared[:6]}"
    (store.workdir / sub).mkdir(parents=True, exist_ok=True)
    tail = f"-{w.metric}" if w.metric else ""  # one window's log and answer per metric
    log = store.logs / "hunt" / f"{w.good.date}..{w.bad.date}{tail}.log"
    from hourly.adapters.locks import owner_labels
    labels = {**containers.scan_labels(run_id, level=LEVEL, hunt=h.workdir_id(), window=w.name),
              **owner_labels(run_id)}
    start_bisect_container(image, store.workdir, name, labels, s, docker_client)
    scanned = None
    try:
        if h.bisect_in == "good":
            fetch = _fetch_trees(name, w, docker_client)
            if fetch:
                return {"regressions": [], "reason": fetch, "bisected_in": image, "log": str(log), "bisected": False}
        inside = f"{WORKDIR_TARGET}/{sub}"
        if h.scan_step:
            scanned = _scan_inside(name, w, h, inside, store.workdir / sub, log, docker_client, say)
            argv = scanned_bisect_argv(h, inside, w)
        else:
            argv = bisect_argv(w, h, inside)
        res = containers.exec_in(name, ["sh", "-c", f"{shlex.join(argv)} > {inside}/answer{tail}.json"],
                                 log_path=log, docker_client=docker_client,
                                 on_line=lambda line: say(f"  {w.name}: {line}") if line.strip() else None)
    finally:
        containers.cleanup(f"hourly.scan={run_id}", docker_client=docker_client)
    answer = _answer(w, h, image, store.workdir / sub / f"answer{tail}.json", res, log, scanned, docker_client)
    return host_paths(answer, WORKDIR_TARGET, str(store.workdir)) if h.explain else answer


def _answer(w: HuntWindow, h: HuntSettings, image: str, answer_file: Path, res: RunResult, log: Path,
            scanned: dict | None, docker_client: Any) -> dict[str, Any]:
    """The window's answer from the bisection's JSON, or the environment when the sources at both
    ends behave alike (the bisection says so, or the hourly scan found no step)."""
    text = answer_file.read_text() if answer_file.exists() else ""
    if res.exit_code in (0, 4) and text.strip():  # 4: a candidate not confirmed (its answer says so)
        regressions = json.loads(text).get("regressions", [])
        if regressions or scanned is None:
            return {"regressions": regressions, "reason": None, "bisected_in": image, "log": str(log),
                    "scan": scanned}
        message = (f"the hourly scan of the window ({scanned['instants']} instants every {h.scan_step}, "
                   f"{scanned['pairs']} pairs) found no step and no crash")
    else:
        message = _error_line(res.output)
        if any(m in message for m in ENDS_UNTOLD):  # neither a change in the sources nor the environment's
            raise UserError(f"the bisection of {w.name} in {image} could not tell whether the sources at "
                            f"both ends differ: {message}",
                            f"pass a larger --max-repeats (finished windows are kept); see {log}")
        if not any(m in message for m in ENDS_ALIKE):
            raise UserError(f"the bisection of {w.name} in {image} failed: {message}",
                            f"see {log}; fix it and run the same command again (finished windows are kept)")
    return {"regressions": [], "bisected_in": image, "log": str(log), "scan": scanned,
            "reason": f"the change is in the container's environment: measured in {image}, "
                      f"the sources at both ends behave alike ({message})",
            "environment": image_environment_diff(w.good.image, w.bad.image, docker_client)}


def _scan_inside(name: str, w: HuntWindow, h: HuntSettings, inside: str, host_dir: Path, log: Path,
                 docker_client: Any, say: Callable[[str], None]) -> dict[str, Any]:
    """``--scan-step``: `hourly scan` of the window inside the container (results in the window's
    store on the host, so a rerun measures no pair twice); what it scanned."""
    from hourly.adapters import containers
    from hourly.text.timeparse import parse_step
    assert h.scan_step is not None  # called for --scan-step only
    good_time, bad_time = _pair_times(name, w, h, docker_client)
    t0, t1 = scan_window(good_time, bad_time, parse_step(h.scan_step))
    argv = scan_argv(w, h, inside, t0, t1)
    say(f"  {w.name}: hourly scan from {t0:%Y-%m-%d %H:%M} to {t1:%Y-%m-%d %H:%M} UTC every {h.scan_step}")
    scan_log = log.with_name(log.name.removesuffix(".log") + "-scan.log")
    out = f"scan-{w.metric}.json" if w.metric else "scan.json"
    res = containers.exec_in(name, ["sh", "-c", f"{shlex.join(argv)} > {inside}/{out}"],
                             log_path=scan_log, docker_client=docker_client)
    scan_file = host_dir / out
    text = scan_file.read_text() if scan_file.exists() else ""
    if res.exit_code != 0 or not text.strip():
        raise UserError(f"the hourly scan of {w.name} failed: {_error_line(res.output)}",
                        f"see {scan_log}; fix it and run the same command again (measured pairs are kept)")
    points = json.loads(text).get("points", [])
    pairs = len({(p.get("xla"), p.get("jax")) for p in points})
    say(f"  {w.name}: scanned {len(points)} instants, {pairs} pairs")
    return {"from": t0.isoformat(), "to": t1.isoformat(), "step": h.scan_step,
            "instants": len(points), "pairs": pairs}


def _pair_times(name: str, w: HuntWindow, h: HuntSettings, docker_client: Any) -> tuple[datetime, datetime]:
    """The instants of the good and the bad pair: each the later commit time of its xla and jax
    commits, read from the trees in the container (``git show``)."""
    from hourly.adapters import containers
    from hourly.adapters.containers import SOURCE_LAYOUTS
    layouts = [(h.jax_repo, h.xla_repo)] if h.jax_repo and h.xla_repo else SOURCE_LAYOUTS
    show = "git -C {0} show -s --format=%ct {1} {2} && git -C {3} show -s --format=%ct {4} {5}"
    script = [f"if [ -d {j}/.git ] && [ -d {x}/.git ]; then "
              + show.format(x, w.good.xla, w.bad.xla, j, w.good.jax, w.bad.jax) + "; exit $?; fi"
              for j, x in layouts]
    script.append("echo 'no JAX and XLA trees at the known places' >&2; exit 2")
    res = containers.exec_in(name, ["sh", "-c", "\n".join(script)], docker_client=docker_client)
    stamps = [int(t) for t in res.output.split() if t.isdigit()]
    if res.exit_code != 0 or len(stamps) != 4:
        raise UserError(f"could not read the commit times of {w.name} in the container: "
                        f"{_error_line(res.output)}", "pass --xla-repo and --jax-repo (the trees inside the image)")
    xg, xb, jg, jb = (datetime.fromtimestamp(t, timezone.utc) for t in stamps)
    return max(xg, jg), max(xb, jb)


def _error_line(output: str) -> str:
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    for ln in lines:
        for prefix in ("hourly: error:", "error:"):
            if ln.startswith(prefix):
                return ln.removeprefix(prefix).strip()
    return lines[-1] if lines else "no output"


def _fetch_trees(name: str, w: HuntWindow, docker_client: Any) -> str | None:
    """In the good day's container: bring both trees up to the bad image's commits."""
    from hourly.adapters import containers
    from hourly.adapters.containers import SOURCE_LAYOUTS
    script = []
    for jax_dir, xla_dir in SOURCE_LAYOUTS:
        script.append(f"if [ -d {jax_dir}/.git ]; then git -C {jax_dir} fetch -q origin && "
                      f"git -C {xla_dir} fetch -q origin && "
                      f"git -C {jax_dir} cat-file -e {w.bad.jax}^{{commit}} && "
                      f"git -C {xla_dir} cat-file -e {w.bad.xla}^{{commit}}; exit $?; fi")
    script.append("exit 2")
    res = containers.exec_in(name, ["sh", "-c", "\n".join(script)], docker_client=docker_client)
    if res.exit_code == 0:
        return None
    return (f"`git fetch` in the good day's container did not bring the bad image's commits "
            f"(exit {res.exit_code}: {_error_line(res.output)})")


def start_bisect_container(image: str, workdir: Path, name: str, labels: dict[str, str],
                           s: NightlySettings, docker_client: Any) -> None:
    """One long-lived container of ``image`` with hourly inside (as ``hourly container`` puts it)
    and the host workdir at :data:`WORKDIR_TARGET`; the caller removes it."""
    from hourly.adapters import containers
    from hourly.nightly.image import BIN_TARGET, LAUNCHER, PY_TARGET, build_python_dir, python_mismatch
    warning = python_mismatch(image, docker_client=docker_client)
    if warning:
        raise UserError(f"hourly can't run inside {image}: {warning}", "bisect in an image with "
                        "the host's Python version, or one built from docker/Dockerfile")
    bundle = workdir / ".container"
    build_python_dir(bundle / "python")
    (bundle / "bin").mkdir(parents=True, exist_ok=True)
    launcher = bundle / "bin" / "hourly"
    launcher.write_text(LAUNCHER)
    launcher.chmod(0o755)
    path = containers.image_env(image, docker_client=docker_client).get(
        "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    mounts = [*s.effective_mounts(), f"{bundle / 'python'}:{PY_TARGET}:ro",
              f"{bundle / 'bin'}:{BIN_TARGET}:ro", f"{workdir}:{WORKDIR_TARGET}"]
    containers.start_detached(image, ["tail", "-f", "/dev/null"], name=name, labels=labels,
                              mounts=mounts, env=[f"PATH={BIN_TARGET}:{path}", *s.env],
                              gpus=s.gpus, workdir=s.container_workdir() or "/",
                              docker_client=docker_client)


PACKAGES_PY = ("import importlib.metadata as m\n"
               "for d in m.distributions():\n"
               "    print('PKG', d.metadata['Name'], d.version)\n")


def image_environment(image: str, docker_client: Any) -> dict[str, str]:
    """An image's variables, Python package versions (``pip:<name>``) and CUDA, cuDNN and NCCL
    versions (``CUDA``, ``cuDNN``, ``NCCL``: hourly/hunt/cuda_versions.py), one dict."""
    from hourly.adapters import containers
    from hourly.hunt.cuda_versions import LIBRARIES_PY, toolkit_versions
    env = dict(containers.image_env(image, docker_client=docker_client))
    libraries: list[str] = []
    try:
        res = containers.run_container(image, ["python3", "-c", PACKAGES_PY + LIBRARIES_PY],
                                       labels={"hourly.role": "probe"}, timeout=120,
                                       docker_client=docker_client)
        for line in res.output.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[0] == "PKG":
                env[f"pip:{parts[1].lower()}"] = parts[2]
            elif len(parts) == 2 and parts[0] == "LIB":
                libraries.append(parts[1])
    except UserError:
        pass  # no python3: the variables alone
    env.update(toolkit_versions(env, libraries))
    return env


def image_environment_diff(good_image: str, bad_image: str, docker_client: Any) -> list[dict]:
    return env_diff(image_environment(good_image, docker_client),
                    image_environment(bad_image, docker_client))
