"""What a bisection found, as data and as text: the answer record of each window, the
``git bisect`` log that continues it by hand, the terminal lines, and the handler that turns the
search's events (hourly.bisect.search reports them) into progress lines.

The search in hourly/bisect/search.py decides; this module only describes what it decided.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable

from hourly.adapters.gitrepo import COMMIT_URLS, CommitInfo, GitRepo
from hourly.errors import UserError
from hourly.measure.pinned import pinned_line
from hourly.model import REPOS
from hourly.timeparse import iso_utc

if TYPE_CHECKING:
    from hourly.bisect.records import Window


def iso(ts: int) -> str:
    return iso_utc(datetime.fromtimestamp(ts, timezone.utc))


# -- the answer record --------------------------------------------------------------------------



def commit(repos: dict[str, GitRepo], repo: str, sha: str) -> dict:
    """One commit as the answer names it (a merged pull request also names what it brought)."""
    r = repos[repo]
    info: CommitInfo = r.commits([sha])[sha]
    out: dict[str, Any] = {"repo": repo, "sha": sha, "subject": info.subject, "author": info.author,
           "committer_time": iso(info.committer_time), "link": COMMIT_URLS[repo].format(sha=sha)}
    brought = r.merged_by(sha)
    if brought:  # a merged pull request: name the commits it brought
        out["merged"] = [{"sha": c.sha, "subject": c.subject, "author": c.author} for c in brought]
    return out


def error_answer(w: Window, mode: str, e: UserError) -> dict:
    """The answer for a window (one of many from the store) that cannot be bisected."""
    return {"window": {"good_time": iso(w.good_time), "bad_time": iso(w.bad_time),
                       "origin": w.origin, "note": w.note},
            "mode": mode, "error": e.one_line(), "culprit": None, "range": [],
            "range_commits": [], "reason": e.message, "blame": None, "confirmed": False,
            "last_good": None, "first_bad": None, "states": 0, "probes": [], "builds": 0,
            "runs": 0, "continues_at": None, "pinned": None, "jaxlib_builds": 0, "jax_builds": 0,
            "rounds": 0, "jobs": 0}


# -- git bisect log -----------------------------------------------------------------------------

def bisect_log(answer: dict, commit_info: Callable[[str, str], dict] | None = None) -> tuple[str, str]:
    """A ``git bisect`` log for the repository to blame, the other repository pinned at its
    first-bad commit: (repo, log text). Only probes with the other repository at that commit count.
    ``git bisect replay <file>`` in that repository continues the search by hand."""
    lg, fb = answer["last_good"], answer["first_bad"]
    if answer.get("culprit"):
        repo = answer["culprit"]["repo"]
    else:
        moved = [n for n in REPOS if lg[n] != fb[n]]
        if len(moved) != 1:
            raise UserError("both repositories move between the last good and first bad states",
                            "bisect one repository by hand with the other pinned, or test the mixed pairs")
        repo = moved[0]
    other = "jax" if repo == "xla" else "xla"
    pinned = fb[other]
    held = pinned_line(answer.get("pinned"))
    lines = [f"# hourly bisect: {repo} commits, {other} pinned at {pinned}",
             f"# ({held})" if held and answer["pinned"].get("side") == "xla"
             else f"# (check out {other} at {pinned} before continuing)",
             "git bisect start '--first-parent'"]
    if answer.get("kind") in ("improvement", "fix", "metric_back"):  # --find-fix: "bad" is the new, changed state
        lines.insert(2, f"# finding the {'fix' if answer['kind'] == 'fix' else 'improvement'}: "
                        "'good' is the old state, 'bad' the changed one; the first bad commit is what changed it")
    marks: dict[str, str] = {}
    manual: set[str] = set()  # verdicts a person gave (hourly bisect --manual)
    for p in answer["probes"]:
        if p[other] == pinned and p["verdict"] in ("good", "bad", "skip"):
            marks[p[repo]] = p["verdict"]
            if p.get("manual"):
                manual.add(p[repo])
    marks[fb[repo]] = "bad"
    if lg[other] == pinned:
        marks[lg[repo]] = "good"
    if "good" not in marks.values():
        raise UserError(f"no good state with {other} at {pinned[:12]} was tested",
                        "rerun the bisection with --rerun; it tests the mixed pair when both repositories move")
    for word in ("bad", "good", "skip"):
        for sha, w in marks.items():
            if w == word:
                by = " (manual verdict)" if sha in manual else ""
                lines += [f"# {word}{by}: [{sha}]", f"git bisect {word} {sha}"]
    return repo, "\n".join(lines) + "\n"


def log_or_none(a: dict) -> str | None:
    if a.get("error"):
        return None
    try:
        return bisect_log(a)[1]
    except UserError:
        return None


# -- events -------------------------------------------------------------------------------------





# -- terminal -----------------------------------------------------------------------------------





