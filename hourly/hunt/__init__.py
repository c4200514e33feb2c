"""``hourly hunt``: from dates (or releases, ``from_releases``) to the commit: the daily level,
then per step window a scan and a bisection inside the day's container (``run``); the CUDA
toolkit versions of an image for the environment diff (``cuda_versions``).
"""
