"""``hourly bisect``: narrow every regression to one JAX or XLA commit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

from hourly.errors import UsageError
from hourly.model import Mode, check_min_change

from .common import StoredAtStop, command, console, err_console, refuse_together, stored_at_stop


@command("bisect")
def bisect(
    *,
    good: Optional[str],
    bad: Optional[str],
    mode: Optional[Mode],
    max_repeats: int,
    min_change: float,
    log: bool,
    rerun: bool,
    higher_is_better: Optional[bool],
    progress: bool,
    tz: Optional[str],
    find_fix: bool,
    manual: bool,
    explain: bool,
    flaky: bool,
    walk_skips: bool,
    flags: dict[str, Any],
    json_out: bool,
    config: Optional[str],
) -> None:
    """Narrow every regression to one JAX or XLA commit, testing only pairs that existed."""
    check_min_change(min_change, UsageError)
    refuse_together(("--json", json_out), ("--log", log),
                    fix="--json prints the answers, --log a `git bisect replay` log: pass one of them")
    refuse_together(("--mode exit", mode == Mode.EXIT), ("--metric-regex", flags["metric_regex"]),
                    fix="an exit-status run reads no metric: leave out --metric-regex, or pass --mode metric")
    refuse_together(("--mode exit", mode == Mode.EXIT), ("--metrics", flags.get("metrics")),
                    fix="an exit-status run reads no metric: leave out --metrics, or pass --mode metric")
    if (good is None) != (bad is None):
        raise UsageError("--good and --bad go together", "pass both, or neither to bisect every detected regression")
    from hourly.bisect.records import BisectRequest
    req = BisectRequest(good, bad, mode, max_repeats, rerun, min_change, find_fix, flaky, walk_skips)
    from hourly.adapters.store import STORE_NAME, Store
    from hourly.bisect.answer import bisect_log
    from hourly.bisect.events import BisectHandler
    from hourly.bisect.search import check_new_window, run_bisect
    from hourly.execute.executors import make_executor
    from hourly.measure.settings import effective, keyed, stored_settings, workdir_setting
    from hourly.render.bisect import LineHandler, print_answers
    executor = make_executor(flags)  # --executor slurm --workers W: W states probed per round
    workdir = workdir_setting(flags["workdir"], config)
    run_bench = not manual or flags["bench_cmd"] is not None  # --manual: the benchmark only when given now
    if good is not None and bad is not None and not (Path(workdir).expanduser() / STORE_NAME).exists():
        # a new workdir is created only once the input is known good
        s0 = effective(dict(flags, tz=tz, higher_is_better=higher_is_better), config)[0]
        if executor.capabilities.here:  # the builds are installed into --python on this machine
            from hourly.measure.build import require_python
            require_python(s0.python)
        check_new_window(keyed(s0 if run_bench else _no_bench(s0)), good, bad, mode, find_fix, manual)
    store = Store(workdir, create=good is not None)
    if good is None:  # the stored scan's windows: another level's workdir has none
        from .common import require_a_scan
        require_a_scan(store, "bisect")
    s = stored_settings(store, config, tz=tz, higher_is_better=higher_is_better, **flags)
    if not run_bench and not s.bench_cmd:
        s = _no_bench(s)
    s = _metric_followed(store, s, mode)
    from hourly.scan.identity import check_store, note_key
    # the store's repositories, and the key its scan measured under; the settings keyed as they build
    s = check_store(store, s, uses_scan=good is None)
    note_key(store, s)  # what this bisection's key is made of: its answers are labelled by it in reports
    if good is not None and not store.load_settings("scan"):
        # no scan made this workdir: keep the bisection's settings, so `hourly explain` / `report`
        # on it need not be given --jax-repo, --only, --bench-cmd ... again
        from hourly.measure.settings import BISECT_SETTINGS
        store.save_settings(BISECT_SETTINGS, s.as_dict())
    quiet = (json_out or log) and not progress
    handler = BisectHandler() if quiet else LineHandler(
        lambda line: err_console.print(line, soft_wrap=True, highlight=False, markup=False))
    if run_bench:  # another benchmark's measurements in this workdir: said before this one measures
        from hourly.scan.identity import other_measurements
        others = other_measurements(store, s, s.bench_key(), "this bisection")
        if others:
            handler.note(others)
    # --rerun: the windows finished before it began are bisected again; one stopped and resumed,
    # with or without the flag, keeps the windows it finished (SettingsTables.rerun); it ends once
    # every answer is stored
    scope = {"level": "bisect", "bench": s.bench_key(), "good": good, "bad": bad, "mode": mode.value if mode else None,
             "find_fix": find_fix, "metric": s.primary_metric() or None, "manual": manual}
    under_way = store.rerun(scope, rerun)
    if under_way is not None:
        from dataclasses import replace
        req = replace(req, rerun=True, rerun_since=under_way.since)
        if under_way.resumed:
            handler.note(under_way.going_on("the windows it has bisected", "the others are bisected again"))
    from hourly.scan.run import env_lock_for
    answers: list[Any] = []  # set once every answer is stored: a stop from then on says so
    try:
        with env_lock_for(s.python, executor):  # builds are installed into --python: one run at a time
            if manual:
                from hourly.bisect.manual import run_manual
                from hourly.commands.prompt import TerminalPrompt
                answers = run_manual(s, store, req, handler, TerminalPrompt(), run_bench, executor)
            else:
                found = run_bisect(s, store, req, handler, executor)
                from hourly.bisect.descent import descend
                answers = descend(s, store, req, handler, executor, found)  # a culprit that moves a pin: inside it
            if explain:
                from hourly.explain.run import explain_answers
                explain_answers(store, s, answers, handler=handler)
        if under_way is not None:
            store.end_rerun(scope)  # every answer stored: the same command answers from the store
        if json_out:
            print(json.dumps({"regressions": [a.to_json() for a in answers]}, indent=1))
        elif log:
            from hourly.render.console import escape_controls
            logged = [a for a in answers if not a.error]  # a window not bisected has no log: its error exits 1 below
            for i, a in enumerate(logged):
                if len(logged) > 1:  # each window headed by its own kind (a crash window is no regression)
                    from hourly.render.bisect import log_heading
                    print(escape_controls(log_heading(a, i + 1, len(logged))))
                print(escape_controls(bisect_log(a)[1]), end="")  # subjects in its comments: never terminal codes
        else:
            print_answers(console, answers)
            if explain:
                from hourly.render.explain import explained_lines
                for line in explained_lines(answers):
                    console.print(line, highlight=False, soft_wrap=True, markup=False)
    except KeyboardInterrupt:  # Ctrl-C or a stop signal
        if answers:  # every answer stored: the command given prints them (less --rerun, which
            # would bisect the windows again)
            stored_at_stop.append(StoredAtStop("The answer is stored; print it with" if len(answers) == 1 else
                                               f"The {len(answers)} answers are stored; print them with",
                                               leave_out=("--rerun",)))
        raise
    require_answered(answers)  # a window of the stored scan that could not be bisected: exit 1, as --good/--bad's
    if any(a.unconfirmed for a in answers):
        # a candidate the re-measurement did not confirm: scripts can tell it from an answer
        import typer
        raise typer.Exit(UNCONFIRMED_EXIT)


def require_answered(answers: list[Any]) -> None:
    """A window that could not be bisected (its ends do not differ, the bad end is not worse, ...)
    is no answer, whether it came from --good/--bad (the search raised its error) or from the
    stored scan (its answer carries the error, printed and in the JSON with the others): exit 1
    with that window's line and its fix, never 0 over a window left unbisected."""
    from hourly.errors import UserError
    failed = [a for a in answers if a.error]
    if not failed:
        return
    first = failed[0]
    reason = first.reason or first.error
    fix = first.error[len(reason) + 3:] if first.error.startswith(f"{reason} — ") else None
    if len(answers) > 1:  # each window's error names its window (hourly.analysis.judges)
        reason = f"{len(failed)} of {len(answers)} windows could not be bisected, the first: {reason}"
    raise UserError(reason, fix)


def _metric_followed(store: Any, s: Any, mode: Optional[Mode]) -> Any:
    """A benchmark that records several named metrics is bisected on one: --metric (each step's
    command has it). An exit-status bisection reads the runs' exit codes, the same in every
    metric's rows: it follows the first recorded."""
    if s.primary_metric() is not None:
        return s
    from hourly.measure.settings import keyed
    names = store.metric_names(keyed(s, store).bench_key()) if s.bench_cmd else []
    if mode == Mode.EXIT and names:
        from hourly.measure.settings import with_metric
        return with_metric(s, names[0])
    if mode == Mode.EXIT:
        return s
    s.require_primary("hourly bisect", names)
    return s


def _no_bench(s: Any) -> Any:
    """A manual bisection with no benchmark anywhere: a stand-in command names its measurement key
    (nothing is ever run with it)."""
    from dataclasses import replace

    from hourly.bisect.manual import NO_BENCH
    return replace(s, bench_cmd=NO_BENCH)


#: The exit status of a bisection that names a candidate it could not confirm (README, "Exit codes").
UNCONFIRMED_EXIT = 4
