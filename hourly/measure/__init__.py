"""Turning a state into a measurement, shared by every level that builds from source:
the settings (``settings``), which (xla, jax) pair stood at each instant (``resolve``), the pinned
side of a one-repository hunt (``pinned``), cherry-picks (``cherry_pick``), JAX's native inputs
(``native_inputs``), the build cache (``build_cache``), the working trees and builds (``build``),
the benchmark runs (``benchmark``), the machine a run was on (``machine``), and the ``Measurer``
that joins build, benchmark and store (``measurer``).
"""
