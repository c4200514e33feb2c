"""The build runner: check out a pair, build it once, cache its wheels, install them.

:class:`Workspace` owns the two working trees for the duration of a scan or bisection: it refuses
trees with the user's uncommitted changes (unless forced, then it stashes them and gives them back),
locks the trees against a second hourly (an ``flock`` held for the run, see hourly/locks.py), and
restores both original HEADs at the end — normal end, error or Ctrl-C. After ``kill -9`` the kernel
drops the flock but the state file (``.git/hourly.lock``) stays behind with the original HEADs and
the stash in it; the next run takes the free flock, knows the trees' changes are the builds' own,
and restores the right HEADs.

:class:`Builder` builds a pair: a pair whose wheels are cached is only reinstalled; a build that
leaves no wheels (newer ``build-jax.sh`` installs editable builds in place) runs every time.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import time
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from tenacity import Retrying, retry_if_result, stop_after_attempt, wait_exponential

from . import proc
from .cache import WheelCache, build_identity, default_cache_dir, entry_key, produced, public_identity, snapshot
from .errors import ProcessError, UserError
from .gitrepo import GitRepo, HeadState
from .locks import RunLock
from .resolve import Pair
from .store import BuildRecord, Store

LOCK_NAME = "hourly.lock"          # the state a killed run leaves behind (HEADs, stash)
RUN_LOCK_NAME = "hourly.run.lock"  # the flock: held while a run uses the tree


class BuildStatus(str, Enum):
    BUILT = "built"          # built now, wheels cached and installed
    CACHED = "cached"        # wheels from the cache, installed, no build
    IN_PLACE = "in_place"    # the build installed itself (editable); nothing to cache
    FAILED = "failed"            # the build ran and reported an error: recorded, a skip from then on
    INTERRUPTED = "interrupted"  # killed (signal, OOM killer, time-out): retried, never recorded

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
        return self.status not in (BuildStatus.FAILED, BuildStatus.INTERRUPTED)


#: attempts of a build that keeps being interrupted, and the wait between them (tenacity)
BUILD_ATTEMPTS = 3
BUILD_RETRY_WAIT = wait_exponential(multiplier=1, min=1, max=60)


def interruption(res: proc.Result) -> str | None:
    """Why a build was interrupted rather than failed, or None when it ran to its own end.

    Interrupted: hourly's time-out, a signal (the OOM killer sends SIGKILL), or a shell reporting its
    child's death by SIGKILL/SIGTERM as 128+N. Any other non-zero exit is the build's own error."""
    if res.timed_out:
        return f"timed out after {res.duration:.0f}s"
    rc = res.returncode
    if rc is None or rc == 0:
        return None
    sig = -rc if rc < 0 else rc - 128 if rc in (128 + signal.SIGKILL, 128 + signal.SIGTERM) else None
    if sig is None:
        return None
    try:
        name = signal.Signals(sig).name
    except ValueError:
        name = f"signal {sig}"
    return f"killed by {name}" + (" (the OOM killer sends it)" if sig == signal.SIGKILL else "")


class BuildInterrupted(UserError):
    """A build was interrupted on every attempt: nothing is recorded for the pair."""


class Workspace:
    """Exclusive, restorable use of the xla and jax working trees."""

    def __init__(self, repos: list[GitRepo], force: bool = False):
        self.repos = repos
        self.force = force
        self._states: dict[str, dict] = {}
        self._locks: dict[str, RunLock] = {}
        self.picks: list = []  # hourly.cherry.Pick: applied on top of every checkout where they apply
        self.applied: dict[Pair, dict[str, str]] = {}
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
        run_lock = RunLock(repo.git_dir / RUN_LOCK_NAME, f"{repo.name} tree {repo.path}").acquire()
        self._locks[repo.name] = run_lock
        try:
            return self._take(repo)
        except BaseException:
            run_lock.release()
            self._locks.pop(repo.name, None)
            raise

    def _take(self, repo: GitRepo) -> dict:
        lock = self._lock_path(repo)
        inherited = None
        if lock.exists():
            # we hold the flock, so nobody runs on this tree: a state file is a dead run's, whatever
            # its pid (pids are reused) — its builds' changes are not the user's
            try:
                inherited = json.loads(lock.read_text())
            except (OSError, ValueError):
                inherited = {}
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
        tmp = lock.with_name(f"{lock.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(state))
        os.replace(tmp, lock)
        return state

    def checkout(self, pair: Pair) -> None:
        applied: dict[str, str] = {}
        for repo in self.repos:
            repo.checkout(getattr(pair, repo.name))
            if self.picks:
                from .cherry import apply
                applied.update(apply(repo, getattr(pair, repo.name), self.picks))
        if self.picks:
            self.applied[pair] = applied

    def _release(self, repo: GitRepo) -> None:
        try:
            state = self._states.get(repo.name)
            if state:
                repo.restore(HeadState(state["branch"], state["sha"]))
                if state.get("stash"):
                    repo.unstash(state["stash"])
            self._lock_path(repo).unlink(missing_ok=True)
        finally:  # a failed restore keeps the state file for the next run, never the lock
            run_lock = self._locks.pop(repo.name, None)
            if run_lock:
                run_lock.release()

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
    cache_dir: Path | None = None     # default: hourly.cache.default_cache_dir()
    cache_size: int | None = None     # bytes; None: no bound
    picks: list[str] = field(default_factory=list)  # --cherry-pick specs (part of the identity)


class Builder:
    def __init__(self, workspace: Workspace | None, jax_repo: GitRepo, xla_repo: GitRepo,
                 spec: BuildSpec, store: Store | None):
        self.workspace = workspace
        self.jax_repo = jax_repo
        self.xla_repo = xla_repo
        self.spec = spec
        self.store = store
        self.cache_root = Path(spec.cache_dir or default_cache_dir()) / "wheels"
        self.cache = WheelCache(self.cache_root, spec.cache_size)
        self._identity: dict | None = None
        self.log_dir = store.workdir / "logs" if store else None  # no store: only the cache is asked
        self.builds_run = 0

    @property
    def identity(self) -> dict:
        """How this builder builds (command, environment, Python ABI): with the pair, the cache key."""
        if self._identity is None:
            self._identity = build_identity(self.spec.cmd, self.spec.env, self.spec.python, self.spec.picks)
        return self._identity

    def build_key(self, pair: Pair) -> str:
        return entry_key(pair.key(), pair.xla, pair.jax, self.identity)

    def cache_dir(self, pair: Pair) -> Path:
        return self.cache.entry(self.build_key(pair))

    def cached_wheels(self, pair: Pair, touch: bool = False) -> list[Path]:
        return self.cache.get(self.build_key(pair), touch)

    def is_cached(self, pair: Pair) -> bool:
        return bool(self.cached_wheels(pair))

    def prepare(self, pair: Pair) -> BuildResult:
        """Make ``pair`` the installed build: from the cache, or by building it now."""
        wheels = self.cached_wheels(pair, touch=True)
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
        before = snapshot(wheel_dir)  # the folder may be shared: only what this build makes is ours
        env = dict(os.environ)
        env.update(self.spec.env)
        env.update(HOURLY_XLA_SHA=pair.xla, HOURLY_JAX_SHA=pair.jax,
                   HOURLY_XLA_DIR=str(self.xla_repo.path), HOURLY_JAX_DIR=str(self.jax_repo.path),
                   HOURLY_PYTHON=self.spec.python)
        env["PATH"] = str(Path(self.spec.python).parent) + os.pathsep + env.get("PATH", "")
        log = self.log_dir / f"build-{pair.key()}.log"
        require_command(self.spec.cmd[0], env["PATH"])
        res = Retrying(stop=stop_after_attempt(BUILD_ATTEMPTS), wait=BUILD_RETRY_WAIT,
                       retry=retry_if_result(lambda r: interruption(r) is not None),
                       retry_error_callback=lambda state: state.outcome.result())(self._run_build, env, log)
        why = interruption(res)
        if why:  # not the pair's verdict: the next run builds it again
            return BuildResult(BuildStatus.INTERRUPTED, str(log), f"{why}\n{res.tail()}", res.duration)
        if not res.ok:
            result = BuildResult(BuildStatus.FAILED, str(log), res.tail(), res.duration)
            self._record(pair, result, in_place=False)
            return result
        built = produced(wheel_dir, before)
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

    def _run_build(self, env: dict[str, str], log: Path) -> proc.Result:
        self.builds_run += 1
        return proc.run(self.spec.cmd, cwd=self.jax_repo.path, env=env, timeout=self.spec.timeout,
                        log_path=log, check=False)

    def _cache(self, pair: Pair, wheels: list[Path]) -> list[Path]:
        """Into the cache (whole or not at all), then out of the wheel folder: they were this build's."""
        cached = self.cache.put(self.build_key(pair), wheels,
                                {"xla": pair.xla, "jax": pair.jax, "identity": public_identity(self.identity)})
        for w in wheels:
            w.unlink(missing_ok=True)
        return cached

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
                                            r.log_path, r.tail[-4000:], r.duration,
                                            build_key=self.build_key(pair),
                                            identity=public_identity(self.identity)))


def require_command(cmd: str, path: str) -> None:
    if os.sep in cmd:
        if not Path(cmd).exists():
            raise UserError(f"build command not found: {cmd}", "pass --build-cmd with the build script's path")
        return
    if shutil.which(cmd, path=path) is None:
        raise UserError(f"build command not found: {cmd}",
                        "put build-jax.sh on PATH (it is inside the nightly containers) or pass --build-cmd")
