"""``hourly hunt --from-release A --to-release B``: the release level in front of hunt's funnel.

The mapping between the two worlds (docs/hunt.md, "Entering at the release level"):

- **Where the benchmark runs.** The release level runs on the host, in one virtual environment
  per jax release from the package index (hourly/releases/run.py); the daily and commit levels run
  in the nightly containers. The hunt's ``--bench-cmd`` is a container command, so for the release
  level it is translated (:func:`host_bench`): every argument under a mount's target (``/dir/x.py``)
  becomes the same path under the mount's source on the host, and the benchmark runs in the host
  folder of the containers' working directory (the ``/dir`` mount). ``python3`` is the release
  environment's Python (its ``bin`` goes first on PATH). ``--release-bench-cmd`` replaces the
  translation when the host needs another command. ``--env``, ``--metric-regex``, ``--repeats``,
  ``--timeout`` and the direction are the same at every level.
- **From releases to days.** Every regression and crash between two releases (improvements are
  not hunted) gives a range of days (:func:`day_ranges`): from the day before the last good
  release's upload (its tag is cut before the upload, and a nightly of that day may already hold
  commits after the tag) to the first bad release's upload day; overlapping ranges merge. The
  daily level runs over each range as ``hourly hunt --from --to`` does (same store, same
  guarantees), and every step and crash window it finds is hunted down to the commit.
- **What is stored.** The release level's results go into the hunt workdir's ``releases`` table
  (``hourly releases --show --workdir`` prints them), so a rerun of the same command measures no
  release, no date and no window twice.

Pure parts: :func:`host_bench`, :func:`day_ranges`.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any

from hourly.errors import UserError
from hourly.events import Handler

if TYPE_CHECKING:
    from hourly.adapters.store import Store
    from hourly.adapters.store_tables.settings import Rerun
    from hourly.nightly.plan import NightlySettings
    from hourly.releases.plan import ReleaseSettings, ReleaseStep


@dataclass
class ReleaseEntry:
    """The release level's own settings in a hunt (the rest comes from the daily level's)."""

    from_release: str
    to_release: str
    bench_cmd: str | None = None  # on the host [default: --bench-cmd translated by host_bench]
    extra: str | None = None
    index_url: str | None = None
    find_links: str | None = None
    pre: bool = False
    cache_dir: str | None = None
    with_: list = field(default_factory=list)  # more requirements for every release environment
    margin_days: int = 1

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def host_bench(bench_cmd: str, mounts: list[str], container_cwd: str | None) -> tuple[str, str | None]:
    """The container benchmark command as the host runs it, and the host folder it runs in (pure).

    Each argument that is a mount's target or lies under it is replaced by the same path under
    the mount's source; the working directory is the source of the mount at ``container_cwd``."""
    pairs = []
    for m in mounts:
        parts = m.split(":")
        if len(parts) >= 2 and parts[0] and parts[1].startswith("/"):
            pairs.append((parts[1].rstrip("/") or "/", parts[0]))
    pairs.sort(key=lambda p: -len(p[0]))  # the deepest target wins

    def host(path: str) -> str:
        for target, source in pairs:
            if path == target or path.startswith(target + "/"):
                return source.rstrip("/") + path[len(target):]
        return path

    argv = shlex.split(bench_cmd)
    out = []
    for arg in argv:
        key, eq, value = arg.partition("=")
        if eq and key.startswith("-") and value.startswith("/"):  # --data=/dir/x
            out.append(f"{key}={host(value)}")
        else:
            out.append(host(arg) if arg.startswith("/") else arg)
    cwd = host(container_cwd) if container_cwd else None
    return shlex.join(out), (cwd if cwd != container_cwd else None)


def day_ranges(steps: list, margin_days: int = 1) -> list[tuple[date, date, list]]:
    """Days for the daily level from the release steps (pure): for each regression or crash whose
    two releases have upload dates, ``margin_days`` before the last good release's day through the
    first bad release's day; overlapping or touching ranges merge. Each range keeps its steps."""
    spans = []
    for st in steps:
        if st.kind not in ("regression", "crash") or not (st.before.date and st.after.date):
            continue
        a = date.fromisoformat(st.before.date) - timedelta(days=margin_days)
        b = date.fromisoformat(st.after.date)
        spans.append((min(a, b), b, [st]))
    spans.sort(key=lambda s: s[0])
    merged: list[tuple[date, date, list]] = []
    for a, b, sts in spans:
        if merged and a <= merged[-1][1] + timedelta(days=1):
            pa, pb, psts = merged[-1]
            merged[-1] = (pa, max(pb, b), psts + sts)
        else:
            merged.append((a, b, sts))
    return merged


def release_settings(s: NightlySettings, r: ReleaseEntry, rerun: bool) -> ReleaseSettings:
    """The release level's settings for a hunt (hourly.releases.plan.ReleaseSettings) from its daily
    level's ``s``, its release entry ``r`` and ``--rerun``."""
    from hourly.releases.plan import ReleaseSettings, default_cache_dir
    cmd, cwd = (r.bench_cmd, None) if r.bench_cmd else host_bench(s.bench_cmd, s.effective_mounts(),
                                                                  s.container_workdir())
    return ReleaseSettings(from_=r.from_release, to=r.to_release, bench_cmd=cmd, bench_cwd=cwd,
                           env=list(s.env), metric_regex=s.metric_regex, metrics=s.metrics,
                           metric_samples=s.metric_samples, warmup_samples=s.warmup_samples, repeats=s.repeats,
                           timeout=s.timeout, higher_is_better=s.higher_is_better, extra=r.extra, with_=list(r.with_),
                           index_url=r.index_url, find_links=r.find_links, pre=r.pre,
                           cache_dir=r.cache_dir or default_cache_dir(), workdir=s.workdir, rerun=rerun)


def describe_step(st: ReleaseStep) -> str:
    """One line for a release step (what the daily level is handed)."""
    size = f" {st.change * 100:+.1f}%" if st.change is not None else ""
    return (f"release step: jax {st.before.version} → {st.after.version} ({st.kind}{size}), "
            f"released {st.before.date or '?'} → {st.after.date or '?'}")


def run_release_level(rs: ReleaseSettings, metric: str | None, margin_days: int, store: Store,
                      handler: Handler, within: Rerun | None = None) -> tuple[Any, list[tuple[date, date, list]]]:
    """The release level of a hunt (its settings ``rs``: :func:`release_settings`; ``metric``: the
    hunt's ``--metric``; ``within``: the hunt's --rerun under way): its report and the day ranges
    for the daily level."""
    from hourly.releases.run import run_releases
    handler.note(f"release level: jax {rs.from_} → {rs.to}, benchmark on the host: {rs.bench_cmd}"
        + (f" (in {rs.bench_cwd})" if rs.bench_cwd else ""))
    report = run_releases(rs, store, handler, within)
    steps = report.steps if report.metrics is None else [  # every named metric's (--metric: its own)
        st for m in report.metrics if metric is None or m.name == metric for st in m.steps]
    hunted = [st for st in steps if st.kind in ("regression", "crash")]
    for st in hunted:
        handler.note(describe_step(st))
    undated = [st for st in hunted if not (st.before.date and st.after.date)]
    if undated:
        raise UserError(f"the release dates of jax {undated[0].before.version} → {undated[0].after.version} "
                        "are unknown, so the daily level has no days to search",
                        "run the hunt with the dates instead of the releases: --from <day> --to <day> "
                        "(without --from-release); the release results are kept")
    return report, day_ranges(hunted, margin_days)
