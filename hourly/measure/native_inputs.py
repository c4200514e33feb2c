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


def tree_changes(repo: GitRepo, steps: list[tuple[str, str]]) -> dict[str, list[tuple[str, str | None]]]:
    """For each (old, new) commit of ``steps``: the files that differ from ``old``'s tree to
    ``new``'s, as (path, new object hash, None where removed). ONE ``git diff-tree -r --stdin``
    for all of them (nothing checked out; renames are a removal and an addition). Keyed by ``new``."""
    if not steps:
        return {}
    text = "".join(f"{new} {old}\n" for old, new in steps)  # a commit, then the parent to compare it with
    out = proc.run(["git", "diff-tree", "-r", "-z", "--no-renames", "--no-ext-diff", "--stdin"], cwd=repo.path,
                   timeout=600, input=text).output
    changes: dict[str, list[tuple[str, str | None]]] = {new: [] for _, new in steps}
    fields = out.split("\0")
    current: list[tuple[str, str | None]] | None = None
    i = 0
    while i < len(fields):
        f = fields[i]
        if f.startswith(":"):  # ":old_mode new_mode old_obj new_obj status", then the path
            meta = f[1:].split()
            path = fields[i + 1] if i + 1 < len(fields) else ""
            if current is not None and len(meta) == 5:
                current.append((path, None if meta[4].startswith("D") else meta[3]))
            i += 2
            continue
        if f.strip() in changes:  # the header of one input line's diff: its commit
            current = changes[f.strip()]
        i += 1
    return changes


class NativeKeys:
    """The native key of JAX commits, each computed once.

    :meth:`prefetch` computes the keys of many commits with two git processes in all — the whole tree
    of the first (``git ls-tree -r``) and the changes from each to the next (one ``git diff-tree
    --stdin``) — instead of one ``ls-tree`` per commit; the key of each is the same
    :func:`native_digest` of its whole tree."""

    def __init__(self, repo: GitRepo, patterns: Iterable[str] = DEFAULT_NATIVE_INPUTS):
        self.repo = repo
        self.patterns = list(patterns)
        self._keys: dict[str, str] = {}
        self.processes = 0  # git processes run for the keys (benchmarks and tests read it)

    def __call__(self, sha: str) -> str:
        if sha not in self._keys:
            self.processes += 1
            self._keys[sha] = native_digest(tree_entries(self.repo, sha), self.patterns)
        return self._keys[sha]

    def prefetch(self, shas: Iterable[str]) -> None:
        """Compute the keys of ``shas`` (full SHAs of commits) not known yet, in two git processes."""
        todo = list(dict.fromkeys(s for s in shas if s not in self._keys))
        if not todo:
            return
        first, rest = todo[0], todo[1:]
        native = {p: o for p, o in tree_entries(self.repo, first) if self._native(p)}
        self._keys[first] = _digest(native)
        self.processes += 1
        if not rest:
            return
        steps = list(zip(todo[:-1], rest, strict=True))
        changes = tree_changes(self.repo, steps)
        self.processes += 1
        for _, new in steps:
            for path, obj in changes[new]:
                if not self._native(path):
                    continue
                if obj is None:
                    native.pop(path, None)
                else:
                    native[path] = obj
            self._keys[new] = _digest(native)

    def _native(self, path: str) -> bool:
        return is_native_path(path, self.patterns)


def _digest(native: dict[str, str]) -> str:
    """:func:`native_digest` of a tree's native entries, given as {path: object hash}."""
    h = hashlib.sha256()
    for path, obj in sorted(native.items()):
        h.update(f"{path}\0{obj}\n".encode())
    return h.hexdigest()[:20]
