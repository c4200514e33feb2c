"""Bisection round by round (issue #15): a Bisector whose executor probes W states a round finds the
culprits the sequential bisection finds, in fewer rounds. Real git repos, real builds, real benchmark
processes, real SQLite; the executor here runs each request with the bisector's own measuring, one
after another (the Slurm executor runs them as jobs; the rounds are the same)."""

from __future__ import annotations

import json

import pytest
from test_bisect import EXIT_TEST, busy_day, flags

from hourly.adapters.store import Store
from hourly.bisect.records import BisectRequest
from hourly.bisect.search import run_bisect
from hourly.cli import main
from hourly.demo.repos import Change, make_repos
from hourly.measure.settings import effective, keyed
from hourly.model import Mode


@pytest.fixture(scope="session")
def python(venv_python) -> str:
    """The builds' venv: conftest's, as test_bisect's (a venv over the base interpreter's
    site-packages, as the demo makes, ran every ``.pth`` file there at each start of Python)."""
    return venv_python


class OneAfterAnother:
    """An executor of ``workers`` states a round that measures each request here, in turn."""

    def __init__(self, workers: int):
        self.workers = workers
        self.rounds: list[list[tuple[str, str, int]]] = []

    def measure_many(self, bisector, reqs):
        self.rounds.append([(p.xla, p.jax, n) for p, n in reqs])
        return [bisector.measure(p, n) for p, n in reqs]


def _settings(made, python, work, **kw):
    # keyed: the measurement key is set once, before anything measures (hourly.measure.settings.keyed)
    return keyed(effective(dict(xla_repo=str(made.xla), jax_repo=str(made.jax), build_cmd=str(made.build_script),
                          python=python, workdir=str(work), sync=False, **kw))[0])


def _bisect(made, python, work, good, bad, mode=None, executor=None, **kw):
    s = _settings(made, python, work, **kw)
    answers = run_bisect(s, Store(work, create=True), BisectRequest(good, bad, mode, 10), executor=executor)
    return [a.to_json() for a in answers]  # as --json prints them


def test_four_workers_find_the_same_two_culprits_in_fewer_rounds(tmp_path, python, capsys):
    a = Change("jax", "2023-08-24T02:05:00Z", "Slower tracing", {"perf/trace.txt": "0.9\n"})
    b = Change("xla", "2023-08-24T04:10:00Z", "Slower layout", {"perf/layout.txt": "0.9\n"})
    made = make_repos(tmp_path / "repos", busy_day([a, b], hours=6))
    bench = f"python3 {made.bench_script}"
    window = ("2023-08-24T00:30Z", "2023-08-24T06:00Z")
    # the sequential bisection, as `hourly bisect --json` prints it
    capsys.readouterr()
    rc = main(["bisect", "--json", "--good", window[0], "--bad", window[1],
               *flags(made, python, tmp_path / "seq", repeats=3, warmup_runs=0)])
    out = capsys.readouterr()
    assert rc == 0, out.err
    seq = json.loads(out.out)["regressions"]
    ex = OneAfterAnother(4)
    par = _bisect(made, python, tmp_path / "par", *window, executor=ex, bench_cmd=bench, repeats=3, warmup_runs=0)
    want = [made.shas[a.subject], made.shas[b.subject]]
    assert [r["culprit"]["sha"] for r in seq] == [r["culprit"]["sha"] for r in par] == want
    assert all(r["confirmed"] for r in par)
    # the local path: one state a round (each measuring of the bisection a round of its own);
    # with 4 workers fewer rounds, never more than 4 states in one
    assert all(r["rounds"] == r["jobs"] > r["builds"] >= 1 for r in seq)
    assert sum(r["rounds"] for r in par) < sum(r["rounds"] for r in seq)
    assert len(ex.rounds) == sum(r["rounds"] for r in par) and max(len(r) for r in ex.rounds) == 4
    assert sum(len(r) for r in ex.rounds) == sum(r["jobs"] for r in par)
    assert max(len({(x, j) for x, j, _ in r}) for r in ex.rounds) <= 4
    # the ends' round carries two probes beside the two ends (issue 25), and every state measured
    # (those measured ahead included) has a row of the answers: no build or run goes uncounted
    assert len(ex.rounds[0]) == 4
    rowed = {(p["xla"], p["jax"]) for r in par for p in r["probes"]}
    assert {(x, j) for r in ex.rounds for x, j, _ in r} <= rowed
    # the answers, with their rounds and jobs, are stored: a second run answers from the store
    stored = [json.loads(row[0]) for row in Store(tmp_path / "par").conn.execute(
        "SELECT result FROM bisections WHERE status='done' ORDER BY id")]
    assert [(r["rounds"], r["jobs"]) for r in stored] == [(r["rounds"], r["jobs"]) for r in par]
    again = _bisect(made, python, tmp_path / "par", *window, executor=OneAfterAnother(4), bench_cmd=bench, repeats=3, warmup_runs=0)
    assert [r["culprit"]["sha"] for r in again] == want


def test_exit_mode_in_rounds_names_the_crash_like_the_sequential_one(tmp_path, python, capsys):
    changes = busy_day([
        Change("jax", "2023-08-24T02:10:00Z", "Untestable for a moment", {"perf/odd.txt": "1.5\n"}),
        Change("jax", "2023-08-24T02:12:00Z", "Back to testable", {"perf/odd.txt": None}),
        Change("jax", "2023-08-24T02:52:00Z", "Rewrite custom_vjp", {"CRASH": "1\n"}),
    ], hours=4)
    made = make_repos(tmp_path / "repos", changes)
    test = tmp_path / "check.py"
    test.write_text(EXIT_TEST)
    window = ("2023-08-24T00:30Z", "2023-08-24T04:00Z")
    (seq,) = _bisect(made, python, tmp_path / "seq", *window, Mode.EXIT, bench_cmd=f"python3 {test}", warmup_runs=0)
    ex = OneAfterAnother(3)
    (par,) = _bisect(made, python, tmp_path / "par", *window, Mode.EXIT, ex, bench_cmd=f"python3 {test}", warmup_runs=0)
    assert seq["culprit"]["sha"] == par["culprit"]["sha"] == made.shas["Rewrite custom_vjp"]
    assert par["confirmed"] and par["rounds"] < seq["rounds"]
    assert max(len(r) for r in ex.rounds) == 3
