"""The host protocol: what an executor builds and measures for.

A host is the scan, the bisection (:class:`~hourly.bisect.search.Bisector`) or the profile
asking an executor (hourly.execute.executors) for states. Every executor talks to a host through
these names only: its settings ``s``, its ``store``, the benchmark identity ``key``, the ``origin``
of its rows, the ``gate`` of ``--only jax`` (JAX commits the installed jaxlib cannot run), the
``split`` of its builds (jaxlib and the jax package counted apart) and ``measure`` (build and
benchmark one state here). :class:`MeasuringHost` is the scan's and the profile's; the Bisector
implements the same protocol itself.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from typing import Protocol

from hourly.adapters.gitrepo import GitRepo
from hourly.adapters.store import Measurement, Store
from hourly.measure.build import Workspace, give_back_left_trees, kept_paths
from hourly.measure.measurer import Measurer, trees
from hourly.measure.pinned import JaxlibGate, Pin, gate_for
from hourly.measure.settings import Settings
from hourly.model import Pair


@dataclass
class BuildSplit:
    """Builds of jaxlib and of the jax package alone, not yet carried by a recorded row."""

    jaxlib: int = 0
    jax: int = 0

    def add(self, jaxlib: int, jax: int) -> None:
        self.jaxlib += jaxlib
        self.jax += jax

    def take(self) -> tuple[int, int]:
        """The counts so far, and start again from zero (a bisection's row carries them)."""
        got = (self.jaxlib, self.jax)
        self.jaxlib = self.jax = 0
        return got


@dataclass(frozen=True)
class Counted:
    """One measurement as an executor returns it: the Measurement recorded, the ``builds`` run, the
    benchmark ``runs`` started (process starts, warm-up runs included) and the ``samples`` they
    printed (counted apart: many per run with --metric-samples all or named metrics)."""

    measurement: Measurement
    builds: int
    runs: int
    samples: int


class Host(Protocol):
    s: Settings
    store: Store
    key: str
    origin: str
    gate: JaxlibGate | None
    split: BuildSplit

    def measure(self, pair: Pair, count: int) -> Counted:
        """Build (or reuse) ``pair`` here and run the benchmark ``count`` times: the Measurement
        (recorded in ``store`` with ``origin``), builds run, benchmark runs, samples counted."""
        ...


class MeasuringHost:
    """A host that measures here with one :class:`~hourly.measure.measurer.Measurer`, whose working
    trees are taken (locked, stashed) on the first local measurement and given back on close; a
    remote executor never asks for them."""

    def __init__(self, s: Settings, store: Store, xla: GitRepo | None, jax: GitRepo, pin: Pin | None,
                 origin: str, key: str | None = None):
        self.s, self.store, self.origin = s, store, origin
        self.key = key if key is not None else s.bench_key()
        self.xla, self.jax, self.pin = xla, jax, pin
        self.gate = gate_for(jax, pin)
        self.split = BuildSplit()
        self._stack = ExitStack()
        self._measurer: Measurer | None = None

    def __enter__(self) -> MeasuringHost:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        taken = self._measurer is not None
        self._stack.close()
        self._measurer = None
        if not taken:  # nothing measured here: the trees a killed run left are given back all the same
            give_back_left_trees(trees(self.xla, self.jax), self.s.force, kept_paths(self.s))

    def measurer(self) -> Measurer:
        if self._measurer is None:
            ws = self._stack.enter_context(Workspace(trees(self.xla, self.jax), force=self.s.force,
                                                              keep=kept_paths(self.s)))
            self._measurer = Measurer(self.s, self.store, self.xla, self.jax, ws, self.pin, key=self.key)
        return self._measurer

    def measure(self, pair: Pair, count: int) -> Counted:
        return measure_counted(self.measurer(), self.split, pair, count, self.origin)


def measure_counted(m: Measurer, split: BuildSplit, pair: Pair, count: int, origin: str) -> Counted:
    """One measurement through ``m``, with the builds, the runs (process starts) and the samples
    those runs printed (:attr:`Measurer.samples`) it took (the builds' split into ``split``)."""
    b0, r0, s0 = m.builder.builds_run, m.runs, m.samples
    l0, j0 = m.builder.jaxlib_builds, m.builder.jax_builds
    got = m.measure(pair, count, origin=origin)
    split.add(m.builder.jaxlib_builds - l0, m.builder.jax_builds - j0)
    return Counted(got, m.builder.builds_run - b0, m.runs - r0, m.samples - s0)
