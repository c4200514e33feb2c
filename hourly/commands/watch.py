"""``hourly watch``: measure every new nightly (or commit) on arrival, confirm a suspected step by
measuring again, alert, and start the hunt (logic in hourly/watch/)."""

from __future__ import annotations

import json
from typing import Any, List, Optional

import typer

from hourly.errors import UsageError, UserError
from hourly.metric import DEFAULT_METRIC_REGEX
from hourly.nightly.plan import DEFAULT_IMAGE

from .common import ConfigOpt, Direction, JsonOpt, Opt, Workdir, console, err_console


def watch(
    source: Optional[str] = Opt(None, "--source", help="containers: nightly images (--image with {date}); wheels: "
                                "nightly wheels X.Y.Z.devYYYYMMDD on an index (--index-url/--find-links); commits: the "
                                "first-parent history of JAX and XLA every --step [default: the workdir's watch, as its first run set it]."),
    since: Optional[str] = Opt(None, "--since", help="First date (or time) watched; the first run measures from there as "
                               "history [default: the first run's, else 14 days back]."),
    until: Optional[str] = Opt(None, "--until", help="Newest time looked at, to replay a past stretch night by night "
                               "[default: now; a date alone: the end of that day]."),
    bench_cmd: Optional[str] = Opt(None, "--bench-cmd", help="The benchmark (split like a shell would) [containers: "
                                   "/bin/bash /dir/test.sh; wheels, commits: required]."),
    bench_cwd: Optional[str] = Opt(None, "--bench-cwd", help="Directory the benchmark runs in (wheels, commits) [default: the current one]."),
    env: Optional[List[str]] = Opt(None, "--env", help="KEY=VALUE for the benchmark (containers: inside) (repeatable) [default: none]."),
    metric_regex: str = Opt(DEFAULT_METRIC_REGEX, "--metric-regex", help="Regex with a (?P<value>...) group: the primary metric, "
                            "named by the word it starts with."),
    repeats: int = Opt(3, "--repeats", help="Runs of each new build on arrival."),
    timeout: Optional[float] = Opt(None, "--timeout", help="Seconds before a run counts as timed out [default: no limit]."),
    higher_is_better: Optional[bool] = Direction,
    min_change: float = Opt(0.02, "--min-change", help="Smallest step worth an alert, a fraction of the level (0.02: 2 %)."),
    max_pairs: int = Opt(80, "--max-pairs", help="Most interleaved pairs a suspected step is measured again with; then it is unsure."),
    image: str = Opt(DEFAULT_IMAGE, "--image", help="containers: image template with {date}."),
    mount: Optional[List[str]] = Opt(None, "--mount", help="containers: SRC:DST bind mount (repeatable) [default: $PWD:/dir]."),
    gpus: str = Opt("all", "--gpus", help="containers: all, none, a count N, or device ids like 0,2."),
    pull: bool = Opt(True, "--pull/--no-pull", help="containers: pull images that are not local."),
    list_tags: bool = Opt(False, "--list-tags", help="containers: list the image's tags from the registry (v2 API) instead of "
                          "trying each date's tag."),
    index_url: Optional[str] = Opt(None, "--index-url", help="wheels: package index (PEP 691 JSON), e.g. JAX's nightly index [default: https://pypi.org/simple]."),
    find_links: Optional[str] = Opt(None, "--find-links", help="wheels: a local directory of wheels instead of an index [default: none]."),
    extra: Optional[str] = Opt(None, "--extra", help="wheels: install jax[EXTRA], e.g. cuda12 [default: none]."),
    with_: Optional[List[str]] = Opt(None, "--with", help="wheels: another requirement of every environment (repeatable) [default: none]."),
    release_cache_dir: Optional[str] = Opt(None, "--release-cache-dir", help="wheels: where the environments are kept [default: ~/.cache/hourly/releases]."),
    xla_repo: Optional[str] = Opt(None, "--xla-repo", help="commits: XLA checkout [default: /opt/xla-source or /opt/xla]."),
    jax_repo: Optional[str] = Opt(None, "--jax-repo", help="commits: JAX checkout [default: /opt/jax-source or /opt/jax]."),
    ref: Optional[str] = Opt(None, "--ref", help="commits: ref whose first-parent history is watched [default: origin/main]."),
    step: str = Opt("24h", "--step", help="commits: spacing of the instants looked at, e.g. 6h."),
    build_cmd: Optional[str] = Opt(None, "--build-cmd", help="commits: build command run in the JAX tree [default: build-jax.sh]."),
    python: Optional[str] = Opt(None, "--python", help="wheels: the interpreter environments are made from; commits: the "
                                "Python that gets the builds [default: hourly's]."),
    cache_dir: Optional[str] = Opt(None, "--cache-dir", help="commits: build cache [default: ~/.cache/hourly]."),
    warmup_runs: int = Opt(1, "--warmup-runs", help="commits: runs of a build just installed that are recorded but not "
                           "counted (a confirmation installs its two builds in turn: each switch pays them)."),
    sync: bool = Opt(True, "--sync/--no-sync", help="commits: `git remote update` both checkouts first."),
    force: bool = Opt(False, "--force", help="commits: run even with uncommitted changes in the checkouts (stashed and restored)."),
    hunt: bool = Opt(True, "--hunt/--no-hunt", help="Start the hunt of a confirmed regression (hourly hunt, or hourly bisect for commits)."),
    hunt_arg: Optional[List[str]] = Opt(None, "--hunt-arg", help="An option passed to the hunt's command as it is, e.g. "
                                        "--hunt-arg=--scan-step=1h (repeatable) [default: none]."),
    hunt_image: Optional[str] = Opt(None, "--hunt-image", help="wheels: the nightly images ({date}) a regression between two "
                                    "nightlies is hunted in [default: none: the alert names the command]."),
    executor: str = Opt("local", "--executor", help="Where a hunt runs: local (waited for) or slurm (one job; a later run reads its answer)."),
    partition: Optional[str] = Opt(None, "--partition", help="Slurm partition of the hunt's job [default: the cluster's]."),
    time_: Optional[str] = Opt(None, "--time", help="Slurm time limit of the hunt's job [default: the partition's]."),
    gres: Optional[str] = Opt(None, "--gres", help="Slurm generic resources of the hunt's job, e.g. gpu:1 [default: none]."),
    slurm_arg: Optional[List[str]] = Opt(None, "--slurm-arg", help="Another sbatch option for the hunt's job (repeatable) [default: none]."),
    notify_cmd: Optional[str] = Opt(None, "--notify-cmd", help="Run for each alert that is new or changed (hunted, recovered), "
                                    "with its JSON on stdin; a failure is said, exits 1, and the next run tries again [default: none]."),
    show: bool = Opt(False, "--show", help="Print the stored watch and write its page; look for and measure nothing."),
    workdir: Optional[str] = Workdir,
    json_out: bool = JsonOpt,
    config: Optional[str] = ConfigOpt,
) -> None:
    """Measure every new build on arrival, confirm steps by measuring again, alert, hunt."""
    from hourly.adapters.store import Store
    from hourly.commands.progress import ProgressLines
    from hourly.measure.settings import workdir_setting
    from hourly.render.watch import notify_payload, print_report, write_page
    from hourly.watch.plan import LEVEL, WatchSettings
    from hourly.watch.run import deliver, run_watch
    wd = workdir_setting(workdir, config)
    if source is None:
        store = Store(wd, create=False, made_by="hourly watch --source containers|wheels|commits ...")
        saved = store.load_settings(LEVEL)
        if not saved:
            raise UserError(f"no watch in {store.workdir}", "start one with --source containers, wheels or commits")
        w = WatchSettings(**saved["settings"])
        w.until = until  # never the first run's: a replayed night is not where a later run stops
        if notify_cmd is not None:
            w.notify_cmd = notify_cmd
    else:
        w = _settings(locals(), wd, config)
        w.validate()
        store = Store(wd)
    if json_out:
        report = run_watch(w, store, show=show)
    else:
        with ProgressLines(err_console, "watch", str) as handler:
            report = run_watch(w, store, handler, show=show)
    if not show:
        report = deliver(w, store, report, lambda a: notify_payload(a, report))
    page = write_page(report)
    if json_out:
        print(json.dumps({**report.as_json(), "page": str(page)}, indent=1))
    else:
        print_report(console, report)
        console.print(f"page: {page}", soft_wrap=True, highlight=False, markup=False)
    if report.run.notify_failures:
        raise UserError(f"--notify-cmd failed for {len(report.run.notify_failures)} alert(s): "
                        f"{report.run.notify_failures[0]}",
                        "fix the command; everything is stored, and the next `hourly watch` notifies again")
    code = report.exit_code()
    if code:
        raise typer.Exit(code)


def _settings(given: dict[str, Any], wd: str, config: Optional[str]):
    """The watch's settings from the options: the level that measures one build (the daily level's,
    the release level's, the scan's settings), then the watch's own."""
    from hourly.measure.settings import effective
    from hourly.watch.plan import SOURCES, WatchSettings, metric_name
    g = given
    source = g["source"]
    if source not in SOURCES:
        raise UsageError(f"--source {source!r} is none of {', '.join(SOURCES)}", "pass --source containers, wheels or commits")
    direction = g["higher_is_better"]
    if direction is None:
        direction = effective({}, g["config"])[0].higher_is_better
    env = list(g["env"] or [])
    if source == "containers":
        from hourly.nightly.plan import DEFAULT_BENCH_CMD, NightlySettings
        ns = NightlySettings(from_="2000-01-01", to="2000-01-01", image=g["image"], mounts=list(g["mount"] or []),
                             gpus=g["gpus"], env=env, bench_cmd=g["bench_cmd"] or DEFAULT_BENCH_CMD,
                             metric_regex=g["metric_regex"], repeats=g["repeats"], timeout=g["timeout"], workdir=wd,
                             pull=g["pull"], higher_is_better=direction)
        ns.validate()
        level = ns.as_dict()
    elif source == "wheels":
        from hourly.releases.plan import ReleaseSettings, default_cache_dir
        if not g["bench_cmd"]:
            raise UsageError("a wheels watch needs its benchmark", 'pass --bench-cmd "python bench.py"')
        rs = ReleaseSettings(from_="0", to="0", bench_cmd=g["bench_cmd"], bench_cwd=g["bench_cwd"], env=env,
                             metric_regex=g["metric_regex"], repeats=g["repeats"], timeout=g["timeout"],
                             higher_is_better=direction, extra=g["extra"], with_=list(g["with_"] or []),
                             index_url=g["index_url"], find_links=g["find_links"], pre=True, python=g["python"],
                             cache_dir=g["release_cache_dir"] or default_cache_dir(), workdir=wd)
        rs.validate()
        level = rs.as_dict()
    else:
        if not g["bench_cmd"]:
            raise UsageError("a commits watch needs its benchmark", 'pass --bench-cmd "python3 bench.py"')
        flags = {"xla_repo": g["xla_repo"], "jax_repo": g["jax_repo"], "ref": g["ref"], "build_cmd": g["build_cmd"],
                 "python": g["python"], "cache_dir": g["cache_dir"], "bench_cmd": g["bench_cmd"],
                 "bench_cwd": g["bench_cwd"], "env": env, "repeats": g["repeats"], "bench_timeout": g["timeout"],
                 "metric_regex": g["metric_regex"], "higher_is_better": direction, "workdir": wd,
                 "sync": g["sync"], "force": g["force"], "warmup_runs": g["warmup_runs"]}
        s, _ = effective(flags, config)
        level = s.as_dict()
    slurm = {"partition": g["partition"], "time": g["time_"], "gres": g["gres"], "extra": list(g["slurm_arg"] or [])}
    return WatchSettings(source=source, level=level, workdir=wd, since=g["since"], until=g["until"], step=g["step"],
                         list_tags=g["list_tags"], metric=metric_name(g["metric_regex"]), higher_is_better=direction,
                         min_change=g["min_change"], max_pairs=g["max_pairs"], hunt=g["hunt"], executor=g["executor"],
                         slurm=slurm, hunt_args=list(g["hunt_arg"] or []), hunt_image=g["hunt_image"],
                         notify_cmd=g["notify_cmd"])
