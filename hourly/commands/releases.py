"""``hourly releases``: the release level, one environment per jax release from the package index
(logic in hourly/releases/plan.py)."""

from __future__ import annotations

import json
from typing import List, Optional

from hourly.errors import UsageError
from hourly.measure.settings import effective, workdir_setting
from hourly.metric import DEFAULT_METRIC_REGEX
from hourly.model import InstallerKind
from hourly.render.console import PlainPrint

from .common import ConfigOpt, Direction, JsonOpt, Opt, Workdir, console, err_console, refuse_together


def releases(
    from_: Optional[str] = Opt(None, "--from", help="First jax version, e.g. 0.4.13 (included) [required unless --show]."),
    to: Optional[str] = Opt(None, "--to", help="Last jax version (included) [required unless --show]."),
    bench_cmd: Optional[str] = Opt(None, "--bench-cmd", help='Benchmark run in each release\'s environment, e.g. "python bench.py" [required to measure].'),
    bench_cwd: Optional[str] = Opt(None, "--bench-cwd", help="Directory the benchmark runs in [default: the current one]."),
    env: Optional[List[str]] = Opt(None, "--env", help="KEY=VALUE for the benchmark (repeatable) [default: none]."),
    metric_regex: str = Opt(DEFAULT_METRIC_REGEX, "--metric-regex", help="Regex with a (?P<value>...) group."),
    repeats: int = Opt(1, "--repeats", help="Runs per release."),
    bench_timeout: Optional[float] = Opt(None, "--bench-timeout", help="Seconds before a run counts as timed out [default: no limit]."),
    higher_is_better: Optional[bool] = Direction,
    extra: Optional[str] = Opt(None, "--extra", help="Install jax[EXTRA], e.g. cuda12 for the GPU plugins [default: none, CPU only]."),
    with_: Optional[List[str]] = Opt(None, "--with", help="Another requirement for every environment, e.g. 'numpy<2' (repeatable) [default: none]."),
    deps_today: bool = Opt(False, "--deps-today", help="Install today's numpy, scipy, ... into every release's environment (old jaxlibs crash with them) [default: those of the day after each release, through uv]."),
    deps_as_of_release: bool = Opt(False, "--deps-as-of-release", help="The default (kept for old command lines): dependencies as of the day after each release."),
    index_url: Optional[str] = Opt(None, "--index-url", help="Package index (PEP 691 JSON) [default: https://pypi.org/simple]."),
    find_links: Optional[str] = Opt(None, "--find-links", help="A local directory of wheels instead of an index (offline) [default: none, the index]."),
    pre: bool = Opt(False, "--pre", help="Include dev/nightly versions."),
    python: Optional[str] = Opt(None, "--python", help="Interpreter the environments are made from [default: hourly's]."),
    installer: InstallerKind = Opt(InstallerKind.AUTO, "--installer", help="auto: uv when installed, else pip."),
    cache_dir: Optional[str] = Opt(None, "--cache-dir", help="Where the environments are kept [default: ~/.cache/hourly/releases]."),
    jax_repo: Optional[str] = Opt(None, "--jax-repo", help="JAX checkout with tags: commits and XLA pins between releases [default: none, no commit lists]."),
    rerun: bool = Opt(False, "--rerun", help="Measure again releases already stored."),
    dry_run: bool = Opt(False, "--dry-run", help="List the releases, their jaxlib and what is missing; install nothing."),
    show: bool = Opt(False, "--show", help="Print the stored release results; run nothing."),
    workdir: Optional[str] = Workdir,
    json_out: bool = JsonOpt,
    config: Optional[str] = ConfigOpt,
) -> None:
    """Benchmark every jax release from the package index, find the first bad one, hand over."""
    from hourly.adapters.store import Store
    from hourly.commands.progress import ProgressLines
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
            from_=from_, to=to, bench_cmd=bench_cmd or "", bench_cwd=bench_cwd, env=list(env or []),
            metric_regex=metric_regex, repeats=repeats, timeout=bench_timeout,
            higher_is_better=(effective({}, config)[0].higher_is_better if higher_is_better is None
                              else higher_is_better),
            extra=extra, with_=list(with_ or []), index_url=index_url, find_links=find_links, pre=pre,
            python=python, installer=installer.value, cache_dir=cache_dir or R.default_cache_dir(),
            jax_repo=jax_repo, workdir=wd, rerun=rerun, deps_as_of_release=not deps_today)
        if dry_run:
            _print_plan(s, json_out)
            return
        s.validate()
        if json_out:  # the workdir is made once the window is planned: bad input makes nothing
            report = run_releases(s, wd)
        else:
            with ProgressLines(err_console, "releases", lambda v: f"installing + measuring jax {v}") as handler:
                report = run_releases(s, wd, handler)
    if json_out:
        print(json.dumps(report.as_json(), indent=1))
    else:
        print_report(console, report)
    if report.undecided and not report.steps:  # too few releases to tell noise from steps: exit 1
        from hourly.errors import UserError
        why, _, fix = report.undecided.partition("; ")
        raise UserError(why, fix)


def _print_plan(s, json_out: bool) -> None:
    from hourly.adapters.venvs import target_python
    from hourly.releases.plan import plan_releases
    s.validate(benchmark=False)
    target = target_python(s.python)
    plan = plan_releases(s.make_index(), s, target)
    if json_out:
        print(json.dumps({"python": target.version, "releases": [p.__dict__ for p in plan]}, indent=1))
        return
    kw: PlainPrint = dict(highlight=False, markup=False, soft_wrap=True)
    for p in plan:
        state = f"missing: {p.missing}" if p.missing else f"jaxlib {p.jaxlib} ({p.pairing})"
        console.print(f"jax {p.version}  released {p.released or 'unknown'}  {state}", **kw)
