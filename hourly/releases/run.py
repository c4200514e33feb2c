"""The release level's runner: one environment per release (hourly/adapters/venvs.py), the benchmark in
it (hourly/measure/benchmark.py's runner), each result stored as soon as it is known."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable

from hourly.measure.benchmark import BenchSpec, run_benchmark
from hourly.errors import ProcessError, UserError
from hourly.model import InstallerKind, ReleasePoint, Status
from hourly.releases.plan import FINISHED, LEVEL, Planned, ReleaseReport, ReleaseSettings, plan_releases, show
from hourly.adapters.store import Store
from hourly.adapters.venvs import TargetPython, choose_installer, ensure_env, target_python


def env_name(target: TargetPython, p: Planned, s: ReleaseSettings) -> str:
    ident = {"source": s.source(), "extra": s.extra, "with": sorted(s.with_), "pre": s.pre,
             "python": target.exe}
    if s.deps_as_of_release:
        ident["deps"] = "as of release"
    ident = json.dumps(ident, sort_keys=True)
    tail = f"-{s.extra}" if s.extra else ""
    return f"{target.short}-jax{p.version}-jaxlib{p.jaxlib}{tail}-{hashlib.sha256(ident.encode()).hexdigest()[:8]}"


def _save_settings(store: Store, s: ReleaseSettings, key: str) -> None:
    store.save_settings(LEVEL, {"settings": s.as_dict(), "key": key})


def run_releases(s: ReleaseSettings, store: Store,
                 on_progress: Callable[[int, int, str | None], None] | None = None) -> ReleaseReport:
    """Measure every release of the window not finished yet (all with ``rerun``) and return the
    window's report. Each release's result is stored as soon as it is known."""
    s.validate()
    target = target_python(s.python)
    installer = choose_installer(s.installer)
    index = s.make_index()
    planned = plan_releases(index, s, target)
    key = s.key(target)
    _save_settings(store, s, key)
    have = store.releases(key)

    def finished(p: Planned) -> bool:
        return p.version in have and have[p.version].status in FINISHED

    todo = [p for p in planned if s.rerun or not finished(p)]
    total, done = len(planned), len(planned) - len(todo)
    log_dir = store.workdir / "logs" / "releases"
    log_dir.mkdir(parents=True, exist_ok=True)
    measured = 0
    for p in todo:
        if on_progress:
            on_progress(done, total, p.version)
        if p.missing:
            before = have.get(p.version)
            if before is None or before.detail != p.missing:
                store.add_release(key, ReleasePoint(p.version, p.jaxlib, p.released, Status.MISSING,
                                                    detail=p.missing))
        else:
            store.add_release(key, _measure(p, s, target, installer, log_dir))
            measured += 1
        done += 1
        if on_progress:
            on_progress(done, total, None)
    return show(store, s, key, measured=measured, installer=installer.describe())


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


def _measure(p: Planned, s: ReleaseSettings, target: TargetPython, installer, log_dir: Path) -> ReleasePoint:
    """Environment + benchmark for one release (no store access): its result."""
    env = Path(s.cache_dir) / env_name(target, p, s)
    source_args = s.make_index().installer_args()
    if s.deps_as_of_release:
        if installer.kind is not InstallerKind.UV:
            raise UserError("--deps-as-of-release needs uv, and uv is not installed", "pip install 'hourly[uv]'")
        source_args += as_of_release_args(p.released, datetime.now(timezone.utc))
    try:
        made = ensure_env(env, s.requirements(p.version, p.jaxlib or p.version), source_args,
                          installer, target, log_dir / f"install-jax-{p.version}.log", s.pre)
    except ProcessError as e:
        last = e.tail.strip().splitlines()[-1] if e.tail.strip() else "no output"
        return ReleasePoint(p.version, p.jaxlib, p.released, Status.INSTALL_FAILED, installer=installer.kind.value,
                            env=str(env), detail=f"{installer.kind.value} failed: {last}; log {e.log_path}")
    spec = BenchSpec(s.argv(), s.bench_cwd, {**s.env_dict(), "VIRTUAL_ENV": str(env)}, s.metric_regex,
                     s.timeout, made.python)
    res = run_benchmark(spec, s.repeats, log_dir, f"jax-{p.version}")
    detail = res.detail()
    if p.yanked:
        detail = f"yanked ({p.yanked})" + (f"; {detail}" if detail else "")
    return ReleasePoint(p.version, p.jaxlib, p.released, Status(res.status.value), res.value, res.samples,
                        [r.as_dict() for r in res.runs], detail, made.installer, str(env))
