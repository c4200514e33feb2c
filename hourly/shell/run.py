"""``hourly shell STATE``: a state built (or taken from the build cache), installed into an
environment of its own, and a subshell — or one command — with it active and the trees at it.

The build goes through the bisection's own path (a :class:`~hourly.bisect.search.Bisector`'s
Measurer: the same build cache, ``--cherry-pick`` and tree locks as scan and bisect, the trees
refused when they hold the user's changes unless ``--force``). The environment is an overlay over
``--python``'s packages as the benchmark sees them, PYTHONPATH and ``--env`` included
(:func:`hourly.adapters.venvs.make_overlay`, as a Slurm job's and a ``--only jax`` hunt's): the build
is installed there, never into ``--python`` itself, so a scan's or bisection's environment is left
as it was; the shell gets it activated (:meth:`~hourly.adapters.venvs.Overlay.activate`: its
packages first on PATH and PYTHONPATH). Leaving the shell restores both trees to their branches and releases the locks; edits
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
from hourly.adapters.gitrepo import GitRepo
from hourly.adapters.locks import RunLock
from hourly.adapters.store import Store
from hourly.adapters.venvs import make_overlay, overlay_of
from hourly.bisect.answer import commit
from hourly.bisect.search import Bisector
from hourly.errors import ProcessError, UserError
from hourly.events import SILENT, Handler
from hourly.measure.build import BUILD_ATTEMPTS, BuildInterrupted, BuildStatus
from hourly.measure.pinned import run_env
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


def check_state(s: Settings, text: str) -> None:
    """What ``hourly shell`` into a new workdir checks before the workdir is made: the repositories,
    refs, wheel folder and the state ``text`` names (read from the repositories alone; a state
    named from a store — good, bad, probe — has none to read)."""
    if not s.bench_cmd:
        from hourly.bisect.manual import NO_BENCH
        s = replace(s, bench_cmd=NO_BENCH)
    probe = Bisector(keyed(s), None, Mode.EXIT)  # type: ignore[arg-type]  # reads the repositories; never entered
    resolve(text, probe, None, s)


@contextmanager
def open_state(s: Settings, store: Store, text: str, handler: Handler = SILENT) -> Iterator[Opened]:
    """Build or reuse the state ``text`` names, install it into its own environment, and hold the
    trees at it (locked) until the block ends; then the trees are restored."""
    if not s.bench_cmd:  # nothing is benchmarked here: a stand-in names the measurement key
        from hourly.bisect.manual import NO_BENCH
        s = replace(s, bench_cmd=NO_BENCH)
    s = keyed(s, store)  # the stored scan's key when these are its settings
    with ExitStack() as stack:
        probe = Bisector(s, store, Mode.EXIT)  # repositories, walks, refs and --only's pin; builds nothing
        named = resolve(text, probe, store, s)
        pair = named.pair
        env_dir = shells_dir(store) / pair.key() / "venv"
        env_dir.parent.mkdir(parents=True, exist_ok=True)
        # one shell at a time per state's environment (it is made afresh each time)
        stack.enter_context(RunLock(env_dir.parent / "shell.lock", f"the shell environment {env_dir}"))
        overlay = make_overlay(env_dir, s.python, env_dir.parent / "venv.log", run_env(s))
        py = overlay.python
        handler.note(f"environment {env_dir} (its own packages first, then those of {s.python})")
        made_here: list[tuple[str, str, Path, Path]] = []  # (repo, path in it, the file, its copy's folder)
        # said once the trees are restored (an exit callback entered before the trees are taken runs after)
        stack.callback(lambda: _say_untracked(made_here, handler))
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
        commits = {name: commit(b.repos, name, getattr(pair, name)).to_json() for name in b.repos}
        env = overlay.activate(dict(os.environ))  # its packages first, whatever PYTHONPATH says
        env.update(HOURLY_STATE=f"xla@{pair.xla},jax@{pair.jax}", HOURLY_XLA_SHA=pair.xla, HOURLY_JAX_SHA=pair.jax,
                   HOURLY_JAX_DIR=str(b.jax.path))
        if b.xla is not None:
            env["HOURLY_XLA_DIR"] = str(b.xla.path)
        opened = Opened(pair, named.said, commits, {n: str(r.path) for n, r in b.repos.items()},
                        m.builder._tree.originals(), str(env_dir), py, build, env,
                        f"xla@{cut_side(pair.xla, 8)} jax@{pair.jax[:8]}")
        tree = m.builder._tree
        before = {name: _diff(r) for name, r in b.repos.items()}
        there = {name: set(tree.untracked(r)) for name, r in b.repos.items()}
        try:
            yield opened
        finally:
            stamp = time.strftime('%Y%m%d-%H%M%S')
            for name, r in b.repos.items():  # edits made in the shell: kept as a patch, then the restore
                now = _diff(r)
                if now != before[name]:
                    patch = env_dir.parent / f"{name}-edits-{stamp}.patch"
                    patch.write_text(now)
                    handler.note(f"{name} tree: your edits are saved in {patch} "
                                 f"(git apply it on {getattr(pair, name)[:12]})")
                # files made in the shell are in no patch: copied aside, named once the trees are back
                for rel in sorted(set(tree.untracked(r)) - there[name]):
                    copy = _copy(Path(r.path), rel, env_dir.parent / f"{name}-untracked-{stamp}")
                    made_here.append((name, rel, Path(r.path) / rel.rstrip("/"), copy))


def _copy(root: Path, rel: str, dest: Path) -> Path:
    """A copy of ``root/rel`` (a file, or a folder as git lists a new one: ``scratch/``) under
    ``dest``, at the same relative path; returns the folder that holds it."""
    src, to = root / rel, dest / rel.rstrip("/")
    to.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir() and not src.is_symlink():
        shutil.copytree(src, to, symlinks=True, dirs_exist_ok=True)
    else:
        shutil.copy2(src, to, follow_symlinks=False)
    return dest


def _say_untracked(made: list[tuple[str, str, Path, Path]], handler: Handler) -> None:
    """Each untracked file made in the shell: where it is now that the trees are restored, where its
    copy is, and what the next run does about it."""
    for name, rel, path, copy in made:
        where = (f"left in the tree ({path}): the next scan, bisect or shell there refuses the tree until you "
                 "move it (--force stashes it and gives it back)") if path.exists() or path.is_symlink() else \
            "no longer in the tree (the restore removed it)"
        handler.note(f"{name} tree: {rel}, made in the shell, is untracked: {where}; a copy is in {copy}")


def _diff(repo: GitRepo) -> str:
    try:
        return repo.git("diff", "HEAD", "--binary")
    except Exception:  # noqa: BLE001  # a tree git cannot diff now: nothing to compare
        return ""


def shell_argv(opened: Opened, shell: str | None = None, handler: Handler = SILENT) -> list[str]:
    """The subshell to open: ``$SHELL`` (else bash), its prompt naming the state. Bash reads the
    user's ``~/.bashrc`` first; then an rc file of hourly's (in the state's folder) puts the
    state's environment first on PATH, sets VIRTUAL_ENV, drops aliases of ``python`` and ``pip``
    and sets the prompt, so that a ``~/.bashrc`` that puts its own Python first (pyenv, conda, an
    activated venv) never runs in place of the state's. Another shell gets them in its environment
    only, and is told that its own rc files may change them."""
    shell = shell or os.environ.get("SHELL") or shutil.which("bash") or "/bin/sh"
    prefix = f"(hourly {opened.label}) "
    if Path(shell).name == "bash" and _gnu_bash(shell):
        rc = Path(opened.env_dir).parent / "bashrc"
        rc.write_text(state_rc(opened, prefix))
        return [shell, "--rcfile", str(rc), "-i"]
    opened.env["PS1"] = prefix + opened.env.get("PS1", "$ ")
    handler.note(f"{Path(shell).name} reads its own rc files after hourly set PATH and VIRTUAL_ENV: if one of "
                 f"them puts another Python first, `python` is not the state's ({opened.python}); "
                 "check with `command -v python`, or use SHELL=bash")
    return [shell, "-i"]


#: the commands that must be the state's environment's, not an alias the user's rc file made
_SHADOWED = ("python", "python3", "pip", "pip3")


def state_rc(opened: Opened, prefix: str) -> str:
    """hourly's bash rc file: the user's ``~/.bashrc``, then the state's environment over whatever
    it set (PATH, an overlay's packages first on PYTHONPATH, VIRTUAL_ENV, PYTHONHOME, aliases, bash's
    command hash), then the prompt."""
    bin_dir = str(Path(opened.python).parent)
    q = shlex.quote
    overlay = overlay_of(opened.python)  # its packages first on PYTHONPATH too: a ~/.bashrc naming a jax folder
    pythonpath = f"export PYTHONPATH={q(str(overlay.site))}\"${{PYTHONPATH:+:$PYTHONPATH}}\"\n" if overlay else ""
    return ('[ -f "$HOME/.bashrc" ] && . "$HOME/.bashrc"\n'
            f"export VIRTUAL_ENV={q(opened.env_dir)}\n"
            f"export PATH={q(bin_dir)}\"${{PATH:+:$PATH}}\"\n"
            + pythonpath +
            "unset PYTHONHOME\n"
            f"unalias {' '.join(_SHADOWED)} 2>/dev/null\n"
            "hash -r\n"
            f"PS1={q(prefix)}\"${{PS1:-\\\\u@\\\\h:\\\\w\\\\$ }}\"\n")


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
