"""The shared fixtures' copies are as good as repositories made afresh, and each test's own."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from hourly.demo.repos import DEMO_CHANGES, make_repos

try:
    from .conftest import copy_repos
except ImportError:
    from conftest import copy_repos


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def mentions(root: Path, text: str) -> list[str]:
    """Files under ``root`` (git objects aside) whose bytes contain ``text``."""
    hits = []
    for dirpath, dirnames, filenames in os.walk(root):
        if os.path.basename(dirpath) == ".git" and "objects" in dirnames:
            dirnames.remove("objects")
        hits += [str(Path(dirpath) / n) for n in filenames if text.encode() in (Path(dirpath) / n).read_bytes()]
    return hits


def test_a_copy_is_the_same_history_with_its_own_paths(_pristine, made, tmp_path):
    fresh = make_repos(tmp_path / "fresh", DEMO_CHANGES)
    assert made.root == tmp_path / "repos"
    assert made.shas == fresh.shas and made.branch_shas == fresh.branch_shas
    for name in ("xla", "jax"):
        repo = getattr(made, name)
        assert git(repo, "rev-parse", "HEAD", "origin/main") == git(getattr(fresh, name), "rev-parse", "HEAD", "origin/main")
        assert git(repo, "config", "remote.origin.url") == str(made.upstream[name])
        assert git(repo, "status", "--porcelain") == ""
    assert str(made.xla) in made.build_script.read_text()
    assert mentions(made.root, str(_pristine.root)) == []
    # the origin it names is its own: a commit there is fetched here, and the pristine never sees it
    up = made.upstream["xla"]
    (up / "new.txt").write_text("1\n")
    git(up, "add", "new.txt")
    git(up, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "new")
    git(made.xla, "fetch", "-q", "origin")
    assert git(made.xla, "rev-parse", "origin/main") == git(up, "rev-parse", "HEAD")
    assert git(_pristine.xla, "rev-parse", "origin/main") == git(fresh.xla, "rev-parse", "origin/main")


def test_a_test_that_mutates_its_copy_leaves_the_next_ones_alone(_pristine, tmp_path):
    a = copy_repos(_pristine, tmp_path / "a")
    head = git(_pristine.jax, "rev-parse", "HEAD")
    git(a.jax, "checkout", "-q", "--detach", "HEAD~2")
    (a.jax / "mutated.txt").write_text("1\n")
    a.bench_script.write_text("raise SystemExit(3)\n")
    git(a.jax, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "only in a")
    new = git(a.jax, "rev-parse", "HEAD")
    git(a.jax, "gc", "-q", "--prune=now")  # repacks, and unlinks a's loose objects
    b = copy_repos(_pristine, tmp_path / "b")
    assert subprocess.run(["git", "-C", str(b.jax), "cat-file", "-e", new]).returncode != 0
    assert git(b.jax, "fsck", "--no-progress") == "" and git(_pristine.jax, "fsck", "--no-progress") == ""
    assert git(b.jax, "rev-parse", "HEAD") == head == git(_pristine.jax, "rev-parse", "HEAD")
    assert git(b.jax, "status", "--porcelain") == ""
    assert b.bench_script.read_text() == _pristine.bench_script.read_text() != a.bench_script.read_text()


def test_the_build_script_of_a_copy_builds_from_the_copy(made, tmp_path):
    subprocess.run([str(made.build_script)], cwd=made.jax, check=True, capture_output=True, text=True)
    wheels = list((made.jax / "dist").glob("*.whl"))
    assert len(wheels) == 1
    assert git(made.xla, "rev-parse", "HEAD")[:8] in wheels[0].name


def test_tests_see_hourlys_own_rule_for_a_flag_given_twice(capsys, tmp_path):
    """No fixture drops an earlier copy of a repeated flag: an in-process run refuses it as a user's
    command line is refused (exit 2, one line)."""
    from hourly.cli import main
    assert main(["scan", "--python", "a", "--python", "b", "--workdir", str(tmp_path / "w")]) == 2
    err = capsys.readouterr().err
    assert "--python given 2 times (a, b), but it takes one value" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "w").exists()


def test_with_flags_replaces_a_single_valued_flag_where_it_stood_and_adds_the_rest():
    from tests.argv import with_flags
    base = ["scan", "--from", "a", "--workdir", "w", "--no-sync", "--env", "A=1", "--", "cmd", "--workdir", "x"]
    assert with_flags(base, "--workdir", "W", "--sync", "--env", "B=2", "--repeats=3") == [
        "scan", "--from", "a", "--workdir", "W", "--sync", "--env", "A=1", "--env", "B=2", "--repeats=3",
        "--", "cmd", "--workdir", "x"]
    # a flag (or both spellings of a boolean) given twice in the test's own words stays twice: hourly refuses it
    assert with_flags(["bisect"], "--lower-is-better", "--higher-is-better") == [
        "bisect", "--lower-is-better", "--higher-is-better"]
    assert with_flags(["bisect", "--lower-is-better"], "--higher-is-better") == ["bisect", "--higher-is-better"]


def test_the_files_go_to_the_workers_heaviest_first_each_files_tests_together_in_order():
    """CI's two workers take a file each at a time, the next to whoever is nearly done: the order
    conftest.py makes puts the heaviest files first (weighed by tests/durations.json), so the last
    ones handed out are light and the workers end together."""
    from types import SimpleNamespace
    try:
        from .conftest import file_weights, heaviest_first
    except ImportError:
        from conftest import file_weights, heaviest_first
    durations = {"test_e2e.py": {"quick_s": 10.0, "quick": 2, "slow_s": 90.0, "slow": 3},
                 "test_units.py": {"quick_s": 40.0, "quick": 100, "slow_s": 0.0, "slow": 0}}
    # everything selected: the file of few heavy tests first; a file not recorded yet, 1 s a test
    w = file_weights({"test_units.py": (100, 0), "test_e2e.py": (2, 3), "test_new.py": (7, 0)}, durations)
    assert w == {"test_units.py": 40.0, "test_e2e.py": 100.0, "test_new.py": 7.0}
    # -m "not slow" (or -k) weighs the share of each kind that runs
    assert file_weights({"test_e2e.py": (2, 0), "test_units.py": (50, 0)}, durations) == \
        {"test_e2e.py": 10.0, "test_units.py": 20.0}
    items = [SimpleNamespace(path=Path(f"tests/{f}"), name=n) for f, n in
             [("test_new.py", "a"), ("test_units.py", "b"), ("test_units.py", "c"), ("test_e2e.py", "d"),
              ("test_e2e.py", "e"), ("test_other.py", "f")]]
    order = heaviest_first(items, {"test_units.py": 40.0, "test_e2e.py": 100.0, "test_new.py": 7.0})
    assert [i.name for i in order] == ["d", "e", "b", "c", "a", "f"]  # unweighed files last, as collected
