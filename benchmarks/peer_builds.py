"""Builds per culprit at the limit of the search: hourly's bisection against the information limit
and against the distinct states the peer's search needs (NVIDIA JAX-Toolbox triage).

    PYTHONPATH=. python benchmarks/peer_builds.py [--peer /path/to/JAX-Toolbox] [--cases]

Generated two-repository histories, every culprit position in each (nothing is built; an oracle
says whether a state holds the culprit commit, and whether it builds):

- *exhaustive*: every history of 4 commits in the window (each xla or jax, each at a new instant
  or at the same instant as the previous commit of the other repository), every culprit;
- *interleaving*: 3+3 and 6+6 commits, alternating (x j x j ...) and in blocks (x x x j j j);
- *simultaneous*: 3 and 5 instants at each of which one xla and one jax commit land together;
- *build breaks*: the 6+6 alternating interleaving with one commit that breaks the build of
  every state holding it at the tip (each position but the culprit's and the two ends').

Both sides start from the same good state (each repository's commit before the window) and bad
state (the newest commits), and both have their ends built: hourly measures its ends, the peer
checks them (``skip_precondition_checks=False``).

*hourly*: the exit-mode search of ``hourly bisect`` over the candidate states
(:func:`hourly.analysis.bisection.candidate_states`) and the mixed states inside steps that move
both repositories (:func:`~hourly.analysis.bisection.with_mixed_states`), the Bisector's own
decisions (:func:`~hourly.analysis.bisection.next_probe` with its costs and exact ties to the later
middle, then :func:`~hourly.analysis.bisection.next_blame` for a step that moves both repositories,
settled by the chain's mixed state when the search measured it), counting distinct (xla, jax) pairs
built. Confirmation re-runs the last good and first bad from the wheel cache: no build.

*peer*: ``version_search`` of ``.github/triage/jax_toolbox_triage/logic.py`` from the clone given
with ``--peer`` (loaded from that file at run time; skipped without it), xla first as its own
tests order the projects, driven through its ``build_and_test`` callback; it counts the distinct
version sets the search asks for (it runs every one of them, and more with repetitions).

*limit*: ⌈log2 N⌉ + 2 for N culprit candidates (the window's commits): no search of binary
verdicts names one of N commits with fewer tests, plus the two ends.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import importlib.util
import itertools
import logging
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hourly.analysis.bisection import (  # noqa: E402
    COST_BUILD,
    COST_MEASURED,
    COST_NEAR_BREAK,
    Verdict,
    bounds,
    candidate_states,
    near_breaks,
    next_blame,
    next_probe,
    step_commits,
    timeline_bounds,
    with_mixed_states,
)
from hourly.model import Blame, Pair  # noqa: E402

EPOCH = datetime.datetime(2024, 10, 1)


@dataclass
class Case:
    family: str
    name: str
    commits: list[tuple[str, str, int]]  # (repo, sha, time), oldest first, inside the window
    culprit: str
    broken: frozenset[str] = field(default_factory=frozenset)  # commits whose states do not build

    def repo_of(self, sha: str) -> str:
        return next(r for r, s, _ in self.commits if s == sha)

    def walks(self) -> dict[str, list[tuple[str, int]]]:
        """Newest first, as ``git rev-list --first-parent``; each repository's base commit at time 0."""
        return {r: list(reversed([(f"{r}0", 0)] + [(s, t) for rr, s, t in self.commits if rr == r]))
                for r in ("xla", "jax")}

    def order(self) -> dict[str, dict[str, int]]:
        return {r: {s: i for i, (s, _) in enumerate(reversed(w))} for r, w in self.walks().items()}


class Oracle:
    """Whether a state holds the culprit (bad) and whether it builds; every distinct state built is counted."""

    def __init__(self, case: Case):
        self.case = case
        self.pos = case.order()
        self.repo = case.repo_of(case.culprit)
        self.built: set[tuple[str, str]] = set()
        self.runs = 0

    def builds(self, xla: str, jax: str) -> bool:
        return xla not in self.case.broken and jax not in self.case.broken

    def bad(self, xla: str, jax: str) -> bool:
        mine = {"xla": xla, "jax": jax}[self.repo]
        return self.pos[self.repo][mine] >= self.pos[self.repo][self.case.culprit]

    def test(self, xla: str, jax: str) -> Verdict:
        self.built.add((xla, jax))
        self.runs += 1
        if not self.builds(xla, jax):
            return Verdict.SKIP
        return Verdict.BAD if self.bad(xla, jax) else Verdict.GOOD


# -- the cases --------------------------------------------------------------------------------

def _history(seq: list[tuple[str, bool]]) -> list[tuple[str, str, int]] | None:
    """Commits from (repo, same instant as the previous commit) steps; None when a repository would
    have two commits at one instant."""
    out: list[tuple[str, str, int]] = []
    t = 0
    count = {"xla": 0, "jax": 0}
    for repo, same in seq:
        if same:
            if not out or out[-1][0] == repo or (len(out) > 1 and out[-2][2] == t and out[-2][0] == repo):
                return None
        else:
            t += 1
        count[repo] += 1
        out.append((repo, f"{repo}{count[repo]}", t))
    return out


def cases() -> list[Case]:
    out: list[Case] = []
    seen = set()
    for steps in itertools.product(["xla", "jax"], repeat=4):
        for same in itertools.product([False, True], repeat=3):
            h = _history(list(zip(steps, (False, *same), strict=True)))
            if h is None:
                continue
            key = tuple((r, t) for r, _, t in h)
            if key in seen:
                continue
            seen.add(key)
            label = " ".join(("=" if i and h[i - 1][2] == t else "") + r[0] for i, (r, _, t) in enumerate(h))
            out += [Case("exhaustive, 4 commits", label, h, s) for _, s, _ in h]
    for k in (3, 6):
        alt = _history([(r, False) for _ in range(k) for r in ("xla", "jax")])
        blocks = _history([("xla", False)] * k + [("jax", False)] * k)
        assert alt and blocks
        out += [Case(f"interleaving {k}+{k}", "alternating", alt, s) for _, s, _ in alt]
        out += [Case(f"interleaving {k}+{k}", "blocks", blocks, s) for _, s, _ in blocks]
    for m in (3, 5):
        h = _history([(r, r == "jax") for _ in range(m) for r in ("xla", "jax")])
        assert h
        out += [Case("simultaneous", f"{m} instants", h, s) for _, s, _ in h]
    alt = _history([(r, False) for _ in range(6) for r in ("xla", "jax")])
    assert alt
    last = {r: s for r, s, _ in alt}  # the bad end holds them: an end must build
    for bi in range(len(alt)):
        if alt[bi][1] in last.values():
            continue
        for _, s, _ in alt:
            if s != alt[bi][1]:
                out.append(Case("build breaks, 6+6", f"break at {alt[bi][1]}", alt, s, frozenset({alt[bi][1]})))
    return out


# -- hourly -----------------------------------------------------------------------------------

def hourly(case: Case, plain: bool = False) -> tuple[int, str | None]:
    """Distinct states built by the exit-mode bisection, and the commit it names (None: a range).
    ``plain``: the search before issue 25 (timeline states only, the blame step's mixed pairs
    built after it, no extra cost near a build break, ties to the earlier middle)."""
    o = Oracle(case)
    walks = case.walks()
    states = candidate_states(walks, 0, case.commits[-1][2])
    chain = states if plain else with_mixed_states(states)
    pairs = [s.pair for s in chain]
    known: dict[Pair, Verdict] = {}

    def test(p: Pair) -> Verdict:
        if p not in known:
            known[p] = o.test(p.xla, p.jax)
        return known[p]
    test(pairs[0])
    test(pairs[-1])
    verdicts: dict[int, Verdict] = {}
    while True:  # hourly.bisect.chain_drive.ChainDrive.search
        near = set() if plain else near_breaks(
            pairs, [pairs[i] for i, v in verdicts.items() if v is Verdict.SKIP],
            [pairs[i] for i, v in verdicts.items() if v is not Verdict.SKIP] + [pairs[0], pairs[-1]])
        costs = {i: (COST_MEASURED if (p.xla, p.jax) in o.built else COST_BUILD) + (COST_NEAR_BREAK if i in near else 0.0)
                 for i, p in enumerate(pairs) if 0 < i < len(pairs) - 1 and i not in verdicts}
        i = next_probe(len(pairs), verdicts, costs, later_on_ties=not plain)
        if i is None:
            break
        verdicts[i] = test(pairs[i])
    b = timeline_bounds(chain, states, bounds(len(pairs), verdicts))
    good, bad = states[b.lo].pair, states[b.hi].pair
    moved = step_commits(walks, good, bad)
    if not b.adjacent:
        return len(o.built), None
    if moved["xla"] and moved["jax"]:  # WindowDrive.blame: a mixed pair measured by the search is reused
        seen: dict[Pair, Verdict] = {}
        on_chain = not plain and Pair(good.xla, bad.jax) in known  # the search measured it, a state of its chain
        while not isinstance(nxt := next_blame(good, bad, seen, on_chain), Blame):
            seen[nxt] = test(nxt)
        repos = [nxt.repo] if nxt.repo else []
    else:
        repos = [n for n in moved if moved[n]]
    named = moved[repos[0]][0] if len(repos) == 1 and len(moved[repos[0]]) == 1 else None
    return len(o.built), named


# -- the peer ---------------------------------------------------------------------------------

def load_peer(clone: Path):
    path = clone / ".github" / "triage" / "jax_toolbox_triage" / "logic.py"
    if not path.is_file():
        raise SystemExit(f"{path} not found: pass --peer the root of a clone of NVIDIA/JAX-Toolbox")
    spec = importlib.util.spec_from_file_location("peer_triage_logic", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def peer(logic, case: Case) -> tuple[int, int, str | None]:
    """Distinct version sets the peer's search asks for, the runs it makes, the commit it names."""
    o = Oracle(case)
    versions = collections.OrderedDict()
    for r in ("xla", "jax"):
        versions[r] = [(s, EPOCH + datetime.timedelta(days=t)) for s, t in reversed(case.walks()[r])]

    def build_and_test(*, versions, test_repetition=0, test_output_log_level=logging.DEBUG):
        x, j = versions["xla"], versions["jax"]
        o.built.add((x, j))
        o.runs += 1
        if not o.builds(x, j):
            return logic.TestResult(None, Path("."), logic.TestExecutionOutcome.BUILD_FAILURE, None, None, {})
        return logic.TestResult("", Path("."), logic.TestExecutionOutcome.TEST_YIELDED_RESULTS, "", 0.0,
                                {"exit_code": 1 if o.bad(x, j) else 0})
    log = logging.getLogger("peer")
    log.setLevel(logging.CRITICAL)
    try:
        ret, _, _ = logic.version_search(versions=versions, build_and_test=build_and_test, logger=log,
                                         skip_precondition_checks=False)
    except Exception:  # noqa: BLE001 - the peer gave up (its own assertion or error): no name
        return len(o.built), o.runs, None
    named = next((v for k, v in ret.items() if k.endswith("_bad")), None)
    return len(o.built), o.runs, named


# -- the table --------------------------------------------------------------------------------

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peer", type=Path, help="root of a clone of NVIDIA/JAX-Toolbox (without it: hourly and the limit only)")
    ap.add_argument("--cases", action="store_true", help="print every case where hourly builds more than the peer")
    a = ap.parse_args()
    logic = load_peer(a.peer) if a.peer else None
    rows: dict[str, list[tuple]] = collections.defaultdict(list)
    worse = []
    for c in cases():
        n = len(c.commits)
        limit = math.ceil(math.log2(n)) + 2
        h, h_named = hourly(c)
        before = hourly(c, plain=True)[0]
        p, p_runs, p_named = peer(logic, c) if logic else (None, None, None)
        rows[c.family].append((limit, h, h_named == c.culprit, p, p_runs, p_named == c.culprit, before))
        if p is not None and h > p:
            worse.append((c, h, p))
    tot = [r for rs in rows.values() for r in rs]
    head = "| histories | cases | limit ⌈log2 N⌉+2 | hourly builds (before) | exact |"
    if logic:
        head += " peer distinct states | peer runs | exact | hourly − peer: < 0 / = 0 / +1 / > +1 |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for fam, rs in [*rows.items(), ("all", tot)]:
        line = (f"| {fam} | {len(rs)} | {sum(r[0] for r in rs)} | {sum(r[1] for r in rs)} ({sum(r[6] for r in rs)}) | "
                f"{sum(r[2] for r in rs)}/{len(rs)} |")
        if logic:
            d = [r[1] - r[3] for r in rs]
            line += ""  # per case: hourly now against the peer
            line += (f" {sum(r[3] for r in rs)} | {sum(r[4] for r in rs)} | {sum(r[5] for r in rs)}/{len(rs)} | "
                     f"{sum(x < 0 for x in d)} / {sum(x == 0 for x in d)} / {sum(x == 1 for x in d)} / "
                     f"{sum(x > 1 for x in d)} |")
        print(line)
    if a.cases:
        for c, h, p in worse:
            print(f"{c.family:24} {c.name:28} culprit {c.culprit:5} hourly {h} peer {p}")


if __name__ == "__main__":
    main()
