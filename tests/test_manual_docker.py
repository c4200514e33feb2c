"""``hourly bisect --manual``, ``hourly mark`` and ``hourly shell`` inside ``hourly container``:
a nightly-like image of the real Docker engine (the hunt tests' day image: busybox, git, a real
Python with pip, the stand-in trees at /opt/xla-source and /opt/jax-source, that day's wheel), the
person answering at a real pseudo-terminal through ``docker exec -it``."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from hourly.demo.repos import make_repos, write_build_script

pytest_plugins = ["tests.conftest_docker"] if __package__ else ["conftest_docker"]

if __package__:
    from .test_hunt_docker import CHANGES, CULPRIT, _day_layer
    from .test_manual import PROBE_LINE, PROMPT, Pty
    from .waiting import wait_for
else:
    from test_hunt_docker import CHANGES, CULPRIT, _day_layer
    from test_manual import PROBE_LINE, PROMPT, Pty
    from waiting import wait_for

ROOT = Path(__file__).resolve().parent.parent
DAY = "2023-08-23"  # the culprit lands at 10:00 that day; the image's trees stand at its end


@pytest.fixture(scope="module")
def day_image(docker_client, python_image, test_scan_id, tmp_path_factory):
    root = tmp_path_factory.mktemp("manual")
    made = make_repos(root / "repos", CHANGES, start="2023-08-20T12:00:00Z")
    standin = write_build_script(root / "standin", Path("/opt/xla-source"))
    host_build = write_build_script(root / "hostbuild", Path("../xla-source"))
    base = python_image  # a Python with numpy, scipy and pip (conftest_docker)
    ref = f"localhost/hourly-test/manual-{test_scan_id}:nightly-{DAY}"
    c = docker_client.containers.create(base, command=["true"])
    try:
        c.put_archive("/", _day_layer(made, DAY, root / "days", host_build))
        repo, tag = ref.rsplit(":", 1)
        c.commit(repository=repo, tag=tag, changes=[
            f"ENV PATH={docker_client.images.get(base).attrs['Config']['Env'][0].split('=', 1)[1]}"])
    finally:
        c.remove(force=True)
    try:
        yield made, ref, standin
    finally:
        try:
            docker_client.images.remove(ref, force=True)
        except Exception:
            pass


def run_hourly(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hourly", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}, timeout=400)


def inside(name: str, *cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", "exec", name, *cmd], capture_output=True, text=True, timeout=300)


@pytest.mark.docker
def test_manual_bisection_mark_and_shell_inside_hourly_container(docker_client, day_image, tmp_path):
    made, ref, standin = day_image
    work = tmp_path / "work"
    started = run_hourly("container", "--image", ref, "--no-pull", "--gpus", "none", "--name", f"manual-{tmp_path.name}",
                         "--mount", f"{standin.parent}:{standin.parent}",
                         "--mount", f"{made.upstream['xla'].parent}:{made.upstream['xla'].parent}",
                         "--workdir", str(work), "--json", cwd=tmp_path)
    assert started.returncode == 0, started.stderr
    info = json.loads(started.stdout)
    name, wd = info["name"], info["workdir"]
    try:
        heads = {n: inside(name, "git", "-C", f"/opt/{n}-source", "rev-parse", "HEAD").stdout.strip()
                 for n in ("xla", "jax")}
        t = Pty(["docker", "exec", "-it", "-e", "COLUMNS=200", name, "hourly", "bisect", "--manual",
                 "--good", f"{DAY}T00:00Z", "--bad", f"{DAY}T23:00Z", "--build-cmd", str(standin), "--workdir", wd])
        asked, marked = [], False
        while True:
            m = t.expect(PROBE_LINE.pattern + "|culprit: ", timeout=240)
            if m.group(0).startswith("culprit"):
                break
            t.expect(re.escape(PROMPT))
            got = json.loads(inside(name, "python3", "-c", "import jax_demo, json; print(json.dumps("
                                    "[jax_demo.XLA_SHA, jax_demo.FACTOR]))").stdout)
            assert got[0].startswith(m["xla"])  # the probe is installed into the image's python3
            verdict = "bad" if got[1] < 0.99 else "good"
            asked.append(verdict)
            if not marked:  # the first answer from a second shell in the container
                res = inside(name, "hourly", "mark", verdict, "--workdir", wd)
                assert res.returncode == 0 and "goes on" in res.stdout, res.stdout + res.stderr
                marked = True
            else:
                t.send(verdict)
        assert t.finish(timeout=120) == 0, t.text[-2000:]
        assert "bad" in asked and len(asked) >= 2
        with sqlite3.connect(work / "hourly.sqlite") as c:
            (result,) = c.execute("SELECT result FROM bisections WHERE status='done'").fetchone()
        a = json.loads(result)
        assert a["culprit"]["sha"] == made.shas[CULPRIT] and a["mode"] == "manual"
        reasons = [p["reason"] for p in a["probes"] if p.get("manual")]
        assert any("hourly mark" in r for r in reasons) and any("typed at the prompt" in r for r in reasons)
        # the trees are back where the image had them
        assert {n: inside(name, "git", "-C", f"/opt/{n}-source", "rev-parse", "HEAD").stdout.strip()
                for n in ("xla", "jax")} == heads
        # a shell at the first bad state, one command there: the build in its own environment
        sh = inside(name, "hourly", "shell", "bad", "--build-cmd", str(standin), "--workdir", wd, "--",
                    "python3", "-c", "import jax_demo, sys; print('STATE', jax_demo.XLA_SHA, sys.prefix)")
        assert sh.returncode == 0, sh.stderr
        _, xla, prefix = next(ln for ln in sh.stdout.splitlines() if ln.startswith("STATE")).split()
        assert xla == a["first_bad"]["xla"] == made.shas[CULPRIT] and "/shells/" in prefix
        assert {n: inside(name, "git", "-C", f"/opt/{n}-source", "rev-parse", "HEAD").stdout.strip()
                for n in ("xla", "jax")} == heads
    finally:
        subprocess.run(["docker", "stop", "-t", "1", name], capture_output=True, timeout=120)
        # it removes itself once stopped: gone before the session counts what it left
        wait_for(lambda: not docker_client.api.containers(all=True, filters={"name": name}), timeout=60)
