"""Builds per culprit at the limit of the search: hourly's bisection against the information limit
and against the distinct states the peer's search needs (NVIDIA JAX-Toolbox triage).

    python benchmarks/peer_builds.py [--only generated|peer] [--cases] [--peer CLONE] [--check-port CLONE]

About 15 s on this machine; exit 1 when hourly's answer misses the culprit anywhere (a wrong
commit, or a range without it). Two-repository histories, every culprit position in each (nothing
is built; an oracle says whether a state holds the culprit commit, and whether it builds).
Generated here:

- *exhaustive*: every history of 4 commits in the window (each xla or jax, each at a new instant
  or at the same instant as the previous commit of the other repository), every culprit;
- *interleaving*: 3+3 and 6+6 commits, alternating (x j x j ...) and in blocks (x x x j j j);
- *simultaneous*: 3 and 5 instants at each of which one xla and one jax commit land together;
- *build breaks*: the 6+6 alternating interleaving with one commit that breaks the build of
  every state holding it at the tip (each position but the culprit's and the two ends').

And the peer's own (issue 35 item 5): the scenarios of JAX-Toolbox's tests of its search,
``.github/triage/tests/test_triage_logic.py`` (test_version_search_explicit, test_version_search
with two packages, test_version_search_exhaustive) and ``test_mocked_git_history.py``, transcribed
with their commits, times, packages, culprits and build breaks (:func:`peer_cases`, which says
what was left out and why; ``--check-port CLONE`` runs the test module's own generators from a
clone and compares), each with the culprit its test drew, and then every culprit of the same
histories.

Both sides start from the same good state (each repository's first version) and bad state (the
newest commits), and both have their ends built: hourly measures its ends, the peer checks them
(``skip_precondition_checks=False``).

*hourly*: the exit-mode search of ``hourly bisect`` over the candidate states
(:func:`hourly.analysis.bisection.candidate_states`) and the mixed states inside steps that move
both repositories (:func:`~hourly.analysis.bisection.with_mixed_states`), the Bisector's own
decisions (:func:`~hourly.analysis.bisection.next_probe` with its costs, exact ties to the later
middle and a run of untestable states jumped, then :func:`~hourly.analysis.bisection.next_blame`
for a step that moves both repositories, settled by the chain's mixed state when the search
measured it), counting distinct (xla, jax) pairs built. Confirmation re-runs the last good and
first bad from the wheel cache: no build. Beside it, the same search walking every untestable
state (``--walk-skips``, the search before issue 35) and the search before issue 25; the script
says how many answers differ from walking's.

*peer*: ``version_search`` of JAX-Toolbox's ``.github/triage/jax_toolbox_triage/logic.py``, the
copy of bcbbfa57 in ``benchmarks/peer/`` (Apache-2.0, unchanged; ``--peer CLONE`` runs a clone's
instead), xla first as its own tests order the projects, driven through its ``build_and_test``
callback with the exit status as verdict; it counts the distinct version sets the search asks for
(it runs every one of them, and more with repetitions: *peer runs*). *right*: the culprit's
package and the culprit among the commits it names (``[a,b],c`` after build failures).

*limit*: ⌈log2 N⌉ + 2 for N culprit candidates (the window's commits): no search of binary
verdicts names one of N commits with fewer tests, plus the two ends.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime
import importlib.util
import itertools
import logging
import math
import random
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
    not_probed,
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
    #: each repository's first version (the good end's) and its time: "xla0"/"jax0" at 0 by default
    bases: dict[str, tuple[str, int]] = field(default_factory=dict)
    #: the repositories the peer is given (its test's packages): a one-repository test gives one
    peer_repos: tuple[str, ...] = ("xla", "jax")

    def base(self, r: str) -> tuple[str, int]:
        return self.bases.get(r, (f"{r}0", 0))

    @property
    def t_good(self) -> int:
        """The good end as ``hourly bisect --good xla@<base>,jax@<base>`` takes it: once both had landed."""
        return max(self.base(r)[1] for r in ("xla", "jax"))

    def repo_of(self, sha: str) -> str:
        return next(r for r, s, _ in self.commits if s == sha)

    def walks(self) -> dict[str, list[tuple[str, int]]]:
        """Newest first, as ``git rev-list --first-parent``; each repository's base commit first."""
        return {r: list(reversed([self.base(r)] + [(s, t) for rr, s, t in self.commits if rr == r]))
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

@dataclass
class Result:
    builds: int             # distinct states built
    named: str | None       # the commit named (None: a range, or no single commit)
    last_good: Pair
    first_bad: Pair
    width: int              # commits between last good and first bad (1: a single commit's step)
    not_built: int          # states between them the search jumped (inside a run of untestable states)
    right: bool             # the culprit named, or a range that holds it (never another commit)


#: hourly's searches: ``now`` (the exit search of ``hourly bisect``), ``walk`` (the same with every
#: untestable state's neighbours walked: ``--walk-skips``, the search before issue 35 item 5) and
#: ``plain`` (before issue 25: timeline states only, the blame step's mixed pairs built after it, no
#: extra cost near a build break, ties to the earlier middle)
SEARCHES = ("now", "walk", "plain")


def hourly(case: Case, search: str = "now") -> Result:
    """The exit-mode bisection of ``case`` as ``hourly bisect`` makes it: its builds and answer."""
    plain = search == "plain"
    o = Oracle(case)
    walks = case.walks()
    states = candidate_states(walks, case.t_good, case.commits[-1][2])
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
        i = next_probe(len(pairs), verdicts, costs, later_on_ties=not plain, jump_runs=search == "now")
        if i is None:
            break
        verdicts[i] = test(pairs[i])
    b = timeline_bounds(chain, states, bounds(len(pairs), verdicts))
    good, bad = states[b.lo].pair, states[b.hi].pair
    moved = step_commits(walks, good, bad)
    jumped = len(not_probed(len(pairs), verdicts))
    width = len(moved["xla"]) + len(moved["jax"])
    holds = case.culprit in moved["xla"] + moved["jax"]
    if not b.adjacent:
        return Result(len(o.built), None, good, bad, width, jumped, holds)
    if moved["xla"] and moved["jax"]:  # WindowDrive.blame: a mixed pair measured by the search is reused
        seen: dict[Pair, Verdict] = {}
        on_chain = not plain and Pair(good.xla, bad.jax) in known  # the search measured it, a state of its chain
        while not isinstance(nxt := next_blame(good, bad, seen, on_chain), Blame):
            seen[nxt] = test(nxt)
        repos = [nxt.repo] if nxt.repo else []
    else:
        repos = [n for n in moved if moved[n]]
    named = moved[repos[0]][0] if len(repos) == 1 and len(moved[repos[0]]) == 1 else None
    said = [c for r in (repos or ("xla", "jax")) for c in moved[r]]  # the blamed repository's commits of the step
    return Result(len(o.built), named, good, bad, width, jumped, case.culprit in said)


# -- the peer ---------------------------------------------------------------------------------

#: JAX-Toolbox's search as this benchmark runs it: its logic.py at bcbbfa57, copied unchanged under
#: its Apache-2.0 licence (benchmarks/peer/, the header says where from and how to check it)
PEER_LOGIC = Path(__file__).resolve().parent / "peer" / "jax_toolbox_triage_logic.py"


def load_peer(clone: Path | None = None):
    """The peer's ``logic`` module: the copy beside this script, or a clone's (``--peer``)."""
    path = clone / ".github" / "triage" / "jax_toolbox_triage" / "logic.py" if clone else PEER_LOGIC
    if not path.is_file():
        raise SystemExit(f"{path} not found: pass --peer the root of a clone of NVIDIA/JAX-Toolbox")
    spec = importlib.util.spec_from_file_location("peer_triage_logic", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@dataclass
class PeerResult:
    builds: int             # distinct version sets asked for
    runs: int               # build_and_test calls (repetitions and confirmations included)
    named: str | None       # its ``<package>_bad``: one commit, or "[a,b],c" (build failures), None: it gave up
    right: bool             # the culprit's package, and the culprit among the commits it names
    exact: bool             # the culprit alone


def peer(logic, case: Case, dates: dict[str, int] | None = None) -> PeerResult:
    """The peer's ``version_search`` on ``case``, with the exit status as its verdicts (its
    ExitCodeClassifier; its random test's metric classifier sees the same pass/fail with noise).
    ``dates``: other times for some commits than the case's (its own test's, where the benchmark
    moved a good end)."""
    o = Oracle(case)
    versions = collections.OrderedDict()
    for r in case.peer_repos:
        versions[r] = [(s, EPOCH + datetime.timedelta(days=(dates or {}).get(s, t))) for s, t in reversed(case.walks()[r])]

    def build_and_test(*, versions, test_repetition=0, test_output_log_level=logging.DEBUG):
        x, j = (versions.get(r, case.base(r)[0]) for r in ("xla", "jax"))
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
        return PeerResult(len(o.built), o.runs, None, False, False)
    key, named = next(((k, v) for k, v in ret.items() if k.endswith("_bad")), ("", None))
    shas = (named or "").replace("[", "").replace("]", "").split(",")
    right = key[:-len("_bad")] == case.repo_of(case.culprit) and case.culprit in shas
    return PeerResult(len(o.built), o.runs, named, right, right and named == case.culprit)


# -- the peer's own scenarios -------------------------------------------------------------------
#
# Transcribed from JAX-Toolbox's tests of its search (.github/triage/tests/, at bcbbfa57): the same
# commits, times (days after 2024-10-01, the tests' start_date), repositories, culprits and build
# breaks, generated by the same rules (the random test's by the same calls on the same seeded
# random.Random). Each case notes the test it comes from. Packages: "xla" is the test's first
# (the peer bisects it first), "jax" its second; the peer is given only the packages its test gives.
#
# * Scenarios hourly cannot take: a third package (flax; the exhaustive test's histories that move
#   three projects; the random test with 3 or 100 packages). Where the tests repeat one history
#   (the exhaustive generator's labels differ, its commits do not; the random test's metric width
#   changes only its verdicts' noise; bpp 0.9 and 1.0 often break nothing), it is kept once.
# * A good end that never stood at one instant (one package's first version dated after another
#   package's second commit): ``hourly bisect --good xla@A,jax@B`` takes the state once both had
#   landed, which holds that later commit. Such a case is kept with the later first version moved
#   back to the other's date (family "... good end moved"); the peer is run on it as moved (and, for
#   the docs, on its own dates: ``--cases``).

def _peer_case(family: str, name: str, versions: dict[str, list[tuple[str, int]]], culprit: str,
               broken: frozenset[str] = frozenset()) -> tuple[Case, dict[str, int]]:
    """A case from a test's versions per package (oldest first: the good end's first), and the
    dates its test gave the first versions the case moved (empty when it fits as given)."""
    bases = {r: vs[0] for r, vs in versions.items()}
    commits = sorted(((r, sha, t) for r, vs in versions.items() for sha, t in vs[1:]), key=lambda c: (c[2], c[0] != "xla"))
    moved: dict[str, int] = {}
    t_good = max(t for _, t in bases.values())
    if any(t <= t_good for _, _, t in commits):  # the good versions never stood together
        first = min(t for _, t in bases.values())
        moved = {sha: t for sha, t in bases.values() if t != first}
        bases = {r: (sha, first) for r, (sha, _) in bases.items()}
        family += ", good end moved"
    for r in ("xla", "jax"):
        bases.setdefault(r, (f"{r}0", min(t for _, t in bases.values())))
    c = Case(family, name, commits, culprit, broken, bases, tuple(versions))
    assert candidate_states(c.walks(), c.t_good, commits[-1][2])[0].pair == Pair(bases["xla"][0], bases["jax"][0])
    return c, moved


def _random_test(seed: int, extra: int, bpp: float) -> tuple[dict[str, list[tuple[str, int]]], str, set[str]]:
    """test_triage_logic.py::test_version_search with packages=2: its history, culprit and breaks
    (the same calls on ``random.Random(seed)`` as the test makes)."""
    rng = random.Random(seed)

    def random_hash() -> str:
        return hex(int(rng.uniform(1e10, 9e10)))[2:]

    def random_delay() -> int:
        return rng.randint(1, 10)
    commits: dict[str, list[tuple[str, int]]] = {}
    names = ["pkg0", "pkg1"]
    for package in names:
        commits[package] = [(random_hash(), rng.randint(-2, +2))]
    broken: set[str] = set()

    def append_random_commits(n: int) -> None:
        for _ in range(n):
            output = rng.choice(list(commits.values()))
            output.append((random_hash(), output[-1][1] + random_delay()))
            if rng.random() >= bpp:
                broken.add(output[-1][0])
    append_random_commits(extra // 2)
    culprit = rng.choice(names)
    _, good_date = commits[culprit][-1]
    bad_commit = random_hash()
    commits[culprit].append((bad_commit, good_date + random_delay()))
    append_random_commits(extra // 2)
    for commit_list in commits.values():
        broken.discard(commit_list[-1][0])
    return {"xla": commits["pkg0"], "jax": commits["pkg1"]}, bad_commit, broken


def _exhaustive_test(num_commits: int, num_projects: int):
    """test_triage_logic.py::create_commits: (bad index, [(project, sha, day)]) as the test makes them."""
    n = 0
    for first_project in range(num_projects):
        for commit_types in itertools.product(range(1 + 2 * (num_projects - 1)), repeat=num_commits - 1):
            n += 1
            commits = [(first_project, f"c{n}.0", 0)]
            if sum(commit_types) == 0:
                continue
            for k, commit_type in enumerate(commit_types, 1):
                prev_project, _, prev_date = commits[-1]
                if commit_type == 0:
                    commits.append((prev_project, f"c{n}.{k}", prev_date + 1))
                else:
                    new_project = (prev_project + (commit_type - 1) // 2) % num_projects
                    commits.append((new_project, f"c{n}.{k}", prev_date + (commit_type % 2)))
            if not all(x < y for p in range(num_projects)
                       for x, y in itertools.pairwise([d for q, _, d in commits if q == p])):
                continue
            for bad in range(1, num_commits):
                if any(p == commits[bad][0] for p, _, _ in commits[:bad]):
                    yield bad, commits


def peer_cases() -> list[tuple[Case, dict[str, int], int]]:
    """The peer's scenarios: (case, the dates its test gave first versions the case moved, how many
    of the test's parametrisations it stands for)."""
    out: dict[tuple, list] = {}

    def add(c: Case, moved: dict[str, int]) -> None:
        index = {sha: k for k, (_, sha, _) in enumerate(c.commits)}
        key = (c.family, tuple((r, t) for r, _, t in c.commits), tuple(sorted((r, t) for r, (_, t) in c.bases.items())),
               index[c.culprit], tuple(sorted(index[b] for b in c.broken)), c.peer_repos)
        if key in out:
            out[key][2] += 1
        else:
            out[key] = [c, moved, 1]
    # test_version_search_explicit: jax oJ mJ nJ at 1 2 3, xla oX nX at 1 3 (flax, oF nF, left
    # out: hourly bisects two repositories; so is its fourth case, whose culprit is flax's)
    for culprit in ("mJ", "nJ", "nX"):
        add(*_peer_case("peer: test_version_search_explicit", f"culprit {culprit}",
                        {"xla": [("oX", 1), ("nX", 3)], "jax": [("oJ", 1), ("mJ", 2), ("nJ", 3)]}, culprit))
    # test_version_search, packages=2 (3 and 100 left out), every seed, extra_commits and
    # build_pass_probability; metric_std 0.01 and 0.2 give the same history
    for seed in range(5):
        for extra in (0, 2, 7, 100):
            for bpp in (0.0, 0.9, 1.0):
                versions, culprit, broken = _random_test(seed, extra, bpp)
                for _ in range(2):  # metric_std
                    add(*_peer_case(f"peer: test_version_search, {extra} extra commits",
                                    f"seed {seed}, build pass probability {bpp}", versions, culprit, frozenset(broken)))
    # test_version_search_exhaustive: create_commits(5, 2) (its "other project" steps stay in the
    # first project: every history is one project's five commits) and create_commits(5, 3) where two
    # projects move (three: left out)
    for num_projects in (2, 3):
        for bad, commits in _exhaustive_test(5, num_projects):
            projects = sorted({p for p, _, _ in commits})
            if len(projects) > 2:
                continue
            names = dict(zip(projects, ("xla", "jax"), strict=False))
            versions = {names[p]: [(sha, d) for q, sha, d in commits if q == p] for p in projects}
            add(*_peer_case(f"peer: test_version_search_exhaustive, {num_projects} projects",
                            f"{' '.join(names[p][0] + str(d) for p, _, d in commits)}, culprit {bad}",
                            versions, commits[bad][1]))
    # test_mocked_git_history.py::test_triage_scenarios: one repository (jax) whose versions are
    # ``git log --first-parent passing^..failing`` after its non-linear handling (merge bases on
    # main, the feature commits cherry-picked onto every version); the fixture dates its commits by
    # the wall clock within a second or two, here a day apart in commit order (hourly pairs by
    # committer time: commits of one second would be one step)
    for name, shas, culprit in (
            ("linear: L1 .. L3, bad L2", ["L1", "L2", "L3"], "L2"),
            ("buggy container: F1 (L1'^) .. L3', bad L2", ["F1", "L1", "L2", "L3'"], "L2"),
            ("non-linear: F1 / F1' on M3, main M1 .. M3, bad M3", ["M1", "M2", "M3"], "M3"),
            ("merged feature: F1 / M4, main M1 .. M4, bad M3", ["M1", "M2", "M3", "M4"], "M3"),
            ("merged feature: F1 / M5, main M1 .. M5, bad M3", ["M1", "M2", "M3", "M4", "M5"], "M3")):
        c, moved = _peer_case("peer: test_mocked_git_history", name, {"jax": [(s, k) for k, s in enumerate(shas)]}, culprit)
        add(c, moved)
    return [tuple(v) for v in out.values()]  # type: ignore[misc]


def check_port(clone: Path) -> int:
    """The histories, culprits and build breaks of :func:`_random_test` and :func:`_exhaustive_test`
    against those the peer's own test module makes (``tests/test_triage_logic.py`` of ``clone``,
    imported with ``version_search`` replaced by a recorder; the test's callback says which versions
    fail to build and which fail the test). Returns how many differ."""
    import types
    triage = clone / ".github" / "triage"
    if not (triage / "tests" / "test_triage_logic.py").is_file():
        raise SystemExit(f"{triage / 'tests' / 'test_triage_logic.py'} not found: pass a clone of NVIDIA/JAX-Toolbox")
    pkg = types.ModuleType("jax_toolbox_triage")  # the package without its __init__ (docker, the CLI)
    pkg.__path__ = [str(triage / "jax_toolbox_triage")]
    metric = types.ModuleType("jax_toolbox_triage.metric_classifier")  # needs uncertainties; not used here
    metric.MetricClassifier = lambda **_: None  # type: ignore[attr-defined]
    sys.modules.update({"jax_toolbox_triage": pkg, "jax_toolbox_triage.metric_classifier": metric})
    spec = importlib.util.spec_from_file_location("peer_test_triage_logic", triage / "tests" / "test_triage_logic.py")
    assert spec and spec.loader
    t = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(t)
    seen: list = []

    class Recorded(Exception):
        pass

    def recorder(*, versions, build_and_test, **_):
        seen.append(({k: list(v) for k, v in versions.items()}, build_and_test))
        raise Recorded

    t.version_search = recorder
    day = lambda d: (d - t.start_date).days  # noqa: E731
    log = logging.getLogger("peer-tests")
    differ = 0
    for seed, extra, bpp in itertools.product(range(5), (0, 2, 7, 100), (0.0, 0.9, 1.0)):
        seen.clear()
        try:
            t.test_version_search(log, bpp, extra, 2, seed, 0.01)
        except Recorded:
            pass
        versions, build_and_test = seen[0]
        first = {p: vs[0][0] for p, vs in versions.items()}
        broken, culprit = set(), None
        for p, vs in versions.items():
            for sha, _ in vs:
                r = build_and_test(versions={**first, p: sha})
                if r.result.name == "BUILD_FAILURE":
                    broken.add(sha)
                elif r.metrics["metric"] > 0.5 and culprit is None:  # means 0 (pass) and 1 (fail)
                    culprit = sha
        theirs = {"xla": [(s, day(d)) for s, d in versions["pkg0"]], "jax": [(s, day(d)) for s, d in versions["pkg1"]]}
        if (theirs, culprit, broken) != _random_test(seed, extra, bpp):
            differ += 1
            print(f"test_version_search seed {seed}, {extra} extra commits, bpp {bpp}: the port differs")
    theirs_ex = [(b, [(p, day(d)) for p, _, d in c]) for b, c in itertools.chain(t.create_commits(5, 2), t.create_commits(5, 3))]
    mine_ex = [(b, [(p, d) for p, _, d in c]) for n in (2, 3) for b, c in _exhaustive_test(5, n)]
    differ += theirs_ex != mine_ex
    print(f"the port against {clone}'s test generators: test_version_search (packages=2) 60 histories, "
          f"test_version_search_exhaustive {len(theirs_ex)} (culprit, history) pairs: "
          + ("the same" if not differ else f"{differ} differ"))
    return differ


# -- the table --------------------------------------------------------------------------------

def every_culprit(peer_cs: list[tuple[Case, dict[str, int], int]]) -> list[Case]:
    """Each distinct history of the peer's tests with every culprit it can hold (each commit that
    builds), not only the one its test drew."""
    out, seen = [], set()
    for c, _, _ in peer_cs:
        key = (tuple(c.commits), c.broken, tuple(sorted(c.bases.items())), c.peer_repos)
        if key not in seen:
            seen.add(key)
            out += [dataclasses.replace(c, culprit=s) for _, s, _ in c.commits if s not in c.broken]
    return out


@dataclass
class Row:
    culprit: str
    limit: int
    now: Result
    walk: Result
    plain: Result
    peer: PeerResult
    weight: int = 1  # the test runs (parametrisations) of the peer's a case stands for


def measure(c: Case, logic, weight: int = 1) -> Row:
    now, walk, plain = (hourly(c, k) for k in SEARCHES)
    return Row(c.culprit, math.ceil(math.log2(len(c.commits))) + 2, now, walk, plain, peer(logic, c), weight)


HEAD = ("| histories | cases | limit ⌈log2 N⌉+2 | hourly builds | walking every skip (before) | before issue 25 | "
        "peer distinct states | peer runs | hourly − peer: < 0 / = 0 / +1 / > +1 | exact: hourly / peer | both right? |")


def line(name: str, rs: list[Row], weights: bool = False) -> str:
    n = len(rs)
    d = [r.now.builds - r.peer.builds for r in rs]
    h_right, p_right = sum(r.now.right for r in rs), sum(r.peer.right for r in rs)
    right = "yes" if h_right == p_right == n else f"hourly {h_right}/{n}, peer {p_right}/{n}"
    cases = f"{n} ({sum(r.weight for r in rs)})" if weights else str(n)
    return (f"| {name} | {cases} | {sum(r.limit for r in rs)} | {sum(r.now.builds for r in rs)} | "
            f"{sum(r.walk.builds for r in rs)} | {sum(r.plain.builds for r in rs)} | {sum(r.peer.builds for r in rs)} | "
            f"{sum(r.peer.runs for r in rs)} | {sum(x < 0 for x in d)} / {sum(x == 0 for x in d)} / "
            f"{sum(x == 1 for x in d)} / {sum(x > 1 for x in d)} | "
            f"{sum(r.now.named == r.culprit for r in rs)} / "
            f"{sum(r.peer.exact for r in rs)} | {right} |")


def table(title: str, rows: list[tuple[str, list[Row], bool]]) -> None:
    """One markdown table: a line per (name, rows, whether to say the test runs they stand for)."""
    print(f"\n{title}\n")
    print(HEAD)
    print("|" + "---|" * (HEAD.count("|") - 1))
    for name, rs, weights in rows:
        print(line(name, rs, weights))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peer", type=Path, help="root of a clone of NVIDIA/JAX-Toolbox whose logic.py to run "
                    "(default: the copy of bcbbfa57 in benchmarks/peer/)")
    ap.add_argument("--cases", action="store_true", help="print every case where hourly builds more than the peer, "
                    "and the peer on its own dates where a good end was moved")
    ap.add_argument("--only", choices=["generated", "peer"], help="one half of the cases")
    ap.add_argument("--check-port", type=Path, metavar="CLONE", help="compare the port of the peer's test scenarios "
                    "with what its own test module (in a clone of NVIDIA/JAX-Toolbox) generates, and stop")
    a = ap.parse_args()
    if a.check_port:
        return 1 if check_port(a.check_port) else 0
    logic = load_peer(a.peer)
    print(f"the peer: {a.peer or PEER_LOGIC}")
    wrong: list[tuple[Case, Result]] = []
    worse: list[tuple[Case, Row]] = []
    differ: list[tuple[Case, Row]] = []

    def run(c: Case, weight: int = 1) -> Row:
        r = measure(c, logic, weight)
        if not r.now.right:
            wrong.append((c, r.now))
        if r.now.builds > r.peer.builds:
            worse.append((c, r))
        if (r.now.named, r.now.last_good, r.now.first_bad) != (r.walk.named, r.walk.last_good, r.walk.first_bad):
            differ.append((c, r))
        return r
    generated: dict[str, list[Row]] = collections.defaultdict(list)
    theirs: dict[str, list[Row]] = collections.defaultdict(list)
    own_dates = []
    if a.only != "peer":
        for c in cases():
            generated[c.family].append(run(c))
        every = [r for rs in generated.values() for r in rs]
        table("Generated histories, every culprit:", [*((f, rs, False) for f, rs in generated.items()), ("all", every, False)])
    if a.only != "generated":
        peer_cs = peer_cases()
        for c, moved, k in peer_cs:
            theirs[c.family.removeprefix("peer: ")].append(run(c, k))
            if moved:  # the peer on its test's own dates too: the good end as the test gave it
                own_dates.append((c, theirs[c.family.removeprefix("peer: ")][-1].peer.builds,
                                  peer(logic, c, moved).builds))
        tests = [r for rs in theirs.values() for r in rs]
        n_worse = len(worse)
        by_family: dict[str, list[Row]] = collections.defaultdict(list)
        for c in every_culprit(peer_cs):
            fam = c.family.removeprefix("peer: ").removesuffix(", good end moved")
            by_family[fam + (", build breaks" if c.broken else "")].append(run(c))
        del worse[n_worse:]  # --cases lists the tests' own culprits
        culprits = [r for rs in by_family.values() for r in rs]
        breaks = [r for f, rs in by_family.items() if f.endswith("build breaks") for r in rs]
        clean = [r for f, rs in by_family.items() if not f.endswith("build breaks") for r in rs]
        table("The peer's own tests (.github/triage/tests/ at bcbbfa57), each with the culprit its test drew "
              "(cases: distinct scenarios, in brackets the test runs they stand for):",
              [*((f, rs, True) for f, rs in theirs.items()), ("the peer's tests, all", tests, True),
               ("every culprit of the same histories, no build breaks", clean, False),
               ("every culprit of the same histories, build breaks", breaks, False),
               ("every culprit of the same histories, all", culprits, False)])
        table("Every culprit of the same histories (each commit that builds), by test:",
              [*((f, rs, False) for f, rs in sorted(by_family.items())), ("all", culprits, False)])
    if own_dates:
        print(f"\nthe peer on its tests' own dates where the benchmark moved a good end ({len(own_dates)} cases): "
              f"{sum(own for _, _, own in own_dates)} builds, against {sum(p for _, p, _ in own_dates)} on the moved dates")
    n = sum(len(rs) for rs in (*generated.values(), *theirs.values()))
    print(f"\nanswers other than walking every skip's: {len(differ)} (of {n} cases and the every-culprit rows)")
    for c, r in differ:
        print(f"  {c.family}: {c.name}, culprit {c.culprit}: {r.now.width} commits ({r.now.not_built} states not built) "
              f"against {r.walk.width}")
    if a.cases:
        print("\nhourly builds more than the peer:")
        for c, r in worse:
            print(f"  {c.family:44} {c.name:44} culprit {c.culprit:12} hourly {r.now.builds} peer {r.peer.builds} "
                  f"(hourly: {r.now.named or f'range of {r.now.width}'}; peer: {r.peer.named})")
        for c, p, own in own_dates:
            if p != own:
                print(f"  {c.family:44} {c.name:44} peer {p} on the moved dates, {own} on its test's")
    for c, res in wrong:
        print(f"WRONG: hourly on {c.family}: {c.name}, culprit {c.culprit}: {res}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
