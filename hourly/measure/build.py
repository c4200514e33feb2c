"""The build runner: check out a pair, build it once, cache its wheels, install them.

:class:`Workspace` owns the two working trees for the duration of a scan or bisection: it refuses
trees with the user's uncommitted changes (unless forced, then it stashes them and gives them back),
locks the trees against a second hourly (an ``flock`` held for the run, see hourly/adapters/locks.py), and
restores both original HEADs at the end — normal end, error or Ctrl-C. After ``kill -9`` the kernel
drops the flock but the state file (``.git/hourly.lock``) stays behind with the original HEADs and
the stash in it; the next run takes the free flock, knows the trees' changes are the builds' own,
and restores the right HEADs.

:class:`Builder` builds a pair: a pair whose wheels are cached is only reinstalled; a build that
leaves no wheels (newer ``build-jax.sh`` installs editable builds in place) runs every time.
Builds are priced by their inputs (docs/builds.md): a build that leaves a jaxlib wheel is cached as
jaxlib (under the XLA commit and JAX's native inputs, :mod:`hourly.measure.native_inputs`) and the ``jax`` package
(under the JAX commit), so a later pair whose jaxlib is cached builds the ``jax`` package alone
(:class:`Need`). With ``--only jax`` the build is the ``jax`` package alone (``package_only``),
installed into the workdir's overlay over ``--python`` (``install_python``); an overlay is emptied
before each install, so it holds one state's files.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import socket
import time
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tenacity import RetryCallState, RetryError, Retrying, retry_if_result, stop_after_attempt, wait_exponential

from hourly.adapters import proc
from hourly.adapters.gitrepo import GitRepo, HeadState
from hourly.adapters.locks import LockHeld, RunLock, WaitLock
from hourly.adapters.store import BuildRecord, Records
from hourly.adapters.venvs import overlay_of, reinstall
from hourly.errors import ProcessError, UsageError, UserError, blocking_file
from hourly.measure.build_cache import (
    produced,
    public_identity,
    snapshot,
)
from hourly.measure.build_keys import BuildKeys, BuildSpec, is_jax_package
from hourly.measure.build_keys import Need as Need  # imported from here by the rest of hourly
from hourly.measure.resolve import Pair
from hourly.model import Named

if TYPE_CHECKING:
    from hourly.measure.settings import Settings

#: set in a descent's build environment to the dependency whose commits the pairs' "xla" side names
DESCENT_VAR = "HOURLY_DESCENT"
LOCK_NAME = "hourly.lock"          # the state a killed run leaves behind (HEADs, stash)
RUN_LOCK_NAME = "hourly.run.lock"  # the flock: held while a run uses the tree


class BuildStatus(Named):
    BUILT = "built"          # built now, wheels cached and installed
    CACHED = "cached"        # wheels from the cache, installed, no build
    IN_PLACE = "in_place"    # the build installed itself (editable); nothing to cache
    FAILED = "failed"            # the build ran and reported an error: recorded, a skip from then on
    INTERRUPTED = "interrupted"  # killed (signal, OOM killer, time-out): retried, never recorded


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


#: checkouts of a tree being handed back until no tracked file differs (tenacity)
RESTORE_ATTEMPTS = 3
#: attempts of a build that keeps being interrupted, and the wait between them (tenacity)
BUILD_ATTEMPTS = 3
#: seconds before the first retry of an interrupted build, then twice as long each time (at most
#: 60); ``HOURLY_BUILD_RETRY_WAIT`` sets it (tests: 0, at once)
BUILD_RETRY_WAIT_S = 1.0


def build_retry_wait() -> wait_exponential:
    first = float(os.environ.get("HOURLY_BUILD_RETRY_WAIT", BUILD_RETRY_WAIT_S))
    return wait_exponential(multiplier=first, min=first, max=60)


def _last_outcome(state: RetryCallState) -> proc.Result:
    """The attempts are used up: the last one's result (still interrupted) is the build's."""
    assert state.outcome is not None  # tenacity calls back only after an attempt has its outcome
    return state.outcome.result()


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

    def __init__(self, repos: list[GitRepo], force: bool = False, keep: list[Path] | None = None):
        self.repos = repos
        self.force = force
        #: places inside the trees that are not the builds' outputs (the workdir, the wheel folder,
        #: the venv of --python, the other tree …): never cleaned, never stashed (:func:`kept_paths`)
        self.keep = [Path(os.path.abspath(p)) for p in keep or []]
        self._cleaned: set[str] = set()
        self._states: dict[str, dict] = {}
        self._locks: dict[str, RunLock] = {}
        self.picks: list = []  # hourly.measure.cherry_pick.Pick: applied on top of every checkout where they apply
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
        # we hold the flock, so nobody runs on this tree: a state file is a dead run's, whatever
        # its pid (pids are reused) — its builds' changes are not the user's
        inherited = left_state(repo)
        if inherited is not None:
            # a run killed inside a git command leaves git's own lock behind; we hold the tree's
            # flock, so no hourly is using it, and the next checkout would fail on the stale file
            (repo.git_dir / "index.lock").unlink(missing_ok=True)
        if inherited and inherited.get("sha"):
            # restore what the killed run would have restored, including its stash of the user's edits
            state = {"branch": inherited.get("branch"), "sha": inherited["sha"], "stash": inherited.get("stash")}
        else:
            head = repo.head_state()
            state = {"branch": head.branch, "sha": head.sha, "stash": None}
            dirty = repo.dirty_files()
            untracked = repo.untracked_files(self._kept(repo))  # a clean build would remove them
            if dirty or untracked:
                if not self.force:
                    files = dirty + [f"{u} (untracked)" for u in untracked]
                    shown = ", ".join(files[:3]) + (" …" if len(files) > 3 else "")
                    raise UserError(f"{repo.name} tree {repo.path} has uncommitted changes ({shown})",
                                    "commit or stash them, or pass --force (hourly stashes them and gives them back)")
                state["stash"] = repo.stash("hourly: the user's changes, saved before a scan",
                                            untracked=bool(untracked), keep=self._kept(repo))
        state.update(pid=os.getpid(), host=socket.gethostname(), since=time.time())
        tmp = lock.with_name(f"{lock.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(state))
        os.replace(tmp, lock)
        return state

    def originals(self) -> dict[str, str]:
        """What each tree goes back to when the workspace is left: its branch, else its commit."""
        return {name: st.get("branch") or st.get("sha") or "" for name, st in self._states.items()}

    def checkout(self, pair: Pair) -> None:
        """Put the trees at ``pair``, with no bytecode of an earlier commit's sources left in them
        (a benchmark may import from a tree: --only jax installs it in place)."""
        applied: dict[str, str] = {}
        for repo in self.repos:
            repo.checkout(getattr(pair, repo.name))
            repo.remove_bytecode(self._kept(repo))
            if self.picks:
                from hourly.measure.cherry_pick import apply
                applied.update(apply(repo, getattr(pair, repo.name), self.picks))
        if self.picks:
            self.applied[pair] = applied

    def _kept(self, repo: GitRepo) -> list[str]:
        """The kept places inside ``repo``'s tree, relative to it."""
        root = Path(os.path.abspath(repo.path))
        out = []
        for k in self.keep:
            if k != root and k.is_relative_to(root):
                out.append(str(k.relative_to(root)))
        return out

    def untracked(self, repo: GitRepo) -> list[str]:
        """The untracked files of ``repo``'s tree that are not ignored and not hourly's own places
        (what taking the tree refuses without ``--force``), relative to it."""
        return repo.untracked_files(self._kept(repo))

    def clean(self) -> None:
        """Every state is built from its own commit alone: remove what earlier builds (and anyone)
        left untracked or ignored in the trees (``git clean -ffdx``), but the kept places. The
        user's own untracked files were refused or stashed when the trees were taken."""
        for repo in self.repos:
            repo.clean(self._kept(repo))
            self._cleaned.add(repo.name)

    def _restore_clean(self, repo: GitRepo, head: HeadState) -> None:
        """Put the tree back at ``head`` with no change to a tracked file left. The tree was clean
        when it was taken (the user's edits refused, or stashed with --force), so what differs now
        is a build's: a run stopped by a signal in the middle of a build or a checkout (git's
        index.lock left by a killed git, a file the build wrote as it was stopped) is checked out
        again, a few times (tenacity), rather than handed back with the build's edits in it."""
        def once() -> list[str]:
            try:
                repo.restore(head)
            except ProcessError:
                stale = repo.git_dir / "index.lock"
                if not stale.exists():
                    raise
                stale.unlink(missing_ok=True)  # a git of ours killed by the signal; we hold the tree's flock
                repo.restore(head)
            return repo.dirty_files()
        try:
            Retrying(stop=stop_after_attempt(RESTORE_ATTEMPTS), wait=wait_exponential(min=0.2, max=2),
                     retry=retry_if_result(bool))(once)
        except RetryError:
            pass  # still changed: the next run names the files (its uncommitted-changes check)
        with suppress(ProcessError):  # the states' bytecode: never to pass for the sources given back
            repo.remove_bytecode(self._kept(repo))

    def _release(self, repo: GitRepo) -> None:
        try:
            state = self._states.get(repo.name)
            if state:
                self._restore_clean(repo, HeadState(state["branch"], state["sha"]))
                if state.get("stash") and repo.name in self._cleaned:
                    repo.clean(self._kept(repo))  # the last build's outputs never block the user's files
                if state.get("stash"):
                    repo.unstash(state["stash"])
            self._lock_path(repo).unlink(missing_ok=True)
        finally:  # a failed restore keeps the state file for the next run, never the lock
            run_lock = self._locks.pop(repo.name, None)
            if run_lock:
                run_lock.release()

    def __exit__(self, *exc: object) -> None:
        errors = []
        for repo in self.repos:
            try:
                self._release(repo)
            except ProcessError as e:  # keep restoring the other tree
                errors.append(e)
        if errors and exc[0] is None:
            raise errors[0]


def left_state(repo: GitRepo) -> dict | None:
    """The state file (``LOCK_NAME``) a run keeps in ``repo`` while it holds the tree: None when
    there is none, ``{}`` when it cannot be read."""
    path = repo.git_dir / LOCK_NAME
    if not path.exists():
        return None
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def give_back_left_trees(repos: list[GitRepo], force: bool = False, keep: list[Path] | None = None) -> None:
    """Restore the trees a killed run left behind (its state file, ``LOCK_NAME``) though this run
    took none, having nothing left to measure there: the next run gives them back whatever it does.
    A tree that another live run holds (its flock), or that this process has taken already (an outer
    :class:`Workspace`), is left to its holder."""
    def left(repo: GitRepo) -> bool:
        state = left_state(repo)
        return state is not None and not (state.get("pid") == os.getpid() and state.get("host") == socket.gethostname())
    dead = [r for r in repos if left(r)]
    if not dead:
        return
    try:
        with Workspace(dead, force=force, keep=keep):
            pass
    except LockHeld:
        pass


class Builder(BuildKeys):
    """Builds a pair in the workspace's trees (see the module's text); its cache keys and the price
    of a state are :class:`~hourly.measure.build_keys.BuildKeys`'."""

    def __init__(self, workspace: Workspace | None, jax_repo: GitRepo, xla_repo: GitRepo | None,
                 spec: BuildSpec, store: Records | None):
        super().__init__(jax_repo, spec)
        self.workspace = workspace
        self.xla_repo = xla_repo
        self.store = store
        self.log_dir = store.logs if store else None  # no store: only the cache is asked
        self.builds_run = 0    # build commands run (jaxlib builds + jax package builds)
        self.jaxlib_builds = 0  # runs of --build-cmd in a two-repository hunt (each builds jaxlib)
        self.jax_builds = 0     # builds of the jax package alone (--only jax, or jaxlib cached)

    # a Builder made without a workspace and a store (a scan's, a bisection's) only prices builds
    # from the cache: building needs trees to check out, a log folder and a store for the records
    @property
    def _tree(self) -> Workspace:
        if self.workspace is None:
            raise RuntimeError("this Builder only prices builds: it has no workspace to build in")
        return self.workspace

    @property
    def _logs(self) -> Path:
        if self.log_dir is None:
            raise RuntimeError("this Builder only prices builds: it has no store for its logs")
        return self.log_dir

    @property
    def _records(self) -> Records:
        if self.store is None:
            raise RuntimeError("this Builder only prices builds: it has no store to record builds in")
        return self.store

    def prepare(self, pair: Pair, into: str | None = None) -> BuildResult:
        """Make ``pair`` the installed build: from the cache, or by building it now; ``into``: the
        Python of the environment it is installed into (default: ``install_python``; a bisection's
        paired rounds give each state an environment of its own, hourly.measure.measurer.StateEnvs).

        Holds a waiting lock per cache key it may write (hourly.adapters.locks.WaitLock): two runs or Slurm
        jobs sharing the cache never build one key at once; the second waits and finds it cached."""
        keys = [self.build_key(pair)]
        if self.split and self.spec.cmd:
            keys += [self.jaxlib_key(pair), self.jax_key(pair)]
        self.cache.make()
        with ExitStack() as stack:
            for key in sorted(set(keys)):  # one order everywhere: no two holders wait on each other
                stack.enter_context(WaitLock(self.cache_root.parent / "locks" / f"{key}.lock"))
            return self._prepare(pair, into)

    def _prepare(self, pair: Pair, into: str | None = None) -> BuildResult:
        wheels = self.cached_wheels(pair, touch=True)
        if wheels:
            self._tree.checkout(pair)  # benchmarks may read the trees too
            err = self._install(wheels, pair, into)
            if err:
                return err
            return BuildResult(BuildStatus.CACHED, wheels=[str(w) for w in wheels])
        if not self.spec.cmd:  # nothing to build: the tree is installed editable
            self._tree.checkout(pair)
            overlay = overlay_of(into or self.install_python)
            if overlay is not None:  # an earlier state's jax there would shadow the tree
                overlay.clear()
            return BuildResult(BuildStatus.IN_PLACE)
        if self.split:
            jaxlib = self.cache.get(self.jaxlib_key(pair), touch=True)
            if jaxlib:  # the same XLA and native inputs were built before: the jax package alone
                return self._jax_package(pair, jaxlib, into)
        return self._build(pair, into)

    def _jax_package(self, pair: Pair, jaxlib: list[Path], into: str | None = None) -> BuildResult:
        """Install the cached jaxlib and the jax package of ``pair`` (from the cache, or built now)."""
        self._tree.checkout(pair)
        status, jax_wheels, log, tail, duration = BuildStatus.CACHED, [], None, "", 0.0
        if self.spec.jax_cmd:
            jax_wheels = self.cache.get(self.jax_key(pair), touch=True)
            if not jax_wheels:
                self._tree.clean()  # built from this commit alone
                wheel_dir = self.spec.wheel_dir
                wheel_dir.mkdir(parents=True, exist_ok=True)
                before = snapshot(wheel_dir)
                log = self._logs / f"build-jax-{pair.jax[:12]}.log"
                self.builds_run += 1
                self.jax_builds += 1
                res = proc.run(self.spec.jax_cmd, cwd=self.jax_repo.path, env=self._env(pair, wheel_dir),
                               timeout=self.spec.timeout, log_path=log, check=False)
                tail, duration = res.tail(), res.duration
                built = [w for w in produced(wheel_dir, before) if is_jax_package(w)]
                if not res.ok or not built:
                    why = interruption(res)
                    if why:
                        return BuildResult(BuildStatus.INTERRUPTED, str(log), f"{why}\n{tail}", duration)
                    result = BuildResult(BuildStatus.FAILED, str(log),
                                         tail if not res.ok else f"the jax package's build left no jax wheel in {wheel_dir}",
                                         duration)
                    self._record(pair, result, in_place=False)
                    return result
                jax_wheels = self.cache.put(self.jax_key(pair), built, {"jax": pair.jax, "package": "jax"})
                for w in built:
                    w.unlink(missing_ok=True)
                status = BuildStatus.BUILT
        wheels = list(jaxlib) + list(jax_wheels)
        err = self._install(wheels, pair, into)
        if err:
            return err
        result = BuildResult(status, str(log) if log else None, tail, duration, [str(w) for w in wheels])
        if status is BuildStatus.BUILT:
            self._record(pair, result, in_place=False)
        return result

    def _env(self, pair: Pair, wheel_dir: Path) -> dict[str, str]:
        env = dict(os.environ)
        env.update(self.spec.env)
        env.update(HOURLY_XLA_SHA=pair.xla, HOURLY_JAX_SHA=pair.jax, HOURLY_JAX_DIR=str(self.jax_repo.path),
                   HOURLY_PYTHON=self.spec.python, HOURLY_WHEEL_DIR=str(wheel_dir))
        if self.xla_repo is not None:  # --only jax: no XLA tree (HOURLY_XLA_SHA names the installed jaxlib)
            env["HOURLY_XLA_DIR"] = str(self.xla_repo.path)
        descent = self.spec.env.get(DESCENT_VAR)
        if descent and self.xla_repo is not None:
            # a descent into XLA's LLVM or Triton pin (hourly.bisect.descent): the pair's "xla" side is that
            # dependency's commit in its own checkout; XLA itself is held at the culprit, in its own tree
            dep = descent.upper()
            env[f"HOURLY_{dep}_SHA"], env[f"HOURLY_{dep}_PATH"] = pair.xla, str(self.xla_repo.path)
            env["HOURLY_XLA_SHA"] = self.spec.env.get("HOURLY_HELD_XLA_SHA", "")
            env["HOURLY_XLA_DIR"] = self.spec.env.get("HOURLY_HELD_XLA_DIR", "")
        if "HOURLY_XLA_DIR" in env:  # the documented name of the XLA checkout to build against (docs/bisect.md)
            env["HOURLY_XLA_PATH"] = env["HOURLY_XLA_DIR"]
        env["PATH"] = str(Path(self.spec.python).parent) + os.pathsep + env.get("PATH", "")
        return env

    def _build(self, pair: Pair, into: str | None = None) -> BuildResult:
        self._tree.checkout(pair)
        self._tree.clean()  # built from this commit alone: no output of an earlier build is left
        wheel_dir = self.spec.wheel_dir
        wheel_dir.mkdir(parents=True, exist_ok=True)
        before = snapshot(wheel_dir)  # the folder may be shared: only what this build makes is ours
        env = self._env(pair, wheel_dir)
        log = self._logs / f"build-{pair.key()}.log"
        require_command(self.spec.cmd[0], env["PATH"])
        res = Retrying(stop=stop_after_attempt(BUILD_ATTEMPTS), wait=build_retry_wait(),
                       retry=retry_if_result(lambda r: interruption(r) is not None),
                       retry_error_callback=_last_outcome)(self._run_build, env, log)
        why = interruption(res)
        if why:  # not the pair's verdict: the next run builds it again
            return BuildResult(BuildStatus.INTERRUPTED, str(log), f"{why}\n{res.tail()}", res.duration)
        if not res.ok:
            result = BuildResult(BuildStatus.FAILED, str(log), res.tail(), res.duration)
            self._record(pair, result, in_place=False)
            return result
        built = produced(wheel_dir, before)
        if not built:
            if not self.spec.package_only:  # --only jax: where the benchmark finds jax is checked at its runs
                self._check_in_place(into or self.install_python, env, wheel_dir, log)
            result = BuildResult(BuildStatus.IN_PLACE, str(log), res.tail(), res.duration)
            self._record(pair, result, in_place=True)
            return result
        cached = self._cache(pair, built)
        err = self._install(cached, pair, into)
        if err:
            return err
        result = BuildResult(BuildStatus.BUILT, str(log), res.tail(), res.duration, [str(w) for w in cached])
        self._record(pair, result, in_place=False)
        return result

    def _check_in_place(self, python: str, env: dict[str, str], wheel_dir: Path, log: Path) -> None:
        """A build that left no wheel is taken as installed in place (an editable install of the JAX
        tree) only when the benchmark's Python finds ``jax`` in the JAX tree; otherwise every pair
        would measure whatever that Python had before (a ``--build-cmd`` of ``/bin/true``, or one
        that only echoes, gave "no steps found" and exit 0): refused, naming what it finds."""
        tree = Path(self.jax_repo.path).absolute()
        res = proc.run([python, "-c", _FIND_JAX], env=env, timeout=120, check=False)
        lines = res.output.strip().splitlines() if res.ok else []
        found = lines[-1] if lines else ""
        if found and os.path.isabs(found) and Path(os.path.abspath(found)).is_relative_to(tree):
            return
        finds = (f"finds jax at {found}" if os.path.isabs(found) else f"cannot find jax ({found})" if found
                 else "finds no jax" if res.ok
                 else f"could not say where it finds jax (exit {res.returncode}: {res.tail(1).strip() or 'no output'})")
        raise UserError(
            f"the build ({' '.join(self.spec.cmd)}) left no wheel in {wheel_dir} and {python} {finds}, not in the "
            f"JAX tree {tree}: every pair would measure that same jax (build log {log})",
            f"make the build leave its wheels in $HOURLY_WHEEL_DIR, or install the JAX tree into that Python "
            f"in place ({python} -m pip install -e {tree})")

    def _run_build(self, env: dict[str, str], log: Path) -> proc.Result:
        self.builds_run += 1
        if self.spec.package_only:
            self.jax_builds += 1
        else:
            self.jaxlib_builds += 1
        return proc.run(self.spec.cmd, cwd=self.jax_repo.path, env=env, timeout=self.spec.timeout,
                        log_path=log, check=False)

    def _cache(self, pair: Pair, wheels: list[Path]) -> list[Path]:
        """Into the cache (whole or not at all), then out of the wheel folder: they were this build's.

        Priced builds whose output holds a jaxlib wheel are cached in two entries: jaxlib (and its
        plugins) under the XLA commit and JAX's native inputs, the jax package under the JAX commit."""
        if self.split and any(w.name.startswith("jaxlib-") for w in wheels):
            lib = [w for w in wheels if not is_jax_package(w)]
            pkg = [w for w in wheels if is_jax_package(w)]
            native = self.native_key(pair.jax)
            cached = self.cache.put(self.jaxlib_key(pair), lib,
                                    {"xla": pair.xla, "native": native, "from_jax": pair.jax,
                                     "identity": public_identity(self.identity)})
            if pkg:
                cached += self.cache.put(self.jax_key(pair), pkg, {"jax": pair.jax, "package": "jax"})
            for w in wheels:
                w.unlink(missing_ok=True)
            return cached
        cached = self.cache.put(self.build_key(pair), wheels,
                                {"xla": pair.xla, "jax": pair.jax, "identity": public_identity(self.identity)})
        for w in wheels:
            w.unlink(missing_ok=True)
        return cached

    @property
    def install_python(self) -> str:
        """The Python whose environment the builds are installed into (an overlay's with --only jax)."""
        return self.spec.install_python or self.spec.python

    def _install(self, wheels: list[Path], pair: Pair, into: str | None = None) -> BuildResult | None:
        log = self._logs / f"install-{pair.key()}.log"
        python = into or self.install_python
        overlay = overlay_of(python)
        if overlay is not None:
            # an overlay holds the installed state alone: emptied first, so that no file of an
            # earlier state stays beside this one's. pip run by the overlay's Python finds the base's
            # copy of the package first on its path (PYTHONPATH), leaves it ("outside environment")
            # and would install over the earlier state's files without removing them
            overlay.clear()
        res = reinstall(python, list(map(str, wheels)), timeout=self.spec.timeout, log_path=log)
        if res.ok:
            return None
        result = BuildResult(BuildStatus.FAILED, str(log), "install failed: " + res.tail(5),
                             res.duration)
        self._record(pair, result, in_place=False)
        return result

    def _record(self, pair: Pair, r: BuildResult, in_place: bool) -> None:
        self._records.record_build(BuildRecord(pair.xla, pair.jax, r.status.value, in_place, r.wheels,
                                            r.log_path, r.tail[-4000:], r.duration,
                                            build_key=self.build_key(pair),
                                            identity=public_identity(self.identity)))


def kept_paths(s: Settings) -> list[Path]:
    """What a clean of the trees must keep (hourly.measure.settings.Settings ``s``): the places
    hourly itself reads or writes, which may lie inside a tree (the workdir, the wheel folder, the
    cache, the environment of --python, the benchmark's directory and scripts, the other tree)."""
    out = [Path(s.workdir), s.resolved_wheel_dir(), s.resolved_cache_dir(), Path(s.xla_repo), Path(s.jax_repo),
           Path.cwd() / "hourly.toml"]
    python = s.python if os.sep in s.python else shutil.which(s.python)
    if python:
        out.append(Path(python).absolute().parent.parent)  # the venv (bin/python's folder's parent)
    if s.bench_cwd:
        out.append(Path(s.bench_cwd))
    for cmd in (s.bench_cmd, s.build_cmd):
        try:
            argv = proc.split_command(cmd, "", "") if cmd else []
        except UserError:
            argv = []
        out += [Path(a) for a in argv if os.path.isabs(a) and os.path.exists(a)]
    return out


def check_wheel_dir(path: str | os.PathLike) -> None:
    """Refuse a wheel folder (``--wheel-dir``) that is a file or lies under one, before anything is
    made: a build would fail to make it (and a run whose wheels are all cached would never notice)."""
    blocker = blocking_file(path)
    if blocker is not None:
        where = "a file" if Path(blocker) == Path(path).absolute() else f"under {blocker}, which is a file"
        raise UsageError(f"--wheel-dir {path} is {where}, not a directory",
                         "pass --wheel-dir with a folder (or a path where one can be made)")


def require_python(python: str) -> None:
    """Refuse a --python that is not here (a path that does not exist, a name not on PATH) before
    anything is made: every build would fail on it, and the scan would blame --build-cmd."""
    found = (Path(python).is_file() and os.access(python, os.X_OK)) if os.sep in python else shutil.which(python)
    if not found:
        raise UserError(f"--python {python} is not an executable Python here",
                        "pass --python with the path of the Python that gets the builds (a venv's bin/python)")
    said = _says_python(str(Path(found if isinstance(found, str) else python).absolute()))
    if said is not None:  # /bin/true, a wrapper that fails: every build would be installed by nothing
        raise UserError(f"--python {python} is not a Python: asked for its version ({PYTHON_PROBE}), it {said}",
                        "pass --python with the path of the Python that gets the builds (a venv's bin/python)")


#: where a Python would import ``jax`` from, without importing it (its ``__init__`` runs nothing)
_FIND_JAX = ("import importlib.util as u\ntry:\n    s = u.find_spec('jax')\nexcept Exception as e:\n"
             "    s = None\n    print('error:', e)\nprint(s.origin if s is not None and s.origin else "
             "'' if s is None else list(s.submodule_search_locations or [''])[0])")


#: what :func:`require_python` asks --python (``-S``: no site module, the quickest start)
PYTHON_PROBE = "python -S -c 'import sys; print(\"python\", *sys.version_info[:2])'"


def _says_python(python: str) -> str | None:
    """None when ``python`` answers as a Python does; else what it did instead, in words. Asked
    once per interpreter file as it is (path and modification time) in this process."""
    try:
        st = os.stat(python)
    except OSError as e:
        return f"could not be run ({e.strerror})"
    return _asked_python(python, st.st_mtime_ns)


@functools.cache
def _asked_python(python: str, _mtime: int) -> str | None:
    res = proc.run([python, "-S", "-c", "import sys; print('python', *sys.version_info[:2])"], timeout=60,
                   check=False)
    if res.ok and any(line.startswith("python 3 ") for line in res.output.splitlines()):
        return None
    if res.timed_out:
        return "did not answer within 60 s"
    last = res.tail(1).strip()
    return f"exited with status {res.returncode}" + (f" and printed {last!r}" if last else " and printed nothing")


def require_command(cmd: str, path: str) -> None:
    if os.sep in cmd:
        if not Path(cmd).exists():
            raise UserError(f"build command not found: {cmd}", "pass --build-cmd with the build script's path")
        return
    if shutil.which(cmd, path=path) is None:
        raise UserError(f"build command not found: {cmd}",
                        "put build-jax.sh on PATH (it is inside the nightly containers) or pass --build-cmd")
