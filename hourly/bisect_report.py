"""What a bisection found, as data and as text: the answer record of each window, the
``git bisect`` log that continues it by hand, the terminal lines, and the handler that turns the
search's events (hourly.bisect reports them) into progress lines.

The search in hourly/bisect.py decides; this module only describes what it decided.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Callable

from .bisect_math import step_commits
from .errors import UserError
from .gitrepo import COMMIT_URLS, CommitInfo, GitRepo
from .model import REPOS, Blame, Pair
from .pin import pinned_line
from .timeparse import iso_utc
from .words import plural

if TYPE_CHECKING:
    from rich.console import Console

    from .bisect import Bisector, Probe, Window
    from .bisect_math import State


def iso(ts: int) -> str:
    return iso_utc(datetime.fromtimestamp(ts, timezone.utc))


# -- the answer record --------------------------------------------------------------------------

def answer(bisector: Bisector, w: Window, states: list[State], b, moved, blame, confirmed, bid) -> dict:
    """The answer for one window, as stored and printed with --json."""
    rows = bisector.store.probes(bid)
    last_good, first_bad = states[b.lo].pair, states[b.hi].pair
    culprit, reason = None, None
    if b.adjacent:
        repos = [n for n in REPOS if moved[n]]
        if blame in (Blame.XLA, Blame.JAX):
            repos = [blame.value]
        if len(repos) == 1 and len(moved[repos[0]]) == 1:
            culprit = commit(bisector.repos, repos[0], moved[repos[0]][0])
        elif len(repos) == 1:
            reason = (f"{len(moved[repos[0]])} {repos[0]} commits arrived in one step (their committer "
                      "times are out of order), so no state between them existed")
        elif blame is Blame.BOTH:
            reason = "neither repository's change alone regresses: the combination does"
        else:
            reason = "both repositories moved in one step and the mixed pairs could not be tested"
    else:
        skipped = [(i, next((r for r in rows if r["role"] == "probe" and
                             Pair(r["xla"], r["jax"]) == states[i].pair), None)) for i in range(b.lo + 1, b.hi)]
        whys = sorted({r["reason"].split(" (log")[0] if r else "not tested" for _, r in skipped})
        k = b.hi - b.lo - 1
        reason = (f"{k} untestable state{'s' if k != 1 else ''} between last good and first bad: "
                  + "; ".join(whys))
    all_moved = step_commits(bisector.walks, last_good, first_bad)
    range_commits = [] if culprit else [commit(bisector.repos, n, sha) for n in REPOS for sha in all_moved[n]]
    return {
        "kind": w.kind,
        "window": {"good_time": iso(w.good_time), "bad_time": iso(w.bad_time), "origin": w.origin,
                   "note": w.note},
        "mode": bisector.mode.value,
        "culprit": culprit,
        "range": [c["sha"] for c in range_commits],
        "range_commits": range_commits,
        "reason": reason,
        "blame": blame.value if blame else None,
        "confirmed": confirmed,
        "last_good": {"xla": last_good.xla, "jax": last_good.jax},
        "first_bad": {"xla": first_bad.xla, "jax": first_bad.jax},
        "states": len(states),
        # metric mode: the samples each end's verdicts were compared with, and where they came from
        "end_samples": dict(bisector.end_samples),
        "probes": [bisector.probe_row(r, states, b) for r in rows],
        "builds": sum(r["builds"] for r in rows),
        # priced builds (docs/builds.md): runs of --build-cmd (each builds jaxlib) and builds of the
        # jax package alone (--only jax, or a state whose jaxlib was cached)
        "jaxlib_builds": sum(r.get("jaxlib_builds") or 0 for r in rows),
        "jax_builds": sum(r.get("jax_builds") or 0 for r in rows),
        "runs": sum(r["runs"] for r in rows),
        "pinned": bisector.pin.as_json() if getattr(bisector, "pin", None) else None,
    }


def commit(repos: dict[str, GitRepo], repo: str, sha: str) -> dict:
    """One commit as the answer names it (a merged pull request also names what it brought)."""
    r = repos[repo]
    info: CommitInfo = r.commits([sha])[sha]
    out = {"repo": repo, "sha": sha, "subject": info.subject, "author": info.author,
           "committer_time": iso(info.committer_time), "link": COMMIT_URLS[repo].format(sha=sha)}
    parents = r.git("rev-list", "--parents", "-n", "1", sha).split()[1:]
    if len(parents) > 1:  # a merged pull request: name the commits it brought
        out["merged"] = [{"sha": c.sha, "subject": c.subject, "author": c.author}
                         for c in r.log(parents[0], sha, first_parent=False) if c.sha != sha]
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
    if answer.get("kind") in ("improvement", "fix"):  # --find-fix: "bad" is the new, changed state
        lines.insert(2, f"# finding the {'fix' if answer['kind'] == 'fix' else 'improvement'}: "
                        "'good' is the old state, 'bad' the changed one; the first bad commit is what changed it")
    marks: dict[str, str] = {}
    for p in answer["probes"]:
        if p[other] == pinned and p["verdict"] in ("good", "bad", "skip"):
            marks[p[repo]] = p["verdict"]
    marks[fb[repo]] = "bad"
    if lg[other] == pinned:
        marks[lg[repo]] = "good"
    if "good" not in marks.values():
        raise UserError(f"no good state with {other} at {pinned[:12]} was tested",
                        "rerun the bisection with --rerun; it tests the mixed pair when both repositories move")
    for word in ("bad", "good", "skip"):
        for sha, w in marks.items():
            if w == word:
                lines += [f"# {word}: [{sha}]", f"git bisect {word} {sha}"]
    return repo, "\n".join(lines) + "\n"


def log_or_none(a: dict) -> str | None:
    if a.get("error"):
        return None
    try:
        return bisect_log(a)[1]
    except UserError:
        return None


# -- events -------------------------------------------------------------------------------------

class BisectHandler:
    """What a bisection reports while it runs (mozregression's BisectorHandler): the search calls
    these; a command that shows progress overrides them. The default stays silent."""

    #: words for the verdicts (finding a fix, git bisect's --term-old/--term-new: old, fixed)
    terms: dict[str, str] = {}

    def started(self, w: Window, states: int, resumed: int) -> None:
        """A window's search begins (``resumed`` stored verdicts are reused)."""

    def verdict(self, p: Probe) -> None:
        """A state was judged (an end, a probe, a confirmation or a mixed pair)."""

    def cannot_bisect(self, w: Window, e: UserError) -> None:
        """A window from the store cannot be bisected; the others go on."""

    def nothing_to_bisect(self) -> None:
        """The stored scan holds no regression and no crash window."""


class LineHandler(BisectHandler):
    """Each event as one line of text, handed to ``say`` (e.g. printed to stderr)."""

    def __init__(self, say: Callable[[str], None]):
        self.say = say

    def started(self, w: Window, states: int, resumed: int) -> None:
        self.say(f"bisecting {iso(w.good_time)} .. {iso(w.bad_time)}: {plural(states, 'state')}"
                 + (f" (resuming after {plural(resumed, 'stored verdict')})" if resumed else ""))

    def verdict(self, p: Probe) -> None:
        word = self.terms.get(p.verdict.value, p.verdict.value)
        self.say(f"  {p.role:8} {p.pair.short()}  {word:6} {p.reason}"
                 + (f"  [{plural(p.builds, 'build')}]" if p.builds else ""))

    def cannot_bisect(self, w: Window, e: UserError) -> None:
        self.say(f"  cannot bisect: {e.one_line()}")

    def nothing_to_bisect(self) -> None:
        self.say("nothing to bisect: the stored scan holds no window of that kind"
                 " (regressions and crashes; with --find-fix, improvements and fixes)")


# -- terminal -----------------------------------------------------------------------------------

def describe(a: dict) -> list:
    """The answer for one regression, as lines of text (subjects and authors verbatim)."""
    from .output import styled
    w = a["window"]
    lines: list = [styled((a.get("kind") or "regression", "bold"), f" {w['good_time']} .. {w['bad_time']}"
                          + (f"  {w['note']}" if w.get("note") else ""))]
    if a.get("error"):
        return lines + [f"  cannot bisect: {a['error']}"]
    c = a.get("culprit")
    fixing = a.get("kind") in ("improvement", "fix")
    if c:
        label = {"improvement": "improved by", "fix": "fixed by"}.get(a.get("kind"), "culprit")
        lines += [styled(f"  {label}: ", (c["repo"], "bold"), f" {c['sha']}"),
                  f"           {c['subject']}",
                  f"           by {c['author']}, committed {c['committer_time']}",
                  f"           {c['link']}"]
        for m in c.get("merged", []):
            lines.append(f"           merges {m['sha'][:12]} {m['subject']} (by {m['author']})")
    else:
        lines.append(f"  no single commit: {a.get('reason')}")
        for rc in a.get("range_commits", []):
            lines.append(f"    {rc['repo']} {rc['sha'][:12]} {rc['subject']}  {rc['link']}")
    if a.get("blame"):
        lines.append(f"  blame (mixed pairs tested): {BLAME_WORDS.get(a['blame'], a['blame'])}")
    pinned = pinned_line(a.get("pinned"))
    if pinned:
        lines.append(f"  {pinned}")
    ends = a.get("end_samples") or {}
    if ends:
        names = {"good": "earlier end", "bad": "later end"} if a.get("kind") in ("improvement", "fix") \
            else {"good": "good end", "bad": "bad end"}
        lines.append("  ends compared with: " + "; ".join(
            f"{names.get(side, side)} {plural(e['n'], 'sample')} (" + ", ".join(f"{k} from {'the scan' if o == 'scan' else o}"
                                                   for o, k in e["from"].items()) + ")"
            for side, e in ends.items()))
    lg, fb = a["last_good"], a["first_bad"]
    before, after = ("last before", "first after") if fixing else ("last good", "first bad")
    lines.append(f"  {before}: xla {lg['xla'][:12]} jax {lg['jax'][:12]}")
    lines.append(f"  {after}: xla {fb['xla'][:12]} jax {fb['jax'][:12]}")
    split = (f" ({a.get('jaxlib_builds', 0)} of jaxlib, {a['jax_builds']} of the jax package alone)"
             if a.get("jax_builds") else "")
    lines.append(styled(f"  {plural(a['builds'], 'build')}{split}, {plural(a['runs'], 'benchmark run')}, "
                        f"{plural(a['states'], 'candidate state')}",
                        *(() if a["confirmed"] else ("  ", ("NOT confirmed on re-measurement", "yellow")))))
    return lines


#: What a blame value means, for the terminal (the JSON keeps the value).
BLAME_WORDS = {
    "xla": "xla: its change alone, with the old jax, is bad",
    "jax": "jax: its change alone, with the old xla, is bad",
    "both": "neither change alone is bad; only the two together are",
    "unknown": "unknown: a mixed pair could not be tested",
}


def print_answers(console: Console, answers: list[dict]) -> None:
    for a in answers:
        for line in describe(a):
            console.print(line, highlight=False, soft_wrap=True)
