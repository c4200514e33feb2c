"""What a bisection found, as data and as text: the answer record of each window
(:class:`hourly.answers.Answer`, built here from the window's stored verdicts), and the
``git bisect`` log that continues it by hand.

The drive (hourly/bisect/drive.py) decides, through the window's judge; this module only
describes what it decided.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hourly.adapters.gitrepo import COMMIT_URLS, CommitInfo, GitRepo
from hourly.analysis.bisection import Bounds
from hourly.answers import Answer, AnswerWindow, Commit, Measured, Merged, ProbeRow
from hourly.bisect.lab import Lab, WindowState, iso
from hourly.errors import UserError
from hourly.measure.pinned import pinned_line
from hourly.model import REPOS, Blame, Pair, cut_side

if TYPE_CHECKING:
    from hourly.bisect.records import Window


# -- the answer record --------------------------------------------------------------------------

def commit(repos: dict[str, GitRepo], repo: str, sha: str) -> Commit:
    """One commit as the answer names it (a merged pull request also names what it brought)."""
    r = repos[repo]
    info: CommitInfo = r.commits([sha])[sha]
    brought = r.merged_by(sha)
    return Commit(repo, sha, info.subject, info.author, iso(info.committer_time), COMMIT_URLS[repo].format(sha=sha),
                  [Merged(c.sha, c.subject, c.author) for c in brought or []])


def window_of(w: "Window") -> AnswerWindow:
    return AnswerWindow(iso(w.good_time), iso(w.bad_time), w.origin, w.note)


def error_answer(w: "Window", mode: str, e: UserError) -> Answer:
    """The answer for a window (one of many from the store) that cannot be bisected."""
    return Answer(window_of(w), mode, kind=w.kind, error=e.one_line(), reason=e.message)


#: What to do about a candidate that re-measurement did not confirm.
UNCONFIRMED_NEXT = ("measure again with more runs (hourly bisect --rerun --max-repeats 40), on a quieter machine, "
                    "or bisect a wider window (--good earlier, --bad later)")


#: What builds the states a jumped run of untestable states left unbuilt.
JUMPED_NEXT = ("build them: hourly bisect --rerun --walk-skips (the same window; stored builds and verdicts are "
               "reused), or pass --cherry-pick REPO@SHA of the fix that makes them build")


def _measurements(rows: list[dict], last_good: Pair, first_bad: Pair) -> dict[str, list[Measured]]:
    """Both measurements of the two states an unconfirmed answer rests on: the search's (role
    ``probe``/``end``) and the re-measurement's (``confirm_good``/``confirm_bad``)."""
    out = {}
    for side, pair in (("last_good", last_good), ("first_bad", first_bad)):
        out[side] = [Measured(r["role"], r["verdict"], r.get("samples") or [], r.get("returncodes") or [], r.get("reason"))
                     for r in rows if Pair(r["xla"], r["jax"]) == pair and r["role"] in
                     ("end", "probe", "confirm_good", "confirm_bad")]
    return out


def build_answer(lab: "Lab", d: "WindowState", b: Bounds, moved: dict[str, list[str]], blame: Blame | None,
                 confirmed: bool) -> Answer:
    """The answer for one window, as stored and printed with --json."""
    states, w = d.states, d.w
    rows = lab.probes(d.bid)
    last_good, first_bad = states[b.lo].pair, states[b.hi].pair
    culprit, reason = None, None
    jump_next = None
    if b.adjacent:
        repos = [n for n in REPOS if moved[n]]
        if blame is not None and blame.repo:
            repos = [blame.repo]
        if len(repos) == 1 and len(moved[repos[0]]) == 1:
            culprit = lab.commit(repos[0], moved[repos[0]][0])
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
        tested = [r for _, r in skipped if r]
        k, jumped = b.hi - b.lo - 1, len(skipped) - len(tested)
        inside = [c for c in d.crash_windows if b.lo < c["first_index"] and c["last_index"] < b.hi]
        for c in inside:
            c["holds_change"] = True
        if inside:  # metric mode: the change lies inside a crash window the search jumped
            run = {Pair(r["xla"], r["jax"]) for r in rows if r["role"] in ("probe", "edge")}
            ran = sum(1 for i in range(b.lo + 1, b.hi) if states[i].pair in run)
            reason = crash_window_reason(inside[0], lab) + (
                f" ({k} untestable state{'s' if k != 1 else ''} between last good and first bad, {ran} of them run; "
                "the others taken to crash as the window's edges do)")
        elif jumped and not lab.judge.steps:  # exit mode jumped a run of untestable states (bisection.run_probes)
            whys = sorted({r["reason"].split(" (log")[0] for r in tested})
            reason = (f"{k} states between last good and first bad: {len(tested)} untestable ({'; '.join(whys)}), "
                      f"{jumped} not built — they lie inside that run of untestable states, which the search "
                      "jumped instead of building every one of them")
            jump_next = JUMPED_NEXT
        else:
            whys = sorted({r["reason"].split(" (log")[0] if r else "not tested" for _, r in skipped})
            reason = (f"{k} untestable state{'s' if k != 1 else ''} between last good and first bad: "
                      + "; ".join(whys))
    range_commits = [] if culprit else [lab.commit(n, sha) for n in REPOS for sha in moved[n]]
    # only a confirmed culprit is a culprit: ends that do not differ again on re-measurement make
    # it a candidate, with both measurements of both states and what to do next
    candidate = None
    if culprit is not None and not confirmed:
        candidate, culprit = culprit, None
        reason = "the last good and first bad states did not differ again when measured afresh"
    index = {st.pair: i for i, st in enumerate(states)}
    return Answer(
        window=window_of(w), mode=lab.judge.answer_mode, kind=w.kind, pairing=lab.pairing_name,
        # the named metric bisected; an exit-status verdict reads exit codes, every metric's alike
        metric=lab.metric if lab.judge.mode != "exit" else None,
        culprit=culprit, candidate=candidate,
        measurements=_measurements(rows, last_good, first_bad) if candidate else None,
        next=UNCONFIRMED_NEXT if candidate else jump_next,
        range=[c.sha for c in range_commits], range_commits=range_commits, reason=reason,
        blame=blame.value if blame else None, confirmed=confirmed, last_good=last_good, first_bad=first_bad,
        states=len(states),
        # metric mode: the samples each end's verdicts were compared with, and where they came from
        end_samples=dict(d.end_samples),
        probes=[_probe_row(lab, r, index.get(Pair(r["xla"], r["jax"])), b) for r in rows],
        builds=sum(r["builds"] for r in rows),
        # priced builds (docs/builds.md): runs of --build-cmd (each builds jaxlib) and builds of the
        # jax package alone (--only jax, or a state whose jaxlib was cached)
        jaxlib_builds=sum(r.get("jaxlib_builds") or 0 for r in rows),
        jax_builds=sum(r.get("jax_builds") or 0 for r in rows),
        runs=sum(r["runs"] for r in rows), run_samples=sum(r.get("run_samples") or 0 for r in rows),
        pinned=lab.pinned,
        measured=d.measured, drift=list(d.drifts) or None, crash_windows=list(d.crash_windows) or None)


def _state_words(side: dict) -> str:
    c = side.get("commit")
    if c:
        return f"{c['repo']}@{c['sha'][:12]}"
    return f"xla@{cut_side(side['xla'], 12)} jax@{side['jax'][:12]}"


def crash_window_reason(c: dict, lab: "Lab") -> str:
    """The reason of a range that a crash window holds: the change lies inside it (or is the state
    after it), its first and last crashing states, the crash's last line, and the --cherry-pick
    that would let its states run."""
    n = c["states"]
    text = (f"the change lies inside the crash window {_state_words(c['first'])} .. {_state_words(c['last'])} "
            f"({n} state{'s' if n != 1 else ''} whose benchmark crashes"
            + (f": {c['last_line']}" if c.get("last_line") else "") + "), or is the first state after it")
    if c.get("cherry_pick"):
        text += f"; {c['cherry_pick']} (the commit that ends the window) would let its states run"
    else:
        text += "; a --cherry-pick of the commit that fixes the crash would let its states run"
    return text


def _probe_row(lab: "Lab", r: dict, i: int | None, b: Bounds) -> ProbeRow:
    """A probe's row as the answer's step sees it (the window search's judge: good before the step,
    bad from its first bad state on), with what --cherry-pick did to it."""
    verdict = r["verdict"]
    if lab.judge.steps and r["role"] in ("probe", "end"):
        from hourly.analysis.judges.metric import seen_from
        verdict = seen_from(verdict, i, b.lo, b.hi)
    return ProbeRow(r["role"], r["xla"], r["jax"], verdict, lab.cherry_picks(Pair(r["xla"], r["jax"])),
                    runs=r.get("runs") or 0, run_samples=r.get("run_samples") or 0)


# -- git bisect log -----------------------------------------------------------------------------

def bisect_log(answer: Answer | dict) -> tuple[str, str]:
    """A ``git bisect`` log for the repository to blame, the other repository pinned at its
    first-bad commit: (repo, log text). Only probes with the other repository at that commit count.
    ``git bisect replay <file>`` in that repository continues the search by hand."""
    a = Answer.of(answer)
    lg, fb = a.last_good, a.first_bad
    if lg is None or fb is None:
        raise UserError("the window was not bisected", "see the answer's error")
    if a.culprit:
        repo = a.culprit.repo
    else:
        moved = [n for n in REPOS if getattr(lg, n) != getattr(fb, n)]
        if len(moved) != 1:
            raise UserError("both repositories move between the last good and first bad states",
                            "bisect one repository by hand with the other pinned, or test the mixed pairs")
        repo = moved[0]
    other = "jax" if repo == "xla" else "xla"
    pinned = getattr(fb, other)
    held = pinned_line(a.pinned)
    lines = [f"# hourly bisect: {repo} commits, {other} pinned at {pinned}",
             f"# ({held})" if held and (a.pinned or {}).get("side") == "xla"
             else f"# (check out {other} at {pinned} before continuing)",
             "git bisect start '--first-parent'"]
    if a.kind in ("improvement", "fix", "metric_back"):  # --find-fix: "bad" is the new, changed state
        lines.insert(2, f"# finding the {'fix' if a.kind == 'fix' else 'improvement'}: "
                        "'good' is the old state, 'bad' the changed one; the first bad commit is what changed it")
    marks: dict[str, str] = {}
    manual: set[str] = set()  # verdicts a person gave (hourly bisect --manual)
    for p in a.probes:
        if getattr(p, other) == pinned and p.verdict in ("good", "bad", "skip"):
            marks[getattr(p, repo)] = p.verdict
            if p.manual:
                manual.add(getattr(p, repo))
    marks[getattr(fb, repo)] = "bad"
    if getattr(lg, other) == pinned:
        marks[getattr(lg, repo)] = "good"
    if "good" not in marks.values():
        raise UserError(f"no good state with {other} at {pinned[:12]} was tested",
                        "rerun the bisection with --rerun; it tests the mixed pair when both repositories move")
    for word in ("bad", "good", "skip"):
        for sha, w in marks.items():
            if w == word:
                by = " (manual verdict)" if sha in manual else ""
                lines += [f"# {word}{by}: [{sha}]", f"git bisect {word} {sha}"]
    return repo, "\n".join(lines) + "\n"


