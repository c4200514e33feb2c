"""The build runner: check out a pair, build it once, cache its wheels, install them.

:class:`Workspace` owns the two working trees for the duration of a scan or bisection: it refuses
trees with the user's uncommitted changes (unless forced, then it stashes them and gives them back),
locks the trees against a second hourly, and restores both original HEADs at the end — normal end,
error or Ctrl-C. After ``kill -9`` the lock stays behind with the original HEADs in it; the next
run takes it over, knows the trees' changes are the builds' own, and restores the right HEADs.

:class:`Builder` builds a pair: a pair whose wheels are cached is only reinstalled; a build that
leaves no wheels (newer ``build-jax.sh`` installs editable builds in place) runs every time.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from . import proc
from .errors import ProcessError, UserError
from .gitrepo import GitRepo, HeadState
from .resolve import Pair
from .store import BuildRecord, Store

LOCK_NAME = "hourly.lock"


class BuildStatus(str, Enum):
    BUILT = "built"          # built now, wheels cached and installed
    CACHED = "cached"        # wheels from the cache, installed, no build
    IN_PLACE = "in_place"    # the build installed itself (editable); nothing to cache
    FAILED = "failed"

    def __str__(self) -> str:
        return self.value


@dataclass
class BuildResult:
    status: BuildStatus
    log_path: str | None = None
    tail: str = ""
    duration: float = 0.0
    wheels: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status is not BuildStatus.FAILED


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Workspace:
    """Exclusive, restorable use of the xla and jax working trees."""

    def __init__(self, repos: list[GitRepo], force: bool = False):
        self.repos = repos
        self.force = force
        self._states: dict[str, dict] = {}
        self._entered = False

    def _lock_path(self, repo: GitRepo) -> Path:
        return repo.git_dir / LOCK_NAME

    def __enter__(self) -> "Workspace":
        taken = []
        try:
            for repo in self.repos:
                self._states[repo.name] = self._acquire(repo)
                taken.append(repo)
        except BaseException:
            for repo in taken:
                self._release(repo)
            raise
        self._entered = True
        return self

    def _acquire(self, repo: GitRepo) -> dict:
        lock = self._lock_path(repo)
        inherited = None
        if lock.exists():
            try:
                old = json.loads(lock.read_text())
            except (OSError, ValueError):
                old = {}
            if old.get("host") == socket.gethostname() and old.get("pid") and _pid_alive(old["pid"]) \
                    and old["pid"] != os.getpid():
                raise UserError(f"{repo.name} tree {repo.path} is in use by another hourly (pid {old['pid']})",
                                "wait for it to finish, or stop it")
            if old.get("host") not in (None, socket.gethostname()):
                raise UserError(f"{repo.name} tree {repo.path} is locked by hourly on {old.get('host')}",
                                f"if that run is gone, delete {lock}")
            inherited = old  # a run that was killed: its builds' changes are not the user's
        if inherited and inherited.get("sha"):
            # restore what the killed run would have restored, including its stash of the user's edits
            state = {"branch": inherited.get("branch"), "sha": inherited["sha"], "stash": inherited.get("stash")}
        else:
            head = repo.head_state()
            state = {"branch": head.branch, "sha": head.sha, "stash": None}
            dirty = repo.dirty_files()
            if dirty:
                if not self.force:
                    shown = ", ".join(dirty[:3]) + (" …" if len(dirty) > 3 else "")
                    raise UserError(f"{repo.name} tree {repo.path} has uncommitted changes ({shown})",
                                    "commit or stash them, or pass --force (hourly stashes them and gives them back)")
                state["stash"] = repo.stash("hourly: the user's changes, saved before a scan")
        state.update(pid=os.getpid(), host=socket.gethostname(), since=time.time())
        tmp = lock.with_suffix(".tmp")
        tmp.write_text(json.dumps(state))
        os.replace(tmp, lock)
        return state

    def checkout(self, pair: Pair) -> None:
        for repo in self.repos:
            repo.checkout(getattr(pair, repo.name))

    def _release(self, repo: GitRepo) -> None:
        state = self._states.get(repo.name)
        if state:
            repo.restore(HeadState(state["branch"], state["sha"]))
            if state.get("stash"):
                repo.unstash(state["stash"])
        self._lock_path(repo).unlink(missing_ok=True)

    def __exit__(self, *exc) -> None:
        errors = []
        for repo in self.repos:
            try:
                self._release(repo)
            except ProcessError as e:  # keep restoring the other tree
                errors.append(e)
        if errors and exc[0] is None:
            raise errors[0]


@dataclass
class BuildSpec:
    cmd: list[str]
    wheel_dir: Path
    python: str
    env: dict[str, str] = field(default_factory=dict)
    timeout: float | None = None


class Builder:
    def __init__(self, workspace: Workspace | None, jax_repo: GitRepo, xla_repo: GitRepo,
                 spec: BuildSpec, store: Store):
        self.workspace = workspace
        self.jax_repo = jax_repo
        self.xla_repo = xla_repo
        self.spec = spec
        self.store = store
        self.cache_root = store.workdir / "wheels"
        self.log_dir = store.workdir / "logs"
        self.builds_run = 0

    def cache_dir(self, pair: Pair) -> Path:
        return self.cache_root / pair.key()

    def cached_wheels(self, pair: Pair) -> list[Path]:
        d = self.cache_dir(pair)
        return sorted(d.glob("*.whl")) if d.is_dir() else []

    def is_cached(self, pair: Pair) -> bool:
        return bool(self.cached_wheels(pair))

    def prepare(self, pair: Pair) -> BuildResult:
        """Make ``pair`` the installed build: from the cache, or by building it now."""
        wheels = self.cached_wheels(pair)
        if wheels:
            self.workspace.checkout(pair)  # benchmarks may read the trees too
            err = self._install(wheels, pair)
            if err:
                return err
            return BuildResult(BuildStatus.CACHED, wheels=[str(w) for w in wheels])
        return self._build(pair)

    def _build(self, pair: Pair) -> BuildResult:
        self.workspace.checkout(pair)
        wheel_dir = self.spec.wheel_dir
        for stale in wheel_dir.glob("*.whl") if wheel_dir.is_dir() else []:
            stale.unlink()
        env = dict(os.environ)
        env.update(self.spec.env)
        env.update(HOURLY_XLA_SHA=pair.xla, HOURLY_JAX_SHA=pair.jax,
                   HOURLY_XLA_DIR=str(self.xla_repo.path), HOURLY_JAX_DIR=str(self.jax_repo.path),
                   HOURLY_PYTHON=self.spec.python)
        env["PATH"] = str(Path(self.spec.python).parent) + os.pathsep + env.get("PATH", "")
        log = self.log_dir / f"build-{pair.key()}.log"
        require_command(self.spec.cmd[0], env["PATH"])
        self.builds_run += 1
        res = proc.run(self.spec.cmd, cwd=self.jax_repo.path, env=env, timeout=self.spec.timeout,
                       log_path=log, check=False)
        if not res.ok:
            result = BuildResult(BuildStatus.FAILED, str(log), res.tail(), res.duration)
            self._record(pair, result, in_place=False)
            return result
        built = sorted(wheel_dir.glob("*.whl")) if wheel_dir.is_dir() else []
        if not built:
            result = BuildResult(BuildStatus.IN_PLACE, str(log), res.tail(), res.duration)
            self._record(pair, result, in_place=True)
            return result
        cached = self._cache(pair, built)
        err = self._install(cached, pair)
        if err:
            return err
        result = BuildResult(BuildStatus.BUILT, str(log), res.tail(), res.duration, [str(w) for w in cached])
        self._record(pair, result, in_place=False)
        return result

    def _cache(self, pair: Pair, wheels: list[Path]) -> list[Path]:
        """Copy into a temporary folder, then rename: a cache entry is whole or absent."""
        self.cache_root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=self.cache_root))
        for w in wheels:
            shutil.copy2(w, tmp / w.name)
        final = self.cache_dir(pair)
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
        return sorted(final.glob("*.whl"))

    def _install(self, wheels: list[Path], pair: Pair) -> BuildResult | None:
        log = self.log_dir / f"install-{pair.key()}.log"
        res = proc.run([self.spec.python, "-m", "pip", "install", "--quiet", "--force-reinstall",
                        "--no-deps", "--disable-pip-version-check", *map(str, wheels)],
                       log_path=log, check=False, timeout=self.spec.timeout)
        if res.ok:
            return None
        result = BuildResult(BuildStatus.FAILED, str(log), "pip install failed: " + res.tail(5),
                             res.duration)
        self._record(pair, result, in_place=False)
        return result

    def _record(self, pair: Pair, r: BuildResult, in_place: bool) -> None:
        self.store.record_build(BuildRecord(pair.xla, pair.jax, r.status.value, in_place, r.wheels,
                                            r.log_path, r.tail[-4000:], r.duration))


def require_command(cmd: str, path: str) -> None:
    if os.sep in cmd:
        if not Path(cmd).exists():
            raise UserError(f"build command not found: {cmd}", "pass --build-cmd with the build script's path")
        return
    if shutil.which(cmd, path=path) is None:
        raise UserError(f"build command not found: {cmd}",
                        "put build-jax.sh on PATH (it is inside the nightly containers) or pass --build-cmd")
