"""What a jaxlib build depends on: the XLA commit and JAX's *native inputs*.

A state's jaxlib (and its plugins) is made from XLA and from the parts of the JAX tree that Bazel
reads; the pure-Python ``jax`` package is made from the rest. Two states with the same XLA commit
and the same native inputs share one jaxlib build, however many Python commits of JAX lie between
them (in June–October 2023, 915 of JAX's 1,282 first-parent commits changed no native input).

The native inputs are given as patterns (``--native-input``, ``native_inputs`` in hourly.toml),
matched against every path of the JAX commit's tree:

- ``dir/`` — everything under that directory at the top of the tree (``jaxlib/``);
- a pattern without ``/`` — every file of that name anywhere (``BUILD``, ``*.bzl``, ``WORKSPACE``);
- any other pattern — that path from the top of the tree (``build/build.py``), globs allowed.

The native key of a commit hashes the git object hash of every matching file, which is the same
as hashing the git tree hashes of the matching directories and files: it changes exactly when a
native input changes, and nothing is checked out to compute it.
"""

from __future__ import annotations

import hashlib
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Iterable

from hourly.adapters import proc

if TYPE_CHECKING:
    from hourly.adapters.gitrepo import GitRepo

#: JAX's native inputs in 2023's layout (see the module's text for the pattern rules)
DEFAULT_NATIVE_INPUTS = ["jaxlib/", "third_party/", "build/", "WORKSPACE", ".bazelrc", ".bazelversion",
                         "BUILD", "BUILD.bazel", "*.bzl"]


def is_native_path(path: str, patterns: Iterable[str] = DEFAULT_NATIVE_INPUTS) -> bool:
    """Whether a path of the JAX tree is a native input under ``patterns``."""
    name = path.rsplit("/", 1)[-1]
    for pat in patterns:
        if pat.endswith("/"):
            if path.startswith(pat):
                return True
        elif "/" not in pat:
            if fnmatchcase(name, pat):
                return True
        elif fnmatchcase(path, pat.lstrip("/")):
            return True
    return False


def native_digest(entries: Iterable[tuple[str, str]], patterns: Iterable[str] = DEFAULT_NATIVE_INPUTS) -> str:
    """The native key of a tree given as (path, object hash) entries."""
    patterns = list(patterns)
    h = hashlib.sha256()
    for path, obj in sorted(e for e in entries if is_native_path(e[0], patterns)):
        h.update(f"{path}\0{obj}\n".encode())
    return h.hexdigest()[:20]


def tree_entries(repo: GitRepo, sha: str) -> list[tuple[str, str]]:
    """(path, blob hash) of every file of a commit (``git ls-tree -r``; nothing checked out)."""
    out = proc.run(["git", "ls-tree", "-r", "-z", sha], cwd=repo.path, timeout=120).output
    entries = []
    for rec in out.split("\0"):
        if "\t" in rec:
            meta, path = rec.split("\t", 1)
            parts = meta.split()
            if len(parts) == 3:
                entries.append((path, parts[2]))
    return entries


class NativeKeys:
    """The native key of JAX commits, each computed once."""

    def __init__(self, repo: GitRepo, patterns: Iterable[str] = DEFAULT_NATIVE_INPUTS):
        self.repo = repo
        self.patterns = list(patterns)
        self._keys: dict[str, str] = {}

    def __call__(self, sha: str) -> str:
        if sha not in self._keys:
            self._keys[sha] = native_digest(tree_entries(self.repo, sha), self.patterns)
        return self._keys[sha]
