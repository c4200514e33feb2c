"""``hourly nightly`` (one nightly container per date) and ``hourly container`` (start one)."""

from __future__ import annotations

import json
from typing import Any, List, Optional

from hourly import options
from hourly.errors import UsageError, UserError
from hourly.measure.settings import workdir_setting
from hourly.model import DEFAULT_BENCH_CMD, DEFAULT_IMAGE
from hourly.render.console import PlainPrint

from .common import command, console, daily_settings, err_console, print_level_report, with_progress, with_samples


@command("nightly")
def nightly(
    *,
    from_: Optional[str],
    to: Optional[str],
    flags: dict[str, Any],
    samples: Optional[int],
    rerun: bool,
    show: bool,
    workdir: Optional[str],
    json_out: bool,
    config: Optional[str],
) -> None:
    """Run the benchmark in one nightly container per date and find the good day → bad day."""
    from hourly.adapters.store import Store
    from hourly.nightly.plan import stored_nightly as show_nightly
    from hourly.nightly.run import run_nightly
    from hourly.render.nightly import print_report
    wd = workdir_setting(workdir, config)
    if show:
        store = Store(wd, create=False, read_only=True, made_by="hourly nightly --from ... --to ...")
        report = show_nightly(store)
    else:
        if not from_ or not to:
            raise UsageError("the nightly scan needs dates", "pass --from 2023-07-06 --to 2023-09-20")
        flags = {**flags, "env": with_samples(flags.get("env"), samples)}  # --samples: HOURLY_SAMPLES=N
        s = daily_settings(flags, from_, to, wd, rerun, config).validate()
        store = Store(wd)
        report = with_progress(lambda handler: run_nightly(s, store, handler), json_out, "dates",
                               lambda current: f"running {current}")
    print_level_report(report, json_out, print_report)
    todo = [g for g in report.gaps() if g["kind"] == "not measured"]
    if todo and report.boundary is None:  # no answer from a window not all measured: exit 1
        n = sum(g["dates"] for g in todo)
        raise UserError(f"the nightly window is incomplete: {n} date(s) not measured yet "
                        f"(first {todo[0]['from']}) and no boundary among the rest",
                        "run the same `hourly nightly` command again: it measures only what is missing")
    report.require_decided()  # too few dates to tell noise from steps: exit 1


@command("container")
def container(
    *,
    date: Optional[str],
    image: Optional[str],
    gpus: str,
    env: Optional[List[str]],
    mount: Optional[List[str]],
    pull: bool,
    name: Optional[str],
    workdir: Optional[str],
    json_out: bool,
    config: Optional[str],
) -> None:
    """Start the pinned nightly container with hourly inside, and say how to enter it."""
    from hourly.nightly import image as nightly_container
    from hourly.nightly.plan import image_ref, parse_date
    template = image or DEFAULT_IMAGE
    if "{date}" in template:
        if not date:
            raise UsageError("which nightly?", "pass --date 2023-08-24, or --image with a full reference")
        ref = image_ref(template, parse_date(date))
    else:
        if date:
            raise UsageError(f"--image {template} has no {{date}}, so --date means nothing",
                            "drop --date, or use a template like ghcr.io/nvidia/jax:nightly-{date}")
        ref = template
    wd = workdir_setting(workdir, config)
    from hourly.adapters.stale_runs import remove_dead_runs
    remove_dead_runs()  # containers left by killed runs (never a pinned one: those carry no owner)
    st = nightly_container.start(ref, wd, gpus=gpus, pull=pull, env=list(env or []),
                      extra_mounts=list(mount or []), name=name)
    if json_out:
        print(json.dumps({"name": st.name, "image": st.image, "created": st.created,
                          "workdir": st.workdir_inside, "attach": st.instructions()[0],
                          "stop": f"docker stop {st.name}", "warning": st.warning}, indent=1))
        return
    verb = "started" if st.created else "already running"
    kw: PlainPrint = dict(highlight=False, markup=False, soft_wrap=True)
    console.print(f"{st.name} ({st.image}) {verb}; this directory is /dir inside, the workdir "
                  f"{st.workdir_inside}.", **kw)
    if st.warning:
        err_console.print(f"warning: {st.warning}", **kw)
    console.print("enter it with:", **kw)
    console.print(f"  {st.instructions()[0]}", **kw)
    console.print("then, inside, for example:", **kw)
    console.print("  " + options.command_line("scan", {"from_": "<good day>", "to": "<bad day>",
                                                       "bench_cmd": DEFAULT_BENCH_CMD, "workdir": st.workdir_inside}), **kw)
    console.print(f"stop it (it is removed then) with:\n  {st.instructions()[1]}", **kw)
