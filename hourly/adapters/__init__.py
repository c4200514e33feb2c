"""Adapters to the world outside Python: every external process (``proc``), git
(``checkout``: a checkout and its working tree; ``gitrepo``: its history), Docker
(``containers``, ``stale_runs``), Slurm (``slurm``), the package index (``package_index``),
Python environments (``venvs``), ``flock`` locks (``locks``) and the SQLite store (``store`` and
``store_tables``: every SQL statement of hourly). They import only the records and each other,
never an analysis module or a level.
"""
