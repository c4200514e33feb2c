"""--pairing pin and the descent into pin bumps, on stand-in jax, xla and llvm repositories whose
pin files move like the real ones (hourly/demo/pins.py): real git, real wheels, a real benchmark."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from hourly.adapters.gitrepo import GitRepo
from hourly.analysis.pins import PIN_FILES, PinFile, chain_text, parse_pin
from hourly.cli import main
from hourly.demo.pins import (
    PinMade,
    bzl_form,
    llvm_form,
    loading_bzl,
    make_pin_repos,
    module_form,
    revision_form,
    workspace_form,
)
from hourly.demo.repos import _git
from hourly.measure.pins import PinReader
from tests.argv import with_flags
from tests.conftest import copy_tree

X = "9f26b9390f5a5c565a13925731de749be8a760be"


@pytest.fixture(scope="module")
def _pristine_pins(tmp_path_factory) -> PinMade:
    """The three stand-ins, made once for the file; each test gets its own copy (``pins``)."""
    return make_pin_repos(tmp_path_factory.mktemp("pins") / "repos")


@pytest.fixture
def pins(_pristine_pins, tmp_path) -> PinMade:
    """The test's own copy of the stand-ins (same commits, paths its own: tests/conftest.py
    copy_tree), to check out, edit and break as it likes; 0.1 s, where making them is 1 s."""
    src = _pristine_pins
    dest = copy_tree(src.root, tmp_path / "repos")

    def moved(p: Path) -> Path:
        return dest / Path(p).relative_to(src.root)
    return dataclasses.replace(src, root=dest, jax=moved(src.jax), xla=moved(src.xla), llvm=moved(src.llvm),
                               shas=dict(src.shas), build_script=moved(src.build_script),
                               bench_script=moved(src.bench_script))


def _args(pins, venv_python, tmp_path, *extra):
    return with_flags(["--xla-repo", str(pins.xla), "--jax-repo", str(pins.jax), "--build-cmd", str(pins.build_script),
                       "--python", venv_python, "--bench-cmd", f"python3 {pins.bench_script}",
                       "--workdir", str(tmp_path / "work"), "--warmup-runs", "0"], *extra)  # no test reads one


def _run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_each_historical_form_of_the_pin_file_is_read():
    forms = {"WORKSPACE": workspace_form(X), "third_party/xla/workspace.bzl": bzl_form(X),
             "third_party/xla/revision.bzl": revision_form(X), "MODULE.bazel": module_form(X)}
    for f in PIN_FILES["xla"]:
        assert parse_pin(f, forms[f.path]) == X, f.path
    # workspace.bzl once it loads the commit from revision.bzl names none itself; a MODULE.bazel
    # whose archive_override is another module's names no XLA
    assert parse_pin(PinFile("third_party/xla/workspace.bzl", "assign", "XLA"), loading_bzl()) is None
    other = module_form(X).split('bazel_dep(name = "xla")')[0]
    assert parse_pin(PinFile("MODULE.bazel", "archive", "xla"), other) is None
    assert parse_pin(PIN_FILES["llvm"][0], llvm_form("e1f9c1790634" * 3 + "abcd")) == "e1f9c1790634" * 3 + "abcd"
    assert chain_text([{"repo": "jax", "sha": "6b4fbe9" * 3, "bumps": "xla"}, {"repo": "llvm", "sha": "a1b2c3d" * 3}]) \
        == "JAX 6b4fbe96b4 (XLA pin bump) → LLVM a1b2c3da1b"


def test_the_pin_of_every_jax_commit_follows_its_file_through_the_forms(pins):
    """One reader over the whole stand-in history: WORKSPACE, workspace.bzl, revision.bzl, MODULE.bazel."""
    reader = PinReader(GitRepo(pins.jax, "jax"), "xla", GitRepo(pins.xla, "xla"))
    x, j = pins.shas["xla"], pins.shas["jax"]
    expect = {"Initial commit": ("Initial commit", "WORKSPACE"),
              "Move the XLA revision into third_party/xla/revision.bzl": ("[XLA] Fix typo in comment",
                                                                         "third_party/xla/revision.bzl"),
              "Switch to Bzlmod: XLA as an archive_override in MODULE.bazel": ("[XLA:CPU] Tidy runtime", "MODULE.bazel")}
    for subject, (xla_subject, path) in expect.items():
        rec = reader.pin(j[subject])
        assert (rec.rev, rec.path) == (x[xla_subject], path)
    moved = reader.moves(j["Add jax.numpy.fft docstrings"],
                         j[f"Update XLA dependency to use revision http://github.com/openxla/xla/commit/{x['[XLA] Fix typo in comment']}."])
    assert moved and moved[0].rev == x["[XLA:GPU] Clean up NCCL thunk"] and moved[1].path == "third_party/xla/workspace.bzl"


def test_pin_pairing_pairs_each_jax_commit_with_its_pin(capsys, pins, venv_python, tmp_path):
    code, out, err = _run(capsys, ["scan", "--pairing", "pin", "--from", "Aug 22 2023 06:00", "--to", "Aug 22 2023 17:00",
                                   *_args(pins, venv_python, tmp_path), "--dry-run", "--json"])
    assert code == 0, err
    got = json.loads(out)
    assert got["pairing"] == "pin"
    reader = PinReader(GitRepo(pins.jax, "jax"), "xla", GitRepo(pins.xla, "xla"))
    assert all(p["xla"] == reader.pin(p["jax"]).rev for p in got["points"])
    assert len({p["jax"] for p in got["points"]}) == got["distinct_pairs"] == 7  # one state per JAX commit
    code, out, err = _run(capsys, ["scan", "--pairing", "pin", "--from", "Aug 22 2023 06:00", "--to", "Aug 22 2023 17:00",
                                   *_args(pins, venv_python, tmp_path), "--dry-run"])
    assert "hourly scan (pin pairing)" in out and "pairing: pin" in out


def test_time_pairing_marks_pairs_older_than_their_pin_and_says_why_they_fail(capsys, pins, venv_python, tmp_path):
    """JAX pins (and needs) an XLA commit whose committer time is an hour later: the time pairing's
    state in that hour builds JAX against an XLA older than its pin, and the build fails."""
    code, out, err = _run(capsys, ["scan", "--from", "Aug 23 2023 12:00", "--to", "Aug 23 2023 14:00",
                                   *_args(pins, venv_python, tmp_path), "--keep-going", "--no-sync", "--json"])
    got = json.loads(out)
    assert got["pairing"] == "time"
    pts = got["points"]
    x = pins.shas["xla"]
    feature = x["[XLA:GPU] Add the feature-x API"]
    assert [p["behind_pin"] for p in pts] == [None, feature, None]
    assert pts[1]["status"] == "build_failed" and pts[0]["status"] == pts[2]["status"] == "ok"
    assert "older than" in pts[1]["build_failure_reason"] and feature[:12] in pts[1]["build_failure_reason"]
    code, out, err = _run(capsys, ["show", "--workdir", str(tmp_path / "work")])
    assert "older than pin " + feature[:10] in out
    assert "1 pair combines a JAX commit with an XLA commit older than its pin" in " ".join(out.split())
    assert "1 of them failed to build" in " ".join(out.split())


# quick: test_without_llvm_repo_the_descent_stops_at_the_integrate_and_going_on_descends_into_llvm (the
# same chain and checks, in two runs: JAX into XLA in the first, into LLVM when the second is given --llvm-repo)
@pytest.mark.slow
def test_bisect_pin_descends_through_xla_into_llvm(capsys, pins, venv_python, tmp_path):
    """The JAX culprit is an XLA pin bump, inside it the XLA culprit integrates LLVM, inside that
    the planted LLVM commit: the chain names all three, and every tree is given back."""
    code, out, err = _run(capsys, ["bisect", "--pairing", "pin", "--good", "Aug 22 2023 09:30", "--bad", "Aug 22 2023 11:30",
                                   *_args(pins, venv_python, tmp_path), "--llvm-repo", str(pins.llvm), "--json"])
    assert code == 0, err
    descended_into_llvm(capsys, pins, venv_python, tmp_path, json.loads(out)["regressions"][0])


def descended_into_llvm(capsys, pins, venv_python, tmp_path, a: dict) -> None:
    """``a``, a pin-paired bisection's answer, names the whole chain down to the planted LLVM commit,
    every tree is back on its branch, and a second run builds nothing and prints the same chain."""
    x, llvm = pins.shas["xla"], pins.shas["llvm"]
    assert a["pairing"] == "pin"
    assert a["culprit"]["repo"] == "jax" and a["culprit"]["subject"].startswith("Update XLA dependency")
    integrate = next(sha for s, sha in x.items() if s.startswith("Integrate LLVM"))
    planted = llvm["[NVPTX] Change the default scheduling of loads"]
    assert [(c["repo"], c["sha"], c["bumps"]) for c in a["chain"]] == [
        ("jax", a["culprit"]["sha"], "xla"), ("xla", integrate, "llvm"), ("llvm", planted, None)]
    assert a["chain_text"] == f"JAX {a['culprit']['sha'][:10]} (XLA pin bump) → XLA {integrate[:10]} (LLVM pin bump) → LLVM {planted[:10]}"
    xla_level, llvm_level = a["descent"]
    assert xla_level["descent_of"]["held_jax"] == a["culprit"]["sha"] and xla_level["confirmed"]
    assert llvm_level["descent_of"]["held_xla"] == integrate and llvm_level["confirmed"]
    assert llvm_level["culprit"]["link"] == f"https://github.com/llvm/llvm-project/commit/{planted}"
    for repo in (pins.jax, pins.xla, pins.llvm):  # the trees are back on their branch
        assert _git(repo, "symbolic-ref", "--short", "HEAD") == "main"
    # the stored answers: a second run builds nothing and prints the same chain
    code, out, err = _run(capsys, ["bisect", "--pairing", "pin", "--good", "Aug 22 2023 09:30", "--bad", "Aug 22 2023 11:30",
                                   *_args(pins, venv_python, tmp_path), "--llvm-repo", str(pins.llvm)])
    assert code == 0, err
    assert f"chain: {a['chain_text']}" in out


def test_without_llvm_repo_the_descent_stops_at_the_integrate_and_going_on_descends_into_llvm(
        capsys, pins, venv_python, tmp_path):
    code, out, err = _run(capsys, ["bisect", "--pairing", "pin", "--good", "Aug 22 2023 09:30", "--bad", "Aug 22 2023 11:30",
                                   *_args(pins, venv_python, tmp_path), "--json"])
    assert code == 0, err
    a = json.loads(out)["regressions"][0]
    assert [c["repo"] for c in a["chain"]] == ["jax", "xla"]
    assert "pass --llvm-repo" in a["descent_stopped"]
    # going on as it says, in the same workdir: the descent goes on from the integrate into LLVM
    code, out, err = _run(capsys, ["bisect", "--pairing", "pin", "--good", "Aug 22 2023 09:30", "--bad", "Aug 22 2023 11:30",
                                   *_args(pins, venv_python, tmp_path), "--llvm-repo", str(pins.llvm), "--json"])
    assert code == 0, err
    descended_into_llvm(capsys, pins, venv_python, tmp_path, json.loads(out)["regressions"][0])


def test_a_pin_the_xla_checkout_lacks_is_one_line_naming_the_fetch(capsys, pins, venv_python, tmp_path):
    missing = "0123456789abcdef0123456789abcdef01234567"
    (pins.jax / "third_party/xla/revision.bzl").write_text(revision_form(missing))
    (pins.jax / "MODULE.bazel").write_text(module_form(missing))
    _git(pins.jax, "commit", "-qam", "Update XLA dependency to a revision not fetched yet", when="2023-08-23T15:00:00Z")
    _git(pins.jax, "update-ref", "refs/remotes/origin/main", "HEAD")
    code, out, err = _run(capsys, ["scan", "--pairing", "pin", "--from", "Aug 23 2023 15:00", "--to", "Aug 23 2023 16:00",
                                   *_args(pins, venv_python, tmp_path), "--dry-run"])
    assert code == 1
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert f"pins xla@{missing[:12]}" in lines[0] and f"git -C {pins.xla} fetch origin {missing}" in lines[0]


def test_a_time_paired_bisection_says_why_a_state_older_than_its_pin_did_not_build(capsys, pins, venv_python, tmp_path):
    """Exit mode over the hour where JAX pins an XLA commit not landed yet: the state between the
    ends fails to build, and the answer says it combined JAX with an XLA older than its pin."""
    args = _args(pins, venv_python, tmp_path)
    args[args.index("--bench-cmd") + 1] = f"test ! -e {pins.jax}/requires.txt"  # fails once JAX uses feature-x
    code, out, err = _run(capsys, ["bisect", "--mode", "exit", "--good", "Aug 23 2023 12:00", "--bad", "Aug 23 2023 14:30",
                                   *args, "--json"])
    assert code == 0, err
    a = json.loads(out)["regressions"][0]
    assert a["pairing"] == "time" and a["culprit"] is None
    feature = pins.shas["xla"]["[XLA:GPU] Add the feature-x API"]
    assert [b["pin"] for b in a["build_failed_behind_pin"]] == [feature]
    assert "older than its pin" in a["behind_pin_reason"]


REAL_JAX = Path("/work/jaxclone")
PIN_CSV = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "history" / "jax_xla_pin_2023-06_10.csv"


@pytest.mark.skipif(not (REAL_JAX / ".git").exists() or not PIN_CSV.exists(),
                    reason="needs a clone of jax-ml/jax at /work/jaxclone and ../shared/data/history")
def test_the_real_jax_history_pins_read_as_the_recorded_ones():
    """Every 20th JAX commit of June–October 2023 (WORKSPACE, then workspace.bzl) reads the pin the
    history data recorded; later commits read theirs from revision.bzl and MODULE.bazel."""
    import csv
    jax = GitRepo(REAL_JAX, "jax")
    reader = PinReader(jax, "xla")
    rows = list(csv.DictReader(open(PIN_CSV)))[::20]
    assert {r["pin_file"] for r in rows} == {"WORKSPACE", "third_party/xla/workspace.bzl"}
    for r in rows:
        rec = reader.find(r["jax_sha"])
        assert rec is not None and (rec.rev, rec.path) == (r["xla_pin_sha"], r["pin_file"])
    later = {reader.find(jax.git("rev-list", "-1", "--first-parent", f"--before={when}", "HEAD").strip()).path
             for when in ("2025-09-01", "2026-03-01")}
    assert later == {"third_party/xla/revision.bzl", "MODULE.bazel"}
