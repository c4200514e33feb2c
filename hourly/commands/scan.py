"""``hourly scan`` and ``hourly show``: build and benchmark every hour of a window; print it again."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Optional, cast

from hourly.model import Pair

from .common import check_plan_size, command, console, err_console, refuse_together

if TYPE_CHECKING:
    from hourly.adapters.store import Store
    from hourly.measure.settings import Settings
    from hourly.model import ScanReport


@command("scan")
def scan(*, flags: dict[str, Any], dry_run: bool, json_out: bool, config: Optional[str]) -> None:
    """Build and benchmark every hour of a window; one build per distinct (xla, jax) pair."""
    from hourly.adapters.store import log_dir
    from hourly.commands.progress import ProgressLines
    from hourly.execute.executors import make_executor
    from hourly.measure.settings import effective
    from hourly.scan.run import dry_run as plan_only
    from hourly.scan.run import run_scan
    executor = make_executor(flags)
    s, _ = effective(flags, config)
    refuse_together(("--mode exit", s.mode == "exit"), ("--metric-regex", flags["metric_regex"]),
                    fix="an exit-status run reads no metric: leave out --metric-regex, or pass --mode metric")
    refuse_together(("--mode exit", s.mode == "exit"), ("--metrics", flags.get("metrics")),
                    fix="an exit-status run reads no metric: leave out --metrics, or pass --mode metric")
    check_plan_size(s, flags["max_instants"])
    # the workdir is created only once the scan has checked its input and has something to store
    if dry_run:
        report = plan_only(s, s.workdir)
    elif json_out:
        report = run_scan(s, s.workdir, executor=executor)
    else:
        logs = log_dir(s.workdir)

        def building(current: object) -> str:
            pair = cast(Pair, current)  # the scan's handler hears the pair it builds
            return f"building + measuring {pair.short()} (build log {logs / f'build-{pair.key()}.log'})"
        with ProgressLines(err_console, "pairs", building) as handler:
            report = run_scan(s, s.workdir, handler, executor)
    emit(report, json_out, s)
    if not dry_run:
        from hourly.scan.resolution import require_resolved_report
        from hourly.scan.table import (
            require_complete,
            require_decided_report,
            require_edges_read_report,
            require_measured,
            require_real_report,
        )
        require_measured(report, s)
        found = found_any(report, s)
        require_complete(report, s, found)
        require_decided_report(report, s, found)  # too few pairs to tell noise from steps: exit 1
        require_resolved_report(report, s, found)  # steps of --min-change could not show: exit 1
        require_edges_read_report(report, s)  # an edge step measured again the other way: exit 1
        require_real_report(report, s)  # a step named against an assumed noise: exit 1


def found_any(report: ScanReport, s: Settings) -> bool:
    """A step, a crash window or a metric window in the table (of any named metric)."""
    if report.metrics is not None:
        from hourly.render.metrics import found_anything as in_any_metric
        return in_any_metric(report)
    from hourly.render.steps import found_anything  # detection (numpy): not for a dry run's plan
    return found_anything(report, s)


def warmup_note(s: Settings) -> str:
    """How the runs of each point were counted: the warm-up runs of a state just installed apart."""
    w = s.warmup_runs
    return (f"each value: the median of {s.repeats} counted run{'s' if s.repeats != 1 else ''}; the first "
            f"{w} run{'s' if w != 1 else ''} after a state was installed {'are' if w != 1 else 'is'} "
            "recorded as warm-up and not counted")


def emit(report: ScanReport, json_out: bool, s: Settings) -> None:
    """A scan report as JSON, or as the table with detection's marks and one line per step."""
    if json_out:
        out = report.as_json()
        if isinstance(out, dict) and s is not None:  # how each point's runs were counted
            out["measuring"] = {"repeats": s.repeats, "warmup_runs": getattr(s, "warmup_runs", 0)}
        if isinstance(out, dict) and s is not None and s.named_metrics() is not None:
            out["measuring"].update(metrics=s.named_metrics(), metric=s.primary_metric(),
                                    metric_samples="all", warmup_samples=s.warmup_samples)
        elif isinstance(out, dict) and s is not None and (s.metric_samples != "last" or s.warmup_samples):
            out["measuring"].update(metric_samples=s.metric_samples, warmup_samples=s.warmup_samples)
        if report.plan is None:  # where the benchmark crashes or stops printing its metric (or comes back)
            from hourly.render.steps import undecided_json, windows_json
            from hourly.scan.table import gaps_json
            out["windows"] = windows_json(report)
            out["undecided"] = undecided_json(report, s)  # too few pairs to tell noise from steps
            if report.metrics is None:  # named metrics each say their own bound ("within")
                from hourly.scan.resolution import as_json as resolution_json
                out["resolution"] = resolution_json(report.points, s)  # the smallest step that could show
            out.update(gaps_json(report.points, s))  # planned points not measured yet: "complete": false
            if report.metrics is not None:  # every named metric: its points, steps and what it did
                from hourly.render.metrics import as_json as metrics_json
                out.update(metrics_json(report, s))
        print(json.dumps(out, indent=1))
        return
    from hourly.render.console import print_wrapped
    from hourly.render.scan import print_report
    if report.metrics is not None and report.plan is None:
        from hourly.render.metrics import print_report as print_metrics
        print_metrics(console, report, s)
        if s.warmup_runs and s.mode != "exit":
            print_wrapped(console, warmup_note(s))
        return
    if report.plan is not None and all(p.status in ("planned", "built") for p in report.points):
        marks: dict[int, str] = {}  # a plan with nothing measured yet: no step, crash or metric window to mark
        lines: list[str] = []
    else:
        from hourly.render.steps import marks_for_report  # detection (numpy)
        marks, lines = marks_for_report(report, s)
    print_report(console, report, marks)
    from hourly.render.scan import counts_line
    many = counts_line(report)  # runs that printed many samples (--metric-samples all): counted apart
    if many:
        print_wrapped(console, many)
    if s is not None and s.warmup_runs and s.mode != "exit":
        print_wrapped(console, warmup_note(s))
    for line in lines:  # a step's or a crash window's sentence, within the console's width
        print_wrapped(console, line)


@command("show")
def show(*, workdir: Optional[str], json_out: bool, config: Optional[str], nightly: bool) -> None:
    """Print the stored scan table again (the hourly scan's, or with --nightly the daily one)."""
    from hourly.adapters.store import Store
    from hourly.measure.settings import stored_settings, workdir_setting
    from hourly.scan.table import stored_scan as show_stored
    store = Store(workdir_setting(workdir, config), create=False, read_only=True,  # it only reads
                  made_by="hourly nightly --from ... --to ..." if nightly else "hourly scan")
    if nightly or (not store.points("hourly") and store.load_settings("nightly")):
        from hourly.nightly.plan import stored_nightly as show_nightly
        from hourly.render.nightly import print_report
        daily = show_nightly(store)
        if json_out:
            print(json.dumps(daily.as_json(), indent=1))
        else:
            print_report(console, daily)
        daily.require_decided()  # too few dates to tell noise from steps: exit 1
        return
    s = stored_settings(store, config, workdir=workdir)
    from hourly.scan.table import has_scan
    if not has_scan(store):  # never an empty "scan" table: say what the workdir holds instead
        _show_unscanned(store, s, json_out)
        return
    from hourly.scan.resolution import require_resolved_report
    from hourly.scan.table import require_complete, require_decided_report, require_edges_read_report
    report = show_stored(store, s)
    emit(report, json_out, s)
    from hourly.scan.identity import other_measurements
    others = other_measurements(store, s, s.bench_key())  # another benchmark's hunt in this workdir too
    if others and not json_out:
        err_console.print(others, soft_wrap=True, highlight=False, markup=False)
    found = found_any(report, s)
    require_complete(report, s, found)  # gaps and nothing found: exit 1
    from hourly.scan.table import require_measured
    require_measured(report, s)  # every point failed: the scan's own error, exit 1 (not a clean table)
    require_decided_report(report, s, found)  # too few pairs to tell noise from steps: exit 1
    require_resolved_report(report, s, found)  # steps of --min-change could not show: exit 1
    require_edges_read_report(report, s)  # an edge step measured again the other way: exit 1
    from hourly.scan.table import require_real_report
    require_real_report(report, s)  # a step named against an assumed noise (resume first if incomplete): exit 1


def _show_unscanned(store: Store, s: Settings, json_out: bool) -> None:
    """``hourly show`` of a workdir no scan made: a bisection's answers (exit 1 when none of this
    build has finished), or the one line saying what else it holds."""
    from hourly.errors import UserError
    if not store.bisection_answers() and not store.unfinished_bisections():
        from .common import require_a_scan
        require_a_scan(store, "show")  # another level's workdir: what it holds, and what reads it
        raise UserError(f"no scan and no bisection in {store.workdir}", "run hourly scan (or hourly bisect --good --bad) there first")
    from hourly.render.bisect import unscanned
    view = unscanned(store, s)
    if json_out:
        print(json.dumps(view.as_json(), indent=1))
    else:
        for line in view.lines():
            console.print(line, highlight=False, soft_wrap=True)
    if not view.current:
        raise UserError(f"no bisection of this build has finished in {store.workdir}",
                        "run the same hourly bisect command again to finish it")
