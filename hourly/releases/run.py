"""The release level's runner: one environment per release (hourly/adapters/venvs.py), the benchmark in
it (hourly/measure/benchmark.py's runner), each result stored as soon as it is known."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

from hourly.adapters.store import Store
from hourly.adapters.store_tables.settings import Rerun
from hourly.adapters.venvs import Installer, TargetPython, choose_installer, ensure_env, target_python
from hourly.errors import ProcessError, UserError
from hourly.events import SILENT, Handler
from hourly.measure.benchmark import BenchSpec, metric_views, run_benchmark
from hourly.model import InstallerKind, ReleasePoint, Status
from hourly.options import command_line
from hourly.releases.plan import (
    FINISHED,
    LEVEL,
    Planned,
    ReleaseReport,
    ReleaseSettings,
    plan_releases,
    stored_releases,
)


def env_name(target: TargetPython, p: Planned, s: ReleaseSettings) -> str:
    ident = {"source": s.source(), "extra": s.extra, "with": sorted(s.with_), "pre": s.pre,
             "python": target.exe}
    if s.deps_as_of_release:
        ident["deps"] = "as of release"
    digest = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:8]
    tail = f"-{s.extra}" if s.extra else ""
    return f"{target.short}-jax{p.version}-jaxlib{p.jaxlib}{tail}-{digest}"


def _save_settings(store: Store, s: ReleaseSettings, key: str) -> None:
    store.save_settings(LEVEL, {"settings": s.as_dict(), "key": key})


def run_releases(s: ReleaseSettings, store: Store | str | os.PathLike, handler: Handler = SILENT,
                 within: Rerun | None = None) -> ReleaseReport:
    """Measure every release of the window not finished yet (with ``rerun``, every one stored
    before the rerun began: a stopped one goes on, SettingsTables.rerun; ``within``: the rerun of
    the hunt this level is part of, whose time decides instead) and return the window's report.
    Each release's result is stored as soon as it is known; given a workdir rather than a Store,
    it is created only once the window is planned (bad input makes nothing)."""
    s = s.validate()
    target = target_python(s.python)
    installer = choose_installer(s.installer)
    if s.deps_as_of_release and installer.kind is not InstallerKind.UV:
        raise UserError("uv is not found, and it installs each release with the dependencies of its day "
                        "(old jaxlibs crash with today's NumPy)",
                        f"pip install uv (into {sys.prefix}, or anywhere on PATH), "
                        "or pass --deps-today to install today's dependencies with pip")
    index = s.make_index()
    planned = plan_releases(index, s, target)
    if not isinstance(store, Store):
        store = Store(store)
    key = s.key(target)
    _save_settings(store, s, key)
    have = store.releases(key, metric=None)  # any row of a release: measured (of any named metric)
    known = store.release_metric_names(key)

    def finished(p: Planned) -> bool:
        return p.version in have and have[p.version].status in FINISHED

    scope = {"level": "releases", "bench": key, "from": s.from_, "to": s.to}
    rerun = within or store.rerun(scope, s.rerun)
    fresh = store.releases_since(key, rerun.since) if rerun else set()
    if within is None and rerun is not None and rerun.resumed:
        handler.note(rerun.going_on("the releases it has measured"))
    todo = [p for p in planned if rerun and p.version not in fresh or not finished(p)]
    total, done = len(planned), len(planned) - len(todo)
    log_dir = store.logs / "releases"
    log_dir.mkdir(parents=True, exist_ok=True)
    measured = 0
    window = {p.version for p in planned}
    any_ok = any(v in window and r.status is Status.OK for v, r in have.items() if not rerun or v in fresh)
    failures: list[tuple[ReleasePoint, str | None]] = []  # this run's, while nothing measured
    for i, p in enumerate(todo):
        handler.progress(done, total, p.version)
        if p.missing:
            before = have.get(p.version)
            if before is None or before.detail != p.missing:
                store.add_release(key, ReleasePoint(p.version, p.jaxlib, p.released, Status.MISSING,
                                                    detail=p.missing))
        else:
            points, cause = _measure(p, s, target, installer, log_dir, known)
            store.add_releases(key, points)  # one row per named metric (--metrics), in one transaction
            point = next((q for q in points if q.status is Status.OK), points[0])
            measured += 1
            any_ok = any_ok or point.status is Status.OK
            if not any_ok:
                failures.append((point, cause))
                if len(failures) >= 2 and _signature(*failures[-1]) == _signature(*failures[-2]):
                    rest = [q.version for q in todo[i + 1:] if not q.missing]
                    raise drift_error(failures, s, rest)
        done += 1
        handler.progress(done, total, None)
    if within is None and rerun is not None:
        store.end_rerun(scope)  # every release measured: the rerun has ended
    report = stored_releases(store, s, key, measured=measured, installer=installer.describe())
    ran = [q for q in report.points if q.status is not Status.MISSING]
    if ran and not any(q.status is Status.OK for q in ran):
        # every release that could be installed failed: the environment, not a step between releases
        mine = {q.version: c for q, c in failures}
        raise drift_error([(q, mine.get(q.version) or _cause_in_detail(q)) for q in ran], s, [])
    return report


# --------------------------------------------------------------------------------------------
# why every release fails: the line of the log that names the cause

_EXCEPTION = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Za-z_]\w*(?:Error|Exception|Warning|Exit)(?::\s.*)?$")
_REASON = re.compile(r"^(\s*)(?:cause:|╰─▶)\s*")  # uv's resolver explanation, without and with a terminal
_VERSION = re.compile(r"\d+(?:\.\d+)+\S*")


def cause_line(text: str) -> str | None:
    """The line of an install or benchmark log that says why it failed, verbatim (pure): the
    resolver's first reason (uv: the sentence after ``cause:`` or ``╰─▶``, its wrapped lines
    joined; pip: the first ``ERROR:`` line), uv's last ``Caused by:``, or the exception that
    ended a Python traceback; else the last line of output."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith(("$ ", "# cwd: ", "# exit: "))]
    for i, ln in enumerate(lines):
        m = _REASON.match(ln)
        if m:
            out = [ln[m.end():].strip()]
            for more in lines[i + 1:]:
                # uv wraps its explanation; its next sentence ("And because ...") or a hint ends the first
                stripped = more.strip()
                if (len(more) - len(more.lstrip()) <= len(m.group(1)) or _REASON.match(more)
                        or stripped.startswith(("And because", "hint:", "help:"))):
                    break
                out.append(stripped)
            return " ".join(out)
    for ln in lines:
        if ln.startswith("ERROR: "):
            return ln.strip()
    caused = [ln.strip() for ln in lines if ln.strip().startswith("Caused by:")]
    if caused:
        return caused[-1]
    for ln in reversed(lines):
        if _EXCEPTION.match(ln.strip()):
            return ln.strip()
    return lines[-1].strip() if lines else None


def _log_cause(path: str | None) -> str | None:
    try:
        return cause_line(Path(path).read_text(errors="replace")) if path else None
    except OSError:
        return None


def _cause_in_detail(p: ReleasePoint) -> str | None:
    """The cause a stored result's detail carries (``<what>: <cause>; log <path>``)."""
    m = re.search(r"^(?:yanked \([^)]*\); )?[^:;]*: (.*); log \S+$", p.detail or "")
    return m.group(1) if m else p.detail


def _signature(p: ReleasePoint, cause: str | None) -> tuple[str, str | None]:
    """Two failures are the same when their class and cause agree up to version numbers."""
    return p.status.value, _VERSION.sub("N", cause) if cause else None


def drift_error(failures: list[tuple[ReleasePoint, str | None]], s: ReleaseSettings,
                not_measured: list[str]) -> UserError:
    """Every release failed (or the first ones, the same way): stop with the cause."""
    last, cause = failures[-1]
    verb = {Status.INSTALL_FAILED: "failed to install", Status.TIMEOUT: "timed out",
            Status.NO_METRIC: "printed no metric"}.get(last.status, last.status.value)
    versions = ", ".join(p.version for p, _ in failures)
    head = f"jax {versions} all {verb}" if len(failures) > 1 else f"jax {versions} {verb}"
    what = f"{head}: {cause}" if cause else head
    own = _own_exit(failures)
    if own is not None:  # the benchmark's own exit status, no Python error: no dependency to pin
        code, env = own
        what = f"{head} (exit code {code})" + (f": {cause}" if cause else "")
        where = f"cd {shlex.quote(s.bench_cwd)} && " if s.bench_cwd else ""
        fix = (f"the benchmark itself ends with exit code {code}, without a Python error, on every release: "
               f"run it by hand in one release's environment to see why "
               f"({where}VIRTUAL_ENV={env} PATH={env}/bin:$PATH {s.bench_cmd}), fix it, and run again with --rerun")
    elif not s.deps_as_of_release:
        fix = "drop --deps-today: each release then gets the dependencies of its release day"
    else:
        fix = ("pin what the cause names with --with (e.g. --with 'numpy<2'), or fix it and "
               "run again with --rerun")
    details = [f"jax {p.version}: {p.status.value}: {p.detail}" for p, _ in failures]
    if not_measured:
        details.append(f"stopped early, the last two failed the same way: jax {', '.join(not_measured)} not measured")
    details.append("the results are stored: " + command_line("releases", {"show": True, "workdir": s.workdir}))
    return UserError(what, fix, details)


def _own_exit(failures: list[tuple[ReleasePoint, str | None]]) -> tuple[int, str] | None:
    """(exit code, environment) when every failure is the benchmark's own exit: it crashed with one
    and the same exit code and its log ends in no Python exception (a dependency that drifted
    raises one: ImportError, AttributeError, ...); else None."""
    codes = set()
    for p, cause in failures:
        if p.status is not Status.CRASHED or (cause and _EXCEPTION.match(cause.strip())):
            return None
        codes |= {r.get("returncode") for r in p.runs if r.get("status") == Status.CRASHED.value}
    code = codes.pop() if len(codes) == 1 else None
    env = next((p.env for p, _ in failures if p.env), None)
    return (int(code), env) if code is not None and env else None


def as_of_release_args(released: str | None, now: datetime) -> list[str]:
    """uv arguments that resolve a release's dependencies as they were the day after its release
    (pure): newer numpy/scipy/ml_dtypes are excluded, jax and jaxlib themselves are not (their
    versions are pinned, and old wheels are sometimes uploaded again later)."""
    if not released:
        return []
    day_after = datetime.strptime(released, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc) + timedelta(days=1)
    stamp = now.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return ["--exclude-newer", day_after.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "--exclude-newer-package", f"jax={stamp}", "--exclude-newer-package", f"jaxlib={stamp}"]


def _measure(p: Planned, s: ReleaseSettings, target: TargetPython, installer: Installer,
             log_dir: Path, known: list[str] | None = None) -> tuple[list[ReleasePoint], str | None]:
    """Environment + benchmark for one release (no store access): its result (one per named metric
    with ``--metrics``; ``known``: the names already recorded), and the line of its log that says
    why it failed (None when it measured)."""
    env = Path(s.cache_dir) / env_name(target, p, s)
    source_args = s.make_index().installer_args()
    if s.deps_as_of_release:  # run_releases made sure the installer is uv
        source_args += as_of_release_args(p.released, datetime.now(timezone.utc))
    try:
        made = ensure_env(env, s.requirements(p.version, p.jaxlib or p.version), source_args,
                          installer, target, log_dir / f"install-jax-{p.version}.log", s.pre)
    except ProcessError as e:
        why = _log_cause(e.log_path) or cause_line(e.tail) or "no output"
        return [ReleasePoint(p.version, p.jaxlib, p.released, Status.INSTALL_FAILED, installer=installer.kind.value,
                             env=str(env), detail=f"{installer.kind.value} failed: {why}; log {e.log_path}")], why
    named = s.named_metrics()
    spec = BenchSpec(s.argv(), s.bench_cwd, {**s.env_dict(), "VIRTUAL_ENV": str(env)}, s.metric_regex,
                     s.timeout, made.python, samples=s.metric_samples, warmup_samples=s.warmup_samples,
                     metrics=None if named is None else tuple(named))
    out: list[ReleasePoint] = []
    causes: list[str | None] = []
    for metric, res in metric_views(run_benchmark(spec, s.repeats, log_dir, f"jax-{p.version}"), spec.metrics, known):
        detail = res.detail()
        cause: str | None = None
        bad = next((r for r in res.runs if r.status is not Status.OK), None)
        if res.status is not Status.OK and bad is not None:
            cause = _log_cause(bad.log_path) if res.status is Status.CRASHED else None
            if cause and detail:
                what, _, log = detail.partition("; log ")
                detail = f"{what}: {cause}; log {log}"
        if p.yanked:
            detail = f"yanked ({p.yanked})" + (f"; {detail}" if detail else "")
        causes.append(cause)
        out.append(ReleasePoint(p.version, p.jaxlib, p.released, Status(res.status.value), res.value, res.samples,
                                [r.as_dict() for r in res.runs], detail, made.installer, str(env), metric))
    return out, causes[0]
