"""The release level: every published jax/jaxlib release from the package index, one
environment each (``plan``: settings, versions, pairing, steps; ``run``: environments, runs,
store).
"""
