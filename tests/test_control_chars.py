"""Commit subjects with terminal control sequences (issue 33): an ESC sequence, a carriage return
and a bidirectional override in real commits' subjects reach no terminal raw — the shell's banner,
the bisection's lines and ``git bisect`` log, errors — and no markdown; each reads as its escape.
Real git, builds and wheels (the demo's stand-ins), real SQLite. hourly runs in this process, what
reaches its file descriptors 1 and 2 read back (capfd: its own output and its child processes'
alike, as a terminal would get them)."""

from __future__ import annotations

import subprocess

from test_manual import env, flags, hourly

from hourly.cli import main
from hourly.demo.repos import Change, make_repos

RED = "\x1b[31m[XLA] red subject\x1b[0m \x1b]0;owned\x07"  # a colour, and a window-title change
CR = "jax: harmless\rjax: overwritten"
BIDI = "[XLA] \u202egnirts desrever"
RAW = ("\x1b", "\r", "\u202e", "\x07")


def test_subjects_with_control_characters_are_shown_escaped_everywhere(tmp_path, venv_python, capfd, monkeypatch):
    made = make_repos(tmp_path / "repos", [
        Change("xla", "2023-08-24T01:20:00Z", BIDI, {"x/1.txt": "1\n"}),
        Change("jax", "2023-08-24T01:40:00Z", CR, {"j/1.txt": "1\n"}),
        Change("xla", "2023-08-24T02:20:00Z", RED, {"perf/slow.txt": "0.9\n"}),
        Change("xla", "2023-08-24T03:20:00Z", "[XLA] after", {"x/2.txt": "1\n"}),
    ])
    work = tmp_path / "work"
    common = [*flags(made, venv_python, work), "--bench-cmd", f"python3 {made.bench_script}"]

    for name, value in env().items():
        monkeypatch.setenv(name, value)
    from hourly.commands.common import console, err_console
    here = not (console.color_system or err_console.color_system)  # else made on a colour terminal (pytest -s)

    def run(*args: str) -> subprocess.CompletedProcess:
        if not here:  # the escapes of this process's consoles' colours would read as raw ESCs: a process of its own
            return subprocess.run(hourly(*args), capture_output=True, text=True, env=env(), timeout=600)
        capfd.readouterr()
        code = main(list(args))
        out, err = capfd.readouterr()
        return subprocess.CompletedProcess(list(args), code, out, err)

    got = run("bisect", "--good", "2023-08-24T01:00Z", "--bad", "2023-08-24T04:00Z", *common)
    assert got.returncode == 0, got.stderr
    culprit = made.shas[RED]
    assert culprit in got.stdout
    for raw in RAW:
        assert raw not in got.stdout and raw not in got.stderr, repr(raw)
    assert "\\x1b[31m[XLA] red subject\\x1b[0m \\x1b]0;owned\\x07" in got.stdout  # read, as its escape
    log = run("bisect", "--log", "--good", "2023-08-24T01:00Z", "--bad", "2023-08-24T04:00Z", *common)
    assert log.returncode == 0, log.stderr
    assert f"git bisect bad {culprit}" in log.stdout and not any(raw in log.stdout for raw in RAW)

    shell = run("shell", "xla@" + culprit[:10] + ",jax@" + made.shas[CR][:10], *flags(made, venv_python, work), "--", "true")
    assert shell.returncode == 0, shell.stderr
    assert "\\x1b[31m[XLA] red subject\\x1b[0m \\x1b]0;owned\\x07" in shell.stderr  # the banner
    assert "jax: harmless" in shell.stderr  # (git's one-line subject ends at the carriage return)
    assert not any(raw in shell.stderr + shell.stdout for raw in RAW)

    rep = run("report", "--workdir", str(work))
    assert rep.returncode == 0, rep.stderr
    md = (work / "report" / "report.md").read_text()
    assert culprit[:12] in md and "red subject" in md
    assert not any(raw in md for raw in RAW)

    # an error naming a path with an ESC in it
    odd = tmp_path / "odd\x1b[2Jdir"
    err = run("show", "--workdir", str(odd))
    assert err.returncode == 1 and "\\x1b[2J" in err.stderr and "\x1b" not in err.stderr
