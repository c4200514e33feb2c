"""``--xla-ref`` / ``--jax-ref``: each repository's own ref (falling back to ``--ref``), and ends
that are not on the ref's first-parent history. Real git repositories with a real feature branch
(commits at fixed dates), real builds, real benchmarks, real SQLite."""

from __future__ import annotations

import json
import shlex

import pytest

from hourly.adapters.store import Store
from hourly.cli import main
from hourly.demo.repos import _git
from hourly.measure.settings import effective, stored_scan_settings
from tests.argv import with_flags

#: JAX's feature branch, forked from main after the pallas merge (09:40) and never merged: F2 slows
#: the benchmark down by 10 %
FEATURE = [("2023-08-24T14:00:00Z", "feature: F1 plumbing", {"feature/a.txt": "1\n"}),
           ("2023-08-24T15:00:00Z", "feature: F2 slower kernel", {"perf/feature.txt": "0.9\n"}),
           ("2023-08-24T16:00:00Z", "feature: F3 docs", {"feature/b.txt": "1\n"})]


@pytest.fixture
def branch(made):
    """The demo repositories (the test's own copy: tests/conftest.py ``made``) with a JAX branch
    ``feature`` (origin/feature in the clone) forked at the pallas merge; returns (made, {subject:
    sha}, merge-base sha)."""
    up = made.upstream["jax"]
    fork = made.shas["[pallas] add block spec checks"]
    _git(up, "checkout", "-q", "-b", "feature", fork)
    shas = {}
    for when, subject, files in FEATURE:
        for name, text in files.items():
            (up / name).parent.mkdir(parents=True, exist_ok=True)
            (up / name).write_text(text)
            _git(up, "add", name)
        _git(up, "commit", "-q", "-m", subject, when=when)
        shas[subject] = _git(up, "rev-parse", "HEAD")
    _git(up, "checkout", "-q", "main")
    _git(made.jax, "fetch", "-q", "origin", "+refs/heads/*:refs/remotes/origin/*")
    return made, shas, fork


def _args(made, python, work, *extra):
    # no warm-up runs: the demo's benchmark has no slow first run, and no test here reads them
    return with_flags(["--xla-repo", str(made.xla), "--jax-repo", str(made.jax), "--build-cmd", str(made.build_script),
                       "--python", python, "--bench-cmd", f"python3 {made.bench_script}", "--workdir", str(work),
                       "--warmup-runs", "0"], *extra)


def _run(capsys, argv):
    capsys.readouterr()
    rc = main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


F1, F2, F3 = (s for _, s, _ in FEATURE)


def test_jax_ref_bisects_a_jax_feature_branch_against_xla_main(branch, venv_python, tmp_path, capsys):
    made, shas, _ = branch
    # --ref names both repositories' history: XLA has no origin/feature
    rc, _, err = _run(capsys, ["bisect", *_args(made, venv_python, tmp_path / "w0", "--ref", "origin/feature"),
                               "--good", f"jax@{shas[F1]}", "--bad", f"jax@{shas[F3]}"])
    assert rc == 1 and "unknown ref 'origin/feature' in xla repository" in err
    assert "--xla-ref" in err  # the fix names the repository's own ref option
    rc, out, err = _run(capsys, ["bisect", "--json", *_args(made, venv_python, tmp_path / "w1", "--jax-ref", "origin/feature"),
                                 "--good", f"jax@{shas[F1]}", "--bad", f"jax@{shas[F3]}"])
    assert rc == 0, err
    a = json.loads(out)["regressions"][0]
    assert a["culprit"]["repo"] == "jax" and a["culprit"]["sha"] == shas[F2] and a["confirmed"]
    # XLA stood on its own main: the fusion change of 13:20 and its typo fix of 13:45 are in
    assert a["first_bad"]["xla"] == made.shas["[XLA] Fix typo in comment"]
    # the refs are part of what the bisection was (not the answer of a bisection over main)
    assert a["states"] == 3


def test_ref_settings_fall_back_to_ref_and_are_stored(branch, venv_python, tmp_path, capsys):
    made, shas, _ = branch
    s, _ = effective({"ref": "origin/main", "jax_ref": "origin/feature"})
    assert (s.ref_of("xla"), s.ref_of("jax")) == ("origin/main", "origin/feature")
    s, _ = effective({"ref": "origin/other"})
    assert (s.ref_of("xla"), s.ref_of("jax")) == ("origin/other", "origin/other")
    # a store written before the fields existed: both fall back to its ref
    old = {"ref": "origin/main", "xla_repo": str(made.xla), "jax_repo": str(made.jax), "workdir": str(tmp_path)}
    s, _ = effective({}, base=stored_scan_settings(old, tmp_path))
    assert (s.xla_ref, s.jax_ref, s.ref_of("xla"), s.ref_of("jax")) == (None, None, "origin/main", "origin/main")

    # the dry run resolves JAX on the branch and XLA on main
    work = tmp_path / "work"
    scan = ["scan", *_args(made, venv_python, work, "--jax-ref", "origin/feature"),
            "--from", "Aug 24 2023 15:30", "--to", "Aug 24 2023 16:30", "--no-sync"]
    rc, out, err = _run(capsys, [*scan, "--dry-run", "--json"])
    assert rc == 0, err
    pts = json.loads(out)["points"]
    assert [p["jax"] for p in pts] == [shas[F2], shas[F3]]
    assert {p["xla"] for p in pts} == {made.shas["[XLA] Fix typo in comment"]}
    # the scan stores the refs; a later bisect reads them (no --jax-ref needed)
    rc, out, err = _run(capsys, [*scan, "--json"])
    assert rc == 1 and "too few pairs to measure the noise" in err, err  # two pairs of one run each
    stored = Store(work).load_settings("scan")
    assert stored["jax_ref"] == "origin/feature" and stored["xla_ref"] is None
    rc, out, err = _run(capsys, ["bisect", "--json", "--workdir", str(work),
                                 "--good", f"jax@{shas[F1]}", "--bad", f"jax@{shas[F3]}"])
    assert rc == 0, err
    assert json.loads(out)["regressions"][0]["culprit"]["sha"] == shas[F2]
    # the report's reproduce line carries it
    from hourly.measure.settings import stored_settings
    from hourly.report.gather import scan_command
    line = shlex.split(scan_command(stored_settings(Store(work))))
    assert line[line.index("--jax-ref") + 1] == "origin/feature" and "--xla-ref" not in line


def test_an_end_off_the_first_parent_history_is_refused_with_the_commands_that_do_it(branch, venv_python, tmp_path, capsys):
    made, shas, fork = branch
    common = _args(made, venv_python, tmp_path / "w")
    # both ends on the branch: one command bisects the branch's own first-parent history
    rc, _, err = _run(capsys, ["bisect", *common, "--good", f"jax@{shas[F1]}", "--bad", f"jax@{shas[F3]}"])
    assert rc == 1
    line = " ".join(err.split())
    assert f"jax@{shas[F3][:12]} is not on the first-parent history of origin/main" in line
    assert f"forked from it at jax@{fork[:12]}" in line
    assert "--jax-ref origin/feature" in line
    # a good end on main before the fork: the branch's history, or main up to the fork with the
    # branch's commits applied
    fft = made.shas["Add jax.numpy.fft docstrings"]
    rc, _, err = _run(capsys, ["bisect", *common, "--good", f"jax@{fft}", "--bad", f"jax@{shas[F3]}"])
    line = " ".join(err.split())
    assert rc == 1 and "--jax-ref origin/feature" in line
    assert f"--bad jax@{fork[:12]}" in line
    assert all(f"--cherry-pick jax@{shas[s][:12]}" in line for s in (F1, F2, F3))
    # the command the refusal names does it
    rc, out, err = _run(capsys, ["bisect", "--json", *common, "--jax-ref", "origin/feature",
                                 "--good", f"jax@{shas[F1]}", "--bad", f"jax@{shas[F3]}"])
    assert rc == 0, err
    assert json.loads(out)["regressions"][0]["culprit"]["sha"] == shas[F2]


def test_a_pull_requests_own_commit_names_its_merge(branch, venv_python, tmp_path, capsys):
    made, _, _ = branch
    own = made.branch_shas["Use a faster dispatch path for pjit"]
    merge = made.shas["Use a faster dispatch path for pjit"]
    rc, _, err = _run(capsys, ["bisect", *_args(made, venv_python, tmp_path / "w"),
                               "--good", "Aug 25 2023 00:00", "--bad", f"jax@{own}"])
    line = " ".join(err.split())
    assert rc == 1 and f"came in with the merge jax@{merge[:12]}" in line and f"--bad jax@{merge[:12]}" in line
