"""``--cherry-pick REPO@SHA``: a later fix applied on top of every probe where it applies.

A window whose middle does not build because of an unrelated break (fixed by a later commit)
bisects to a range of skips. With ``--cherry-pick xla@<fix>`` the fix's change (its diff against
its first parent) is applied on top of every state of that repository where it is not already an
ancestor and applies cleanly; such states build, and the bisection reaches the real culprit.

Whether a pick applies to a state is decided without touching the trees (the patch is checked
against the state's tree in a temporary index), the same check that precedes applying it after the
checkout, so the answer can say, per probe, what was applied. The requested picks are part of the
build's identity and of the benchmark's key: builds and measurements with picks never mix with
those without.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass

from hourly.adapters import proc
from hourly.adapters.gitrepo import GitRepo
from hourly.errors import ProcessError, UserError
from hourly.model import Named

_SPEC = re.compile(r"^(?P<repo>xla|jax)@(?P<sha>[0-9a-fA-F]{4,40})$")


class PickStatus(Named):
    APPLIED = "applied"            # applied on top of the state
    ANCESTOR = "ancestor"          # already in the state: nothing to apply
    DOES_NOT_APPLY = "does_not_apply"  # its patch does not apply cleanly: the state is built as it is


@dataclass(frozen=True)
class Pick:
    repo: str
    sha: str

    @property
    def spec(self) -> str:
        return f"{self.repo}@{self.sha}"


def parse(specs: list[str], repos: dict[str, GitRepo]) -> list[Pick]:
    picks = []
    for text in specs or []:
        m = _SPEC.match(text.strip())
        if not m:
            raise UserError(f"--cherry-pick {text!r} is not REPO@SHA", "write it like xla@1a2b3c4d (repo xla or jax)")
        if m["repo"] not in repos:  # --only jax: XLA stays the installed jaxlib, nothing of it is built
            raise UserError(f"--cherry-pick {text!r} names {m['repo']}, but no {m['repo']} tree is built here "
                            "(--only jax keeps the installed jaxlib)",
                            f"leave it out, or hunt both repositories (--only both) to build {m['repo']}")
        picks.append(Pick(m["repo"], repos[m["repo"]].resolve_sha(m["sha"])))
    return picks


def _patch(repo: GitRepo, sha: str) -> str:
    return repo.git("diff-tree", "-p", "--binary", "--full-index", f"{sha}^", sha)


def status(repo: GitRepo, base: str, pick: Pick) -> PickStatus:
    """What applying ``pick`` on top of ``base`` does, decided without touching the tree."""
    try:
        repo.git("merge-base", "--is-ancestor", pick.sha, base)
        return PickStatus.ANCESTOR
    except ProcessError:
        pass
    with tempfile.TemporaryDirectory(prefix="hourly-pick-") as d:
        env = dict(os.environ, GIT_INDEX_FILE=os.path.join(d, "index"))
        read = proc.run(["git", "-C", str(repo.path), "read-tree", base], env=env, check=False)
        if not read.ok:
            return PickStatus.DOES_NOT_APPLY
        res = proc.run(["git", "-C", str(repo.path), "apply", "--cached", "--check"], env=env,
                       input=_patch(repo, pick.sha), check=False)
    return PickStatus.APPLIED if res.ok else PickStatus.DOES_NOT_APPLY


def apply(repo: GitRepo, base: str, picks: list[Pick]) -> dict[str, str]:
    """After ``repo`` was checked out at ``base``: apply every pick of it that applies; returns
    ``{spec: status}``. The applied changes are the build's own (the next checkout drops them)."""
    out = {}
    for pick in picks:
        if pick.repo != repo.name:
            continue
        st = status(repo, base, pick)
        if st is PickStatus.APPLIED:
            res = proc.run(["git", "-C", str(repo.path), "apply", "--index"], input=_patch(repo, pick.sha),
                           check=False)
            if not res.ok:  # on top of an earlier pick it may no longer fit (git apply is all or nothing)
                st = PickStatus.DOES_NOT_APPLY
        out[pick.spec] = st.value
    return out


def statuses(repos: dict[str, GitRepo], xla: str, jax: str, picks: list[Pick]) -> dict[str, str]:
    """``{spec: status}`` of every pick for the state (xla, jax)."""
    base = {"xla": xla, "jax": jax}
    return {p.spec: status(repos[p.repo], base[p.repo], p).value for p in picks}
