"""``hourly bisect``: register with ``app.command()(bisect)`` in hourly/cli.py."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console

from ..bisect import DEFAULT_MAX_REPEATS, Bisector, Mode, Window, bisect_log, default_mode, parse_end, windows_from_store
from ..config import Settings, effective
from ..errors import UsageError, UserError
from ..store import STORE_NAME, Store
from ..words import plural

Opt = typer.Option
console = Console()
err_console = Console(stderr=True)


def bisect(
    good: Optional[str] = Opt(None, "--good", help='Good end: a time as in the scan ("Aug 24 2023 13:00") or xla@<sha> / jax@<sha>.'),
    bad: Optional[str] = Opt(None, "--bad", help="Bad end, in the same forms. Without --good/--bad: every regression detection finds in the store."),
    mode: Optional[Mode] = Opt(None, "--mode", help="metric: compare the metric with the ends [default when the scan measured one]; exit: 0 good, 125 skip, other bad."),
    max_repeats: int = Opt(DEFAULT_MAX_REPEATS, "--max-repeats", help="Most samples of one state while its verdict is unsure; then it is untestable."),
    log: bool = Opt(False, "--log", help="Print a `git bisect` log of the culprit repository that `git bisect replay` accepts."),
    rerun: bool = Opt(False, "--rerun", help="Bisect again windows already finished (measurements are reused)."),
    higher_is_better: Optional[bool] = Opt(None, "--higher-is-better/--lower-is-better", help="Direction of the metric [default: higher is better, or the scan's]."),
    tz: Optional[str] = Opt(None, "--tz", help="Zone of --good/--bad times without one [default: UTC]."),
    xla_repo: Optional[str] = Opt(None, "--xla-repo", help="XLA checkout [default: the scan's]."),
    jax_repo: Optional[str] = Opt(None, "--jax-repo", help="JAX checkout [default: the scan's]."),
    ref: Optional[str] = Opt(None, "--ref", help="Ref whose history is bisected [default: the scan's, origin/main]."),
    first_parent: Optional[bool] = Opt(None, "--first-parent/--no-first-parent", help="Walk merged history only."),
    build_cmd: Optional[str] = Opt(None, "--build-cmd", help="Build command [default: the scan's]."),
    build_timeout: Optional[float] = Opt(None, "--build-timeout", help="Seconds before a build is stopped."),
    wheel_dir: Optional[str] = Opt(None, "--wheel-dir", help="Where the build leaves wheels."),
    python: Optional[str] = Opt(None, "--python", help="Python that gets the builds and runs the benchmark."),
    bench_cmd: Optional[str] = Opt(None, "--bench-cmd", help="Benchmark (or test) command [default: the scan's]."),
    bench_cwd: Optional[str] = Opt(None, "--bench-cwd", help="Directory the benchmark runs in."),
    env: Optional[List[str]] = Opt(None, "--env", help="KEY=VALUE for the benchmark (repeatable)."),
    repeats: Optional[int] = Opt(None, "--repeats", help="Runs per probe before more are asked for [default: the scan's]."),
    bench_timeout: Optional[float] = Opt(None, "--bench-timeout", help="Seconds before a run counts as timed out."),
    metric_regex: Optional[str] = Opt(None, "--metric-regex", help="Regex with a (?P<value>...) group."),
    workdir: Optional[str] = Opt(None, "--workdir", help="The scan's workdir: store, logs, wheel cache [default: ./hourly-work]."),
    force: Optional[bool] = Opt(None, "--force", help="Run even with uncommitted changes (stashed and restored)."),
    json_out: bool = Opt(False, "--json", help="Print one JSON object."),
    config: Optional[str] = Opt(None, "--config", help="Settings file [default: ./hourly.toml when present]."),
) -> None:
    """Narrow every regression to one JAX or XLA commit, testing only pairs that existed."""
    if (good is None) != (bad is None):
        raise UsageError("--good and --bad go together", "pass both, or neither to bisect every detected regression")
    flags = dict(tz=tz, xla_repo=xla_repo, jax_repo=jax_repo, ref=ref, first_parent=first_parent,
                 build_cmd=build_cmd, build_timeout=build_timeout, wheel_dir=wheel_dir, python=python,
                 bench_cmd=bench_cmd, bench_cwd=bench_cwd, env=env, repeats=repeats,
                 bench_timeout=bench_timeout, metric_regex=metric_regex, workdir=workdir, force=force,
                 higher_is_better=higher_is_better)
    wd, _ = effective({"workdir": workdir}, config)
    if good is not None and not (Path(wd.workdir).expanduser() / STORE_NAME).exists():
        _check_before_creating(effective(flags, config)[0], good, bad)
    store = Store(wd.workdir, create=good is not None)
    s, _ = effective(flags, config, base=store.load_settings("scan") or {})
    answers = run_bisect(s, store, good, bad, mode, max_repeats, rerun,
                         say=(lambda _: None) if json_out or log else _say)
    if json_out:
        out = {"regressions": answers}
        if log:
            for a in answers:
                a["git_bisect_log"] = _log_or_none(a)
        print(json.dumps(out, indent=1))
    elif log:
        answers = [a for a in answers if not a.get("error")]
        for i, a in enumerate(answers):
            if len(answers) > 1:
                print(f"# regression {i + 1} of {len(answers)}: {a['window']['good_time']} .. {a['window']['bad_time']}"
                      " — replay one block at a time")
            print(bisect_log(a)[1], end="")
    else:
        print_answers(console, answers)


def _check_before_creating(s: Settings, good: str, bad: str) -> None:
    """A bisection into a new workdir checks its input first, so bad input leaves no workdir behind."""
    from ..bench import compile_metric_regex
    from ..scan import open_repos
    from ..timeparse import parse_time
    s.bench_argv()
    s.env_dict()
    compile_metric_regex(s.metric_regex)
    for end in (good, bad):
        if not re.match(r"(xla|jax)@", end.strip()):
            parse_time(end, s.tz)
    open_repos(s)


def _log_or_none(a: dict) -> str | None:
    if a.get("error"):
        return None
    try:
        return bisect_log(a)[1]
    except UserError:
        return None


def run_bisect(s: Settings, store: Store, good: str | None, bad: str | None, mode: Mode | None,
               max_repeats: int, rerun: bool = False, say=lambda _: None) -> list[dict]:
    mode = mode or default_mode(store, s)
    with Bisector(s, store, mode, max_repeats, rerun, say) as b:
        if good is not None:
            windows = [Window(parse_end(good, s.tz, b.repos, b.walks), parse_end(bad, s.tz, b.repos, b.walks), "flags")]
            if windows[0].bad_time <= windows[0].good_time:
                raise UserError(f"--bad {bad} is not later than --good {good}", "swap them")
        else:
            windows = windows_from_store(store, s, mode)
            if not windows:
                say("no regression in the stored scan: nothing to bisect")
        return [a for w in windows for a in b.bisect(w)]


def describe(a: dict) -> list[str]:
    """The answer for one regression, as lines of text."""
    w = a["window"]
    lines = [f"[bold]regression[/] {w['good_time']} .. {w['bad_time']}" + (f"  {w['note']}" if w.get("note") else "")]
    if a.get("error"):
        return lines + [f"  cannot bisect: {a['error']}"]
    c = a.get("culprit")
    if c:
        lines += [f"  culprit: [bold]{c['repo']}[/] {c['sha']}",
                  f"           {c['subject']}",
                  f"           by {c['author']}, committed {c['committer_time']}",
                  f"           {c['link']}"]
        for m in c.get("merged", []):
            lines.append(f"           merges {m['sha'][:12]} {m['subject']} (by {m['author']})")
    else:
        lines.append(f"  no single commit: {a.get('reason')}")
        for rc in a.get("range_commits", []):
            lines.append(f"    {rc['repo']} {rc['sha'][:12]} {rc['subject']}  {rc['link']}")
    if a.get("blame"):
        lines.append(f"  blame (mixed pairs tested): {a['blame']}")
    lg, fb = a["last_good"], a["first_bad"]
    lines.append(f"  last good: xla {lg['xla'][:12]} jax {lg['jax'][:12]}")
    lines.append(f"  first bad: xla {fb['xla'][:12]} jax {fb['jax'][:12]}")
    lines.append(f"  {plural(a['builds'], 'build')}, {plural(a['runs'], 'benchmark run')}, "
                 f"{plural(a['states'], 'candidate state')}"
                 + ("" if a["confirmed"] else "  [yellow]NOT confirmed on re-measurement[/]"))
    return lines


def print_answers(console: Console, answers: list[dict]) -> None:
    for a in answers:
        for line in describe(a):
            console.print(line, highlight=False, soft_wrap=True)


def _say(line: str) -> None:
    err_console.print(line, soft_wrap=True, highlight=False, markup=False)
