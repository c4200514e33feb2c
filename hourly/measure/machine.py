"""What a measurement ran on: host, Python, JAX/jaxlib, GPU, and the environment that matters."""

from __future__ import annotations

import os
import platform
import shutil
import socket

from hourly.adapters import proc
from hourly.measure.benchmark import cache_defaults
from hourly.privacy import redact_env

#: Environment variables that change what JAX/XLA measure.
RELEVANT_ENV_PREFIXES = ("XLA_", "JAX_", "CUDA_", "NCCL_", "TF_CPP_", "TF_GPU", "NVIDIA_", "LD_LIBRARY_PATH")

_VERSIONS = """
import importlib.metadata as m, sys
print("python", sys.version.split()[0])
for name in ("jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda12-pjrt", "jax_demo"):
    try:
        print(name, m.version(name))
    except m.PackageNotFoundError:
        pass
"""


def capture(python: str, extra_env: dict[str, str] | None = None) -> dict:
    """A snapshot of the environment; every probe is best-effort and never fails the scan.

    ``env`` is what the benchmark runs get: the relevant inherited variables, with hourly's own
    defaults (the compilation cache off, see :func:`hourly.measure.benchmark.cache_defaults`) applied, then
    the user's ``--env``.
    """
    env = {k: v for k, v in os.environ.items() if k.startswith(RELEVANT_ENV_PREFIXES)}
    set_, removed = cache_defaults(extra_env or {})
    for k in removed:
        env.pop(k, None)
    env.update(set_)
    env.update({k: v for k, v in (extra_env or {}).items()})
    info: dict = {"host": socket.gethostname(), "platform": platform.platform(), "env": env,
                  "python": python, "packages": {}, "gpus": []}
    res = proc.run([python, "-c", _VERSIONS], check=False, timeout=60)
    if res.ok:
        for line in res.output.splitlines():
            name, _, version = line.partition(" ")
            if name == "python":
                info["python_version"] = version
            elif version:
                info["packages"][name] = version
    if shutil.which("nvidia-smi"):
        res = proc.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                        "--format=csv,noheader"], check=False, timeout=30)
        if res.ok:
            info["gpus"] = [line.strip() for line in res.output.splitlines() if line.strip()]
    return info


def render_markdown(info: dict, anonymous: bool = False) -> list[str]:
    """For a public issue: values of secret-looking variables redacted; ``anonymous``: no host name."""
    host = "" if anonymous else f"`{info.get('host')}` "
    lines = [f"- host: {host}({info.get('platform')})",
             f"- Python: `{info.get('python')}` {info.get('python_version', '')}"]
    for name, version in sorted(info.get("packages", {}).items()):
        lines.append(f"- {name}: {version}")
    gpus = info.get("gpus") or []
    lines.append(f"- GPU: {'; '.join(gpus) if gpus else 'none found (no nvidia-smi)'}")
    for k, v in sorted(redact_env(info.get("env", {})).items()):
        lines.append(f"- `{k}={v}`")
    return lines
