"""``hourly releases``: the release level, one environment per jax release from the package index
(logic in hourly/releases/plan.py)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, List, Optional

from hourly.errors import UsageError
from hourly.measure.settings import workdir_setting
from hourly.model import InstallerKind
from hourly.render.console import PlainPrint

from .common import command, console, print_level_report, refuse_together, shared_direction, with_progress, with_samples

if TYPE_CHECKING:
    from hourly.releases.plan import ReleaseSettings


@command("releases")
def releases(
    *,
    from_: Optional[str],
    to: Optional[str],
    bench_cmd: Optional[str],
    bench_cwd: Optional[str],
    env: Optional[List[str]],
    metric_regex: str,
    repeats: int,
    metrics: Optional[str],
    metric_samples: Optional[str],
    warmup_samples: Optional[int],
    samples: Optional[int],
    bench_timeout: Optional[float],
    higher_is_better: Optional[bool],
    extra: Optional[str],
    with_: Optional[List[str]],
    deps_today: bool,
    deps_as_of_release: bool,
    index_url: Optional[str],
    find_links: Optional[str],
    pre: bool,
    python: Optional[str],
    installer: InstallerKind,
    cache_dir: Optional[str],
    jax_repo: Optional[str],
    rerun: bool,
    dry_run: bool,
    show: bool,
    workdir: Optional[str],
    json_out: bool,
    config: Optional[str],
) -> None:
    """Benchmark every jax release from the package index, find the first bad one, hand over."""
    from hourly.adapters.store import Store
    from hourly.releases import plan as R
    from hourly.releases.run import run_releases
    from hourly.render.releases import print_report
    refuse_together(("--show", show), ("--dry-run", dry_run),
                    fix="--show prints the stored results, --dry-run the plan of a run: pass one of them")
    wd = workdir_setting(workdir, config)
    if show:
        report = R.stored_releases(Store(wd, create=False, read_only=True, made_by="hourly releases --from ... --to ..."))
    else:
        if not from_ or not to:
            raise UsageError("the release level needs versions", "pass --from 0.4.13 --to 0.4.20")
        if deps_today and deps_as_of_release:
            raise UsageError("--deps-today and --deps-as-of-release contradict each other",
                             "pass one of them (--deps-as-of-release is the default)")
        s = R.ReleaseSettings(
            from_=from_, to=to, bench_cmd=bench_cmd or "", bench_cwd=bench_cwd, env=with_samples(env, samples),
            metric_regex=metric_regex, repeats=repeats, timeout=bench_timeout,
            higher_is_better=shared_direction(higher_is_better, config),
            extra=extra, with_=list(with_ or []), index_url=index_url, find_links=find_links, pre=pre,
            python=python, installer=installer.value, cache_dir=cache_dir or R.default_cache_dir(),
            jax_repo=jax_repo, workdir=wd, rerun=rerun, deps_as_of_release=not deps_today)
        import dataclasses

        from .common import read_metrics
        named, reading, warmup = read_metrics(s, metrics, metric_samples, warmup_samples)
        s = dataclasses.replace(s, metrics=named, metric_samples=reading, warmup_samples=warmup)
        if dry_run:
            _print_plan(s, json_out)
            return
        s = s.validate()
        # the workdir is made once the window is planned: bad input makes nothing
        report = with_progress(lambda handler: run_releases(s, wd, handler), json_out, "releases",
                               lambda v: f"installing + measuring jax {v}")
    print_level_report(report, json_out, print_report)
    if report.undecided and not report.steps:  # too few releases to tell noise from steps: exit 1
        from hourly.errors import UserError
        why, _, fix = report.undecided.partition("; ")
        raise UserError(why, fix)


def _print_plan(s: ReleaseSettings, json_out: bool) -> None:
    from hourly.adapters.venvs import target_python
    from hourly.releases.plan import plan_releases
    s = s.validate(benchmark=False)
    target = target_python(s.python)
    plan = plan_releases(s.make_index(), s, target)
    if json_out:
        print(json.dumps({"python": target.version, "releases": [p.__dict__ for p in plan]}, indent=1))
        return
    kw: PlainPrint = dict(highlight=False, markup=False, soft_wrap=True)
    for p in plan:
        state = f"missing: {p.missing}" if p.missing else f"jaxlib {p.jaxlib} ({p.pairing})"
        console.print(f"jax {p.version}  released {p.released or 'unknown'}  {state}", **kw)
