"""``hourly profile``: trace the last-good and first-bad states of each regression and compare them."""

from __future__ import annotations

import json
from typing import Any, Optional

from hourly.errors import UsageError
from hourly.render.console import command_line, styled

from .common import command, console, err_console


@command("profile")
def profile(
    *,
    workdir: Optional[str],
    good: Optional[str],
    bad: Optional[str],
    python_tracer_level: Optional[int],
    host_tracer_level: Optional[int],
    front_end: str,
    front_end_processes: int,
    front_end_repeats: int,
    top: int,
    flags: dict[str, Any],
    json_out: bool,
    config: Optional[str],
) -> None:
    """Trace the last-good and first-bad states of each regression and compare them; for a step in
    tracing, lowering or dispatch, diff a Python-level profile of both states too."""
    from hourly.adapters.store import Store
    from hourly.commands.progress import ProgressLines
    from hourly.execute.executors import make_executor
    from hourly.measure.settings import stored_settings, workdir_setting
    from hourly.profile.capture import TraceOptions
    from hourly.profile.run import Target, parse_state, run_profiles, targets_from_store
    if bool(good) != bool(bad):  # the command line first: a usage error before the workdir is read
        raise UsageError("--good and --bad go together", "pass both, or neither to use the stored regressions")
    executor = make_executor(flags)  # --executor slurm --workers W: each state's capture a job, W at once
    store = Store(workdir_setting(workdir, config), create=False)
    if not good:  # the stored regressions: another level's workdir has none
        from .common import require_a_scan
        require_a_scan(store, "profile")
    s = stored_settings(store, config, workdir=workdir, **flags)
    from hourly.scan.identity import check_store
    s = check_store(store, s, uses_scan=not good)  # the store's repositories, and the key its scan measured under
    targets, left_out = ([Target("manual", parse_state(good, s), parse_state(bad, s))], None) if good and bad \
        else targets_from_store(store, s)  # the current build's answers: another build's are left out, and said
    if left_out and not targets:
        from hourly.errors import UserError
        raise UserError(f"no regression to profile under this build in {store.workdir}: {left_out}",
                        "run `hourly bisect` under this build, or pass --good and --bad")
    if left_out and not json_out:
        err_console.print(f"note: {left_out}", highlight=False, markup=False, soft_wrap=True)
    options = TraceOptions(host_tracer_level=host_tracer_level, python_tracer_level=python_tracer_level,
                           front_end_processes=front_end_processes, front_end_repeats=front_end_repeats)
    from hourly.events import SILENT
    from hourly.profile.frontend import plan
    front = plan(front_end, s.metric_regex, s.bench_argv(), s.bench_cwd)
    notes = SILENT if json_out else ProgressLines(err_console, "states", str)
    from hourly.scan.run import env_lock_for
    with env_lock_for(s.python, executor):  # builds are installed into --python: one run at a time
        results = run_profiles(store, s, targets, options, notes, executor=executor, front_end=front)
    if json_out:
        print(json.dumps({"profiles": [r.record for r in results], "left_out": left_out}, indent=1, default=str))
        return
    for r in results:
        console.print(styled((r.target.name, "bold"), f": good {r.good_dir}  bad {r.bad_dir}"))
        console.print(r.text, end="")
        print(f"comparison saved to {r.comparison_path}")
        print("memory diff with pprof: " + command_line(
            ["pprof", "-http=:", "--diff_base", r.good_dir / "memory.prof", r.bad_dir / "memory.prof"]))
