"""``hourly hunt``: the daily level, then a commit-level bisection inside a container per step."""

from __future__ import annotations

import json
from typing import List, Optional

from hourly.errors import UserError
from hourly.measure.settings import workdir_setting

from .common import DAILY, ConfigOpt, JsonOpt, Opt, Workdir, console, daily_settings, err_console, with_options


@with_options(DAILY)
def hunt(
    from_: Optional[str] = Opt(None, "--from", help="First date of the daily level, e.g. 2023-07-06 (included) [required unless --good-date]."),
    to: Optional[str] = Opt(None, "--to", help="Last date (included) [required unless --bad-date]."),
    good_date: Optional[str] = Opt(None, "--good-date", help="Enter at the commit level: a good day (with --bad-date; skips the daily search) [default: the daily level finds them]."),
    bad_date: Optional[str] = Opt(None, "--bad-date", help="The bad day to bisect against --good-date [default: the daily level finds it]."),
    from_release: Optional[str] = Opt(None, "--from-release", help="Enter at the release level: first jax release, e.g. 0.4.13 (with --to-release; the release level finds the days) [default: start at the daily level]."),
    to_release: Optional[str] = Opt(None, "--to-release", help="Last jax release of the release level (included) [required with --from-release]."),
    release_bench_cmd: Optional[str] = Opt(None, "--release-bench-cmd", help="Benchmark in each release's environment on the host [default: --bench-cmd with mount targets replaced by their host folders, run in the /dir mount's folder]."),
    extra: Optional[str] = Opt(None, "--extra", help="Release level: install jax[EXTRA], e.g. cuda12 [default: none, CPU only]."),
    index_url: Optional[str] = Opt(None, "--index-url", help="Release level: package index (PEP 691 JSON) [default: https://pypi.org/simple]."),
    find_links: Optional[str] = Opt(None, "--find-links", help="Release level: a local directory of wheels instead of an index [default: none, the index]."),
    pre: bool = Opt(False, "--pre", help="Release level: include dev/nightly versions."),
    release_with: Optional[List[str]] = Opt(None, "--release-with", help="Release level: another requirement for every environment, e.g. 'numpy<2' (repeatable) [default: none]."),
    release_cache_dir: Optional[str] = Opt(None, "--release-cache-dir", help="Release level: where the environments are kept [default: ~/.cache/hourly/releases]."),
    flags: dict = None,  # type: ignore[assignment]  # DAILY's options
    dates: str = Opt("all", "--dates", help="all: measure every date; search: back-search from --to (1, 2, 4, … days) then bisect the dates — one boundary, fewer containers."),
    scan_step: Optional[str] = Opt(None, "--scan-step", help="Scan each window every STEP (e.g. 1h) inside the container before bisecting, as the guide does by hand [default: bisect the window directly]."),
    bisect_in: str = Opt("bad", "--bisect-in", help="Bisect in the bad day's image (its trees hold both ends) or the good day's (then `git fetch`)."),
    build_cmd: Optional[str] = Opt(None, "--build-cmd", help="Build command inside the container [default: build-jax.sh]."),
    xla_repo: Optional[str] = Opt(None, "--xla-repo", help="XLA tree inside the container [default: /opt/xla-source or /opt/xla]."),
    jax_repo: Optional[str] = Opt(None, "--jax-repo", help="JAX tree inside the container [default: /opt/jax-source or /opt/jax]."),
    ref: Optional[str] = Opt(None, "--ref", help="Ref whose history is bisected inside [default: origin/main]."),
    xla_ref: Optional[str] = Opt(None, "--xla-ref", help="XLA's own ref inside [default: --ref]."),
    jax_ref: Optional[str] = Opt(None, "--jax-ref", help="JAX's own ref inside, e.g. a feature branch [default: --ref]."),
    max_repeats: Optional[int] = Opt(None, "--max-repeats", help="Most samples of one state while its verdict is unsure [default: bisect's, 20]."),
    min_change: Optional[float] = Opt(None, "--min-change", help="Smallest step worth pinning, a fraction of the level [default: 0.02]; also what makes a date good for --dates search."),
    rerun: bool = Opt(False, "--rerun", help="Measure again dates and bisect again windows already stored."),
    explain: bool = Opt(False, "--explain", help="The bisection inside explains each culprit (`hourly bisect --explain`: HLO diff, op times, repro; docs/explain.md)."),
    workdir: Optional[str] = Workdir,
    json_out: bool = JsonOpt,
    config: Optional[str] = ConfigOpt,
) -> None:
    """From "it got slower between these dates" to the commit: nightly, then bisect in a container."""
    from hourly.adapters.store import Store
    from hourly.hunt.run import HuntSettings
    if good_date or bad_date:
        if not (good_date and bad_date):
            raise UserError("--good-date and --bad-date go together", "pass both, or neither")
        from_, to = from_ or good_date, to or bad_date
    entry = _release_entry(from_release, to_release, from_ or to or good_date,
                           dict(bench_cmd=release_bench_cmd, extra=extra, index_url=index_url,
                                find_links=find_links, pre=pre, cache_dir=release_cache_dir,
                                with_=list(release_with or [])))
    if entry is not None:
        from_ = to = ""  # the release level hands the days to the daily level
    elif not from_ or not to:
        raise UserError("the hunt needs dates", "pass --from 2023-07-06 --to 2023-09-20, --good-date and --bad-date, "
                        "or --from-release 0.4.13 --to-release 0.4.20")
    wd = workdir_setting(workdir, config)
    s = daily_settings(flags, from_, to, wd, rerun, config)
    h = HuntSettings(s, bisect_in=bisect_in, good_date=good_date, bad_date=bad_date, build_cmd=build_cmd,
                     xla_repo=xla_repo, jax_repo=jax_repo, ref=ref, xla_ref=xla_ref, jax_ref=jax_ref, max_repeats=max_repeats, min_change=min_change, rerun=rerun, dates=dates,
                     scan_step=scan_step, releases=entry, explain=explain)
    h.validate()
    store = Store(wd)
    _run_and_print(h, store, json_out)


def _release_entry(from_release: Optional[str], to_release: Optional[str], dates_given, options: dict):
    """``--from-release``/``--to-release``: the release level's settings (None without them)."""
    if not (from_release or to_release):
        return None
    if not (from_release and to_release):
        raise UserError("--from-release and --to-release go together", "pass both, e.g. --from-release 0.4.13 --to-release 0.4.20")
    if dates_given:
        raise UserError("--from-release finds the days itself", "drop --from/--to and --good-date/--bad-date")
    from hourly.hunt.from_releases import ReleaseEntry
    return ReleaseEntry(from_release, to_release, **options)


def _run_and_print(h, store, json_out: bool) -> None:
    from hourly.commands.progress import ProgressLines
    from hourly.hunt.run import run_hunt
    from hourly.render.hunt import print_report
    if json_out:
        report = run_hunt(h, store)
    else:
        with ProgressLines(err_console, "dates", lambda current: f"running {current}") as handler:
            report = run_hunt(h, store, handler)
    if json_out:
        print(json.dumps(report.as_json(), indent=1))
    else:
        print_report(console, report)
    if report.failed:
        raise UserError(f"{len(report.failed)} of {len(report.rows)} window(s) could not be bisected "
                        f"(first: {report.failed[0]['good_date']}..{report.failed[0]['bad_date']})",
                        "see each window's log under the workdir's logs/hunt/, fix it and run the same "
                        "command again (finished dates and windows are kept)")
