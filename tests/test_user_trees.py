"""The user's trees and folders under --force and --wheel-dir (issue 33, items 7 and 8): real git
(the version this machine has: 2.39 refuses an exclude pathspec naming an ignored folder), the
demo's real repositories, builds and wheels, real SQLite."""

from __future__ import annotations

import json
import subprocess

from hourly.cli import main


def run_cli(capsys, argv):
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def git(repo, *args) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


# -- item 7: --force in a JAX tree whose .gitignore lists dist/ ---------------------------------------

def test_force_stashes_an_untracked_file_beside_an_ignored_wheel_folder_and_gives_it_back(capsys, scan_args, made):
    """The demo's JAX tree ignores dist/ (as JAX does) and the user's own wheels lie there; the
    default --wheel-dir is that folder, a place hourly keeps. git 2.39's ``stash push -- :/
    ':(exclude)dist'`` refused the ignored path, hourly exited 1 with git's hint, and the user's
    file was left staged. Now the scan runs, the file comes back untracked, the index as it was."""
    assert "dist/" in (made.jax / ".gitignore").read_text()
    (made.jax / "dist").mkdir()
    (made.jax / "dist" / "mine-0.1-py3-none-any.whl").write_text("the user's own wheel\n")
    (made.jax / "notes.txt").write_text("mine\n")
    (made.jax / "README").write_text("my staged edit\n")
    git(made.jax, "add", "README")  # a staged change stays staged
    index_before = git(made.jax, "status", "--porcelain")
    assert "?? notes.txt" in index_before and "M  README" in index_before
    code, out, err = run_cli(capsys, scan_args("Aug 24 2023 12:00", "Aug 24 2023 13:00", "--force", "--json"))
    assert code == 0, err
    assert "hint:" not in err and [p["status"] for p in json.loads(out)["points"]] == ["ok", "ok"]
    assert (made.jax / "notes.txt").read_text() == "mine\n"
    assert (made.jax / "dist" / "mine-0.1-py3-none-any.whl").read_text() == "the user's own wheel\n"
    assert git(made.jax, "status", "--porcelain") == index_before  # nothing staged that was not
    assert git(made.jax, "stash", "list") == ""


def test_a_stash_git_refuses_is_one_line_and_leaves_the_index_and_the_files_as_they_were(capsys, scan_args, made):
    """Whatever git refuses when hourly stashes (here: another git's lock file left in the tree),
    the error is one line of hourly's naming the tree, never git's raw output, and the tree's
    index and files are as they were."""
    (made.jax / "notes.txt").write_text("mine\n")
    (made.jax / "README").write_text("edited\n")
    lock = made.jax / ".git" / "index.lock"
    lock.write_text("")
    before = git(made.jax, "status", "--porcelain")
    code, _, err = run_cli(capsys, scan_args("Aug 24 2023 12:00", "Aug 24 2023 13:00", "--force"))
    assert code == 1, err
    line = err.strip().splitlines()[-1]  # after the scan's progress line
    assert f"git could not stash the changes in jax tree {made.jax}" in line and "index.lock" in line
    assert "the index is as it was" in line and "hint:" not in line
    lock.unlink()
    assert git(made.jax, "status", "--porcelain") == before
    assert (made.jax / "notes.txt").read_text() == "mine\n" and (made.jax / "README").read_text() == "edited\n"
    assert git(made.jax, "stash", "list") == ""


# -- item 8: --wheel-dir naming a file -----------------------------------------------------------------

def test_a_wheel_dir_that_is_a_file_is_one_line_with_a_fresh_cache_and_with_cached_wheels(capsys, scan_args,
                                                                                           tmp_path):
    plain = tmp_path / "wheels.txt"
    plain.write_text("not a folder\n")
    args = scan_args("Aug 24 2023 12:00", "Aug 24 2023 13:00", "--wheel-dir", str(plain))
    code, _, err = run_cli(capsys, args)  # a fresh cache: the build would write there
    assert code == 2, err
    assert "Traceback" not in err and "FileExistsError" not in err and len(err.strip().splitlines()) == 1
    assert f"--wheel-dir {plain} is a file, not a directory" in err
    assert not (tmp_path / "work").exists()  # refused before anything was made
    assert plain.read_text() == "not a folder\n"
    # the same wheels cached by a scan into another workdir: nothing would be built, still refused
    ok = scan_args("Aug 24 2023 12:00", "Aug 24 2023 13:00", "--json")
    ok[ok.index("--workdir") + 1] = str(tmp_path / "other")
    assert run_cli(capsys, ok)[0] == 0
    code, _, err = run_cli(capsys, args + ["--json"])
    assert code == 2 and f"--wheel-dir {plain} is a file, not a directory" in err
    under = scan_args("Aug 24 2023 12:00", "Aug 24 2023 13:00", "--wheel-dir", str(plain / "sub"))
    code, _, err = run_cli(capsys, under)
    assert code == 2 and f"is under {plain}, which is a file" in err
