"""Where states are built and measured: the executors (``executors``: here in turn, or one
Slurm job per request), the host protocol they talk to (``host``) and the job files of the
coordinator/worker protocol (``jobfiles``). The Slurm job itself is ``python -m hourly.worker``.
"""
