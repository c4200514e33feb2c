"""What a measurement ran on: host, Python, JAX/jaxlib/libtpu/plugins (and where each came from), GPU, and
the environment that matters."""

from __future__ import annotations

import os
import platform
import shutil
import socket

from hourly.adapters import proc
from hourly.adapters.venvs import python_layout
from hourly.measure.benchmark import cache_defaults

#: Environment variables that change what JAX/XLA measure.
RELEVANT_ENV_PREFIXES = ("XLA_", "JAX_", "CUDA_", "NCCL_", "TF_CPP_", "TF_GPU", "NVIDIA_", "LD_LIBRARY_PATH")

def capture(python: str, extra_env: dict[str, str] | None = None, only: str | None = None) -> dict:
    """A snapshot of the environment; every probe is best-effort and never fails the scan.

    ``env`` is what the benchmark runs get: the relevant inherited variables, with hourly's own
    defaults (the compilation cache off, see :func:`hourly.measure.benchmark.cache_defaults`) applied, then
    the user's ``--env``. ``packages`` are the versions of JAX, jaxlib, libtpu, the CUDA/ROCm plugins,
    numpy … as ``python`` imports them in the benchmark's environment (PYTHONPATH included), and
    ``origins`` where each lies and how it is on the path (``site-packages``, ``PYTHONPATH``, ``.pth``,
    ``user site``). ``only``: with ``"jax"`` the base's own jax is ``shadowed`` (each state's runs).
    """
    env = {k: v for k, v in os.environ.items() if k.startswith(RELEVANT_ENV_PREFIXES)}
    set_, removed = cache_defaults(extra_env or {})
    for k in removed:
        env.pop(k, None)
    env.update(set_)
    env.update({k: v for k, v in (extra_env or {}).items()})
    env.pop(proc.SHARED_BYTECODE, None)  # an --env one is never passed on (hourly.adapters.proc)
    info: dict = {"host": socket.gethostname(), "platform": platform.platform(), "env": env,
                  "python": python, "packages": {}, "origins": {}, "gpus": []}
    layout = python_layout(python, {**os.environ, **(extra_env or {})})
    if "error" not in layout:
        info["python_version"] = layout.get("version")
        for name, p in (layout.get("packages") or {}).items():
            info["packages"][name] = p.get("version")
            info["origins"][name] = {"location": p.get("location"), "via": p.get("via")}
        pythonpath = [e["path"] for e in layout.get("entries", []) if e.get("via") == "PYTHONPATH"]
        if pythonpath:
            info["pythonpath"] = pythonpath
    if only == "jax":
        info["shadowed"] = ["jax"]  # each state's jax, installed into the workdir's overlay
    if shutil.which("nvidia-smi"):
        res = proc.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                        "--format=csv,noheader"], check=False, timeout=30)
        if res.ok:
            info["gpus"] = [line.strip() for line in res.output.splitlines() if line.strip()]
    return info
