"""Builds and measures states under one set of settings: the checkouts a hunt needs, how its pairs
are built, and the :class:`Measurer` shared by the scan, the bisection, the profile and a Slurm job."""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

from hourly.adapters.gitrepo import GitRepo
from hourly.adapters.store import Measurement, Records
from hourly.adapters.venvs import SEEN_VAR, Overlay, make_overlay, overlay_of
from hourly.errors import UserError
from hourly.measure.benchmark import BenchResult, BenchSpec, Run, metric_views, run_benchmark
from hourly.measure.build import (
    BUILD_ATTEMPTS,
    Builder,
    BuildInterrupted,
    BuildResult,
    BuildSpec,
    BuildStatus,
    Workspace,
    check_wheel_dir,
    is_jax_package,
)
from hourly.measure.pinned import Pin, check_jax_seen, gate_for, host_overlay, make_pin, run_env
from hourly.measure.sample_cost import asked_of
from hourly.measure.sample_size import SampleSize
from hourly.measure.settings import NO_BUILD, Settings
from hourly.model import Pair, Status


def open_repos(s: Settings) -> tuple[GitRepo | None, GitRepo]:
    """The checkouts a hunt needs: with --only jax no XLA checkout (jaxlib stays as installed)."""
    xla = None if s.only == "jax" else GitRepo(s.xla_repo, "xla")
    jax = GitRepo(s.jax_repo, "jax")
    if xla is not None and Path(xla.repo.working_tree_dir or xla.path).resolve() == \
            Path(jax.repo.working_tree_dir or jax.path).resolve():
        # each state would pair a commit of one history with another of the same: never a JAX build
        raise UserError(f"--xla-repo and --jax-repo are the same checkout, {jax.path}",
                        "pass your xla checkout as --xla-repo and your jax checkout as --jax-repo "
                        "(or --only jax to keep the installed jaxlib)")
    return xla, jax



def trees(xla: GitRepo | None, jax: GitRepo) -> list[GitRepo]:
    return [r for r in (xla, jax) if r is not None]



def build_spec(s: Settings) -> BuildSpec:
    """How the pairs of these settings are built (the scan's and the bisection's builders share it)."""
    check_wheel_dir(s.resolved_wheel_dir())
    two = s.only is None  # jaxlib and the jax package priced and cached apart (hourly.measure.native_inputs)
    return BuildSpec(s.build_argv(), s.resolved_wheel_dir(), s.python, s.env_dict(), s.build_timeout,
                     s.resolved_cache_dir(), s.cache_bytes(), list(s.cherry_pick), s.build_identity_cmd(),
                     package_only=s.only == "jax", jax_cmd=s.jax_package_argv() if two else None,
                     jax_ident_cmd=s.jax_package_identity() if two else None, native_inputs=list(s.native_inputs),
                     install_python=s.run_python())



def pin_of(s: Settings, jax: GitRepo | None) -> Pin | None:
    return make_pin(s.only, s.python, jax, s.jax_ref, run_env(s), gate=s.jaxlib_gate)



#: the folder of a workdir that holds the states' own environments (StateEnvs)
STATES_DIR = "states"
#: states whose environments are kept at once (the least recently used is removed): a paired verdict
#: alternates three, the search moves on with one of them
KEEP_STATES = 8
#: the file of a state's environment saying which state and which wheels it holds
STATE_MARK = "hourly-state.json"


class StateEnvs:
    """One environment per state, so that a bisection's paired rounds run states alternately
    without installing them again: an overlay over ``--python`` (hourly.adapters.venvs.make_overlay)
    at ``<workdir>/states/<pair>``, holding that state's wheels from the build cache; at most
    :data:`KEEP_STATES` kept. ``coexist`` turns False when a build installs in place (an editable
    build: two states cannot be installed at once), and the measurer goes back to one installed
    state at a time (the rounds then measure one state after another, and the answer says so)."""

    def __init__(self, s: Settings, log_dir: Path):
        self.s, self.log_dir = s, log_dir
        self.root = Path(s.workdir).expanduser().absolute() / STATES_DIR
        self.coexist = overlay_of(s.python) is None and not (s.only == "jax" and s.jax_package_cmd().strip() == NO_BUILD)
        self.used: dict[Pair, float] = {}

    def folder(self, pair: Pair) -> Path:
        return self.root / pair.key()

    def ready(self, pair: Pair) -> Overlay | None:
        """The state's environment when it holds the state (installed whole), else None."""
        d = self.folder(pair)
        try:
            mark = json.loads((d / STATE_MARK).read_text())
        except (OSError, ValueError):
            return None
        env = overlay_of(str(d / "bin" / "python"))
        if env is None or mark.get("pair") != [pair.xla, pair.jax] or not Path(env.python).exists():
            return None
        self.used[pair] = time.monotonic()
        return env

    def fresh(self, pair: Pair) -> Overlay:
        """An environment for ``pair`` to be installed into (emptied by the install)."""
        self.evict()
        d = self.folder(pair)
        (d / STATE_MARK).unlink(missing_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        env = make_overlay(d, self.s.python, self.log_dir / "overlay.log", run_env(self.s), reuse=True)
        self.used[pair] = time.monotonic()
        return env

    def has_jax(self, pair: Pair) -> bool:
        """Whether the state's environment holds a jax package of its own (a wheel it installed)."""
        try:
            mark = json.loads((self.folder(pair) / STATE_MARK).read_text())
        except (OSError, ValueError):
            return False
        return any(is_jax_package(Path(w)) for w in mark.get("wheels") or [])

    def made(self, pair: Pair, wheels: list[str]) -> None:
        (self.folder(pair) / STATE_MARK).write_text(json.dumps({"pair": [pair.xla, pair.jax], "wheels": wheels}))

    def evict(self) -> None:
        if not self.root.is_dir():
            return
        kept = sorted((p for p in self.root.iterdir() if p.is_dir()), key=lambda p: self._last(p))
        for old in kept[:max(0, len(kept) - (KEEP_STATES - 1))]:
            shutil.rmtree(old, ignore_errors=True)

    def _last(self, folder: Path) -> float:
        for pair, t in self.used.items():
            if pair.key() == folder.name:
                return t
        return -1.0


class Measurer:
    """Builds and measures pairs under one set of settings; shared by scan and bisect. ``per_state``
    (a bisection's paired rounds): each state is installed into an environment of its own
    (:class:`StateEnvs`), so states measured in alternation are not installed again."""

    def __init__(self, s: Settings, store: Records, xla: GitRepo | None, jax: GitRepo, workspace: Workspace,
                 pin: Pin | None = None, key: str | None = None, per_state: bool = False):
        self.s = s
        self.store = store
        self.key = key if key is not None else s.bench_key()
        #: where the states are installed and run: with --only jax the workdir's overlay over
        #: --python (made now, or kept from the workdir's last run), or --python when it is an overlay
        self.overlay = host_overlay(s, store.logs) if s.only == "jax" else overlay_of(s.python)
        self.spec = s.bench_spec()
        self.builder = Builder(workspace, jax, xla, build_spec(s), store)
        if s.cherry_pick:
            from hourly.measure.cherry_pick import parse
            workspace.picks = parse(s.cherry_pick, {r.name: r for r in trees(xla, jax)})
        self.gate = gate_for(jax, pin)
        self.runs = 0  # benchmark processes started (warm-up runs included): what a probe costs
        self.samples = 0  # the counted samples those runs gave (more than runs when a run prints many)
        self.installed: Pair | None = None  # the pair whose build is installed now
        #: every row the last measurement recorded (one per named metric; else the one returned)
        self.last_rows: list[Measurement] = []
        #: where the installed state's jax must be found by the benchmark (what, folder); None: unchecked
        self.jax_home: tuple[str, Path] | None = None
        #: each state its own environment (paired rounds); None: one installed state at a time
        self.envs = StateEnvs(s, store.logs) if per_state else None
        self.env: Overlay | None = None  # the environment of the state measured now (per_state)
        self.at: Pair | None = None  # the pair the working trees stand at (per_state)
        #: a bisection's rounds: a state whose warm-up run failed runs no more (it crashes at import)
        self.stop_after_failed_warmup = per_state
        #: the samples each process is asked for (HOURLY_SAMPLES): --samples, a --env HOURLY_SAMPLES,
        #: else chosen from the costs and the noise measured so far
        self.sizes = SampleSize(s.samples or asked_of(self.spec.env))
        self.seconds = 0.0  # the benchmark processes' wall time (warm-up runs included): chip-seconds
        #: the first measurement whose processes did not print the samples asked (in words), None
        self.unfollowed: str | None = None
        #: told of each benchmark run of ``pair`` as it ends (a bisection's line per process), or None
        self.on_run: Callable[[Pair, Run], None] | None = None

    @property
    def coexist(self) -> bool:
        """Whether states are kept installed side by side (paired rounds need no reinstall)."""
        return self.envs is not None and self.envs.coexist

    def untestable(self, pair: Pair) -> str | None:
        """Why ``pair`` cannot be tested at all (--only jax: the installed jaxlib is too old for it)."""
        return self.gate.untestable(pair.jax) if self.gate else None

    def measure(self, pair: Pair, repeats: int | None = None, origin: str = "scan") -> Measurement:
        """Build (or reuse) and benchmark ``pair``; measuring the installed pair again skips the install.

        Returns the measurement of the primary metric (:meth:`Settings.primary_metric`; with named
        metrics and none chosen, the first that measured); every row it recorded (one per named
        metric, in one transaction) is in :attr:`last_rows`."""
        why = self.untestable(pair)
        if why:
            return self._record([Measurement(pair.xla, pair.jax, Status.UNTESTABLE.value, None, [], [], why, origin)])
        env = self.envs.ready(pair) if self.envs is not None and self.envs.coexist else None
        if env is not None:  # kept installed in its own environment: no install, no warm-up
            build = None
            self._switch(pair, env)
        elif pair == self.installed and self.env is None:
            build = None
        else:
            self.installed = None
            into = self.envs.fresh(pair) if self.coexist else None  # type: ignore[union-attr]
            build = self.builder.prepare(pair, into=into.python if into else None)
            self.env, self.at = into, pair
            if into is not None and build.ok and build.status is not BuildStatus.IN_PLACE:
                self.envs.made(pair, build.wheels)  # type: ignore[union-attr]
            elif into is not None and build.status is BuildStatus.IN_PLACE:
                self.envs.coexist = False  # type: ignore[union-attr]  # editable: one state at a time
            self.jax_home = self._jax_home(build)
        if build is not None and build.status is BuildStatus.INTERRUPTED:
            raise BuildInterrupted(
                f"the build of {pair.short()} was interrupted {BUILD_ATTEMPTS} times ({_first_line(build.tail)};"
                f" log {build.log_path}); nothing was recorded for it",
                "free memory or raise --build-timeout, then run the same command again: it goes on from there")
        if build is not None and build.status is BuildStatus.FAILED:
            return self._record([Measurement(pair.xla, pair.jax, Status.BUILD_FAILED.value, None, [], [],
                                             f"build failed: {_last_line(build.tail)} (log {build.log_path})",
                                             origin)])
        self.installed = pair
        # a state (re)installed just now gets its warm-up runs first (metric mode: exit codes
        # need none); the installed pair measured again is warm already
        warm = self.s.warmup_runs if build is not None and self.s.mode != "exit" else 0
        spec, seen = self._watched(pair)
        if self.env is not None:
            spec = replace(spec, python=self.env.python)
        if spec.expect_metric:
            spec = replace(spec, asked=self.sizes.next())
        tell = self.on_run
        res = run_benchmark(spec, repeats or self.s.repeats, self.store.logs, pair.key(), warm,
                            stop_after_failed_warmup=self.stop_after_failed_warmup,
                            on_run=None if tell is None else lambda run: tell(pair, run))
        self.runs += len(res.runs)
        self.seconds += sum(r.duration for r in res.runs)
        self.sizes.observe(pair.key(), [(r.timing, list(r.samples or [])) for r in res.counted
                                        if r.status is Status.OK])
        self.unfollowed = self.unfollowed or res.unfollowed()
        if seen is not None and self.jax_home is not None:  # the state's jax, not another on the path
            check_jax_seen(seen, self.jax_home[1], self.jax_home[0], spec.python or self.s.python,
                           required=self.s.only == "jax", ran=any(r.returncode == 0 for r in res.runs))
        rows = measurement_rows(pair, res, origin, self.spec.metrics, self.store.metric_names(self.key)
                                if self.spec.metrics is not None else [], self.s.primary_metric())
        self.samples += max(m.sample_count for m in rows)
        return self._record(rows)

    def _record(self, rows: list[Measurement]) -> Measurement:
        self.store.add_measurements(self.key, rows)
        self.last_rows = rows
        return primary_row(rows, self.s.primary_metric())

    def _switch(self, pair: Pair, env: Overlay) -> None:
        """Measure ``pair``, kept installed in ``env``: the trees stand at it too (benchmarks may
        read them), and the check of where its jax was found looks there."""
        if self.at != pair:
            self.builder.workspace.checkout(pair)  # type: ignore[union-attr]
            self.at = pair
        self.env, self.installed = env, pair
        home = self.envs is not None and self.envs.has_jax(pair)
        self.jax_home = ("the state's jax, installed into its own environment", env.site) if home else None

    def _jax_home(self, build: BuildResult) -> tuple[str, Path] | None:
        """Where the benchmark must find the state just made: its jax wheel in the overlay, or the
        JAX tree installed in place (--only jax); None when hourly cannot know (no overlay, a build
        that installed itself)."""
        overlay = self.env or self.overlay
        if overlay is None or not build.ok:
            return None
        if any(is_jax_package(Path(w)) for w in build.wheels):
            return "the state's jax, installed into " + ("its own environment" if self.env else "the overlay"), overlay.site
        if build.status is BuildStatus.IN_PLACE and self.s.only == "jax":
            return "the state's jax, the JAX tree installed in place", Path(self.builder.jax_repo.path)
        return None

    def _watched(self, pair: Pair) -> tuple[BenchSpec, Path | None]:
        """The benchmark's spec, with a file its processes note where they found jax in (the
        overlay's start-up module) when the installed state's jax can be checked."""
        if self.jax_home is None:
            return self.spec, None
        self.store.logs.mkdir(parents=True, exist_ok=True)
        seen = self.store.logs / f"jax-seen-{pair.key()}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.txt"
        seen.unlink(missing_ok=True)
        return replace(self.spec, env={**self.spec.env, SEEN_VAR: str(seen)}), seen


def measurement_rows(pair: Pair, res: BenchResult, origin: str, metrics: tuple[str, ...] | None,
                     known: list[str], primary: str | None) -> list[Measurement]:
    """The rows of one measurement (:func:`hourly.measure.benchmark.metric_views`): the regex's one
    metric, or one row per named metric, or one ``''`` row when no name was measured."""
    return [Measurement(pair.xla, pair.jax, r.status.value, r.value, r.samples, [x.as_dict() for x in r.runs],
                        r.detail(), origin, metric=name) for name, r in metric_views(res, metrics, known, primary)]


def primary_row(rows: list[Measurement], primary: str | None) -> Measurement:
    """The row of the primary metric among one measurement's rows (a ``''`` row stands for every
    metric); with none chosen, the first that measured, else the first."""
    if primary is not None:
        for m in rows:
            if m.metric in (primary, ""):
                return m
    return next((m for m in rows if m.status == Status.OK.value), rows[0])



def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] if lines else "no output"



def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else "no output"

