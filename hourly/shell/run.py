"""``hourly shell STATE``: a state built (or taken from the build cache), installed into an
environment of its own, and a subshell — or one command — with it active and the trees at it.

The build goes through the bisection's own path (a :class:`~hourly.bisect.search.Bisector`'s
Measurer: the same build cache, ``--cherry-pick`` and tree locks as scan and bisect, the trees
refused when they hold the user's changes unless ``--force``). The environment is an overlay over
``--python``'s packages (:func:`hourly.adapters.venvs.overlay_env`, as a Slurm job's): the build
is installed there, never into ``--python`` itself, so a scan's or bisection's environment is left
as it was. Leaving the shell restores both trees to their branches and releases the locks; edits
made in the trees meanwhile are saved as a patch first (the restore is a forced checkout).
"""

from __future__ import annotations

import os
import shlex
import shutil
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterator

from hourly.adapters import proc
from hourly.adapters.locks import RunLock
from hourly.adapters.store import Store
from hourly.adapters.venvs import overlay_env
from hourly.bisect.answer import commit
from hourly.bisect.search import Bisector
from hourly.errors import ProcessError, UserError
from hourly.events import SILENT, Handler
from hourly.measure.build import BUILD_ATTEMPTS, BuildInterrupted, BuildStatus
from hourly.measure.settings import Settings, keyed
from hourly.model import Mode, Pair, cut_side
from hourly.shell.state import resolve


@dataclass
class Opened:
    """A state ready to use: what the shell shows and the environment it runs in."""

    pair: Pair
    said: str
    commits: dict[str, dict]
    trees: dict[str, str]       # repo -> its tree, checked out at the state
    restore_to: dict[str, str]  # repo -> the branch (or commit) it goes back to
    env_dir: str
    python: str
    build: str
    env: dict[str, str] = field(default_factory=dict)
    label: str = ""


def shells_dir(store: Store) -> Path:
    return store.workdir / "shells"


@contextmanager
def open_state(s: Settings, store: Store, text: str, handler: Handler = SILENT) -> Iterator[Opened]:
    """Build or reuse the state ``text`` names, install it into its own environment, and hold the
    trees at it (locked) until the block ends; then the trees are restored."""
    if not s.bench_cmd:  # nothing is benchmarked here: a stand-in names the measurement key
        from hourly.bisect.manual import NO_BENCH
        s = keyed(replace(s, bench_cmd=NO_BENCH))
    with ExitStack() as stack:
        probe = Bisector(s, store, Mode.EXIT)  # repositories, walks, refs and --only's pin; builds nothing
        named = resolve(text, probe, store, s)
        pair = named.pair
        env_dir = shells_dir(store) / pair.key() / "venv"
        env_dir.parent.mkdir(parents=True, exist_ok=True)
        # one shell at a time per state's environment (it is made afresh each time)
        stack.enter_context(RunLock(env_dir.parent / "shell.lock", f"the shell environment {env_dir}"))
        py = overlay_env(env_dir, s.python, env_dir.parent / "venv.log")
        handler.note(f"environment {env_dir} (its own packages first, then those of {s.python})")
        b = stack.enter_context(Bisector(keyed(replace(s, python=py)), store, Mode.EXIT))
        m = b.measurer()  # takes the trees: their locks, as scan and bisect hold them
        res = m.builder.prepare(pair)
        if res.status is BuildStatus.INTERRUPTED:
            raise BuildInterrupted(f"the build of {pair.short()} was interrupted {BUILD_ATTEMPTS} times "
                                   f"(log {res.log_path})", "free memory or raise --build-timeout, then try again")
        if res.status is BuildStatus.FAILED:
            raise UserError(f"the build of {pair.short()} failed (log {res.log_path})",
                            "pick a neighbouring state, or pass --cherry-pick REPO@SHA of the fix that makes it build")
        build = {BuildStatus.CACHED: "installed from the build cache", BuildStatus.BUILT: "built and installed now",
                 BuildStatus.IN_PLACE: "the trees are installed in place"}.get(res.status, res.status.value)
        commits = {name: commit(b.repos, name, getattr(pair, name)) for name in b.repos}
        env = dict(os.environ)
        env.update(VIRTUAL_ENV=str(env_dir), PATH=str(Path(py).parent) + os.pathsep + env.get("PATH", ""),
                   HOURLY_STATE=f"xla@{pair.xla},jax@{pair.jax}", HOURLY_XLA_SHA=pair.xla, HOURLY_JAX_SHA=pair.jax,
                   HOURLY_JAX_DIR=str(b.jax.path))
        if b.xla is not None:
            env["HOURLY_XLA_DIR"] = str(b.xla.path)
        env.pop("PYTHONHOME", None)
        opened = Opened(pair, named.said, commits, {n: str(r.path) for n, r in b.repos.items()},
                        m.builder._tree.originals(), str(env_dir), py, build, env,
                        f"xla@{cut_side(pair.xla, 8)} jax@{pair.jax[:8]}")
        before = {name: _diff(r) for name, r in b.repos.items()}
        try:
            yield opened
        finally:
            for name, r in b.repos.items():  # edits made in the shell: kept as a patch, then the restore
                now = _diff(r)
                if now != before[name]:
                    patch = env_dir.parent / f"{name}-edits-{time.strftime('%Y%m%d-%H%M%S')}.patch"
                    patch.write_text(now)
                    handler.note(f"{name} tree: your edits are saved in {patch} "
                                 f"(git apply it on {getattr(pair, name)[:12]})")


def _diff(repo) -> str:
    try:
        return repo.git("diff", "HEAD", "--binary")
    except Exception:  # noqa: BLE001  # a tree git cannot diff now: nothing to compare
        return ""


def shell_argv(opened: Opened, shell: str | None = None) -> list[str]:
    """The subshell to open: ``$SHELL`` (else bash), its prompt naming the state. Bash reads the
    user's ``~/.bashrc`` first and the prompt is set after it (an rc file of hourly's, in the
    state's folder); another shell gets ``PS1`` in its environment."""
    shell = shell or os.environ.get("SHELL") or shutil.which("bash") or "/bin/sh"
    prefix = f"(hourly {opened.label}) "
    if Path(shell).name == "bash" and _gnu_bash(shell):
        rc = Path(opened.env_dir).parent / "bashrc"
        rc.write_text('[ -f "$HOME/.bashrc" ] && . "$HOME/.bashrc"\n'
                      f"PS1={shlex.quote(prefix)}\"${{PS1:-\\\\u@\\\\h:\\\\w\\\\$ }}\"\n")
        return [shell, "--rcfile", str(rc), "-i"]
    opened.env["PS1"] = prefix + opened.env.get("PS1", "$ ")
    return [shell, "-i"]


def _gnu_bash(shell: str) -> bool:
    """Whether ``shell`` is GNU bash (reads ``--rcfile``), not a shim of another shell by that name."""
    try:
        return "GNU bash" in proc.run([shell, "--version"], timeout=30, check=False).output
    except (UserError, ProcessError, OSError):
        return False


def run_in(opened: Opened, argv: list[str]) -> int:
    """``argv`` run in the state's environment, on this terminal; its exit status."""
    opened.env.setdefault("PS1", f"(hourly {opened.label}) $ ")
    return proc.attached(argv, env=opened.env)
