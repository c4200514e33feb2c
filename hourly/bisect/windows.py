"""The windows a bisection is given: ``--good``/``--bad`` as times or commits, or every window of the
stored scan (detection's regressions, the exit status's good → bad transitions, where the metric
stops printing; with ``--find-fix`` the other way), and the mode each is bisected in."""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from hourly.adapters.gitrepo import GitRepo
from hourly.adapters.store import Measurement, Store
from hourly.analysis.bisection import exit_transitions
from hourly.analysis.judges import Evidence, ExitJudge, JudgeOptions, Run
from hourly.analysis.steps import group_points
from hourly.analysis.timeline import Resolver
from hourly.bisect.answer import iso
from hourly.bisect.records import Window
from hourly.errors import UserError
from hourly.measure.resolve import MissingHistory
from hourly.measure.settings import Settings
from hourly.model import Mode, Pair, PointResult, Status
from hourly.scan.table import LEVEL, SCAN_ORIGIN
from hourly.text.timeparse import parse_time

if TYPE_CHECKING:
    from hourly.analysis.bisection import State
    from hourly.bisect.lab import Histories


def evidence(m: Measurement) -> Evidence:
    """A stored measurement as a judge reads it."""
    return Evidence(m.status, tuple(m.samples), tuple(Run.of(r) for r in m.runs), m.detail, m.origin, m.id)


def _ts(label: str) -> int:
    return int(datetime.fromisoformat(label.replace("Z", "+00:00")).timestamp())


# -- windows ----------------------------------------------------------------------------------

_SHA_END = re.compile(r"^(?P<repo>xla|jax)@(?P<sha>[0-9a-fA-F]{4,40})$")


def _sha_end(text: str) -> bool:
    """``xla@<sha>``, ``jax@<sha>`` or both, comma-separated (not a time)."""
    return all(_SHA_END.match(p.strip()) for p in text.split(","))


_REPO_END = re.compile(r"^\s*(?P<repo>xla|jax)@(?P<sha>\S*)\s*$", re.I)


def _refuse_bad_sha(text: str) -> None:
    """``xla@<not a sha>`` (alone or in a comma list): one line naming the part that is no sha."""
    for part in text.split(","):
        m = _REPO_END.match(part)
        if m and not _SHA_END.match(part.strip()):
            raise UserError(f"{text}: {m['sha']!r} is not a commit sha (4 to 40 hex digits after {m['repo']}@)",
                            f"give {m['repo'].lower()}@<sha> with a commit of the {m['repo'].lower()} repository "
                            "(git log --first-parent shows them), or a time such as 2023-08-24T12:00:00Z")


def parse_end(text: str, tz: str, repos: dict[str, GitRepo], walks: dict[str, list[tuple[str, int]]],
              refs: dict[str, str] | None = None) -> int:
    """A window end as a unix time: a time as in the scan, or ``xla@<sha>`` / ``jax@<sha>``
    (the state at that commit's committer time), or both, ``xla@<sha>,jax@<sha>`` (the state
    once both had landed, as a nightly image pins them). A commit off the first-parent history of
    its repository's ref (``refs``) is an :class:`~hourly.bisect.branches.OffHistory`."""
    if "," in text and _sha_end(text):
        return max(parse_end(p, tz, repos, walks, refs) for p in text.split(","))
    m = _SHA_END.match(text.strip())
    if not m:
        _refuse_bad_sha(text)  # xla@zzzz is a commit that is none, not a time to be told the formats of
        return int(parse_time(text, tz).when.timestamp())
    name = m["repo"]
    if name not in repos or len(walks[name]) == 1 and walks[name][0][1] == 0:
        raise UserError(f"{text}: {name} is pinned in this hunt (--only), its commits are not candidates",
                        "pass a time, or a commit of the repository being hunted")
    sha = repos[name].resolve_sha(m["sha"])
    times = dict(walks[name])
    if sha not in times:
        from hourly.bisect.branches import OffHistory
        raise OffHistory(name, sha, f"{name}@{sha[:12]}", (refs or {}).get(name, "the ref"))
    if Resolver(walks[name]).at(times[sha]) != sha:
        raise UserError(f"{name}@{m['sha']} never stood alone at the tip: a later commit has an earlier time",
                        "pass a time instead")
    return times[sha]


def end_flag(role: str, find_fix: bool) -> str:
    """The flag a user gave a window's end by (``good`` or ``bad``) for its role in the search
    (``role``): finding a fix, the search runs from the old state (the user's --bad) to the fixed
    one (the user's --good), so the two swap."""
    return {"good": "bad", "bad": "good"}.get(role, role) if find_fix else role


def parse_ends(b: "Histories", good: str, bad: str, tz: str, find_fix: bool = False) -> tuple[int, int]:
    """``--good`` and ``--bad`` as unix times; an end off the first-parent history of its ref is
    refused with the commands that bisect it (hourly.bisect.branches.refusal)."""
    from hourly.bisect.branches import OffHistory, refusal
    got: dict[str, int | OffHistory] = {}
    for flag, text in (("--good", good), ("--bad", bad)):
        try:
            got[flag] = parse_end(text, tz, b.repos, b.walks, b.refs)
        except OffHistory as e:
            got[flag] = e
    later = "--good" if find_fix else "--bad"
    for flag in (later, "--bad" if find_fix else "--good"):
        off = got[flag]
        if isinstance(off, OffHistory):
            other = got["--bad" if flag == "--good" else "--good"]
            peer: int | str | None = other.sha if isinstance(other, OffHistory) and other.repo == off.repo else \
                other if isinstance(other, int) else None
            raise refusal(off, b.repos[off.repo], b.walks[off.repo], peer, flag, flag == later)
    g, x = got["--good"], got["--bad"]
    assert isinstance(g, int) and isinstance(x, int)  # every OffHistory was raised above
    return g, x


def flags_window(b: "Histories", good: str, bad: str, tz: str, find_fix: bool, mode: Mode,
                 find_fix_hint: bool = True) -> Window:
    """The window ``--good``..``--bad`` names (the good end later with ``find_fix``), refused when
    its ends are the wrong way round or name the same state. Each end is an instant of the merged
    timeline (a time, one repository's commit, or a combined ``xla@..,jax@..``: :func:`parse_end`),
    so ends of different forms compare as instants. ``find_fix_hint``: whether the refusal of
    reversed ends may suggest ``--find-fix`` (a manual bisection refuses it)."""
    g, x = parse_ends(b, good, bad, tz, find_fix)
    if g == x:  # one instant: one state, whatever form each end was written in
        raise UserError(f"--good {good} and --bad {bad} name the same state (both stand at {iso(g)}): "
                        "nothing lies between them",
                        "pass a --good end before the regression and a --bad end after it"
                        + (" (with --find-fix, the fixed --good end after the --bad one)" if find_fix else ""))
    if find_fix:  # the search runs from the old (bad) state to the fixed (good) one
        if g < x:
            raise UserError(f"--good {good} is not later than --bad {bad}: with --find-fix the good "
                            "(fixed) end comes after the bad one", "swap them")
        w = Window(x, g, "flags", kind={Mode.EXIT: "fix", Mode.PRINTED: "metric_back"}.get(mode, "improvement"))
    elif x < g:
        raise UserError(f"--bad {bad} is not later than --good {good}",
                        "swap them" + (", or pass --find-fix to find what fixed it" if find_fix_hint else ""))
    else:
        w = Window(g, x, "flags", kind={Mode.EXIT: "crash", Mode.PRINTED: "metric_lost"}.get(mode, "regression"))
    _within_history(b, w, find_fix)
    return w


def _within_history(b: "Histories", w: Window, find_fix: bool) -> None:
    """Refuses a window whose earlier end lies before a walked repository's history (its first
    commit, or a shallow clone's cut-off): the states would start where the history does, and the
    hours before it — a regression among them — would go unsearched, as a scan refuses them."""
    for name, ref in b.refs.items():
        walk = b.walks.get(name) or []
        if walk and w.good_time < min(ts for _, ts in walk):
            flag = f"--{end_flag('good', find_fix)}"
            raise MissingHistory(b.repos[name], ref, True, [datetime.fromtimestamp(w.good_time, timezone.utc)], 2,
                                 walk=walk, search="a bisection", start_flag=flag,
                                 lead=f"the window's earlier end ({flag} {iso(w.good_time)}) lies")


def states_between(b: "Histories", w: Window) -> list[State]:
    """The candidate states of ``w`` (its pairing's, over the walked histories), refused when
    there are fewer than two: nothing changed between its ends."""
    states = b.pairing.states(b.walks, w.good_time, w.bad_time)
    if len(states) < 2:
        raise UserError(f"nothing changed between {iso(w.good_time)} and {iso(w.bad_time)}",
                        "pass a good end before the bad end with commits between them")
    return states


def collapsed_points(store: Store) -> list[tuple[str, str, Pair]]:
    """The scan's instants with consecutive equal pairs merged: (first label, last label, pair)."""
    rows = [PointResult(label, x, j, "planned") for label, x, j in store.points(LEVEL)]
    return [(rows[g.first].time, rows[g.last].time, Pair(g.point.xla, g.point.jax)) for g in group_points(rows)]


def windows_from_store(store: Store, s: Settings, mode: Mode, find_fix: bool = False) -> list[Window]:
    """Every regression of the stored scan: detection's regressions (metric) or good→bad
    transitions of the exit status (exit); with ``find_fix``, its improvements or bad→good
    transitions."""
    points = collapsed_points(store)
    if len(points) < 2:
        raise UserError("the store holds no scan of two or more pairs",
                        "run `hourly scan` first, or pass --good and --bad")
    latest = store.all_latest(s.bench_key(), origin=SCAN_ORIGIN, metric=s.primary_metric())  # --metric's rows
    ms = [latest.get((p.xla, p.jax)) for _, _, p in points]
    out = []
    if mode is Mode.PRINTED:  # where the metric stops printing (ok → no_metric), or comes back
        from hourly.analysis.steps import metric_windows
        from hourly.scan.table import stored_scan
        for cw in metric_windows(stored_scan(store, s).points):
            if cw.bad != find_fix:
                out.append(Window(_ts(cw.before.time), _ts(cw.after.time), "metric windows",
                                  "metric printed → not printed" if cw.bad else "metric not printed → printed",
                                  kind=cw.kind))
    elif mode is Mode.METRIC:
        from hourly.analysis.detect import ChangeKind, percent
        from hourly.analysis.steps import find_steps, standing
        from hourly.scan.table import stored_scan
        table = stored_scan(store, s)
        checks = table.edge_checks or {}
        from hourly.scan.table import require_edges_read
        require_edges_read(checks, s, ", then run hourly bisect again")  # no direction to bisect it in
        for st in standing(find_steps(table.points, s.higher_is_better)[0], checks):  # outliers: nothing to bisect
            c, n = st.change, st.numbers()
            if c.kind is (ChangeKind.IMPROVEMENT if find_fix else ChangeKind.REGRESSION):
                out.append(Window(_ts(st.before.time), _ts(st.after.time), "detect",
                                  f"{n.levels()} ({percent(n.relative_change)}; scan: {n.counts()})",
                                  kind="improvement" if find_fix else "regression"))
    else:
        # a fix is a good→bad transition of the flipped verdicts
        judge = ExitJudge(JudgeOptions(invert=find_fix))
        verdicts = [judge.of_point(evidence(m)) if m else None for m in ms]
        for a, b in exit_transitions(verdicts):
            out.append(Window(_ts(points[a][1]), _ts(points[b][0]), "exit transitions",
                              "exit status bad → good" if find_fix else "exit status good → bad",
                              kind="fix" if find_fix else "crash"))
    return out


def default_mode(store: Store, s: Settings) -> Mode:
    """Exit status for an exit-status scan (``--mode exit``); metric when the scan measured a
    metric; else exit status."""
    if s.mode == Mode.EXIT.value:
        return Mode.EXIT
    latest = store.all_latest(s.bench_key(), origin=SCAN_ORIGIN, metric=s.primary_metric())  # --metric's rows
    rows = store.points(LEVEL)
    if not rows:
        return Mode.METRIC
    return Mode.METRIC if any(latest.get((x, j)) and latest[(x, j)].status == Status.OK.value
                              for _, x, j in rows) else Mode.EXIT



def _require_complete_scan(store: Store, s: Settings) -> None:
    """No window to bisect in a scan with unmeasured (planned) points is not "nothing to bisect":
    the step may lie in them (exit 1, naming the command that resumes the scan); nor is it in a scan
    whose every point failed (no value, no run that passed: nothing to compare)."""
    from hourly.scan.table import scan_command, stored_scan, unmeasured_pairs
    points = stored_scan(store, s).points
    n = unmeasured_pairs(points)
    if n:
        total = len({(p.xla, p.jax) for p in points})
        raise UserError(f"no window to bisect in the part of the scan that was measured, but the scan is incomplete "
                        f"({n} of {total} pairs not measured yet): a step may lie there",
                        f"resume the scan with the same command, {scan_command(s)}, then run hourly bisect again")
    if points and not any(p.status == Status.OK for p in points):
        how = ", ".join(f"{k}: {v}" for k, v in Counter(str(p.status) for p in points).items())
        raise UserError(f"no point of the stored scan measured: every one failed ({how} instants), so no window "
                        "shows where it changed",
                        f"hourly show --workdir {store.workdir} says why; fix the benchmark or the build, then scan "
                        "again with --rerun (--retry-failed for failed builds)")


