"""benchmarks/peer_builds.py on the peer's own test scenarios (issue 35 item 5): JAX-Toolbox's search
(its logic.py, the Apache-2.0 copy in benchmarks/peer/) and hourly's exit search on the histories,
culprits and build breaks of the peer's tests, through the benchmark's oracle (plain lists: nothing
is built). What is checked is the claim docs/bisect.md publishes: both always right, hourly never
naming another commit, and hourly building fewer states in all than the peer asks for."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import peer_builds as pb  # noqa: E402


def _both(cases: list[pb.Case]) -> tuple[list[pb.Result], list[pb.PeerResult]]:
    logic = pb.load_peer()
    return [pb.hourly(c) for c in cases], [pb.peer(logic, c) for c in cases]


def test_the_peer_is_the_copy_of_its_file_with_the_licence_beside_it():
    """The copy runs as the peer's module (its search, its outcome words), says where it comes from,
    and carries the licence it is copied under."""
    text = pb.PEER_LOGIC.read_text()
    assert "bcbbfa578be90bf5c1dfef2c67cf074589391eee" in text and "Apache License, Version 2.0" in text
    assert "Apache License" in (pb.PEER_LOGIC.parent / "LICENSE.md").read_text()
    logic = pb.load_peer()
    assert callable(logic.version_search) and logic.TestExecutionOutcome.BUILD_FAILURE


def test_on_the_peers_own_scenarios_hourly_is_always_right_and_builds_fewer_states_in_all():
    """Each scenario of the peer's tests with the culprit its test drew: hourly names the culprit or
    answers a range holding it (never another commit), as the peer does, and builds no more states
    in all than the peer's search asks for (500 against 511 when measured)."""
    cases = [c for c, _, _ in pb.peer_cases()]
    assert len(cases) > 90 and sum(k for _, _, k in pb.peer_cases()) > 1000  # the test runs they stand for
    mine, theirs = _both(cases)
    assert all(h.right for h in mine) and all(p.right for p in theirs)
    assert all(h.named in (None, c.culprit) for h, c in zip(mine, cases, strict=True))
    assert sum(h.builds for h in mine) <= sum(p.builds for p in theirs)
    # 98 broken commits of 101: the run is jumped (before: every state walked, 4 times the builds)
    heavy = [i for i, c in enumerate(cases) if len(c.broken) > 90]
    assert heavy and all(mine[i].not_built > 50 and mine[i].builds <= theirs[i].builds + 2 for i in heavy)


def test_over_every_culprit_of_the_peers_histories_hourly_builds_fewer_states():
    """Not only the culprits the peer's tests drew: every commit that builds as the culprit of the
    same histories. Both right everywhere; hourly builds fewer states in all, and fewer on the
    histories without build breaks (where only the order of the search differs)."""
    cases = pb.every_culprit(pb.peer_cases())
    mine, theirs = _both(cases)
    assert all(h.right for h in mine) and all(p.right for p in theirs)
    assert sum(h.builds for h in mine) < sum(p.builds for p in theirs)
    clean = [i for i, c in enumerate(cases) if not c.broken]
    assert sum(mine[i].builds for i in clean) < sum(theirs[i].builds for i in clean)
