"""``hourly explain``: what each bisected culprit changed in the compiled program (HLO diff and a
repro), the flag that works around it (``--sweep``, ``--try-flag``), and whether a revert restores it
(``--revert-check``)."""

from __future__ import annotations

import json
from typing import Any, List, Optional

from .common import command, console, err_console


@command("explain")
def explain(
    *,
    workdir: Optional[str],
    step: Optional[int],
    sweep: bool,
    try_flag: Optional[List[str]],
    revert_check: bool,
    revert_ref: Optional[str],
    max_passes: int,
    op_times: bool,
    repeats: Optional[int],
    flags: dict[str, Any],
    json_out: bool,
    config: Optional[str],
) -> None:
    """Explain each bisected culprit: the optimized HLO of both states diffed, a repro HLO, a workaround sweep and a revert check."""
    from hourly.adapters.store import Store
    from hourly.commands.progress import ProgressLines
    from hourly.events import SILENT
    from hourly.explain.plan import Options, targets_from_store
    from hourly.explain.run import run_explain
    from hourly.measure.settings import stored_settings, workdir_setting
    from hourly.render.explain import explain_lines
    store = Store(workdir_setting(workdir, config), create=False)
    from .common import require_a_scan
    require_a_scan(store, "explain")  # its culprits: another level's workdir has none
    s = stored_settings(store, config, workdir=workdir, **flags)
    if s.bench_cmd and s.primary_metric() is None:  # several named metrics: the one the bisections followed
        from hourly.measure.settings import with_metric
        followed = {a["metric"] for a in store.bisection_results() if a.get("metric")}
        s = with_metric(s, followed.pop()) if len(followed) == 1 else s
        s.require_primary("hourly explain", store.metric_names(s.bench_key()))
    opts = Options(sweep=sweep, try_flags=list(try_flag or []), revert_check=revert_check or bool(revert_ref),
                   revert_ref=revert_ref, max_passes=max_passes, repeats=repeats,
                   op_times=op_times)
    targets, left_out = targets_from_store(store, s, step)  # the current build's answers; another build's: said
    handler = SILENT if json_out else ProgressLines(err_console, "states", str)
    if left_out and not json_out:
        err_console.print(f"note: {left_out}", highlight=False, markup=False, soft_wrap=True)
    records = run_explain(store, s, targets, opts, handler)
    if json_out:
        print(json.dumps({"explained": records, "left_out": left_out}, indent=1, default=str))
        return
    for rec in records:
        for line in explain_lines(rec):
            console.print(line)
