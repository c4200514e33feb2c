"""``hourly shell STATE`` as a person uses it (issue 33, item 4): an interactive bash on a real
pseudo-terminal, a ``~/.bashrc`` that puts its own Python first on PATH (pyenv, conda, a venv
activated there), and files made in the shell; the demo's real repositories, builds and wheels."""

from __future__ import annotations

import subprocess

from test_manual import FUSION, Pty, branch, env, flags, head, hourly


def fake_python_home(tmp_path):
    """A HOME whose .bashrc prepends a folder with a ``python`` and ``python3`` of its own (as
    pyenv's shims do) and sets VIRTUAL_ENV to another environment."""
    home = tmp_path / "home"
    shims = home / "shims"
    shims.mkdir(parents=True)
    for name in ("python", "python3"):
        (shims / name).write_text("#!/bin/sh\necho WRONG-PYTHON-FROM-BASHRC\nexit 9\n")
        (shims / name).chmod(0o755)
    (home / ".bashrc").write_text(f'export PATH="{shims}:$PATH"\nexport VIRTUAL_ENV="{home}/other-venv"\n'
                                  "USER_RC_READ=yes\n")
    return home


def test_the_state_python_wins_over_a_bashrc_that_changes_path(made, venv_python, tmp_path):
    work = tmp_path / "work"
    home = fake_python_home(tmp_path)
    xla, jax = made.shas[FUSION], head(made.jax)
    t = Pty(hourly("shell", f"xla@{xla[:10]},jax@{jax[:10]}", *flags(made, venv_python, work)),
            dict(env(), SHELL="/bin/bash", HOME=str(home)))
    t.expect(r"\(hourly xla@[0-9a-f]{8} jax@[0-9a-f]{8}\) ")
    t.send("echo RC=$USER_RC_READ VENV=$VIRTUAL_ENV; "
           "python -c 'import jax_demo, sys; print(\"STATE\", jax_demo.XLA_SHA, sys.prefix)'; "
           "python3 -c 'import sys; print(\"PY3\", sys.prefix)'")
    rc_line = t.expect(r"RC=(?P<rc>[a-z]*) VENV=(?P<venv>/\S+)")  # not the echoed command
    assert rc_line["rc"] == "yes"  # the user's own rc file was read (aliases, functions, prompt bits)
    state = t.expect(r"STATE (?P<xla>[0-9a-f]{40}) (?P<prefix>\S+)")
    assert state["xla"] == xla and state["prefix"].startswith(str(work / "shells"))
    assert rc_line["venv"] == state["prefix"]
    assert t.expect(r"PY3 (?P<prefix>/\S+)")["prefix"] == state["prefix"]
    assert "WRONG-PYTHON-FROM-BASHRC" not in t.text
    t.send("exit")
    assert t.finish() == 0, t.text[-2000:]
    assert branch(made.xla) == "main" and branch(made.jax) == "main"


def test_an_untracked_file_made_in_the_shell_is_reported_and_kept(made, venv_python, tmp_path):
    """A file made in the shell is no edit of a tracked file (those are saved as a patch): it is
    named on exit with where it is, a copy is kept beside the patches, and the line says what
    happens to it next (the next run refuses the tree until it is moved)."""
    work = tmp_path / "work"
    xla, jax = made.shas[FUSION], head(made.jax)
    t = Pty(hourly("shell", f"xla@{xla[:10]},jax@{jax[:10]}", *flags(made, venv_python, work)),
            dict(env(), SHELL="/bin/bash", HOME=str(tmp_path)))
    t.expect(r"\(hourly xla@[0-9a-f]{8} jax@[0-9a-f]{8}\) ")
    t.send('echo my notes > "$HOURLY_JAX_DIR/notes.txt"; mkdir "$HOURLY_XLA_DIR/scratch"; '
           'echo t > "$HOURLY_XLA_DIR/scratch/t.py"; exit')
    assert t.finish() == 0, t.text[-2000:]
    out = t.text
    assert f"jax tree: notes.txt, made in the shell, is untracked: left in the tree ({made.jax / 'notes.txt'})" in out
    assert f"xla tree: scratch/, made in the shell, is untracked: left in the tree ({made.xla / 'scratch'})" in out
    assert "refuses the tree until you move it" in out
    copies = list((work / "shells").glob("*/jax-untracked-*/notes.txt"))
    assert len(copies) == 1 and copies[0].read_text() == "my notes\n"
    assert str(copies[0].parent) in out
    assert (made.jax / "notes.txt").read_text() == "my notes\n"
    assert (work / "shells").glob("*/xla-untracked-*/scratch/t.py")
    # what the line promised: the next run refuses the tree until the file is moved
    code = subprocess.run(hourly("shell", f"xla@{xla[:10]},jax@{jax[:10]}", *flags(made, venv_python, work),
                                 "--", "true"), capture_output=True, text=True, env=env(), timeout=120)
    assert code.returncode == 1 and "scratch/ (untracked)" in code.stderr  # the xla tree is taken first
