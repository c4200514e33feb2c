"""Input a command refuses leaves nothing behind (issue 33): ``bisect``, ``shell`` and ``releases``
into a new workdir check what they were given before the workdir (and its store) is made. Real git
repositories (the demo's), a real --find-links folder, the real CLI."""

from __future__ import annotations

import pytest

from hourly.cli import main


def run_cli(capsys, argv):
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def repo_flags(made, work) -> list[str]:
    return ["--xla-repo", str(made.xla), "--jax-repo", str(made.jax), "--build-cmd", str(made.build_script),
            "--workdir", str(work)]


@pytest.mark.parametrize("good,bad,extra,message", [
    ("Aug 24 2023 15:00", "Aug 24 2023 12:00", [], "is not later than --good"),
    ("xla@zzzz", "Aug 24 2023 15:00", [], "'zzzz' is not a commit sha"),  # not the time formats (issue 33)
    ("xla@0123abcd", "Aug 24 2023 15:00", [], "unknown ref"),
    ("Aug 24 2023 12:00", "Aug 24 2023 15:00", ["--ref", "origin/nope"], "unknown ref"),
    ("Aug 24 2023 12:00", "Aug 24 2023 15:00", ["--cherry-pick", "xla@nothex"], "is not REPO@SHA"),
    ("Aug 24 2023 12:00", "Aug 24 2023 12:10", [], "nothing changed between"),
    ("Aug 24 2023 12:00", "2023-08-24T12:00:00Z", [], "name the same state"),
    ("Aug 24 2023 15:00", "Aug 24 2023 12:00", ["--manual"], "is not later than --good"),
], ids=["reversed", "not-a-sha", "unknown-sha", "unknown-ref", "cherry-pick", "nothing-between", "same-state",
        "reversed-manual"])
def test_bisect_refuses_before_making_the_workdir(capsys, made, venv_python, tmp_path, good, bad, extra, message):
    work = tmp_path / "work"
    code, _, err = run_cli(capsys, ["bisect", "--good", good, "--bad", bad, *repo_flags(made, work),
                                    "--python", venv_python, "--bench-cmd", f"python3 {made.bench_script}", *extra])
    assert code in (1, 2) and message in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not work.exists()
    if "--manual" in extra:  # a manual bisection refuses --find-fix: never suggested to it
        assert "--find-fix" not in err, err


@pytest.mark.parametrize("state,message", [
    ("xla@zzzz,jax@1234", "'zzzz' is not a commit sha"),
    ("xla@0123abcd,jax@0123abcd", "unknown ref"),
    ("good", "no results store"),
    ("probe:2", "no results store"),
    ("someday", "'someday' names no state"),
])
def test_shell_refuses_before_making_the_workdir(capsys, made, venv_python, tmp_path, state, message):
    work = tmp_path / "work"
    code, _, err = run_cli(capsys, ["shell", state, *repo_flags(made, work), "--python", venv_python, "--", "true"])
    assert code == 1 and message in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not work.exists()


def test_releases_refuses_before_making_the_workdir(capsys, tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()  # a folder of wheels with no jax in it
    work = tmp_path / "work"
    code, _, err = run_cli(capsys, ["releases", "--from", "0.4.13", "--to", "0.4.20", "--find-links", str(wheels),
                                    "--bench-cmd", "python bench.py", "--deps-today", "--workdir", str(work)])
    assert code == 1 and "no jax" in err, err
    assert not work.exists()
