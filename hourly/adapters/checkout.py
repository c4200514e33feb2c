"""A checkout and its working tree: the repository opened (GitPython validates it), git run in it,
and what hourly does to the files checked out — where HEAD stands, the user's changes stashed and
given back, a commit checked out and the tree put back, untracked files listed and cleaned.

:class:`hourly.adapters.gitrepo.GitRepo` is a :class:`Checkout` that also reads the history.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from hourly.adapters import proc
from hourly.errors import ProcessError, UserError

#: Python's bytecode, as ``git ls-files --exclude`` patterns
BYTECODE = ("__pycache__/", "*.pyc")


@dataclass(frozen=True)
class HeadState:
    """Where a working tree stood: a branch name (or None when detached) and the commit."""

    branch: str | None
    sha: str


class Checkout:
    """A git checkout with a working tree (never a bare repository): git commands run in it through
    :func:`hourly.adapters.proc.run`, and the working tree's state changed and put back."""

    def __init__(self, path: str | os.PathLike, name: str):
        self.name = name
        self.path = Path(path).expanduser().absolute()
        if not self.path.exists():
            raise UserError(f"{name} repository {self.path} does not exist",
                            f"pass --{name}-repo with the path of your {name} checkout")
        import git  # GitPython only where a repository is opened
        try:
            self.repo = git.Repo(self.path)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError) as e:
            raise UserError(f"{self.path} is not a git repository",
                            f"pass --{name}-repo with the path of your {name} checkout") from e
        if self.repo.bare:
            raise UserError(f"{self.path} is a bare repository", "pass a checkout with a working tree")

    # -- raw access -------------------------------------------------------------------------
    def git(self, *args: str, timeout: float | None = None, env: dict[str, str] | None = None) -> str:
        """Run git here; ``env`` adds variables to this process's environment."""
        return proc.run(["git", *args], cwd=self.path, timeout=timeout,
                        env={**os.environ, **env} if env else None).output

    @property
    def git_dir(self) -> Path:
        return Path(self.repo.git_dir)

    # -- the working tree -------------------------------------------------------------------
    def head_state(self) -> HeadState:
        sha = self.git("rev-parse", "HEAD").strip()
        try:
            branch = self.git("symbolic-ref", "--quiet", "--short", "HEAD").strip() or None
        except ProcessError:
            branch = None
        return HeadState(branch, sha)

    def dirty_files(self) -> list[str]:
        """Tracked files with changes (untracked build outputs do not count)."""
        out = self.git("status", "--porcelain", "--untracked-files=no")
        return [line[3:] for line in out.splitlines() if line.strip()]

    def untracked_files(self, keep: list[str] | None = None) -> list[str]:
        """Untracked files that are not ignored (folders as one entry), but those under ``keep``
        (paths relative to the tree) and Python's bytecode (:data:`BYTECODE`: derived, never a change)."""
        out = self.git("ls-files", "--others", "--exclude-standard", *[f"--exclude={b}" for b in BYTECODE],
                       "--directory", "--no-empty-directory", "-z", "--", ".",
                       *[f":(top,literal,exclude){k}" for k in keep or []])
        return [p for p in out.split("\0") if p]

    def clean(self, keep: list[str] | None = None) -> None:
        """Remove every untracked and ignored file (nested repositories too: ``git clean -ffdx``)
        but those under ``keep`` (paths relative to the tree)."""
        self.git("clean", "-ffdxq", *_excludes(keep))

    def remove_bytecode(self, keep: list[str] | None = None) -> None:
        """Remove the untracked ``*.pyc`` files (but those under ``keep``): Python checks a ``.pyc``
        only against its source's mtime, in whole seconds, and size, and a checkout rewrites the
        sources in place, so the bytecode of the commit before could pass for this one's."""
        self.git("clean", "-ffxq", *_excludes(keep), "--", "*.pyc")

    def checkout(self, sha: str) -> None:
        """Detached, forced: edits the builds made to tracked files never block the next checkout."""
        self.git("checkout", "--quiet", "--force", "--detach", sha)

    def restore(self, state: HeadState) -> None:
        if state.branch:
            self.git("checkout", "--quiet", "--force", state.branch)
        else:
            self.checkout(state.sha)

    def stash(self, message: str, untracked: bool = False, keep: list[str] | None = None) -> str | None:
        """Stash the user's tracked changes (and, with ``untracked``, their untracked files but
        those under ``keep``); returns the stash commit or None if nothing.

        A kept place is excluded from the stash only where it holds untracked files the stash
        would take: git (2.39) refuses an exclude pathspec naming an ignored folder (a JAX tree
        ignores ``dist/``, the default wheel folder), and ``--include-untracked`` never takes
        ignored files anyway. Should git fail all the same, the index is put back as it was (git
        fails after it staged the untracked files) and the error is one line naming the tree."""
        before = self._stash_top()
        excluded = [k for k in keep or [] if self._untracked_under(k)] if untracked else []
        more = ["--include-untracked", "--", ":/", *[f":(top,literal,exclude){k}" for k in excluded]] if untracked else []
        index = self._index_tree()
        try:
            # a stash is a commit: never fail for want of a configured identity
            self.git("-c", "user.name=hourly", "-c", "user.email=hourly@localhost",
                     "stash", "push", "--quiet", "--message", message, *more)
        except ProcessError as e:
            if index is not None:
                self.git("read-tree", index)  # the index as it was; the files are where git left them
            made = self._stash_top()
            kept = f"; the stash git made meanwhile is kept ({made[:12]}, `git stash list`)" if made and made != before else ""
            lock = self.git_dir / "index.lock"
            why, fix = _first_error(e.tail), "commit or stash them yourself, then run again"
            if lock.exists():  # git says nothing then
                why = f"{lock} exists: another git is running there, or one was killed"
                fix = f"wait for that git, or remove {lock} if none runs, then run again"
            raise UserError(f"git could not stash the changes in {self.name} tree {self.path} ({why}); "
                            f"the index is as it was{kept}", fix) from e
        after = self._stash_top()
        return after if after != before else None

    def _untracked_under(self, path: str) -> bool:
        """Whether ``path`` (relative to the tree) holds untracked files that are not ignored."""
        return bool(self.git("ls-files", "--others", "--exclude-standard", "-z", "--", f":(top,literal){path}"))

    def _index_tree(self) -> str | None:
        """The index as a tree (to put it back), or None when it cannot be written (a merge conflict)."""
        try:
            return self.git("write-tree").strip() or None
        except ProcessError:
            return None

    def unstash(self, stash_sha: str) -> None:
        """Give the stashed changes back, what was staged staged again (else, when git cannot
        restore the index, the changes alone)."""
        try:
            self.git("stash", "apply", "--quiet", "--index", stash_sha)
        except ProcessError:
            self.git("stash", "apply", "--quiet", stash_sha)
        out = self.git("stash", "list", "--format=%H")
        for i, sha in enumerate(out.split()):
            if sha == stash_sha:
                self.git("stash", "drop", "--quiet", f"stash@{{{i}}}")
                break

    def _stash_top(self) -> str | None:
        try:
            return self.git("rev-parse", "--verify", "--quiet", "refs/stash").strip() or None
        except ProcessError:
            return None


def _first_error(output: str) -> str:
    """The line of git's output that says what failed (not its hints)."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip() and not ln.startswith("hint:")]
    return next((ln for ln in lines if ln.lower().startswith(("fatal", "error"))), lines[0] if lines else "no output")


def _excludes(keep: list[str] | None) -> list[str]:
    """``git clean`` options that keep ``keep`` (paths relative to the tree)."""
    out = []
    for k in keep or []:
        out += ["-e", "/" + _escape_pattern(k.rstrip("/"))]
    return out


def _escape_pattern(path: str) -> str:
    """``path`` as a gitignore pattern that matches it literally."""
    return "".join("\\" + c if c in "\\*?[]!# " else c for c in path)
