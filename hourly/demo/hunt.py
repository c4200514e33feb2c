"""``hourly demo``: a complete hunt on small real repositories, in under a minute."""

from __future__ import annotations

import json
import tempfile
import venv
from pathlib import Path
from typing import Any, Sequence

from rich.console import Console

from hourly import options
from hourly.adapters.store import Store
from hourly.analysis.steps import CrashWindow, crash_windows, find_steps
from hourly.answers import Answer
from hourly.bisect.records import BisectRequest
from hourly.bisect.search import run_bisect
from hourly.errors import UserError
from hourly.measure.settings import effective, keyed
from hourly.model import Step
from hourly.render.bisect import print_answers
from hourly.render.console import PlainPrint, command_line, print_wrapped, styled
from hourly.render.report import write_report
from hourly.render.scan import print_report
from hourly.render.steps import marks_for_report
from hourly.report.gather import gather_report
from hourly.scan.run import run_scan
from hourly.text.timeparse import iso_utc, parse_time

from .repos import DEMO_CHANGES, Made, make_repos

DEMO_MAX_REPEATS = 10


def demo_settings(made: Made, python: str, workdir: Path) -> dict:
    return dict(from_="Aug 24 2023", to="Aug 26 2023", xla_repo=str(made.xla), jax_repo=str(made.jax),
                build_cmd=str(made.build_script), python=python, bench_cmd=f"python3 {made.bench_script}",
                repeats=3, workdir=str(workdir))


def make_venv(path: Path) -> str:
    """A virtual environment for the builds, so the demo never touches the user's Python."""
    venv.EnvBuilder(with_pip=False, system_site_packages=True).create(path)
    return str(path / "bin" / "python")


def run_demo(directory: str | None, console: Console, json_out: bool = False) -> dict:
    root = Path(directory).absolute() if directory else Path(tempfile.mkdtemp(prefix="hourly-demo-"))
    if root.exists() and not root.is_dir():
        raise UserError(f"demo directory {root} is not a directory", "pass a new or empty directory")
    if root.exists() and any(root.iterdir()):
        raise UserError(f"demo directory {root} is not empty", "pass a new or empty directory")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"cannot create demo directory {root} ({e.strerror})",
                        "pass a new or empty directory you can write to") from e
    say = (lambda *a, **k: None) if json_out else console.print
    say(styled(("hourly demo", "bold"), f" in {root}"))
    made = make_repos(root / "repos", DEMO_CHANGES)
    say(f"made stand-in repos: xla {made.xla}, jax {made.jax}")
    python = make_venv(root / "venv")
    s = keyed(effective(demo_settings(made, python, root / "work"))[0])
    store = Store(s.workdir)
    say("$ " + options.command_line("scan", {name: getattr(s, name) for name in (
        "from_", "to", "xla_repo", "jax_repo", "build_cmd", "python", "bench_cmd", "repeats", "workdir")}))
    report = run_scan(s, store)
    steps = find_steps(report.points, s.higher_is_better)[0]
    if not json_out:
        marks, lines = marks_for_report(report, s)
        print_report(console, report, marks)
        for line in lines:
            print_wrapped(console, line)
    # detection found the steps in the table; bisection pins each regression to its commit
    say("\n$ " + options.command_line("bisect", {"workdir": s.workdir}))
    answers = run_bisect(s, store, BisectRequest(max_repeats=DEMO_MAX_REPEATS))
    planted = check_planted(steps, answers, made.shas, crash_windows(report.points))
    files = write_report(gather_report(store, s))
    result: dict[str, Any] = {"directory": str(root), "temporary": directory is None, "scan": report.as_json(), "steps": [st.as_json() for st in steps],
              "bisect": {"regressions": [a.to_json() for a in answers]}, "planted": planted, "report": str(files.markdown),
              "next": next_commands(s.workdir)}
    if json_out:
        print(json.dumps(result, indent=1))
        return result
    print_answers(console, answers)
    console.print(styled("\n", ("planted changes", "bold")))
    for p in planted:
        state = "found" if p["found"] else "MISSED"
        if p["kind"] in ("regression", "crash"):
            state += ", bisected to its commit" if p["culprit_found"] else ", NOT bisected to its commit"
        console.print(f"  {state}: {p['kind']} at {p['commit']} ({p['repo']} {p['subject']!r})", highlight=False)
    console.print(f"\nreport: {files.markdown}\nplot:   {files.plot}")
    print_next(console, result["next"], temporary=root if directory is None else None)
    return result


def print_next(console: Console, commands: list[str], temporary: Path | None = None) -> None:
    """Where the demo's results are, as commands to paste, one line each however narrow the terminal
    or pipe; a ``temporary`` folder (no folder was given) is kept for them, and the last line says so
    and how to remove it."""
    plain: PlainPrint = dict(markup=False, highlight=False, soft_wrap=True)
    console.print("\nnext, with this demo's results:", **plain)
    for cmd in commands:
        console.print(cmd, **plain)
    if temporary is not None:
        console.print(f"{temporary} is a temporary folder, kept for the commands above; when done: "
                      + command_line(["rm", "-rf", str(temporary)]), **plain)


def next_commands(workdir: str) -> list[str]:
    """The commands to look at the demo's results again, one line each, quoted for a shell."""
    return [options.command_line(command, {"workdir": str(workdir)}) for command in ("show", "bisect", "report")]


#: What the demo planted (see hourly.demo.repos.DEMO_CHANGES): the commit and the kind of change.
PLANTED = [("xla", "[XLA:GPU] Change priority fusion heuristic", "regression"),
           ("jax", "Use a faster dispatch path for pjit", "regression"),
           ("xla", "[XLA:GPU] Enable cuDNN fused attention", "improvement"),
           ("jax", "Rewrite custom_vjp residuals", "crash")]


def check_planted(steps: list[Step], answers: list[Answer], shas: dict[str, str],
                  crashes: Sequence[CrashWindow] = ()) -> list[dict]:
    """For each planted change: did a detected step (or crash window) of that kind move past its
    commit, and (for a regression or crash) did bisection name exactly the commit that landed it
    on main, in an answer of that kind?"""
    culprits = {(a.kind, a.culprit.repo, a.culprit.sha) for a in answers if a.culprit}
    out = []
    for repo, subject, kind in PLANTED:
        when = next(c for c in DEMO_CHANGES if c.subject == subject)
        t = parse_time(when.merged_at or when.when).when
        found = any(st.kind.value == kind and parse_time(st.before.time).when < t <= parse_time(st.after.time).when
                    for st in steps) or any(
            w.kind == kind and parse_time(w.before.time).when < t <= parse_time(w.after.time).when for w in crashes)
        out.append({"repo": repo, "subject": subject, "kind": kind, "commit": iso_utc(t), "found": found,
                    "sha": shas[subject], "culprit_found": (kind, repo, shas[subject]) in culprits})
    return out
