"""The narrow git adapter: everything hourly asks of a repository.

GitPython validates the checkout (is it a repository, is it bare, where is its git dir); every git
command, bulk history walks included (one process per walk), runs through :func:`hourly.adapters.proc.run`
like every other process: the same time-outs, process-group kill and
:class:`~hourly.errors.ProcessError` (command, exit code, output tail).

Opening the checkout, running git in it and changing its working tree are
:class:`hourly.adapters.checkout.Checkout`'s; :class:`GitRepo` adds what is read from the history
(refs, first-parent walks, commits, files at a commit), the repository's worktrees and
``remote update``.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from tenacity import RetryCallState, retry, retry_if_exception, stop_after_attempt, wait_exponential

from hourly.adapters import proc
from hourly.adapters.checkout import Checkout, HeadState
from hourly.errors import ProcessError, UserError
from hourly.model import COMMIT_URLS

__all__ = ["COMMIT_URLS", "CommitInfo", "GitRepo", "HeadState", "transient_git_failure"]


_SEP = "\x1f"


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    committer_time: int  # unix seconds
    author: str
    subject: str

    @property
    def short(self) -> str:
        return self.sha[:12]


#: What git prints when the network, not the request, failed: worth another try after a pause.
_TRANSIENT = re.compile(r"connection reset|timed out|timeout|early eof|rpc failed|remote end hung up|"
                        r"returned error: 5\d\d|http 5\d\d|connection refused|resource temporarily unavailable",
                        re.IGNORECASE)
#: What no retry can fix: a wrong name or path, missing rights, or no network at all (a host that does
#: not resolve means the user is offline or the name is wrong; retrying only makes them wait).
_PERMANENT = re.compile(r"does not appear to be a git repository|repository not found|not found|"
                        r"authentication failed|permission denied|access denied|could not read username|"
                        r"could not read password|terminal prompts disabled|returned error: 4\d\d|"
                        r"could not resolve host|name resolution|network is unreachable|no such remote|no such file",
                        re.IGNORECASE)


def transient_git_failure(output: str) -> bool:
    """Whether a failed git network command's output shows a transient failure (a reset, time-out,
    5xx, cut stream): only those are retried. Anything else, including what we do not recognise,
    fails at once."""
    return bool(_TRANSIENT.search(output)) and not _PERMANENT.search(output)


def _transient(exc: BaseException) -> bool:
    # our own time-out (10 minutes) is not retried: another 30 minutes of waiting is worse than
    # one line that names --no-sync
    return isinstance(exc, ProcessError) and not exc.timed_out and transient_git_failure(exc.tail)


#: seconds before the second ``git remote update`` after a transient failure, then twice as long
#: each time (at most 20); ``HOURLY_SYNC_RETRY_WAIT`` sets it (tests: 0, at once)
SYNC_RETRY_WAIT_S = 0.5


def _sync_retry_wait(state: RetryCallState) -> float:
    first = float(os.environ.get("HOURLY_SYNC_RETRY_WAIT", SYNC_RETRY_WAIT_S))
    return wait_exponential(multiplier=first, max=20)(state)


class GitRepo(Checkout):
    """A checkout (:class:`~hourly.adapters.checkout.Checkout`) and everything hourly reads from its
    history."""

    # -- queries ----------------------------------------------------------------------------
    def rev_parse(self, ref: str) -> str:
        try:
            return self.git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip()
        except ProcessError as e:
            raise UserError(f"unknown ref {ref!r} in {self.name} repository {self.path}",
                            self._ref_fix(ref)) from e

    def _ref_fix(self, ref: str) -> str:
        """What to pass instead of a ref that does not exist: the branch the remote's HEAD points to
        (a clone whose default branch is master has no origin/main), or the remote's branches here."""
        own = f"--{self.name}-ref"
        remote = ref.split("/", 1)[0] if "/" in ref else None
        if remote:
            try:
                head = self.git("symbolic-ref", "--quiet", "--short", f"refs/remotes/{remote}/HEAD").strip()
            except ProcessError:
                head = ""
            if head and head != ref:
                return (f"{remote}/HEAD points to {head}: pass {own} {head} (this repository's own ref), "
                        f"or --ref {head} for both repositories")
            try:
                names = self.git("for-each-ref", "--format=%(refname:short)", f"refs/remotes/{remote}").split()
            except ProcessError:
                names = []
            names = [n for n in names if n != f"{remote}/HEAD" and n != remote]
            if names:
                shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
                return (f"the branches {remote} has here: {shown}; pass {own} with one of them (this repository's own "
                        "ref), or run `git remote update` there if it is new")
        return (f"run `git remote update` there, or pass --ref (or {own}, this repository's own) with a ref "
                "that exists")

    def resolve_sha(self, prefix: str) -> str:
        """A full SHA from a (possibly abbreviated) one."""
        return self.rev_parse(prefix)

    def history(self, ref: str, first_parent: bool = True, newest: int | None = None,
                oldest: int | None = None) -> list[tuple[str, int]]:
        """(sha, committer time) in the order ``git rev-list`` walks them from ``ref``.

        With a window of instants ``[oldest, newest]`` (unix seconds), only the part of the walk that
        decides ``git rev-list -1 --before=T`` for every T of the window (the window walk of
        :func:`hourly.analysis.timeline.window_walk`, where the proof is): git leaves out the commits dated after
        ``newest`` (``--before``), and the reading stops at the first commit dated at or before
        ``oldest`` — git's walk is ended there, the rest of the history is never read."""
        args = ["rev-list", "--timestamp"] + (["--first-parent"] if first_parent else [])
        if newest is not None:
            args.append(f"--before=@{newest}")
        args += [ref, "--"]
        if oldest is None:
            out = self.git(*args)
        else:
            bottom = oldest

            def reached(line: str) -> bool:
                parts = line.split()
                return len(parts) == 2 and parts[0].isdigit() and int(parts[0]) <= bottom

            out = proc.run_until(["git", *args], reached, cwd=self.path).output
        walk = []
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0].isdigit():  # stderr (a warning) shares the output
                walk.append((parts[1], int(parts[0])))
        return walk

    def is_ancestor(self, old: str, new: str) -> bool:
        """``old`` is ``new`` or one of its ancestors."""
        return proc.run(["git", "-C", str(self.path), "merge-base", "--is-ancestor", old, new], check=False).ok

    def merge_base(self, a: str, b: str) -> str | None:
        """The best common ancestor of ``a`` and ``b``; None when they share no history."""
        res = proc.run(["git", "-C", str(self.path), "merge-base", a, b], check=False)
        words = res.output.split() if res.ok else []
        return words[0] if words else None

    def refs_containing(self, sha: str) -> list[str]:
        """Short names of the branches (remote ones first) whose history holds ``sha``."""
        out = self.git("for-each-ref", "--contains", sha, "--format=%(refname:short)", "refs/remotes", "refs/heads")
        return [r for r in out.split() if not r.endswith("/HEAD")]

    def is_shallow(self) -> bool:
        """A shallow clone: its history stops at a cut-off (``git fetch --unshallow`` fetches the rest)."""
        return self.git("rev-parse", "--is-shallow-repository").strip() == "true"

    def commits(self, shas: list[str]) -> dict[str, CommitInfo]:
        """Metadata of the given commits, in one git process."""
        if not shas:
            return {}
        out = self.git("show", "-s", "--no-walk=unsorted", f"--format=%H{_SEP}%ct{_SEP}%an{_SEP}%s", *shas)
        return {c.sha: c for c in map(_parse_commit, out.splitlines()) if c}

    def log(self, old: str, new: str, first_parent: bool = True) -> list[CommitInfo]:
        """Commits in ``old..new`` (newest first), first-parent by default."""
        args = ["log", f"--format=%H{_SEP}%ct{_SEP}%an{_SEP}%s"] + (["--first-parent"] if first_parent else [])
        out = self.git(*args, f"{old}..{new}", "--")
        return [c for c in map(_parse_commit, out.splitlines()) if c]

    def merges(self, old: str, new: str) -> list[str]:
        """The merge commits among the first-parent commits of ``old..new``, in one git process."""
        return self.git("rev-list", "--first-parent", "--merges", f"{old}..{new}", "--").split()

    def merged_by(self, sha: str) -> list[CommitInfo]:
        """The commits a merge commit brought (its pull request's, newest first); [] for a non-merge."""
        parents = self.git("rev-list", "--parents", "-n", "1", sha).split()[1:]
        if len(parents) < 2:
            return []
        return [c for c in self.log(parents[0], sha, first_parent=False) if c.sha != sha]

    def tag(self, name: str) -> CommitInfo | None:
        """The commit a tag points at, or None when the checkout lacks the tag."""
        try:
            sha = self.git("rev-parse", "--verify", "--quiet", f"refs/tags/{name}^{{commit}}").strip()
        except ProcessError:
            return None
        return self.commits([sha]).get(sha) if sha else None

    def count(self, old: str, new: str) -> int:
        """How many commits ``old..new`` holds (all parents, as ``git rev-list --count``)."""
        return int(self.git("rev-list", "--count", f"{old}..{new}", "--").strip())

    def files_at(self, wanted: list[tuple[str, str]]) -> dict[tuple[str, str], str | None]:
        """The text of each ``(ref, path)`` (None where it is not there), in ONE ``git cat-file --batch``."""
        if not wanted:
            return {}
        out = proc.run(["git", "cat-file", "--batch"], cwd=self.path, timeout=600,
                       input="".join(f"{ref}:{path}\n" for ref, path in wanted)).output.encode()
        got: dict[tuple[str, str], str | None] = {}
        at = 0
        for key in wanted:
            end = out.index(b"\n", at)
            head = out[at:end].split()
            at = end + 1
            if len(head) == 3 and head[2].isdigit():  # "<object> <type> <size>", the contents, a newline
                size = int(head[2])
                got[key] = out[at:at + size].decode(errors="replace") if head[1] == b"blob" else None
                at += size + 1
            else:  # "<name> missing" / "ambiguous"
                got[key] = None
        return got

    def commits_of(self, revs: list[str]) -> dict[str, str | None]:
        """Each revision's full commit sha (None where this checkout lacks it), in ONE
        ``git cat-file --batch-check``."""
        if not revs:
            return {}
        out = proc.run(["git", "cat-file", "--batch-check"], cwd=self.path, timeout=600,
                       input="".join(f"{r}^{{commit}}\n" for r in revs)).output.splitlines()
        got: dict[str, str | None] = {}
        for rev, line in zip(revs, out, strict=False):
            words = line.split()
            got[rev] = words[0] if len(words) == 3 and words[1] == "commit" else None
        return got

    def file_at(self, ref: str, path: str) -> str | None:
        """A file's text at ``ref``; None when it is not there."""
        try:
            return self.git("show", f"{ref}:{path}")
        except ProcessError:
            return None

    # -- changes ----------------------------------------------------------------------------
    @retry(retry=retry_if_exception(_transient), stop=stop_after_attempt(4),
           wait=_sync_retry_wait, reraise=True)
    def remote_update(self) -> None:
        """``git remote update``; transient network failures are retried, anything else raises at once."""
        # English messages (transient_git_failure reads them); a remote that wants credentials fails
        # instead of prompting
        self.git("remote", "update", timeout=600, env={"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "LANGUAGE": "C"})

    def add_worktree(self, path: Path, sha: str) -> "GitRepo":
        """A detached worktree of ``sha`` at ``path`` (one a killed job left there is replaced).

        Jobs on several nodes change the repository's worktree list at once: a waiting lock in its
        common git directory takes them one at a time."""
        from hourly.adapters.locks import WaitLock
        with WaitLock(Path(self.repo.common_dir) / "hourly-worktrees.lock"):
            if path.exists():
                shutil.rmtree(path, ignore_errors=True)
            self.git("worktree", "prune")
            self.git("worktree", "add", "--quiet", "--force", "--detach", str(path), sha)
        return GitRepo(path, self.name)

    def remove_worktree(self, path: Path) -> None:
        from hourly.adapters.locks import WaitLock
        with WaitLock(Path(self.repo.common_dir) / "hourly-worktrees.lock"):
            shutil.rmtree(path, ignore_errors=True)
            self.git("worktree", "prune")


def _parse_commit(line: str) -> CommitInfo | None:
    parts = line.split(_SEP)
    if len(parts) != 4:
        return None
    return CommitInfo(parts[0], int(parts[1]), parts[2], parts[3])
