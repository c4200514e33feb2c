"""The wheel cache: one folder per build, written complete or not at all.

An entry is written under a temporary name (``.tmp-…``) and renamed into place only when every
wheel is copied, so a reader sees a whole entry or none; a copy that fails removes its temporary
folder, and temporary folders that a killed run left behind are swept once they are an hour old.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from .errors import UserError

#: a temporary folder older than this belongs to a run that died mid-copy
STALE_TMP_S = 3600


class CacheError(UserError):
    """The cache could not be written (full disk, unreadable build output)."""


class WheelCache:
    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)

    def entry(self, key: str) -> Path:
        return self.root / key

    def get(self, key: str) -> list[Path]:
        d = self.entry(key)
        return sorted(d.glob("*.whl")) if d.is_dir() else []

    def put(self, key: str, wheels: list[Path]) -> list[Path]:
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
            final = self.entry(key)
            if final.exists():  # a build under the same identity that is no longer wanted
                shutil.rmtree(final)
            os.replace(tmp, final)
        except (OSError, shutil.Error) as e:
            shutil.rmtree(tmp, ignore_errors=True)
            raise CacheError(f"cannot copy the build's wheels into the cache {self.root} ({e})",
                             "free space there, or pass another --cache-dir") from e
        return self.get(key)

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
