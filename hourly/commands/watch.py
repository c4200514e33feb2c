"""``hourly watch``: measure every new nightly (or commit) on arrival, confirm a suspected step by
measuring again, alert, and start the hunt (logic in hourly/watch/)."""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any, List, Optional

import typer

from hourly import options
from hourly.errors import UsageError, UserError
from hourly.model import ExecutorKind

from .common import command, console, read_metrics, shared_direction, with_progress, with_samples

if TYPE_CHECKING:
    from hourly.watch.plan import WatchSettings


@command("watch")
def watch(
    *,
    source: Optional[str],
    since: Optional[str],
    until: Optional[str],
    bench_cmd: Optional[str],
    bench_cwd: Optional[str],
    env: Optional[List[str]],
    metric_regex: str,
    metrics: Optional[str],
    metric_samples: Optional[str],
    warmup_samples: Optional[int],
    samples: Optional[int],
    metric: Optional[str],
    repeats: int,
    timeout: Optional[float],
    higher_is_better: Optional[bool],
    min_change: float,
    max_pairs: int,
    image: str,
    mount: Optional[List[str]],
    gpus: str,
    pull: bool,
    list_tags: bool,
    index_url: Optional[str],
    find_links: Optional[str],
    extra: Optional[str],
    with_: Optional[List[str]],
    release_cache_dir: Optional[str],
    xla_repo: Optional[str],
    jax_repo: Optional[str],
    ref: Optional[str],
    step: str,
    build_cmd: Optional[str],
    python: Optional[str],
    cache_dir: Optional[str],
    warmup_runs: Optional[int],
    sync: Optional[bool],
    force: Optional[bool],
    hunt: bool,
    hunt_arg: Optional[List[str]],
    hunt_image: Optional[str],
    executor: Optional[ExecutorKind],
    partition: Optional[str],
    time: Optional[str],
    gres: Optional[str],
    slurm_arg: Optional[List[str]],
    notify_cmd: Optional[str],
    show: bool,
    workdir: Optional[str],
    json_out: bool,
    config: Optional[str],
) -> None:
    """Measure every new build on arrival, confirm steps by measuring again, alert, hunt."""
    given = dict(locals())  # the options, by name (the level's settings are made from them)
    from hourly.adapters.store import Store
    from hourly.measure.settings import workdir_setting
    from hourly.render.watch import notify_payload, print_report, write_page
    from hourly.watch.plan import LEVEL, WatchSettings
    from hourly.watch.run import deliver, run_watch
    wd = workdir_setting(workdir, config)
    if source is None or show:
        store = Store(wd, create=False, read_only=show, made_by="hourly watch --source containers|wheels|commits ...")
        saved = store.load_settings(LEVEL)
        if not saved:
            raise UserError(f"no watch in {store.workdir}", "start one with --source containers, wheels or commits")
        # --until: never the first run's (a replayed night is not where a later run stops)
        w = WatchSettings(**saved["settings"])
        w = dataclasses.replace(w, until=until, notify_cmd=w.notify_cmd if notify_cmd is None else notify_cmd)
        w.check_window()
        if not show:
            w.check_env()
    else:
        w = _settings(given, wd, config)
        w.validate()
        _refuse_another_levels(wd)
        store = Store(wd)
    report = with_progress(lambda handler: run_watch(w, store, handler, show=show), json_out, "watch", str)
    if not show:
        # the settings the run watched with (the first run settles --since)
        report = deliver(report.settings, store, report, lambda a: notify_payload(a, report))
    try:
        page: str = str(write_page(report))
    except OSError as e:
        if not show:
            raise
        page = f"not written: {e.strerror or e} ({e.filename or report.settings.workdir})"  # a read-only workdir, read
    if json_out:
        print(json.dumps({**report.as_json(), "page": page}, indent=1))
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


def _primary(named: str, metric: Optional[str]) -> str:
    """The primary of a watch of named metrics: --metric (one of --metrics), else the one name of
    --metrics; "" when it records several and none was chosen (every series alike)."""
    from hourly.measure.settings import parse_metric_names
    from hourly.metric import METRIC_NAME
    names = parse_metric_names(named) or []
    if metric is not None:
        import re
        if not re.fullmatch(METRIC_NAME, metric):
            raise UsageError(f"--metric {metric!r} is not a metric's name",
                             "pass the name of a METRIC line, e.g. --metric lower_ms")
        if "all" not in names and metric not in names:
            raise UsageError(f"--metric {metric} is not one of --metrics {named}", f"add it: --metrics {named},{metric}")
        return metric
    return names[0] if len(names) == 1 and names[0] != "all" else ""


def _settings(given: dict[str, Any], wd: str, config: Optional[str]) -> WatchSettings:
    """The watch's settings from the options: the level that measures one build (the daily level's,
    the release level's, the scan's settings), then the watch's own."""
    from hourly.measure.settings import effective
    from hourly.watch.plan import WatchSettings, metric_name
    g = given
    source = g["source"]  # one of SOURCES: its option's rule checked it
    direction = shared_direction(g["higher_is_better"], g["config"])
    # what the watch settles itself, under the options' names: --samples is HOURLY_SAMPLES in every
    # run's environment, the direction falls back on the settings file, the workdir is resolved
    g = {**g, "env": with_samples(g["env"], g["samples"]), "higher_is_better": direction, "workdir": wd,
         "mount": list(g["mount"] or []), "with_": list(g["with_"] or [])}
    level_of = options.watch_level(source, g)  # which option gives which setting: hourly.options.WATCH_LEVELS
    # how a run's output is read: --metric alone records every named metric and lists that one first
    wanted = g["metrics"] if g["metrics"] is not None or g["metric"] is None else "all"
    if source == "containers":
        from hourly.nightly.plan import DEFAULT_BENCH_CMD, NightlySettings
        ns = NightlySettings(**{**level_of, "bench_cmd": g["bench_cmd"] or DEFAULT_BENCH_CMD},
                             from_="2000-01-01", to="2000-01-01")
        ns_metrics, ns_samples, ns_warmup = read_metrics(ns, wanted, g["metric_samples"], g["warmup_samples"])
        ns = dataclasses.replace(ns, metrics=ns_metrics, metric_samples=ns_samples, warmup_samples=ns_warmup)
        level = ns.validate().as_dict()
        named = ns.metrics
    elif source == "wheels":
        from hourly.releases.plan import ReleaseSettings, default_cache_dir
        if not g["bench_cmd"]:
            raise UsageError("a wheels watch needs its benchmark", 'pass --bench-cmd "python bench.py"')
        rs = ReleaseSettings(**{**level_of, "cache_dir": level_of["cache_dir"] or default_cache_dir()},
                             from_="0", to="0", pre=True)
        rs_metrics, rs_samples, rs_warmup = read_metrics(rs, wanted, g["metric_samples"], g["warmup_samples"])
        rs = dataclasses.replace(rs, metrics=rs_metrics, metric_samples=rs_samples, warmup_samples=rs_warmup)
        level = rs.validate().as_dict()
        named = rs.metrics
    else:
        if not g["bench_cmd"]:
            raise UsageError("a commits watch needs its benchmark", 'pass --bench-cmd "python3 bench.py"')
        s, _ = effective(level_of, config)  # sync, force, warmup_runs: None when not given
        level = s.as_dict()
        names = s.named_metrics()
        named = None if names is None else ",".join(names)
    slurm = {"partition": g["partition"], "time": g["time"], "gres": g["gres"], "extra": list(g["slurm_arg"] or [])}
    primary = metric_name(g["metric_regex"]) if named is None else _primary(named, g["metric"])
    return WatchSettings(source=source, level=level, workdir=wd, since=g["since"], until=g["until"], step=g["step"],
                         list_tags=g["list_tags"], metric=primary, metrics=named, higher_is_better=direction,
                         min_change=g["min_change"], max_pairs=g["max_pairs"], hunt=g["hunt"],
                         executor=getattr(g["executor"], "value", g["executor"]) or "local",
                         slurm=slurm, hunt_args=list(g["hunt_arg"] or []), hunt_image=g["hunt_image"],
                         notify_cmd=g["notify_cmd"])


def _refuse_another_levels(wd: str) -> None:
    """A watch keeps a workdir of its own: one that holds a scan, the daily or the release level's
    results or a bisection is refused (their tables and the watch's would mix), naming what it holds."""
    from pathlib import Path

    from hourly.adapters.store import STORE_NAME, Store
    if not (Path(wd) / STORE_NAME).is_file():
        return
    from hourly.scan.table import has_scan
    store = Store(wd, create=False, read_only=True)
    try:
        held = ("a scan (hourly scan)" if has_scan(store) else
                "the daily level's results (hourly nightly)" if store.load_settings("nightly") else
                "the release level's results (hourly releases)" if store.load_settings("releases") else
                "a bisection (hourly bisect)" if store.bisection_answers() or store.unfinished_bisections() else None)
    finally:
        store.close()
    if held is not None:
        raise UserError(f"{store.workdir} holds {held}: a watch keeps a workdir of its own",
                        f"pass --workdir a new folder for the watch, e.g. --workdir {Path(wd).name}-watch")
