"""Ends off the ref's first-parent history: which commands bisect them instead.

A ``--good``/``--bad`` of the form ``jax@<sha>`` names a state of the walked history: the commit
at the tip of its repository's ref at its committer time. A commit that is not on that
first-parent history never stood there. It is one of two things:

- a commit the ref holds through a merge (a pull request's own commit): the state is the merge's,
  or the pull request's own history (``--jax-ref`` of its branch);
- a commit of a branch that forked from the ref's history at a merge-base M and was not merged:
  its own first-parent history (``--jax-ref <branch>``: main up to M, then the branch's commits)
  bisects it; or main up to M with the branch's commits applied on every state
  (``--cherry-pick jax@<each>``), for a benchmark that needs the branch to run at all.

The refusal names both, as options of the same command (:func:`refusal`).
"""

from __future__ import annotations

from hourly.adapters.gitrepo import GitRepo
from hourly.errors import UserError


class OffHistory(UserError):
    """``repo@sha`` (an end, written ``given``) is not on the first-parent history of ``ref``."""

    def __init__(self, repo: str, sha: str, given: str, ref: str):
        self.repo, self.sha, self.given, self.ref = repo, sha, given, ref
        super().__init__(f"{given} is not on the first-parent history of {ref}",
                         "pass a commit of the ref's first-parent history (the merge commit of a pull request), or a time")


def _short(sha: str) -> str:
    return sha[:12]


def fork_point(repo: GitRepo, walk: list[tuple[str, int]], base: str) -> tuple[str, int] | None:
    """The earliest commit of the first-parent ``walk`` (newest first) that holds ``base``: ``base``
    itself when it is on the walk, else the merge that brought it in. Ancestry along a first-parent
    chain is monotonic, so a binary search asks git log2(n) times."""
    oldest_first = walk[::-1]
    lo, hi = 0, len(oldest_first)
    while lo < hi:
        mid = (lo + hi) // 2
        if repo.is_ancestor(base, oldest_first[mid][0]):
            hi = mid
        else:
            lo = mid + 1
    return oldest_first[lo] if lo < len(oldest_first) else None


def branch_of(repo: GitRepo, shas: list[str], ref: str) -> str | None:
    """A branch whose first-parent history holds every one of ``shas`` (remote branches first, a
    branch of ``ref``'s own remote before others); None when there is none."""
    remote = ref.split("/", 1)[0] + "/" if "/" in ref else ""
    names = [n for n in repo.refs_containing(shas[0]) if n != ref]
    names.sort(key=lambda n: (not (remote and n.startswith(remote)), n))
    for name in names[:20]:
        walk = {sha for sha, _ in repo.history(name)}
        if all(s in walk for s in shas):
            return name
    return None


def refusal(off: OffHistory, repo: GitRepo, walk: list[tuple[str, int]], other: int | str | None,
            as_flag: str, later: bool) -> UserError:
    """The one line that refuses ``off`` (given as ``as_flag``; ``later``: the later end of the
    window) and names the commands that bisect it: ``--{repo}-ref`` of its branch (the same command
    otherwise), and, when ``off`` is the later end and the other lies on the ref at or before the
    fork, the ref's window up to the fork with the branch's commits as ``--cherry-pick``.

    ``other``: the other end as a unix time, or its sha when it is off the history too (then the
    branch must hold both)."""
    flag = f"--{off.repo}-ref"
    base = repo.merge_base(off.sha, off.ref)
    held = [off.sha] + ([other] if isinstance(other, str) else [])
    branch = branch_of(repo, held, off.ref) or off.sha
    if base == off.sha:  # the ref holds it through a merge: a pull request's own commit
        merge = fork_point(repo, walk, off.sha)
        if merge is not None:
            return UserError(f"{off.given} is not on the first-parent history of {off.ref}: it came in with the "
                             f"merge {off.repo}@{_short(merge[0])}",
                             f"pass {as_flag} {off.repo}@{_short(merge[0])} (the state once it landed), or run the "
                             f"same command with {flag} {branch} to bisect the pull request's own commits")
    if base is None:
        return UserError(f"{off.given} shares no history with {off.ref}",
                         f"run the same command with {flag} {branch} to bisect its own first-parent history")
    fork = fork_point(repo, walk, base)
    where = f"forked from it at {off.repo}@{_short(fork[0])}" if fork else "forked from it"
    fix = f"run the same command with {flag} {branch} to bisect that branch's own first-parent history"
    if fork is not None and later and isinstance(other, int) and other <= fork[1]:
        picks = repo.git("rev-list", "--reverse", "--first-parent", f"{base}..{off.sha}").split()
        fix += (f"; or with {as_flag} {off.repo}@{_short(fork[0])} "
                + " ".join(f"--cherry-pick {off.repo}@{_short(p)}" for p in picks)
                + f" to bisect {off.ref} up to the fork with the branch's {len(picks)} commit"
                + ("s" if len(picks) != 1 else "") + " applied")
    return UserError(f"{off.given} is not on the first-parent history of {off.ref}: it lies on a branch {where}", fix)
