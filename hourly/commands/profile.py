"""``hourly profile``: trace the last-good and first-bad states of each regression and compare them."""

from __future__ import annotations

import json
from typing import Any, Optional

from hourly.errors import UserError
from hourly.render.console import command_line, styled

from .common import BUILD, EXECUTOR, ConfigOpt, JsonOpt, Opt, Workdir, console, err_console, with_options


@with_options(BUILD, EXECUTOR)
def profile(workdir: Optional[str] = Workdir,
            good: Optional[str] = Opt(None, "--good", help="Good state: a time, or xla@<sha>,jax@<sha> [default: each stored regression]."),
            bad: Optional[str] = Opt(None, "--bad", help="Bad state: a time, or xla@<sha>,jax@<sha> [default: each stored regression]."),
            python_tracer_level: Optional[int] = Opt(0, "--python-tracer-level", min=0, max=1,
                                                     help="Python tracer: 0 off (small traces), 1 on."),
            host_tracer_level: Optional[int] = Opt(None, "--host-tracer-level", min=0, max=3,
                                                   help="Host tracer: 0 off, 1 user, 2 default, 3 verbose [default: JAX's, 2]."),
            top: int = Opt(10, "--top", min=1, help="Rows per comparison table."),
            front_end: str = Opt("auto", "--front-end",
                                 help="Profile tracing, lowering and dispatch in Python at both states and diff them: "
                                      "auto (when the step is in trace_ms, lower_ms, dispatch_us, step_dispatch_us "
                                      "or first_call_ms of the per-phase harness), off, or a make() target "
                                      "(bench.py[:make], package.module:make) to profile whatever the metric."),
            front_end_repeats: int = Opt(7, "--front-end-repeats", min=1,
                                         help="Profiled rounds per state in the front-end profile (noise is judged "
                                              "across them; fewer than 3 judges nothing)."),
            flags: Any = None,
            json_out: bool = JsonOpt,
            config: Optional[str] = ConfigOpt) -> None:
    """Trace the last-good and first-bad states of each regression and compare them; for a step in
    tracing, lowering or dispatch, diff a Python-level profile of both states too."""
    from hourly.adapters.store import Store
    from hourly.commands.progress import ProgressLines
    from hourly.execute.executors import make_executor
    from hourly.measure.settings import stored_settings, workdir_setting
    from hourly.profile.capture import TraceOptions
    from hourly.profile.run import Target, parse_state, run_profiles, targets_from_store
    executor = make_executor(flags)  # --executor slurm --workers W: each state's capture a job, W at once
    store = Store(workdir_setting(workdir, config), create=False)
    s = stored_settings(store, config, workdir=workdir, **flags)
    if bool(good) != bool(bad):
        raise UserError("--good and --bad go together", "pass both, or neither to use the stored regressions")
    from hourly.scan.identity import check_store
    check_store(store, s, uses_scan=not good)  # the store's repositories, and the key its scan measured under
    targets = [Target("manual", parse_state(good, s), parse_state(bad, s))] if good and bad else targets_from_store(store, s)
    options = TraceOptions(host_tracer_level=host_tracer_level, python_tracer_level=python_tracer_level,
                           front_end_repeats=front_end_repeats)
    from hourly.events import SILENT
    from hourly.profile.frontend import plan
    front = plan(front_end, s.metric_regex, s.bench_argv(), s.bench_cwd)
    notes = SILENT if json_out else ProgressLines(err_console, "states", str)
    from hourly.scan.run import env_lock_for
    with env_lock_for(s.python, executor):  # builds are installed into --python: one run at a time
        results = run_profiles(store, s, targets, options, notes, executor=executor, front_end=front)
    if json_out:
        print(json.dumps({"profiles": [r.record for r in results]}, indent=1, default=str))
        return
    for r in results:
        console.print(styled((r.target.name, "bold"), f": good {r.good_dir}  bad {r.bad_dir}"))
        console.print(r.text, end="")
        print(f"comparison saved to {r.comparison_path}")
        print("memory diff with pprof: " + command_line(
            ["pprof", "-http=:", "--diff_base", r.good_dir / "memory.prof", r.bad_dir / "memory.prof"]))
