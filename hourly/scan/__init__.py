"""The hourly level: build and benchmark every instant of a window, one build per distinct
(xla, jax) pair (``run``); the stored scan's table, edge checks and fail-fast messages
(``table``); a series from a workdir, a CSV or grep output for ``hourly detect`` (``sources``).
"""
