"""``hourly watch``: the settings, the pure parts and the report of what the store holds.

A watch keeps one series per metric over the builds of one source, in the order they arrived:

- ``containers``: nightly images, one a day (``--image`` with ``{date}``, tried date by date or
  listed from the registry), measured as ``hourly nightly`` measures a date;
- ``wheels``: nightly wheels on a package index (versions ``X.Y.Z.devYYYYMMDD``, ``--pre``), each
  installed in its own environment as ``hourly releases`` installs a release;
- ``commits``: the first-parent history of JAX and XLA every ``--step`` (instants like the scan),
  each new (xla, jax) pair built and measured as the scan does.

On each build's arrival (hourly/analysis/arrival.py) every metric's series is judged at its
newest builds; a suspected step is measured again, the build before it and the build after it
alternately, until :func:`~hourly.analysis.arrival.confirm` settles; confirmed steps of one
arrival are grouped into alerts, and a confirmed regression starts ``hourly hunt`` or ``hourly
bisect`` in a workdir of its own under the watch's. This module decides nothing about the world:
:func:`watch_state`, :func:`series_of`, :func:`confirmed_step`, :func:`hunt_outcome`, the hunt's
command lines and :func:`stored_watch` are pure given the store's rows; hourly/watch/run.py
measures and starts; hourly/render/watch.py prints, writes the page and the markdown alert.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import shlex
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from hourly import options
from hourly.analysis.arrival import Confirmation, Confirmed, Suspect, group, recovery
from hourly.analysis.detect import ChangeKind
from hourly.errors import UserError
from hourly.model import check_min_change
from hourly.watch_records import Alert, Build, Check, HuntOutcome

if TYPE_CHECKING:
    from hourly.adapters.store import Store

LEVEL = "watch"
SOURCES = ("containers", "wheels", "commits")
#: where the page, its plots and the markdown alerts are written, under the workdir
PAGE_DIR = "watch"
#: where each alert's hunt keeps its own workdir, under the watch's
HUNTS_DIR = "hunts"
#: the exit status of a run that confirmed a new alert (README, "Exit codes")
ALERT_EXIT = 10
#: the exit status of a run with no new alert that left something new unjudged: too short a
#: history, a build that did not measure, a suspicion measured again without settling
UNSURE_EXIT = 11
#: without --since, the first run looks this many days back (the history the first arrivals are judged on)
DEFAULT_SINCE_DAYS = 14
#: a hunt that failed (not one that ended unsure) is started again by later runs, this many times in all
HUNT_TRIES = 3
#: builds of a series that hold no measurement and are left out of it
NOT_IN_SERIES = ("missing", "pending")
#: the statuses of a build that was measured and failed
FAILED = ("crashed", "timeout", "no_metric", "build_failed", "install_failed", "untestable")


def metric_name(regex: str) -> str:
    """The primary metric's name: the word its regex starts with (``MLUPS:\\s*(?P<value>...)`` →
    ``MLUPS``), else ``metric``. A series per name: named metrics of a benchmark (``--metrics``) are
    each a series of their own, under their names."""
    m = re.match(r"\(?\^?([A-Za-z_][A-Za-z0-9_.]*)", regex)
    return m.group(1) if m else "metric"


@dataclass(frozen=True)
class WatchSettings:
    """What a watch watches and how it judges. ``level``: the settings of the level that measures
    one build (``NightlySettings``, ``ReleaseSettings`` or the scan's ``Settings``, as a dict).
    Frozen: a run that settles a value (the first run's ``--since``) derives new settings with
    ``dataclasses.replace``."""

    source: str
    level: dict[str, Any]
    workdir: str = "hourly-work"
    since: str | None = None        # the first date (or time) watched; stored by the first run
    until: str | None = None        # the newest time looked at [default: now]; to replay a past stretch
    step: str = "24h"               # commits: the spacing of the instants
    list_tags: bool = False         # containers: list the registry's tags instead of trying each date
    #: the primary metric: the regex's (named by the word it starts with), or with named metrics
    #: the one followed (--metric, or the one name of --metrics); "": none, every metric alike
    metric: str = "metric"
    higher_is_better: bool = True
    #: named metrics (--metrics: "all" or "a,b"; the per-phase harness by itself): every
    #: ``METRIC name:`` line a series of its own, each in its unit's direction; None: the regex's one metric
    metrics: str | None = None
    min_change: float = 0.02
    max_pairs: int = 80
    hunt: bool = True
    executor: str = "local"         # where a hunt runs: here (a subprocess) or as one Slurm job
    slurm: dict[str, Any] = field(default_factory=dict)  # partition, time, gres, extra (sbatch options)
    hunt_args: list[str] = field(default_factory=list)   # passed to the hunt's command as they are
    hunt_image: str | None = None   # wheels: the nightly containers a confirmed regression is hunted in
    notify_cmd: str | None = None

    def validate(self) -> None:
        options.refuse("watch", {"source": self.source, "max_pairs": self.max_pairs})
        check_min_change(self.min_change)
        if self.executor not in ("local", "slurm"):
            raise UserError(f"--executor {self.executor!r} is neither local nor slurm", "pass --executor local or slurm")
        if self.hunt_image is not None and "{date}" not in self.hunt_image:
            raise UserError(f"--hunt-image {self.hunt_image!r} has no {{date}}",
                            "write it like ghcr.io/nvidia/jax:nightly-{date}")
        from hourly.text.timeparse import parse_step, parse_time
        parse_step(self.step)
        for value in (self.since, self.until):
            if value:
                parse_time(value)
        self.check_window()
        self.check_env()
        if self.notify_cmd is not None:
            from hourly.adapters.proc import split_command
            split_command(self.notify_cmd, "--notify-cmd", "pass a command that reads the alert's JSON on stdin")

    def check_env(self) -> None:
        """The benchmark's ``--env``: ``KEY=VALUE``, or ``KEY`` set in this environment (the watch's
        later runs, from cron, need it there too), never ``KEY=<redacted>``; a usage error else."""
        from hourly.adapters.proc import parse_env
        parse_env(list(self.level.get("env") or []))

    def until_end(self) -> datetime | None:
        """The last instant ``--until`` takes in (None without one): a date alone means the end of
        that day (its nightly is in)."""
        if not self.until:
            return None
        from hourly.text.timeparse import parse_time
        p = parse_time(self.until)
        return p.when + timedelta(days=1) - timedelta(seconds=1) if p.date_only else p.when

    def check_window(self) -> None:
        """--until before --since, or --since after now: one line with these flags' names, before
        anything is made (a --since in the future was stored as the watch's first date, then the
        run stopped with "the window is reversed — swap --from and --to", flags watch has not)."""
        if not self.since:
            return
        from datetime import datetime, timezone

        from hourly.text.timeparse import parse_time
        start = parse_time(self.since).when
        end = self.until_end()
        if end is not None and end < start:
            raise UserError(f"--until {self.until} is before --since {self.since}", "swap them")
        now = datetime.now(timezone.utc)
        if end is None and start > now:
            raise UserError(f"--since {self.since} is in the future (now: {now:%Y-%m-%d %H:%M} UTC): "
                            "nothing can have arrived after it",
                            f"pass a --since in the past, e.g. --since {now.date().isoformat()}, "
                            "or leave it out (the last days)")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def direction_of(self, metric: str) -> bool:
        """Whether higher is better for ``metric``: a named metric's unit says
        (:func:`hourly.metric.higher_is_better`: ``trace_ms`` lower, ``tokens_per_s`` higher), else the
        watch's direction (--higher-is-better/--lower-is-better); the regex's one metric takes the
        watch's."""
        if self.metrics is not None and metric:
            from hourly.metric import higher_is_better
            unit = higher_is_better(metric)
            if unit is not None:
                return unit
        return self.higher_is_better

    def primary(self) -> list[str]:
        """The primary metric, when there is one (its series first, and the series of a watch that
        has measured nothing yet)."""
        return [self.metric] if self.metric else []


def watch_key(source: str, level_key: str, metric: str) -> str:
    """The identity of a watch: what it measures (the level's own key) and its primary metric."""
    ident = {"source": source, "level": level_key, "metric": metric}
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:16]


# --------------------------------------------------------------------------------------------
# the series and the state of the judge (pure)

def in_series(build: Build) -> bool:
    """Whether a build is a point of the series: found and measured (a failed run is a point with no
    value: a gap the detector knows), not a date without an image nor a build not measured yet."""
    return build.status not in NOT_IN_SERIES


def series_of(builds: Sequence[Build], values: dict[str, dict[str, dict[str, Any]]],
              metric: str) -> tuple[list[str], list[list[float] | None]]:
    """The builds of the series (ids) and each one's samples of ``metric`` (None: no measurement)."""
    ids, points = [], []
    for b in builds:
        if not in_series(b):
            continue
        ids.append(b.build)
        v = values.get(b.build, {}).get(metric)
        samples = [float(x) for x in (v or {}).get("samples") or [] if x is not None and math.isfinite(float(x))]
        points.append(samples or None)
    return ids, points


def watch_state(metric: str, checks: Sequence[Check], index_of: dict[str, int],
                arrived_before: set[str]) -> tuple[int, int, set[tuple[int, int]], set[tuple[int, int]]]:
    """``since``, ``level_from``, ``judged`` and ``rejected`` of
    :func:`~hourly.analysis.arrival.arrival` for one metric, replayed from the checks of the
    arrivals in ``arrived_before`` (those judged before the one at hand): the newest confirmed
    step's new level is the current one; pairs measured again without a confirmation are not
    suspected again, and the rejected ones' new builds were measured on an odd night."""
    since = level_from = 0
    judged: set[tuple[int, int]] = set()
    rejected: set[tuple[int, int]] = set()
    for c in checks:
        if c.metric != metric or c.arrived not in arrived_before:
            continue
        if c.before not in index_of or c.after not in index_of:
            continue
        pair = (index_of[c.before], index_of[c.after])
        if c.verdict == "confirmed":
            if pair[1] >= level_from:
                level_from, since = pair[1], pair[1] + 1
        elif c.verdict in ("rejected", "undecided"):
            judged.add(pair)
            if c.verdict == "rejected":
                rejected.add(pair)
    return since, level_from, judged, rejected


def suspect_json(s: Suspect, ids: Sequence[str]) -> dict[str, Any]:
    """A suspicion's evidence as stored and shown: the builds, the levels, the size in standard
    errors and which test raised it."""
    d = asdict(s)
    d["kind"] = s.kind.value
    d["before"], d["after"] = ids[s.before_index], ids[s.after_index]
    return d


def confirmation_json(c: Confirmation) -> dict[str, Any]:
    d = asdict(c)
    d["verdict"] = c.verdict.value
    for k in ("low", "high"):
        if not math.isfinite(d[k]):
            d[k] = None
    return d


def step_kind(change: float, higher_is_better: bool) -> ChangeKind:
    worse = change < 0 if higher_is_better else change > 0
    return ChangeKind.REGRESSION if worse else ChangeKind.IMPROVEMENT


def confirmed_step(check: Check, index_of: dict[str, int], higher_is_better: bool) -> Confirmed:
    """A confirmed check as a step of its metric: its window, the levels and the change measured
    again (the fresh runs decide the direction, not the history)."""
    r = check.result or {}
    change = float(r.get("change") or 0.0)
    return Confirmed(check.metric, index_of[check.before], index_of[check.after],
                     float(r.get("level_before") or 0.0), float(r.get("level_after") or 0.0), change,
                     step_kind(change, higher_is_better))


def alerts_of(steps: Sequence[tuple[int, Confirmed]]) -> list[tuple[list[int], int, int]]:
    """The confirmed steps of one arrival (check id, step), grouped into alerts: (check ids, the
    window's before and after index) each (:func:`~hourly.analysis.arrival.group`)."""
    by_step = {id(st): cid for cid, st in steps}
    out = []
    for a in group([st for _, st in steps]):
        out.append(([by_step[id(st)] for st in a.steps], a.before_index, a.after_index))
    return out


# --------------------------------------------------------------------------------------------
# the hunt: its command, its job script, what its answer says (pure)

def hunt_dir(workdir: str | Path, alert_id: int) -> Path:
    """The workdir of an alert's hunt, under the watch's."""
    return Path(workdir).expanduser().absolute() / HUNTS_DIR / f"alert-{alert_id}"


def _reading(level: dict[str, Any], w: WatchSettings, metric: str | None) -> dict[str, Any]:
    """How the hunt reads a run's output, as the watch did: the named metrics and the one whose
    regression is hunted (``metric``: --metric), each in its direction."""
    named = w.metrics is not None
    samples = level.get("metric_samples")
    return {"metrics": w.metrics, "metric_samples": samples if samples not in (None, "last") else None,
            "warmup_samples": level.get("warmup_samples") or None, "metric": metric if named and metric else None,
            "higher_is_better": w.direction_of(metric) if named and metric else w.higher_is_better}


def bisect_command(level: dict[str, Any], good: dict[str, Any], bad: dict[str, Any], w: WatchSettings,
                   workdir: str | Path, metric: str | None = None) -> list[str]:
    """``hourly bisect`` between two builds of the commits source (their pairs), with the watch's
    repositories, build and benchmark (``metric``: the named metric whose regression it is), through
    the one encoder of command lines (pure)."""
    from hourly import options
    values = {"good": f"xla@{good['xla']},jax@{good['jax']}", "bad": f"xla@{bad['xla']},jax@{bad['jax']}",
              **{k: level.get(k) for k in ("xla_repo", "jax_repo", "ref", "build_cmd", "python", "cache_dir",
                                            "bench_cmd", "bench_cwd", "env", "repeats", "warmup_runs",
                                            "bench_timeout", "metric_regex")},
              **_reading(level, w, metric), "min_change": w.min_change,
              "force": True if level.get("force") else None}
    return [*options.argv("bisect", values), *w.hunt_args, "--workdir", str(workdir), "--json"]


def nightly_hunt_command(level: dict[str, Any], good_date: str, bad_date: str, w: WatchSettings,
                         workdir: str | Path, image: str | None = None, metric: str | None = None) -> list[str]:
    """``hourly hunt --good-date --bad-date`` over the nightly containers of two dates (the daily
    level's settings ``level``; ``image``: another template, for the wheels source; ``metric``: the
    named metric whose regression it is), through the one encoder of command lines (pure)."""
    from hourly import options
    values = {"good_date": good_date, "bad_date": bad_date, "image": image or level["image"],
              "mount": level.get("mounts") or None, "gpus": level.get("gpus"), "env": level.get("env") or None,
              "bench_cmd": level["bench_cmd"], "metric_regex": level["metric_regex"],
              "repeats": level.get("repeats"), "timeout": level.get("timeout"),
              "pull": None if level.get("pull", True) else False,
              **_reading(level, w, metric), "min_change": w.min_change}
    return [*options.argv("hunt", values), *w.hunt_args, "--workdir", str(workdir), "--json"]


#: the files a hunt leaves in its folder: its answer (stdout), its log (stderr), its exit status
ANSWER, HUNT_LOG, EXIT_FILE, JOB_SCRIPT = "answer.json", "hunt.log", "exit-code", "hunt.sh"


def job_script(argv: list[str], python: str, folder: str | Path) -> str:
    """The script a hunt runs as, here (``sh``) or as a Slurm job (which runs a copy of it from its
    spool: the folder is named, not taken from ``$0``): the command with its answer, log and exit
    status written into ``folder``. ``hourly`` is run as ``<python> -m hourly``."""
    cmd = [python, "-m", "hourly", *argv[1:]] if argv and argv[0] == "hourly" else argv
    return ("#!/bin/sh\n# written by hourly watch: one hunt of one alert\n"
            f"cd {shlex.quote(str(folder))} || exit 1\n"
            f"rm -f {EXIT_FILE}\n"
            f"{shlex.join(cmd)} > {ANSWER}.part 2> {HUNT_LOG}\n"
            f"code=$?\nmv {ANSWER}.part {ANSWER}\necho $code > {EXIT_FILE}\n")


def _error_line(log: str) -> str:
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    for ln in lines:
        if ln.startswith("hourly: error:") or ln.startswith("hourly: unexpected error:"):
            return ln.split(":", 2)[2].strip()
    return lines[-1] if lines else "no output"


def hunt_outcome(kind: str, answer_text: str | None, exit_code: int | None, log: str) -> HuntOutcome:
    """What a finished hunt says (pure): ``culprit`` (a commit named: the first regression's), or
    ``unsure`` (the hunt ended without one: its reason, a candidate it could not confirm, the range
    of commits, the container's environment), or ``failed`` (it did not answer: the error line).
    ``kind``: ``bisect`` (its ``--json``: ``regressions``) or ``hunt`` (``steps``). A hunt that ends
    unsure is never read as a culprit."""
    try:
        answer = json.loads(answer_text) if answer_text and answer_text.strip() else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        return HuntOutcome.from_json({"status": "failed", "exit_code": exit_code, "reason": _error_line(log)})
    rows = answer.get("regressions" if kind == "bisect" else "steps") or []
    for r in rows:
        if r.get("culprit") and not r.get("error"):
            return HuntOutcome.from_json({
                "status": "culprit", "culprit": r["culprit"], "exit_code": exit_code,
                "more": [x.get("culprit") for x in rows if x is not r and x.get("culprit")]})
    if not rows:
        return HuntOutcome.from_json({"status": "unsure", "exit_code": exit_code,
                                      "reason": f"the {kind} answered no window ({_error_line(log)})"})
    first = rows[0]
    out = {"status": "unsure", "exit_code": exit_code,
           "reason": first.get("error") or first.get("reason") or "no culprit named",
           "candidate": first.get("candidate"), "range": first.get("range") or []}
    if first.get("environment"):
        out["environment"] = first["environment"]
    return HuntOutcome.from_json(out)


# --------------------------------------------------------------------------------------------
# the report of what the store holds

@dataclass
class RunNotes:
    """What one run did (not stored: the store holds the rest)."""

    new_builds: list[str] = field(default_factory=list)
    measured: list[str] = field(default_factory=list)
    judged: list[str] = field(default_factory=list)
    checks: list[int] = field(default_factory=list)       # checks settled in this run
    new_alerts: list[int] = field(default_factory=list)   # alerts whose "new" event this run delivered
    hunted: list[int] = field(default_factory=list)       # alerts whose hunt this run started or read
    notes: list[str] = field(default_factory=list)        # what the source said (dates without an image, ...)
    notify_failures: list[str] = field(default_factory=list)
    showed: bool = False                                  # --show: nothing was looked for or measured

    @property
    def nothing_new(self) -> bool:
        return not (self.new_builds or self.measured or self.judged or self.checks or self.hunted)


@dataclass
class WatchReport:
    settings: WatchSettings
    key: str
    metrics: list[str]
    builds: list[Build]
    values: dict[str, dict[str, dict[str, Any]]]
    checks: list[Check]
    alerts: list[Alert]
    run: RunNotes = field(default_factory=RunNotes)

    def value(self, build: str, metric: str) -> dict[str, Any] | None:
        return self.values.get(build, {}).get(metric)

    def build(self, build_id: str) -> Build:
        return next(b for b in self.builds if b.build == build_id)

    @property
    def suspected_not_confirmed(self) -> list[Check]:
        """Checks whose measuring again did not confirm the step: said, with their evidence, never alerts."""
        return [c for c in self.checks if c.verdict in ("rejected", "undecided")]

    def unsure(self) -> list[str]:
        """What this run left unjudged or unsettled, one line each (exit :data:`UNSURE_EXIT`)."""
        out = []
        if not self.builds:  # not "nothing new": nothing at all was found where the watch looks
            where = {"wheels": "--find-links or --index-url", "containers": "--image"}.get(
                self.settings.source, "the checkouts and --ref")
            out.append(f"no build found since {self.settings.since}: nothing is watched yet — check {where}, "
                       "and --since")
        series = [b for b in self.builds if in_series(b)]
        # the newest build: what the watch says now (the older ones of a first run are its history)
        for b in series[-1:]:
            if b.build not in self.run.judged and b.build not in self.run.measured:
                continue
            if b.status in FAILED:
                out.append(f"{b.build}: {b.status}" + (f" ({b.detail})" if b.detail else ""))
            for metric, d in (b.decision or {}).items():
                if d.get("status") in ("short", "unmeasured"):
                    out.append(f"{b.build} ({metric}): not judged: {d.get('why')}")
        for c in self.checks:
            if c.id in self.run.checks and c.verdict == "undecided":
                r = c.result or {}
                out.append(f"{c.before} → {c.after} ({c.metric}): measured again {r.get('pairs')} pairs "
                           "without settling: unsure")
        for a in self.alerts:
            h = a.hunt
            if a.id in self.run.hunted and h is not None and h.status in ("unsure", "failed"):
                out.append(f"alert {a.id}: the hunt ended {h.status}: {h.reason}")
        return out

    def exit_code(self) -> int:
        if self.run.new_alerts:
            return ALERT_EXIT
        return UNSURE_EXIT if self.unsure() else 0

    def as_json(self) -> dict[str, Any]:
        return {"watch": self.key, "source": self.settings.source, "metrics": self.metrics,
                "higher_is_better": self.settings.higher_is_better, "min_change": self.settings.min_change,
                "direction": {m: self.settings.direction_of(m) for m in self.metrics},
                "builds": [{**b.to_json(), "values": self.values.get(b.build, {})} for b in self.builds],
                "checks": [check_json(c) for c in self.checks],
                "alerts": [alert_json(a, self) for a in self.alerts],
                "run": {"new_builds": self.run.new_builds, "measured": self.run.measured,
                        "judged": self.run.judged, "checks": self.run.checks, "new_alerts": self.run.new_alerts,
                        "hunted": self.run.hunted, "notes": self.run.notes, "nothing_new": self.run.nothing_new,
                        "notify_failures": self.run.notify_failures, "unsure": self.unsure()},
                "exit_code": self.exit_code()}


def check_json(c: Check) -> dict[str, Any]:
    return c.to_json()


def alert_kind(a: Alert, report: WatchReport) -> str:
    steps = alert_steps(a, report)
    kinds = {step_kind(float((c.result or {}).get("change") or 0.0), report.settings.direction_of(c.metric)).value
             for c in steps}
    return "regression" if "regression" in kinds else "improvement"


def regression_metric(a: Alert, report: WatchReport) -> str | None:
    """The metric an alert's hunt follows (pure): the metric of its largest confirmed regression
    (with named metrics: the hunt's --metric); None when none regressed."""
    worse = [c for c in alert_steps(a, report) if step_kind(float((c.result or {}).get("change") or 0.0),
                                                            report.settings.direction_of(c.metric))
             is ChangeKind.REGRESSION]
    if not worse:
        return None
    return max(worse, key=lambda c: abs(float((c.result or {}).get("change") or 0.0))).metric


def alert_steps(a: Alert, report: WatchReport) -> list[Check]:
    by_id = {c.id: c for c in report.checks}
    return [by_id[i] for i in a.checks if i in by_id]


def alert_json(a: Alert, report: WatchReport) -> dict[str, Any]:
    """An alert as ``--json``, the page and ``--notify-cmd`` see it: its window (the two builds
    and what each is), the confirmed steps with their numbers, the hunt and the recovery."""
    before, after = report.build(a.before), report.build(a.after)
    steps = []
    for c in alert_steps(a, report):
        r = c.result or {}
        steps.append({"metric": c.metric, "before": c.before, "after": c.after,
                      "change": r.get("change"), "low": r.get("low"), "high": r.get("high"),
                      "level_before": r.get("level_before"), "level_after": r.get("level_after"),
                      "pairs": r.get("pairs"), "p_value": r.get("p_value"),
                      "kind": step_kind(float(r.get("change") or 0.0), report.settings.direction_of(c.metric)).value,
                      "higher_is_better": report.settings.direction_of(c.metric),
                      "suspected": c.suspect})
    return {"id": a.id, "kind": alert_kind(a, report), "arrived": a.arrived,
            "before": {"build": before.build, "time": before.time, **before.ident},
            "after": {"build": after.build, "time": after.time, **after.ident},
            "steps": steps, "hunt": a.hunt.to_json() if a.hunt else None, "recovery": a.recovery,
            "events": a.events, "source": report.settings.source, "workdir": report.settings.workdir}


def recoveries(report: WatchReport) -> dict[int, dict[str, Any] | None]:
    """Each regression alert's recovery (pure): a later confirmed step of the same metric back to
    within the minimum change of the level before (:func:`~hourly.analysis.arrival.recovery`)."""
    builds = [b for b in report.builds if in_series(b)]
    index_of = {b.build: i for i, b in enumerate(builds)}
    confirmed = [c for c in report.checks if c.verdict == "confirmed"
                 and c.before in index_of and c.after in index_of]
    out: dict[int, dict[str, Any] | None] = {}
    for a in report.alerts:
        found = None
        for c in alert_steps(a, report):
            if c.before not in index_of or c.after not in index_of:
                continue
            higher = report.settings.direction_of(c.metric)
            step = confirmed_step(c, index_of, higher)
            if step.kind is not ChangeKind.REGRESSION:
                continue
            later = [confirmed_step(o, index_of, higher) for o in confirmed
                     if o.metric == c.metric and o.id != c.id]
            rec = recovery(step, later, min_change=report.settings.min_change)
            if rec is not None:
                found = {"metric": c.metric, "build": builds[rec.after_index].build, "level": rec.level,
                         "relative_to_before": rec.relative_to_before}
                break
        out[a.id] = found
    return out


def stored_watch(store: Store, w: WatchSettings, key: str, run: RunNotes | None = None) -> WatchReport:
    """The watch's builds, values, checks and alerts as the store holds them."""
    builds = store.watch_builds(key)
    values = store.watch_values(key)
    metrics = sorted({m for v in values.values() for m in v}) or w.primary()
    if w.metric in metrics:  # the primary metric first
        metrics.remove(w.metric)
        metrics.insert(0, w.metric)
    return WatchReport(w, key, metrics, builds, values, store.watch_checks(key), store.watch_alerts(key),
                       run or RunNotes())
