"""``hourly demo``: a complete hunt on small real repositories, in under a minute."""

from __future__ import annotations

import json
import tempfile
import venv
from pathlib import Path

from rich.console import Console

from .config import effective
from .fixtures import DEMO_CHANGES, make_repos
from .render import print_report
from .scan import run_scan
from .store import Store


def demo_settings(made, python: str, workdir: Path) -> dict:
    return dict(from_="Aug 24 2023", to="Aug 26 2023", xla_repo=str(made.xla), jax_repo=str(made.jax),
                build_cmd=str(made.build_script), python=python, bench_cmd=f"python3 {made.bench_script}",
                repeats=3, workdir=str(workdir))


def make_venv(path: Path) -> str:
    """A virtual environment for the builds, so the demo never touches the user's Python."""
    venv.EnvBuilder(with_pip=False, system_site_packages=True).create(path)
    return str(path / "bin" / "python")


def run_demo(directory: str | None, console: Console, json_out: bool = False) -> dict:
    root = Path(directory).absolute() if directory else Path(tempfile.mkdtemp(prefix="hourly-demo-"))
    if root.exists() and any(root.iterdir()):
        from .errors import UserError
        raise UserError(f"demo directory {root} is not empty", "pass a new or empty directory")
    root.mkdir(parents=True, exist_ok=True)
    say = (lambda *a, **k: None) if json_out else console.print
    say(f"[bold]hourly demo[/] in {root}")
    made = make_repos(root / "repos", DEMO_CHANGES)
    say(f"made stand-in repos: xla {made.xla}, jax {made.jax}")
    python = make_venv(root / "venv")
    s, _ = effective(demo_settings(made, python, root / "work"))
    store = Store(s.workdir)
    say(f"$ hourly scan --from '{s.from_}' --to '{s.to}' --xla-repo {s.xla_repo} --jax-repo {s.jax_repo} "
        f"--build-cmd {s.build_cmd} --python {s.python} --bench-cmd '{s.bench_cmd}' --repeats {s.repeats} "
        f"--workdir {s.workdir}")
    report = run_scan(s, store)
    result = {"directory": str(root), "scan": report.as_json()}
    if json_out:
        print(json.dumps(result, indent=1))
    else:
        print_report(console, report)
    return result
