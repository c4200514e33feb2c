"""The wheel cache: one folder per build, keyed by the build's identity, written whole or not at all.

A build's identity is the (xla, jax) pair plus how it was built: the build command, the build's
environment (``--env`` and the variables of hourly's own environment that change what a build makes:
``TF_*``, ``XLA_*``, ``BAZEL*``, ``CUDA*``, compilers and their flags …) and the ABI and platform of
the Python that gets the wheels. Change any of them and the pair is built again; the same identity
from another workdir (another scenario on the same pairs) reuses the wheels. The cache lives in
``--cache-dir`` (default ``$HOURLY_CACHE_DIR``, else ``$XDG_CACHE_HOME/hourly``, else
``~/.cache/hourly``), shared by every workdir, and is bounded by ``--cache-size``: past it, the
least recently used entries are removed (as asv does).

An entry is written under a temporary name (``.tmp-…``) and renamed into place only when every
wheel is copied, so a reader sees a whole entry or none; a copy that fails removes its temporary
folder, and temporary folders that a killed run left behind are swept once they are an hour old.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from hourly.adapters import proc
from hourly.errors import UserError, path_fault
from hourly.text.privacy import redact_env

#: a temporary folder older than this belongs to a run that died mid-copy
STALE_TMP_S = 3600


DEFAULT_CACHE_SIZE = "50G"
#: variables of hourly's own environment that change what a build makes
BUILD_ENV_NAMES = ("CC", "CXX", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS")
BUILD_ENV_PREFIXES = ("TF_", "XLA_", "BAZEL", "CUDA", "CUDNN", "NCCL_", "NVCC", "ROCM", "HIP_", "HERMETIC_",
                      "CLANG", "JAXLIB_", "JAX_BUILD", "JAX_CUDA")
#: ... less those that only set log verbosity (importing jax sets TF_CPP_MIN_LOG_LEVEL in its own
#: process): a run from a Python that imported jax would otherwise key its builds apart
BUILD_ENV_IGNORED = ("TF_CPP_",)

_ABI = ("import sys, sysconfig; print(sys.implementation.cache_tag, sysconfig.get_platform(),"
        " sysconfig.get_config_var('SOABI') or '')")


def default_cache_dir() -> Path:
    if os.environ.get("HOURLY_CACHE_DIR"):
        return Path(os.environ["HOURLY_CACHE_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "hourly"


def parse_size(text: str | int | None) -> int | None:
    """``50G``, ``500M``, ``2T``, a number of bytes; ``0``/``none``/``unlimited``: no bound."""
    if text is None:
        return None
    if isinstance(text, int):
        return text or None
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*", str(text), re.IGNORECASE)
    if str(text).strip().lower() in ("none", "unlimited", ""):
        return None
    if not m:
        raise UserError(f"--cache-size {text!r} is not a size", "write it like 50G, 500M or 0 for no bound")
    n = float(m[1]) * 1024 ** "_KMGT".index(m[2].upper() or "_")
    return int(n) or None


@functools.lru_cache(maxsize=None)
def python_abi(python: str) -> str:
    """The ABI and platform the wheels are built for, as the receiving Python reports them (this
    process itself when the receiving Python is the one running hourly: no process to start)."""
    if python and os.path.abspath(python) == os.path.abspath(sys.executable):
        import sysconfig
        return f"{sys.implementation.cache_tag} {sysconfig.get_platform()} {sysconfig.get_config_var('SOABI') or ''}".strip()
    try:
        res = proc.run([python, "-c", _ABI], check=False, timeout=60)
    except UserError:
        return f"unknown ({python})"
    return res.output.strip() if res.ok and res.output.strip() else f"unknown ({python})"


def build_identity(cmd: list[str], env: dict[str, str], python: str, picks: list[str] | None = None) -> dict:
    """How a build is made, less the pair (see the module's text; ``picks``: ``--cherry-pick``)."""
    seen = {k: v for k, v in os.environ.items()
            if (k in BUILD_ENV_NAMES or k.startswith(BUILD_ENV_PREFIXES)) and not k.startswith(BUILD_ENV_IGNORED)}
    seen.update(env)
    ident = {"cmd": [str(c) for c in cmd], "env": sorted(seen.items()), "python_abi": python_abi(python)}
    if picks:
        ident["cherry_pick"] = sorted(picks)
    return ident


def entry_key(pair_key: str, xla: str, jax: str, identity: dict) -> str:
    digest = hashlib.sha256(json.dumps({"xla": xla, "jax": jax, **identity}, sort_keys=True).encode())
    return f"{pair_key}-{digest.hexdigest()[:12]}"


def public_identity(identity: dict) -> dict:
    """The identity with secret-looking values left out, for files others may read."""
    return {**identity, "env": sorted(redact_env(dict(identity["env"])).items())}


class CacheError(UserError):
    """The cache could not be written (full disk, unreadable build output)."""


class WheelCache:
    """``<cache-dir>/wheels/<entry>/``: the wheels and ``meta.json`` (pair, identity, time)."""

    def __init__(self, root: str | os.PathLike, max_bytes: int | None = None):
        self.root = Path(root)
        self.max_bytes = max_bytes

    def make(self) -> None:
        """Make the cache's folders (its entries' and their locks'), or stop with one line naming the
        cache and why not (a regular file in the way, no permission, a full disk)."""
        for d in (self.root, self.root.parent / "locks"):
            try:
                d.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                fault = path_fault(e, "the wheel cache", self.root.parent, "--cache-dir")
                raise CacheError(fault.message, fault.fix) from e

    def entry(self, key: str) -> Path:
        return self.root / key

    def get(self, key: str, touch: bool = False) -> list[Path]:
        d = self.entry(key)
        wheels = sorted(d.glob("*.whl")) if d.is_dir() else []
        if wheels and touch:  # least recently used is evicted first
            try:
                os.utime(d)
            except OSError:
                pass
        return wheels

    def put(self, key: str, wheels: list[Path], meta: dict | None = None) -> list[Path]:
        """Copy ``wheels`` into the entry ``key``: whole, or not at all."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            self.sweep()
            tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=self.root))
        except OSError as e:
            raise CacheError(f"cannot write the wheel cache {self.root} ({e})",
                             "free space there, or pass another --cache-dir") from e
        try:
            for w in wheels:
                shutil.copy2(w, tmp / w.name)
            (tmp / "meta.json").write_text(json.dumps({**(meta or {}), "created": time.time()}, indent=1))
            final = self.entry(key)
            if self.get(key):  # another run (sharing the cache) wrote this identity meanwhile: keep it
                shutil.rmtree(tmp, ignore_errors=True)
                return self.get(key)
            if final.exists():  # an entry without wheels is no entry
                shutil.rmtree(final)
            try:
                os.replace(tmp, final)
            except OSError:
                if not self.get(key):
                    raise
                shutil.rmtree(tmp, ignore_errors=True)  # lost the race to an equal build: theirs stays
        except (OSError, shutil.Error) as e:
            shutil.rmtree(tmp, ignore_errors=True)
            if getattr(e, "errno", None) in (errno.ENOSPC, errno.EDQUOT):
                fault = path_fault(e, "the wheel cache", self.root.parent, "--cache-dir")
                raise CacheError(fault.message, fault.fix) from e
            raise CacheError(f"cannot copy the build's wheels into the cache {self.root} ({e})",
                             "free space there, or pass another --cache-dir") from e
        self.evict(keep=key)
        return self.get(key)

    def entries(self) -> list[tuple[float, int, Path]]:
        """(last use, bytes, folder) of every whole entry, least recently used first."""
        out = []
        for d in self.root.iterdir() if self.root.is_dir() else []:
            if d.name.startswith(".tmp-") or not d.is_dir():
                continue
            try:
                size = sum(f.stat().st_size for f in d.iterdir() if f.is_file())
                out.append((d.stat().st_mtime, size, d))
            except OSError:
                continue
        return sorted(out)

    def evict(self, keep: str | None = None) -> list[Path]:
        """Remove least recently used entries until the cache fits ``max_bytes``."""
        if not self.max_bytes:
            return []
        entries = self.entries()
        total = sum(size for _, size, _ in entries)
        removed = []
        for _, size, d in entries:
            if total <= self.max_bytes:
                break
            if d.name == keep:
                continue
            shutil.rmtree(d, ignore_errors=True)
            total -= size
            removed.append(d)
        return removed

    def sweep(self) -> None:
        """Remove temporary folders of runs that died while copying."""
        now = time.time()
        for d in self.root.glob(".tmp-*"):
            try:
                if now - d.stat().st_mtime > STALE_TMP_S:
                    shutil.rmtree(d, ignore_errors=True)
            except OSError:
                pass


def snapshot(folder: Path) -> dict[str, tuple[int, int, int]]:
    """What wheels a folder holds now: name → (inode, size, mtime)."""
    out = {}
    for p in folder.glob("*.whl") if folder.is_dir() else []:
        try:
            st = p.lstat()
        except OSError:
            continue
        out[p.name] = (st.st_ino, st.st_size, st.st_mtime_ns)
    return out


def produced(folder: Path, before: dict[str, tuple[int, int, int]]) -> list[Path]:
    """The wheels that appeared in ``folder`` (or were rewritten) since ``before`` was taken."""
    after = snapshot(folder)
    return sorted(folder / name for name, sig in after.items() if before.get(name) != sig)
