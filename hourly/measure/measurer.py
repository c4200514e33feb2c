"""Builds and measures states under one set of settings: the checkouts a hunt needs, how its pairs
are built, and the :class:`Measurer` shared by the scan, the bisection, the profile and a Slurm job."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hourly.adapters.gitrepo import GitRepo
from hourly.adapters.store import Measurement, Records
from hourly.measure.benchmark import run_benchmark
from hourly.measure.build import (
    BUILD_ATTEMPTS,
    Builder,
    BuildInterrupted,
    BuildSpec,
    BuildStatus,
    Workspace,
    check_wheel_dir,
)
from hourly.measure.pinned import Pin, gate_for, make_pin
from hourly.measure.settings import Settings
from hourly.model import Pair, Status

if TYPE_CHECKING:  # detection pulls in numpy
    pass


def open_repos(s: Settings) -> tuple[GitRepo | None, GitRepo]:
    """The checkouts a hunt needs: with --only jax no XLA checkout (jaxlib stays as installed)."""
    xla = None if s.only == "jax" else GitRepo(s.xla_repo, "xla")
    return xla, GitRepo(s.jax_repo, "jax")



def trees(xla: GitRepo | None, jax: GitRepo) -> list[GitRepo]:
    return [r for r in (xla, jax) if r is not None]



def build_spec(s: Settings) -> BuildSpec:
    """How the pairs of these settings are built (the scan's and the bisection's builders share it)."""
    check_wheel_dir(s.resolved_wheel_dir())
    two = s.only is None  # jaxlib and the jax package priced and cached apart (hourly.measure.native_inputs)
    return BuildSpec(s.build_argv(), s.resolved_wheel_dir(), s.python, s.env_dict(), s.build_timeout,
                     s.resolved_cache_dir(), s.cache_bytes(), list(s.cherry_pick), s.build_identity_cmd(),
                     package_only=s.only == "jax", jax_cmd=s.jax_package_argv() if two else None,
                     jax_ident_cmd=s.jax_package_identity() if two else None, native_inputs=list(s.native_inputs))



def pin_of(s: Settings, jax: GitRepo | None) -> Pin | None:
    return make_pin(s.only, s.python, jax, s.jax_ref, gate=s.jaxlib_gate)



class Measurer:
    """Builds and measures pairs under one set of settings; shared by scan and bisect."""

    def __init__(self, s: Settings, store: Records, xla: GitRepo | None, jax: GitRepo, workspace: Workspace,
                 pin: Pin | None = None, key: str | None = None):
        self.s = s
        self.store = store
        self.key = key if key is not None else s.bench_key()
        self.spec = s.bench_spec()
        self.builder = Builder(workspace, jax, xla, build_spec(s), store)
        if s.cherry_pick:
            from hourly.measure.cherry_pick import parse
            workspace.picks = parse(s.cherry_pick, {r.name: r for r in trees(xla, jax)})
        self.gate = gate_for(jax, pin)
        self.runs = 0
        self.installed: Pair | None = None  # the pair whose build is installed now

    def untestable(self, pair: Pair) -> str | None:
        """Why ``pair`` cannot be tested at all (--only jax: the installed jaxlib is too old for it)."""
        return self.gate.untestable(pair.jax) if self.gate else None

    def measure(self, pair: Pair, repeats: int | None = None, origin: str = "scan") -> Measurement:
        """Build (or reuse) and benchmark ``pair``; measuring the installed pair again skips the install."""
        why = self.untestable(pair)
        if why:
            m = Measurement(pair.xla, pair.jax, Status.UNTESTABLE.value, None, [], [], why, origin)
            self.store.add_measurement(self.key, m)
            return m
        if pair == self.installed:
            build = None
        else:
            self.installed = None
            build = self.builder.prepare(pair)
        if build is not None and build.status is BuildStatus.INTERRUPTED:
            raise BuildInterrupted(
                f"the build of {pair.short()} was interrupted {BUILD_ATTEMPTS} times ({_first_line(build.tail)};"
                f" log {build.log_path}); nothing was recorded for it",
                "free memory or raise --build-timeout, then run the same command again: it goes on from there")
        if build is not None and build.status is BuildStatus.FAILED:
            m = Measurement(pair.xla, pair.jax, Status.BUILD_FAILED.value, None, [], [],
                            f"build failed: {_last_line(build.tail)} (log {build.log_path})",
                            origin)
        else:
            self.installed = pair
            # a state (re)installed just now gets its warm-up runs first (metric mode: exit codes
            # need none); the installed pair measured again is warm already
            warm = self.s.warmup_runs if build is not None and self.s.mode != "exit" else 0
            res = run_benchmark(self.spec, repeats or self.s.repeats, self.store.logs, pair.key(), warm)
            self.runs += len(res.runs)
            m = Measurement(pair.xla, pair.jax, res.status.value, res.value, res.samples,
                            [r.as_dict() for r in res.runs], res.detail(), origin)
        self.store.add_measurement(self.key, m)
        return m



def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] if lines else "no output"



def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else "no output"

