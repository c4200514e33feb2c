"""``hourly bisect --manual``, ``hourly mark`` and ``hourly shell``, driven through a real
pseudo-terminal (os.openpty; no pexpect here) on the demo's real repositories, builds and wheel:
the person's answers come from looking at the installed build, as a person would."""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import signal
import sqlite3
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from hourly.cli import main
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[1]
FUSION = "[XLA:GPU] Change priority fusion heuristic"  # the demo's planted XLA regression (factor 0.93)
PROBE_LINE = re.compile(r"(probe|mixed pair[^:]*): xla (?P<xla>[0-9a-f]{12}) jax (?P<jax>[0-9a-f]{12})")
PROMPT = "verdict [good/bad/skip/unsure]: "


def env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT), TERM="dumb", COLUMNS="200")


class Pty:
    """A process on a pseudo-terminal of its own (its controlling terminal): what it prints is read
    back, lines are typed into it."""

    def __init__(self, argv: list[str], environ: dict[str, str] | None = None):
        master, slave = os.openpty()

        def controlling() -> None:
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=environ or env(),
                                     start_new_session=True, preexec_fn=controlling, close_fds=True)
        os.close(slave)
        self.fd = master
        self.text = ""
        self.pos = 0  # where the next expect starts looking

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the other side is closed, the process is gone
            return False
        if not data:
            return False
        self.text += data.decode(errors="replace").replace("\r\n", "\n")
        return True

    def expect(self, pattern: str, timeout: float = 90) -> re.Match:
        rx = re.compile(pattern)
        end = time.time() + timeout
        while True:
            m = rx.search(self.text, self.pos)
            if m:
                self.pos = m.end()
                return m
            if time.time() > end or not self._read(0.2):
                m = rx.search(self.text, self.pos)
                if m:
                    self.pos = m.end()
                    return m
                raise AssertionError(f"{pattern!r} not seen; the terminal showed:\n{self.text[-3000:]}")

    def send(self, line: str) -> None:
        os.write(self.fd, (line + "\n").encode())

    def finish(self, timeout: float = 90) -> int:
        end = time.time() + timeout
        while self.proc.poll() is None and time.time() < end:
            self._read(0.2)
        while self._read(0.05):  # the rest of what it printed
            if self.proc.poll() is not None and not select.select([self.fd], [], [], 0)[0]:
                break
        rc = self.proc.wait(timeout=5)
        os.close(self.fd)
        return rc

    def kill9(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        os.close(self.fd)


def hourly(*args: str) -> list[str]:
    return [sys.executable, "-m", "hourly", *args]


def flags(made, python: str, work: Path) -> list[str]:
    return ["--xla-repo", str(made.xla), "--jax-repo", str(made.jax), "--build-cmd", str(made.build_script),
            "--python", python, "--workdir", str(work)]


def head(repo: Path) -> str:
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


def branch(repo: Path) -> str:
    return subprocess.run(["git", "-C", str(repo), "symbolic-ref", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()


def installed(python: str) -> dict:
    """What the build installed into ``python`` says about itself (the demo wheel records its commits)."""
    out = subprocess.run([python, "-c", "import jax_demo, json; print(json.dumps({'xla': jax_demo.XLA_SHA, "
                          "'jax': jax_demo.JAX_SHA, 'factor': jax_demo.FACTOR}))"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def maybe_installed(python: str) -> dict | None:
    try:
        return installed(python)
    except subprocess.CalledProcessError:
        return None


def judge(python: str) -> str:
    """A person's verdict: the installed build is slow (the planted factor) or not."""
    return "bad" if installed(python)["factor"] < 0.99 else "good"


def answer_row(work: Path) -> dict:
    with sqlite3.connect(work / "hourly.sqlite") as c:
        (result,) = c.execute("SELECT result FROM bisections WHERE status='done' ORDER BY id DESC LIMIT 1").fetchone()
    return json.loads(result)


def probe_rows(work: Path) -> list[tuple]:
    with sqlite3.connect(work / "hourly.sqlite") as c:
        return c.execute("SELECT role, xla, jax, verdict, reason, builds FROM bisect_probes ORDER BY seq").fetchall()


WINDOW = ["--good", "2023-08-24T00:00Z", "--bad", "2023-08-24T15:00Z"]


def assert_manual_answer(capsys, made, venv_python, work, asked: list, text: str) -> None:
    """What every finished manual bisection of the planted fusion must show: a real search (more
    than one probe, none twice), the culprit named, the verdicts marked as the person's in the
    answer, its text and its --log, and the trees back on their branches."""
    assert len(asked) == len(set(asked)) >= 2  # a real search: more than one probe, none twice
    a = answer_row(work)
    assert a["culprit"]["sha"] == made.shas[FUSION] and a["culprit"]["subject"] == FUSION
    assert a["mode"] == "manual" and a["manual"]["verdicts"] == len(asked)
    assert all(p["manual"] for p in a["probes"] if p["role"] == "probe")
    assert "manual: " in text and FUSION in text  # the answer says the verdicts were the person's
    assert branch(made.xla) == "main" and branch(made.jax) == "main"  # trees back on their branches
    # --log marks the manual verdicts (comments git bisect replay skips); read from the store, in this process
    capsys.readouterr()
    code = main(["bisect", "--manual", "--log", *WINDOW, *flags(made, venv_python, work)])
    log = capsys.readouterr()
    assert code == 0, log.err
    assert "(manual verdict)" in log.out and f"git bisect bad {made.shas[FUSION]}" in log.out


# quick: test_ctrl_c_then_kill_9_at_the_prompt_each_resume_at_the_same_probe_without_building_it_again
# runs a manual bisection at a terminal to the planted commit with every check of this one (each probe
# installed and the trees at it, none asked twice, the answer's manual fields, the trees back, --log)
@pytest.mark.slow
def test_a_manual_bisection_at_a_terminal_finds_the_planted_commit(made, venv_python, tmp_path, capsys):
    work = tmp_path / "work"
    t = Pty(hourly("bisect", "--manual", *WINDOW, *flags(made, venv_python, work)))
    asked = []
    while True:
        m = t.expect(r"probe: xla (?P<xla>[0-9a-f]{12}) jax (?P<jax>[0-9a-f]{12})|culprit: ")
        if m.group(0).startswith("culprit"):
            break
        t.expect(re.escape(PROMPT))
        got = installed(venv_python)  # the probe is installed, and the trees stand at it
        assert got["xla"].startswith(m["xla"]) and got["jax"].startswith(m["jax"])
        assert head(made.xla).startswith(m["xla"]) and head(made.jax).startswith(m["jax"])
        asked.append(m["xla"])
        t.send(judge(venv_python))
    assert t.finish() == 0, t.text[-2000:]
    assert_manual_answer(capsys, made, venv_python, work, asked, t.text)


def test_unsure_and_a_word_that_is_no_verdict(made, venv_python, tmp_path):
    work = tmp_path / "work"
    t = Pty(hourly("bisect", "--manual", *WINDOW, *flags(made, venv_python, work)))
    first = t.expect(PROBE_LINE.pattern)
    t.expect(re.escape(PROMPT))
    t.send("maybe")
    t.expect(r"not a verdict: 'maybe' — type good, bad, skip or unsure")
    t.send("unsure")  # left out of the search: its neighbours are asked instead
    asked = [(first["xla"], first["jax"])]
    while True:
        m = t.expect(PROBE_LINE.pattern + "|culprit: ")
        if m.group(0).startswith("culprit"):
            break
        t.expect(re.escape(PROMPT))
        asked.append((m["xla"], m["jax"]))
        t.send(judge(venv_python))
    assert t.finish() == 0, t.text[-2000:]
    assert len(asked) == len(set(asked))  # the unsure state was not asked again
    a = answer_row(work)
    assert a["culprit"]["sha"] == made.shas[FUSION]  # the unsure state lies away from the step
    (row,) = [p for p in a["probes"] if (p["xla"][:12], p["jax"][:12]) == asked[0]]
    assert row["verdict"] == "unsure" and row["manual"]


def test_ctrl_c_then_kill_9_at_the_prompt_each_resume_at_the_same_probe_without_building_it_again(
        made, venv_python, tmp_path, capsys):
    """Ctrl-C at the prompt gives the trees back at once (exit 130) and the same command resumes at
    that probe; kill -9 at the next prompt keeps the verdict given and resumes at the probe it was
    waiting at, installed from the build cache. (One bisection for both stops: the two tests that
    each started their own paid for its ends and first probe twice.)"""
    work = tmp_path / "work"
    cmd = hourly("bisect", "--manual", *WINDOW, *flags(made, venv_python, work))
    t = Pty(cmd)
    first = t.expect(PROBE_LINE.pattern)
    t.expect(re.escape(PROMPT))
    os.write(t.fd, b"\x03")  # Ctrl-C typed at the terminal: SIGINT to its foreground process group
    t.expect(r"interrupted\. Finished points are stored; resume with:")
    assert t.finish() == 130
    assert branch(made.xla) == "main" and branch(made.jax) == "main"  # the trees are given back at once
    t = Pty(cmd)
    m = t.expect(PROBE_LINE.pattern + r".*\[resumed at the probe it was waiting at\]")
    assert (m["xla"], m["jax"]) == (first["xla"], first["jax"])
    t.expect(re.escape(PROMPT))
    got = installed(venv_python)  # the probe it resumed at is installed, and the trees stand at it
    assert got["xla"].startswith(m["xla"]) and got["jax"].startswith(m["jax"])
    assert head(made.xla).startswith(m["xla"]) and head(made.jax).startswith(m["jax"])
    t.send(judge(venv_python))
    second = t.expect(PROBE_LINE.pattern)
    t.expect(re.escape(PROMPT))
    assert (second["xla"], second["jax"]) != (first["xla"], first["jax"])
    t.kill9()  # at the prompt: the verdict on the first probe is stored, the second waits
    rows = probe_rows(work)
    assert [r[0] for r in rows] == ["end", "end", "probe"] and rows[2][4].startswith("manual verdict")
    builds_before = sorted(p.name for p in (work / "logs").glob("build-*.log"))

    again = Pty(cmd)
    m = again.expect(PROBE_LINE.pattern + r".*\[resumed at the probe it was waiting at\]")
    assert (m["xla"], m["jax"]) == (second["xla"], second["jax"])
    again.expect(r"build: installed from the build cache")
    again.expect(re.escape(PROMPT))
    assert sorted(p.name for p in (work / "logs").glob("build-*.log")) == builds_before  # nothing rebuilt
    asked = [first["xla"]]
    while True:
        got = installed(venv_python)  # the probe is installed, and the trees stand at it
        assert got["xla"].startswith(m["xla"]) and got["jax"].startswith(m["jax"])
        assert head(made.xla).startswith(m["xla"]) and head(made.jax).startswith(m["jax"])
        asked.append(m["xla"])
        again.send(judge(venv_python))
        m = again.expect(PROBE_LINE.pattern + "|culprit: ")
        if m.group(0).startswith("culprit"):
            break
        again.expect(re.escape(PROMPT))
    assert again.finish() == 0, again.text[-2000:]
    probed = [(r[1], r[2]) for r in probe_rows(work) if r[0] == "probe"]
    assert len(probed) == len(set(probed))  # the first verdict was kept, no probe asked twice
    assert_manual_answer(capsys, made, venv_python, work, asked, again.text)


def test_hourly_mark_from_a_second_process_answers_the_waiting_bisection(made, venv_python, tmp_path, scan_args):
    work = tmp_path / "work"
    assert main(scan_args("Aug 24 2023 12:00", "Aug 24 2023 15:00", "--json")) == 0  # a stored scan with one step
    nobody = subprocess.run(hourly("mark", "good", "--workdir", str(work)), capture_output=True, text=True, env=env())
    assert nobody.returncode == 1 and "no manual bisection waits for a verdict" in nobody.stderr
    # over the stored scan's windows (no --good/--bad); nobody types at this terminal
    t = Pty(hourly("bisect", "--manual", "--workdir", str(work)))
    marks = []
    while True:
        m = t.expect(PROBE_LINE.pattern + "|culprit: ")
        if m.group(0).startswith("culprit"):
            break
        t.expect(re.escape(PROMPT))
        verdict = judge(venv_python)
        got = subprocess.run(hourly("mark", verdict, "--workdir", str(work)), capture_output=True, text=True,
                             env=env(), timeout=60)
        assert got.returncode == 0, got.stderr
        assert f"jax {m['jax']} {verdict}; the bisection waiting there" in got.stdout
        t.expect(rf"{verdict}: from pid \d+")
        marks.append(verdict)
    assert t.finish() == 0, t.text[-2000:]
    assert marks and "bad" in marks
    a = answer_row(work)
    assert a["culprit"]["sha"] == made.shas[FUSION]
    assert a["window"]["origin"] == "detect"  # the stored scan's window
    manual = [p for p in a["probes"] if p.get("manual")]
    assert len(manual) == len(marks) and all("hourly mark: pid" in p["reason"] for p in manual)
    # the report says the verdicts were a person's, and never that both ends were re-measured
    rep = subprocess.run(hourly("report", "--workdir", str(work)), capture_output=True, text=True, env=env(),
                         timeout=300)
    assert rep.returncode == 0, rep.stderr
    md = (work / "report" / "report.md").read_text()
    assert "by hand (`hourly bisect --manual`)" in md and "hourly mark: pid" in md
    assert "confirmed by re-measuring both ends" not in md


def test_shell_command_runs_at_the_state_in_its_own_environment(made, venv_python, tmp_path, capfd):
    """hourly runs in this process (what is checked is the command's state and environment, not
    hourly's process); the command is a process of its own, its output read from the file descriptors."""
    work = tmp_path / "work"
    xla, jax = made.shas[FUSION], head(made.jax)
    untouched = maybe_installed(venv_python)  # what --python has (other tests of the session install there)
    probe = ("import jax_demo, sys, os; print('STATE', jax_demo.XLA_SHA, jax_demo.JAX_SHA, sys.prefix); "
             "print('ENV', os.environ['HOURLY_STATE'])")
    capfd.readouterr()
    code = main(["shell", f"xla@{xla[:10]},jax@{jax[:10]}", *flags(made, venv_python, work), "--", "python", "-c", probe])
    got = capfd.readouterr()
    assert code == 0, got.err
    line = next(ln for ln in got.out.splitlines() if ln.startswith("STATE"))
    _, x, j, prefix = line.split()
    assert (x, j) == (xla, jax)
    assert Path(prefix).is_relative_to(work / "shells")  # its own environment, not --python's
    assert f"ENV xla@{xla},jax@{jax}" in got.out
    assert FUSION in got.err  # both commits named, subjects verbatim
    assert branch(made.xla) == "main" and branch(made.jax) == "main" and "trees restored" in got.err
    assert maybe_installed(venv_python) == untouched  # --python never received the build
    # a time names the state that stood then; the command's exit status is hourly's
    code = main(["shell", "2023-08-24T13:30Z", *flags(made, venv_python, work), "--", "sh", "-c",
                 'test "$(git -C "$HOURLY_XLA_DIR" rev-parse HEAD)" = "$HOURLY_XLA_SHA" && exit 7'])
    got = capfd.readouterr()
    assert code == 7, got.err
    assert f"xla {made.shas[FUSION]}" in got.err
    assert branch(made.xla) == "main"


def test_an_interactive_shell_at_a_stored_step_and_the_trees_after_it(made, venv_python, tmp_path, scan_args, capfd):
    work = tmp_path / "work"
    # a stored scan with one step (its last pair an edge step, not measured again: test_scan's edge tests;
    # two pairs of one run each, so the scan says it cannot tell whether the step is real: exit 1)
    assert main(scan_args("Aug 24 2023 12:00", "Aug 24 2023 15:00", "--json", "--no-confirm-edges")) == 1
    environ = dict(env(), SHELL="/bin/bash", HOME=str(tmp_path))  # no ~/.bashrc of the machine's
    t = Pty(hourly("shell", "bad", "--workdir", str(work)), environ)
    t.expect(r"\(hourly xla@(?P<xla>[0-9a-f]{8}) jax@(?P<jax>[0-9a-f]{8})\) ")  # the prompt names the state
    t.send("python -c 'import jax_demo; print(\"SHA\", jax_demo.XLA_SHA)'; echo edit >> \"$HOURLY_XLA_DIR/README\"")
    sha = t.expect(r"SHA (?P<sha>[0-9a-f]{40})")["sha"]
    assert sha == made.shas["[XLA] Fix typo in comment"]  # the scan's point after the step (14:00)
    assert head(made.xla) == sha  # the tree stands at the state meanwhile
    capfd.readouterr()
    held = main(["shell", "good", "--workdir", str(work), "--", "true"])  # hourly in this process, the shell in its own
    assert held == 1 and "in use by another hourly" in capfd.readouterr().err  # the trees are locked
    t.send("exit 5")
    assert t.finish() == 5, t.text[-2000:]
    assert branch(made.xla) == "main" and branch(made.jax) == "main"
    assert "edit" not in (made.xla / "README").read_text()  # restored; the edit kept as a patch
    (patch,) = (work / "shells").glob("*/xla-edits-*.patch")
    assert "+edit" in patch.read_text()
    assert wait_for(lambda: main(["shell", "good", "--workdir", str(work), "--", "true"]) == 0, timeout=60)
