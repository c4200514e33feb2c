"""CUDA, cuDNN and NCCL versions of a container image, read the ways a JAX nightly image exposes them.

Three sources, each kept with its name so a reader sees where a version comes from:

- **variables** of the image: ``CUDA_VERSION`` (every nvidia/cuda base image), ``CUDNN_VERSION`` /
  ``NV_CUDNN_VERSION``, ``NCCL_VERSION`` / ``NV_LIBNCCL_PACKAGE_VERSION`` (the base images and
  JAX-Toolbox's own);
- **pip packages**: ``nvidia-cuda-runtime-cu12``, ``nvidia-cudnn-cu12``, ``nvidia-nccl-cu12`` (and
  the ``-cu11`` ones), which jaxlib's CUDA plugins load first when they are installed;
- **library files**: ``libcudart.so.12.2.140``, ``libcudnn.so.8.9.4``, ``libnccl.so.2.18.3`` in the
  system's library folders and in the pip packages' ``nvidia/*/lib``, listed inside the image by
  :data:`LIBRARIES_PY` (``LIB <path>`` lines).

:func:`toolkit_versions` is pure: from the variables, the ``pip:<name>`` entries and the library
paths to one line per toolkit, e.g. ``cuDNN: 8.9.4.25 (NV_CUDNN_VERSION, pip nvidia-cudnn-cu12),
8.9.4 (/usr/lib/x86_64-linux-gnu/libcudnn.so)``.
"""

from __future__ import annotations

import re

#: toolkit -> (variables, pip package names, library name)
SOURCES: dict[str, tuple[tuple[str, ...], tuple[str, ...], str]] = {
    "CUDA": (("CUDA_VERSION",), ("nvidia-cuda-runtime-cu12", "nvidia-cuda-runtime-cu11"), "libcudart"),
    "cuDNN": (("CUDNN_VERSION", "NV_CUDNN_VERSION"), ("nvidia-cudnn-cu12", "nvidia-cudnn-cu11"), "libcudnn"),
    "NCCL": (("NCCL_VERSION", "NV_LIBNCCL_PACKAGE_VERSION", "NV_NCCL_VERSION"),
             ("nvidia-nccl-cu12", "nvidia-nccl-cu11"), "libnccl"),
}
NAMES = tuple(SOURCES)

#: run inside the image: every CUDA/cuDNN/NCCL library file of the usual folders, one ``LIB <path>`` line
LIBRARIES_PY = (
    "import glob, os, site\n"
    "dirs = ['/usr/lib/x86_64-linux-gnu', '/usr/lib/aarch64-linux-gnu', '/usr/lib64', '/usr/lib',\n"
    "        '/usr/local/lib', '/usr/local/cuda/lib64', '/usr/local/cuda/targets/*/lib']\n"
    "try:\n"
    "    sp = site.getsitepackages()\n"
    "except Exception:\n"
    "    sp = []\n"
    "dirs += [p + '/nvidia/*/lib' for p in sp]\n"
    "seen = set()\n"
    "for pattern in dirs:\n"
    "    for d in sorted(glob.glob(pattern)):\n"
    "        for lib in ('libcudart', 'libcudnn', 'libnccl'):\n"
    "            for f in sorted(glob.glob(os.path.join(d, lib + '.so.*'))):\n"
    "                if f not in seen:\n"
    "                    seen.add(f)\n"
    "                    print('LIB', f)\n"
)

_VERSION = re.compile(r"\d+(?:\.\d+)*")


def _version(text: str) -> str | None:
    m = _VERSION.match(text.strip())
    return m.group(0) if m else None


def library_versions(paths: list[str]) -> dict[str, str]:
    """``<folder>/<lib>.so`` -> the fullest version among that folder's files of the library
    (``libcudnn.so.8`` and ``libcudnn.so.8.9.4`` -> ``8.9.4``) (pure)."""
    out: dict[str, str] = {}
    for path in paths:
        folder, _, name = path.rpartition("/")
        base, sep, suffix = name.partition(".so.")
        version = _version(suffix) if sep else None
        if not version:
            continue
        key = f"{folder}/{base}.so"
        if key not in out or len(version.split(".")) > len(out[key].split(".")):
            out[key] = version
    return out


def toolkit_versions(env: dict[str, str], library_paths: list[str]) -> dict[str, str]:
    """One entry per toolkit found (``CUDA``, ``cuDNN``, ``NCCL``): its versions, each with where it
    was read, equal versions grouped (pure). ``env`` holds the image's variables and its Python
    packages as ``pip:<name>``."""
    libs = library_versions(library_paths)
    out = {}
    for toolkit, (variables, packages, lib) in SOURCES.items():
        seen: dict[str, list[str]] = {}
        for var in variables:
            v = _version(env.get(var) or "")
            if v:
                seen.setdefault(v, []).append(var)
        for pkg in packages:
            v = _version(env.get(f"pip:{pkg}") or env.get(f"pip:{pkg.replace('-', '_')}") or "")
            if v:
                seen.setdefault(v, []).append(f"pip {pkg}")
        for key, v in sorted(libs.items()):
            if key.rpartition("/")[2] == f"{lib}.so":
                seen.setdefault(v, []).append(key)
        if seen:
            out[toolkit] = ", ".join(f"{v} ({', '.join(where)})" for v, where in seen.items())
    return out
