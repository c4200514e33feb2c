"""``hourly hunt``: the daily level, then a commit-level bisection inside a container per step."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional

from hourly.errors import UsageError, UserError
from hourly.measure.settings import workdir_setting

from .common import command, daily_settings, print_level_report, with_progress

if TYPE_CHECKING:
    from hourly.adapters.store import Store
    from hourly.hunt.from_releases import ReleaseEntry
    from hourly.hunt.run import HuntSettings


@command("hunt")
def hunt(
    *,
    from_: Optional[str],
    to: Optional[str],
    good_date: Optional[str],
    bad_date: Optional[str],
    from_release: Optional[str],
    to_release: Optional[str],
    release_bench_cmd: Optional[str],
    extra: Optional[str],
    index_url: Optional[str],
    find_links: Optional[str],
    pre: bool,
    release_with: Optional[List[str]],
    release_cache_dir: Optional[str],
    flags: dict[str, Any],
    metric: Optional[str],
    dates: str,
    scan_step: Optional[str],
    bisect_in: str,
    build_cmd: Optional[str],
    xla_repo: Optional[str],
    jax_repo: Optional[str],
    ref: Optional[str],
    xla_ref: Optional[str],
    jax_ref: Optional[str],
    max_repeats: Optional[int],
    samples: Optional[int],
    min_change: Optional[float],
    rerun: bool,
    explain: bool,
    workdir: Optional[str],
    json_out: bool,
    config: Optional[str],
) -> None:
    """From "it got slower between these dates" to the commit: nightly, then bisect in a container."""
    from hourly.adapters.store import Store
    from hourly.hunt.run import HuntSettings
    if good_date or bad_date:
        if not (good_date and bad_date):
            raise UsageError("--good-date and --bad-date go together", "pass both, or neither")
        from_, to = from_ or good_date, to or bad_date
    entry = _release_entry(from_release, to_release, from_ or to or good_date,
                           dict(bench_cmd=release_bench_cmd, extra=extra, index_url=index_url,
                                find_links=find_links, pre=pre, cache_dir=release_cache_dir,
                                with_=list(release_with or [])))
    if entry is not None:
        from_ = to = ""  # the release level hands the days to the daily level
    elif not from_ or not to:
        raise UsageError("the hunt needs dates", "pass --from 2023-07-06 --to 2023-09-20, --good-date and --bad-date, "
                        "or --from-release 0.4.13 --to-release 0.4.20")
    wd = workdir_setting(workdir, config)
    s = daily_settings(flags, from_, to, wd, rerun, config)
    h = HuntSettings(s, bisect_in=bisect_in, good_date=good_date, bad_date=bad_date, build_cmd=build_cmd,
                     xla_repo=xla_repo, jax_repo=jax_repo, ref=ref, xla_ref=xla_ref, jax_ref=jax_ref, max_repeats=max_repeats, min_change=min_change, rerun=rerun, dates=dates, samples=samples,
                     scan_step=scan_step, releases=entry, explain=explain, metric=metric)
    h = h.validate()
    store = Store(wd)
    _run_and_print(h, store, json_out)


def _release_entry(from_release: Optional[str], to_release: Optional[str], dates_given: object,
                   options: dict) -> ReleaseEntry | None:
    """``--from-release``/``--to-release``: the release level's settings (None without them)."""
    if not (from_release or to_release):
        return None
    if not (from_release and to_release):
        raise UsageError("--from-release and --to-release go together", "pass both, e.g. --from-release 0.4.13 --to-release 0.4.20")
    if dates_given:
        raise UsageError("--from-release finds the days itself", "drop --from/--to and --good-date/--bad-date")
    from hourly.hunt.from_releases import ReleaseEntry
    return ReleaseEntry(from_release, to_release, **options)


def _run_and_print(h: HuntSettings, store: Store, json_out: bool) -> None:
    from hourly.hunt.run import run_hunt
    from hourly.render.hunt import print_report
    report = with_progress(lambda handler: run_hunt(h, store, handler), json_out, "dates",
                           lambda current: f"running {current}")
    print_level_report(report, json_out, print_report)
    if not report.rows and report.releases is None and report.nightly is not None:
        report.nightly.require_decided()  # "nothing to hunt" only from dates that could show a step: else exit 1
    if not report.rows and report.releases is not None and report.releases.undecided:
        why, _, fix = report.releases.undecided.partition("; ")  # nor from releases that could not
        raise UserError(f"no window to hunt yet: {why}", fix)
    if report.failed:
        raise UserError(f"{len(report.failed)} of {len(report.rows)} window(s) could not be bisected "
                        f"(first: {report.failed[0].good_date}..{report.failed[0].bad_date})",
                        "see each window's log under the workdir's logs/hunt/, fix it and run the same "
                        "command again (finished dates and windows are kept)")
