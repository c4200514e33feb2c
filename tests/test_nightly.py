"""hourly nightly / hourly container: pure parts, the store migration, and the real CLI against
a real Docker engine with locally made nightly images and a loopback registry."""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

import pytest

from hourly.adapters.proc import run
from hourly.adapters.store import SCHEMA_VERSION, Store
from hourly.errors import UserError
from hourly.measure.benchmark import BenchResult, Run, run_status
from hourly.model import NightlyPoint, Status
from hourly.nightly import plan as N

pytest_plugins = ["tests.conftest_docker"] if __package__ else ["conftest_docker"]

if __package__:
    from .docker_fixtures import NightlySpec, add_site_packages, make_image
    from .stop_after import stop_after_first
else:
    from docker_fixtures import NightlySpec, add_site_packages, make_image
    from stop_after import stop_after_first

ROOT = Path(__file__).resolve().parent.parent

# Runs the real CLI in a real process, as a user would.
def hourly(*args, cwd, timeout=240):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    return run([sys.executable, "-m", "hourly", *args], cwd=cwd, env=env, timeout=timeout,
               check=False)


def P(d, status, value=None):
    return NightlyPoint(d, f"img:{d}", Status(status), value=value,
                          xla=f"x{d}", jax=f"j{d}")


# ---------------------------------------------------------------- pure parts

def test_every_off_the_window_end_still_measures_the_last_date():
    """issue 33 item 1: --every 2 from 07-06 to 07-09 gave 07-06 and 07-08 and dropped the window's
    last day (a step on 07-09 was never seen); the end date is always measured."""
    assert N.date_range("2023-07-06", "2023-07-09", every=2) == [date(2023, 7, 6), date(2023, 7, 8), date(2023, 7, 9)]
    assert N.date_range("2023-07-06", "2023-07-08", every=7) == [date(2023, 7, 6), date(2023, 7, 8)]


def test_date_range_includes_both_ends_and_steps():
    assert N.date_range("2023-07-06", "2023-07-08") == [date(2023, 7, 6), date(2023, 7, 7), date(2023, 7, 8)]
    assert N.date_range("Jul 6 2023", "2023-07-12", every=3) == [date(2023, 7, 6), date(2023, 7, 9), date(2023, 7, 12)]
    assert N.date_range("2023-07-06", "2023-07-06") == [date(2023, 7, 6)]
    with pytest.raises(UserError, match="before"):
        N.date_range("2023-07-08", "2023-07-06")
    with pytest.raises(UserError, match="takes dates"):
        N.date_range("2023-07-06 12:00", "2023-07-08")


def test_image_ref_and_template_validation(tmp_path):
    assert N.image_ref(N.DEFAULT_IMAGE, date(2023, 7, 6)) == "ghcr.io/nvidia/jax:nightly-2023-07-06"
    assert N.image_ref("ghcr.io/nvidia/jax:jax-{date}", date(2023, 9, 1)) == "ghcr.io/nvidia/jax:jax-2023-09-01"
    s = N.NightlySettings("2023-07-06", "2023-07-07", image="ghcr.io/nvidia/jax:latest",
                          mounts=[f"{tmp_path}:/dir"])
    with pytest.raises(UserError, match="no {date}"):
        s.validate()


def test_gpu_slots_pin_one_gpu_set_per_worker():
    assert N.gpu_slots("all", 1) == ["all"]
    assert N.gpu_slots("all", 3) == ["device=0", "device=1", "device=2"]
    assert N.gpu_slots("none", 2) == ["none", "none"]
    assert N.gpu_slots("2", 2) == ["device=0,1", "device=2,3"]
    assert N.gpu_slots("device=1,3,5", 2) == ["device=1", "device=3"]
    # each slot means exactly those devices to Docker (a bare "0" would mean zero GPUs)
    from hourly.adapters.containers import parse_gpus
    assert [parse_gpus(g)[0]["DeviceIDs"] for g in N.gpu_slots("all", 2)] == [["0"], ["1"]]
    with pytest.raises(UserError, match="at least 3"):
        N.gpu_slots("0,1", 3)


def test_run_status_and_aggregate():
    assert run_status(0, False, 1.0) is Status.OK
    assert run_status(0, False, None) is Status.NO_METRIC
    assert run_status(2, False, 1.0) is Status.CRASHED
    assert run_status(None, True, None) is Status.TIMEOUT
    runs = [Run(Status.CRASHED, None, 2, 0.1, "1.log"), Run(Status.OK, 3.0, 0, 0.1, "2.log"),
            Run(Status.OK, 5.0, 0, 0.1, "3.log")]

    def aggregate(runs):
        r = BenchResult(runs)
        return r.status, r.value, r.samples
    assert aggregate(runs) == (Status.OK, 4.0, [3.0, 5.0])
    assert aggregate(runs[:1]) == (Status.CRASHED, None, [])


def test_detection_over_dates_skips_missing_and_broken_days():
    pts = [P("2023-08-20", "ok", 100), P("2023-08-21", "ok", 101), P("2023-08-22", "ok", 99),
           P("2023-08-23", "missing"), P("2023-08-24", "crashed"), P("2023-08-25", "ok", 80),
           P("2023-08-26", "ok", 79.5)]
    for p in pts:
        p.samples = [p.value - 0.5, p.value + 0.5] if p.value is not None else []
    pts[3].xla = pts[3].jax = None  # a missing date has no commits
    (step,) = N.detect_steps(pts)
    assert (step.before_index, step.after_index) == (2, 5)  # spans the missing and crashed days
    assert step.change.relative_change == pytest.approx(79.75 / 100 - 1)
    b = N.find_boundary(pts, [(2, 5, step.change.relative_change)])
    assert (b.good.date, b.bad.date, b.kind) == ("2023-08-22", "2023-08-25", "slower")
    assert N.detect_steps([P("2023-08-20", "crashed"), P("2023-08-21", "missing")]) == []


def test_find_boundary_takes_the_largest_regression():
    pts = [P(f"2023-08-2{i}", "ok", v) for i, v in enumerate([100, 90, 90, 60, 60])]
    b = N.find_boundary(pts, [(0, 1, -0.1), (2, 3, -0.33)])
    assert (b.good.date, b.bad.date, b.change) == ("2023-08-22", "2023-08-23", -0.33)


def test_find_boundary_falls_back_to_first_crash_after_a_good_day():
    pts = [P("2023-08-20", "crashed"), P("2023-08-21", "ok", 100), P("2023-08-22", "ok", 100.5),
           P("2023-08-23", "timeout"), P("2023-08-24", "crashed")]
    b = N.find_boundary(pts, [])
    assert (b.good.date, b.bad.date, b.kind, b.change) == ("2023-08-22", "2023-08-23", "crash", None)
    assert N.find_boundary(pts[:3], []) is None


def test_next_commands_hand_over_the_window(tmp_path):
    s = N.NightlySettings("2023-08-20", "2023-08-26", mounts=[f"{tmp_path}:/dir"], gpus="none")
    b = N.Boundary(P("2023-08-21", "ok", 101), P("2023-08-24", "ok", 80), "slower", -0.2)
    assert N.next_commands(b, s) == [
        "hourly container --date 2023-08-21 --gpus none",
        "hourly scan --from 2023-08-21 --to 2023-08-24 --bench-cmd '/bin/bash /dir/test.sh'"]


def test_settings_key_ignores_where_runs_happen(tmp_path):
    a = N.NightlySettings("2023-08-20", "2023-08-26", mounts=[f"{tmp_path}:/dir"])
    b = N.NightlySettings("2023-08-01", "2023-08-02", mounts=[f"{tmp_path}:/dir"], gpus="0,1", parallel=2)
    c = N.NightlySettings("2023-08-20", "2023-08-26", mounts=[f"{tmp_path}:/dir"], bench_cmd="python3 /dir/b.py")
    assert a.key() == b.key() != c.key()


def test_store_migrates_a_schema_1_store_to_add_the_nightly_table(tmp_path):
    # a store as the first release wrote it: version 1's tables (one that lacks any is damaged: test_store_faults)
    from hourly.adapters import store as S
    conn = sqlite3.connect(tmp_path / "hourly.sqlite")
    conn.executescript(S._SCHEMA + "INSERT INTO meta VALUES ('schema_version', '1');")
    conn.commit()
    conn.close()
    store = Store(tmp_path)
    assert SCHEMA_VERSION >= 2
    version = store.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]
    assert int(version) == SCHEMA_VERSION
    p = NightlyPoint("2023-08-20", "img", Status.OK, "sha256:ab", 1.5, [1.5], "x" * 40, "j" * 40)
    store.add_nightly("k", p)
    store.add_nightly("k", NightlyPoint("2023-08-21", "img2", Status.MISSING))
    got = store.nightly_points("k")
    assert got["2023-08-20"].value == 1.5 and got["2023-08-21"].status is Status.MISSING
    assert store.points(N.LEVEL) == [("2023-08-20", "x" * 40, "j" * 40)]  # only dates with commits


# ---------------------------------------------------------------- the real CLI, real engine

def _expected(spec: NightlySpec) -> dict:
    status = {"ok": "ok", "crash": "crashed", "missing": "missing", "hang": "timeout",
              "nometric": "no_metric"}[spec.mode]
    return {"status": status, "value": spec.value if status == "ok" else None,
            "xla": spec.xla, "jax": spec.jax}


def _leftovers(client, sid):
    """Nightly containers of this session (all its images carry ``sid``) still on the engine;
    other runs sharing the engine may have their own running meanwhile."""
    return [r["Names"][0].lstrip("/") for r in client.api.containers(all=True, filters={"label": "hourly.level=nightly"})
            if sid in str(r.get("Image", ""))]  # the engine's listing: no inspection that races an auto-removal


@pytest.mark.docker
def test_nightly_pulls_runs_stores_and_hands_over(docker_client, nightly_images, bench_dir, test_scan_id):
    template = nightly_images.registry_template
    wd = bench_dir / "work"
    res = hourly("nightly", "--from", "2023-08-20", "--to", "2023-08-26", "--image", template,
                 "--gpus", "none", "--repeats", "2", "--workdir", str(wd), "--json", cwd=bench_dir)
    assert res.returncode == 0, res.output
    out = json.loads(res.output)
    assert [p["date"] for p in out["points"]] == nightly_images.dates  # oldest first, one per date
    for p in out["points"]:
        spec = nightly_images.spec(p["date"])
        want = _expected(spec)
        assert {k: p[k] for k in want} == want, p["date"]
        assert p["image"] == template.format(date=p["date"])
        assert (p["digest"] is None) == (spec.mode == "missing")
        assert p["samples"] == ([spec.value] * 2 if spec.mode == "ok" else [])
    b = out["boundary"]
    assert (b["good"]["date"], b["bad"]["date"], b["kind"]) == ("2023-08-22", "2023-08-25", "slower")
    assert b["change"] == pytest.approx(79.75 / 100 - 1)  # detection: segment medians 100 → 79.75
    (step,) = out["steps"]
    assert (step["before"], step["after"], step["kind"]) == ("2023-08-22", "2023-08-25", "regression")
    assert b["bad"]["xla"] == nightly_images.spec("2023-08-25").xla
    # full output per date and run, in the workdir
    log = (wd / "logs" / "nightly" / "2023-08-24-run1.log").read_text()
    assert "fake crash" in log and "# exit: 1" in log
    assert "MLUPS: 80.0" in (wd / "logs" / "nightly" / "2023-08-25-run2.log").read_text()
    assert _leftovers(docker_client, test_scan_id) == []

    # the table: the guide's grep MLUPS, readable, with the boundary and the next commands
    shown = hourly("nightly", "--show", "--workdir", str(wd), cwd=bench_dir)
    assert shown.returncode == 0, shown.output
    assert "2023-08-25" in shown.output and "bad ▼ -20.2%" in shown.output
    assert "1 step found" in shown.output
    assert "hourly container --date 2023-08-22" in shown.output
    assert "hourly scan --from 2023-08-22 --to 2023-08-25" in shown.output
    assert nightly_images.spec("2023-08-22").jax in shown.output  # exact SHAs handed over
    # `hourly show` prints the daily table too (this workdir holds no hourly scan)
    plain = hourly("show", "--workdir", str(wd), cwd=bench_dir)
    assert plain.returncode == 0 and "bad ▼ -20.2%" in plain.output
    as_json = json.loads(hourly("show", "--nightly", "--json", "--workdir", str(wd), cwd=bench_dir).output)
    assert [p["date"] for p in as_json["points"]][:2] == ["2023-08-20", "2023-08-21"]

    # resuming measures nothing already stored (only the missing date is looked up again)
    rows = Store(wd).conn.execute("SELECT COUNT(*) FROM nightly").fetchone()[0]
    again = hourly("nightly", "--from", "2023-08-20", "--to", "2023-08-26", "--image", template,
                   "--gpus", "none", "--repeats", "2", "--workdir", str(wd), cwd=bench_dir)
    assert again.returncode == 0, again.output
    assert "1 measured now" in again.output
    assert Store(wd).conn.execute("SELECT COUNT(*) FROM nightly").fetchone()[0] == rows + 1


@pytest.mark.docker
def test_nightly_no_pull_every_and_parallel(docker_client, nightly_images, bench_dir, test_scan_id):
    wd = bench_dir / "work"
    args = ["nightly", "--from", "2023-08-20", "--to", "2023-08-26", "--every", "2", "--gpus", "none",
            "--json"]
    local = hourly(*args, "--image", nightly_images.local_template, "--no-pull", "--parallel", "3",
                   "--workdir", str(wd / "a"), cwd=bench_dir)
    assert local.returncode == 0, local.output
    pts = json.loads(local.output)["points"]
    assert [p["date"] for p in pts] == ["2023-08-20", "2023-08-22", "2023-08-24", "2023-08-26"]
    assert [p["status"] for p in pts] == ["ok", "ok", "crashed", "ok"]
    assert pts[3]["jax"] == nightly_images.spec("2023-08-26").jax  # the /opt/jax layout
    # a registry ref that is not local, with --no-pull: missing, and nothing was pulled
    remote = hourly(*args, "--image", nightly_images.registry_template.replace("jax:", "jax2:"),
                    "--no-pull", "--workdir", str(wd / "b"), cwd=bench_dir)
    # no image for any date is no answer (exit 1, the error after the JSON on the same output)
    assert remote.returncode == 1, remote.output
    answer, _, error = remote.output.partition("\nhourly: error: ")
    assert {p["status"] for p in json.loads(answer)["points"]} == {"missing"}
    assert "no nightly image for any of the 4 dates" in error, remote.output
    assert _leftovers(docker_client, test_scan_id) == []


@pytest.mark.docker
def test_nightly_timeout_and_no_metric(docker_client, bench_dir, test_scan_id):
    tmpl = f"localhost/hourly-test/odd-{test_scan_id}:nightly-{{date}}"
    make_image(docker_client, tmpl.format(date="2023-09-01"), NightlySpec("2023-09-01", mode="hang"))
    make_image(docker_client, tmpl.format(date="2023-09-02"), NightlySpec("2023-09-02", mode="nometric"))
    res = hourly("nightly", "--from", "2023-09-01", "--to", "2023-09-02", "--image", tmpl, "--no-pull",
                 "--gpus", "none", "--timeout", "2", "--workdir", str(bench_dir / "w"), "--json",
                 cwd=bench_dir)
    # no date measured the metric: no answer (exit 1, the error after the JSON on the same output)
    assert res.returncode == 1, res.output
    answer, _, error = res.output.partition("\nhourly: error: ")
    assert [p["status"] for p in json.loads(answer)["points"]] == ["timeout", "no_metric"]
    assert "no date measured the metric" in error, res.output
    assert _leftovers(docker_client, test_scan_id) == []


@pytest.mark.docker
def test_nightly_unreachable_registry_is_a_clear_error(docker_client, bench_dir, monkeypatch):
    monkeypatch.setenv("HOURLY_PULL_RETRY_WAIT", "0.05")  # the four attempts, without 14 s of waits
    t0 = time.monotonic()
    res = hourly("nightly", "--from", "2023-08-20", "--to", "2023-08-20",
                 "--image", "127.0.0.1:1/nothing/jax:nightly-{date}", "--gpus", "none",
                 "--workdir", str(bench_dir / "w"), cwd=bench_dir)
    assert res.returncode == 1
    assert "could not pull 127.0.0.1:1/nothing/jax:nightly-2023-08-20 after 4 attempts" in res.output
    assert time.monotonic() - t0 < 12  # the waits were HOURLY_PULL_RETRY_WAIT's (by default 2 + 4 + 8 s)
    assert "Traceback" not in res.output


def _interrupt_nightly(docker_client, bench_dir, test_scan_id):
    """Start a real `hourly nightly` whose second date hangs, Ctrl-C it while that container
    runs; check no container is left and the first date is stored; return (exit code, output)."""
    tmpl = f"localhost/hourly-test/int-{test_scan_id}:nightly-{{date}}"
    make_image(docker_client, tmpl.format(date="2023-09-01"), NightlySpec("2023-09-01", value=5.0))
    make_image(docker_client, tmpl.format(date="2023-09-02"), NightlySpec("2023-09-02", mode="hang"))
    wd = bench_dir / "w"
    proc = subprocess.Popen([sys.executable, "-m", "hourly", "nightly", "--from", "2023-09-01",
                             "--to", "2023-09-02", "--image", tmpl, "--no-pull", "--gpus", "none",
                             "--workdir", str(wd), "--json"],
                            cwd=bench_dir, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        running = []
        while time.monotonic() < deadline and not running:
            running = docker_client.containers.list(
                filters={"label": "hourly.date=2023-09-02", "status": "running"})
            running = [c for c in running if c.labels.get("hourly.level") == "nightly"]
            time.sleep(0.1)
        assert running, "the hanging date never started"
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert _leftovers(docker_client, test_scan_id) == []
    done = Store(wd).nightly_points(N.NightlySettings(**Store(wd).load_settings("nightly")).key())
    assert done["2023-09-01"].value == 5.0 and "2023-09-02" not in done
    return proc.returncode, out


@pytest.mark.docker
def test_nightly_ctrl_c_leaves_no_container_keeps_finished_dates_and_exits_130(docker_client, bench_dir,
                                                                                 test_scan_id):
    code, out = _interrupt_nightly(docker_client, bench_dir, test_scan_id)
    assert code == 130, out
    assert "interrupted" in out


@pytest.mark.docker
def test_container_has_hourly_inside_without_an_index(docker_client, python_image, bench_dir, test_scan_id):
    ref = python_image  # numpy and scipy, as the JAX images have them (hourly uses theirs), and pip
    name = f"hourly-test-{test_scan_id}"
    res = hourly("container", "--image", ref, "--gpus", "none", "--no-pull", "--name", name,
                 cwd=bench_dir)
    try:
        assert res.returncode == 0, res.output
        assert f"docker exec -it {name} bash" in res.output
        c = docker_client.containers.get(name)
        assert c.status == "running"
        code, out = c.exec_run(["hourly", "version"])
        assert (code, out.decode().strip()) == (0, "0.1.0")
        # hourly's packages are visible to hourly only: a benchmark sees the image's Python as is
        # (the two streams apart: the engine copies them apart, and once gave the error before the echo)
        code, (out, err) = c.exec_run(["sh", "-c", "echo \"[$PYTHONPATH]\"; python3 -c 'import typer'"], demux=True)
        assert code != 0 and (out or b"").decode().strip() == "[]" and "No module named 'typer'" in (err or b"").decode()
        # the current directory is /dir (and the cwd); the default workdir is shared with the host
        code, out = c.exec_run(["sh", "-c", "pwd; cat test.sh | head -1; touch hourly-work/made-inside"])
        assert code == 0 and out.decode().splitlines()[:2] == ["/dir", "#!/bin/sh"]
        assert (bench_dir / "hourly-work" / "made-inside").exists()
        again = hourly("container", "--image", ref, "--gpus", "none", "--no-pull", "--name", name,
                       cwd=bench_dir)
        assert again.returncode == 0 and "already running" in again.output
    finally:
        try:
            docker_client.containers.get(name).stop(timeout=1)
        except Exception:
            pass
    deadline = time.monotonic() + 20
    # the engine's listing, not containers.list: that inspects each one listed, and a container
    # auto-removed in between raised NotFound here (seen in CI)
    while time.monotonic() < deadline and docker_client.api.containers(all=True, filters={"name": name}):
        time.sleep(0.2)
    assert docker_client.api.containers(all=True, filters={"name": name}) == []  # removed on stop


@pytest.mark.docker
def test_container_of_an_image_without_python_warns(docker_client, nightly_images, bench_dir, test_scan_id):
    name = f"hourly-test-nopy-{test_scan_id}"
    res = hourly("container", "--date", "2023-08-20", "--image", nightly_images.local_template,
                 "--gpus", "none", "--no-pull", "--name", name, cwd=bench_dir)
    try:
        assert res.returncode == 0, res.output
        assert "no python3" in res.output
    finally:
        docker_client.containers.get(name).stop(timeout=1)


@pytest.mark.docker
def test_container_missing_date_is_a_clear_error(docker_client, nightly_images, bench_dir):
    res = hourly("container", "--date", "2023-08-23", "--image", nightly_images.registry_template,
                 "--gpus", "none", cwd=bench_dir)
    assert res.returncode == 1 and "is not available" in res.output


@pytest.mark.docker
def test_dockerfile_layers_hourly_on_a_base_image(docker_client, python_image, test_scan_id):
    """docker/Dockerfile built for real (SDK build, legacy builder) on a base with a Python, pip
    and hourly's dependencies, offline through PIP_ARGS; `hourly` must end up on PATH."""
    import re

    import docker.errors

    from hourly.nightly.image import required_roots
    base = f"localhost/hourly-test/pybase-{test_scan_id}:1"
    # pip, a build backend and what hourly really requires (its declared dependencies, as
    # `hourly container` copies them, with the numpy and scipy JAX images have), all from the
    # Python running the tests (a venv, usually): the shared Python image (numpy, scipy, pip) and
    # one layer with the rest
    add_site_packages(docker_client, python_image, base, ("setuptools", "wheel", *required_roots()))
    tag = f"localhost/hourly-test/with-hourly-{test_scan_id}:1"
    try:
        try:
            docker_client.images.build(path=str(ROOT), dockerfile="docker/Dockerfile", tag=tag,
                                       pull=False, rm=True, forcerm=True,
                                       buildargs={"BASE": base,
                                                  "PIP_ARGS": "--no-index --no-deps --no-build-isolation"})
        except docker.errors.BuildError as e:
            # a failed build leaves the layers of its finished steps untagged: remove them,
            # newest first, so no dangling image stays on the engine
            chunks = list(e.build_log)  # an iterator, readable once
            made = [m.group(1) for chunk in chunks for m in
                    [re.match(r"\s*---> ([0-9a-f]{12})\s*$", chunk.get("stream", ""))] if m]
            for image_id in reversed(made[1:]):  # made[0] is the base image itself
                try:
                    docker_client.images.remove(image_id, force=True)
                except docker.errors.APIError:
                    pass
            log = "".join(chunk.get("stream", "") for chunk in chunks)
            pytest.fail(f"docker/Dockerfile did not build: {e}\n{log[-3000:]}")
        from hourly.adapters import containers as C
        res = C.run_container(tag, ["sh", "-c", "pwd; hourly version; test -e /opt/hourly-src && echo kept || echo gone"],
                              docker_client=docker_client)
    finally:
        for ref in (tag, base):
            try:
                docker_client.images.remove(ref, force=True)
            except docker.errors.NotFound:
                pass
    lines = res.output.splitlines()
    assert res.exit_code == 0 and lines[:2] == ["/dir", "0.1.0"], res.output
    assert lines[2] == "gone"  # the source copy is not left in the image


def test_compiled_closure_leaves_out_exactly_compiled_packages_and_their_dependents():
    """On this host's real installed packages: what `hourly container` leaves out of the copy
    when the image's Python differs is compiled, or requires something that is."""
    from hourly.nightly.image import _compiled, _norm, compiled_closure, dependency_closure
    dists = {_norm(d.metadata["Name"]): d for d in dependency_closure()}
    out = compiled_closure(list(dists.values()))
    assert "hourly" not in out and "gitpython" in dists and "gitpython" not in out
    for name, d in dists.items():
        if _compiled(d):
            assert name in out
        if name in out and not _compiled(d):
            reqs = {_norm(r.split(";")[0].split(" ")[0].split(">")[0].split("=")[0].split("<")[0])
                    for r in d.requires or [] if "extra ==" not in r}
            assert reqs & out, name


#: ``python -m hourly`` that sends itself SIGTERM once the first date's rows are stored
STOP_AFTER_ONE_DATE = stop_after_first("hourly.adapters.store_tables.levels", "LevelTables.add_nightlies")


@pytest.mark.docker
def test_a_nightly_rerun_stopped_after_a_date_goes_on_with_the_dates_it_had_not_reached(
        docker_client, nightly_images, bench_dir):
    """nightly --rerun stopped once its first date is stored, then the resume line it printed
    (--rerun in it): the other dates are measured, that one is not (the line began the rerun over:
    every date again); then the rerun has ended and the same command measures nothing."""
    wd = bench_dir / "rerun"
    args = ["nightly", "--from", "2023-08-20", "--to", "2023-08-22", "--image", nightly_images.registry_template,
            "--gpus", "none", "--workdir", str(wd)]

    def rows() -> list[int]:
        with sqlite3.connect(wd / "hourly.sqlite") as c:
            return [n for _, n in c.execute("SELECT date, COUNT(*) FROM nightly GROUP BY date ORDER BY date")]
    assert hourly(*args, cwd=bench_dir).returncode in (0, 1)  # three dates: too few to tell noise is exit 1
    assert rows() == [1, 1, 1]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-c", STOP_AFTER_ONE_DATE, *args, "--rerun"], capture_output=True, text=True,
                       timeout=300, cwd=bench_dir, env=env)
    assert p.returncode == 143, p.stderr
    printed = shlex.split(p.stderr.rstrip("\n").splitlines()[-1])
    assert printed[:2] == ["hourly", "nightly"] and printed[-1] == "--rerun"
    assert sorted(rows()) == [1, 1, 2]
    res = hourly(*printed[1:], cwd=bench_dir)
    assert "going on with the --rerun begun" in res.output, res.output
    assert rows() == [2, 2, 2]
    hourly(*args, cwd=bench_dir)
    assert rows() == [2, 2, 2]


@pytest.mark.docker
def test_containers_of_a_killed_nightly_are_removed_by_clean_but_a_live_runs_are_kept(
        docker_client, bench_dir, test_scan_id):
    tmpl = f"localhost/hourly-test/kill-{test_scan_id}:nightly-{{date}}"
    make_image(docker_client, tmpl.format(date="2023-09-03"), NightlySpec("2023-09-03", mode="hang"))
    # Every hourly that starts containers removes dead runs' containers as it starts (the same
    # owner check as `hourly clean`): a parallel test worker's hourly starting between the kill and
    # this clean removes the container first (seen in CI: "removed": []). Such a try is started
    # again, so that `hourly clean` itself is seen to remove one; the container is gone either way.
    outcomes = []
    for _ in range(3):
        outcomes.append(_kill_a_nightly_then_clean(docker_client, bench_dir, tmpl, test_scan_id))
        if outcomes[-1] == "removed by this clean":
            break
    assert outcomes[-1] == "removed by this clean", outcomes
    assert set(outcomes) <= {"removed by this clean", "removed by another hourly as it started"}, outcomes


def _kill_a_nightly_then_clean(docker_client, bench_dir, tmpl, test_scan_id) -> str:
    """Start a nightly whose date hangs, check that `hourly clean` keeps its container while it
    lives, kill -9 it, clean again: who removed the container."""
    proc = subprocess.Popen([sys.executable, "-m", "hourly", "nightly", "--from", "2023-09-03",
                             "--to", "2023-09-03", "--image", tmpl, "--no-pull", "--gpus", "none",
                             "--workdir", str(bench_dir / "w"), "--json"],
                            cwd=bench_dir, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        running = []
        while time.monotonic() < deadline and not running:
            running = [c for c in docker_client.containers.list(filters={"label": "hourly.date=2023-09-03"})
                       if c.labels.get("hourly.owner.pid") == str(proc.pid)]
            time.sleep(0.1)
        assert running, "the hanging date never started"
        (cont,) = running
        res = hourly("clean", "--json", cwd=bench_dir)
        assert res.ok and cont.name not in json.loads(res.output)["removed"]  # its owner lives
        assert cont.name in _leftovers(docker_client, test_scan_id)
        proc.send_signal(signal.SIGKILL)  # kill -9: no clean-up in the run
        proc.wait()
        there = cont.name in _leftovers(docker_client, test_scan_id)
        res = hourly("clean", "--json", cwd=bench_dir)
        assert res.ok, res.output
        assert cont.name not in _leftovers(docker_client, test_scan_id)
        if cont.name in json.loads(res.output)["removed"]:
            assert there
            return "removed by this clean"
        return "removed by another hourly as it started"
    finally:
        if proc.poll() is None:
            proc.kill()
        for c in docker_client.containers.list(all=True, filters={"label": "hourly.date=2023-09-03"}):
            if c.labels.get("hourly.owner.pid") == str(proc.pid):
                c.remove(force=True)


@pytest.mark.docker
def test_two_hourlys_removing_a_dead_runs_containers_at_once_both_go_on(docker_client, tmp_path, test_scan_id):
    """Every `hourly nightly`/`watch`/`container` removes dead runs' containers as it starts; two
    starting at once (CI's parallel workers, two watches of one host) ask the engine to remove the
    same container, and the second is refused with 409 "removal ... is already in progress". That
    refusal ended a watch with "unexpected error" (seen in CI): it means the container is going."""
    import threading

    from hourly.adapters import containers as C
    from hourly.adapters.stale_runs import remove_dead_runs
    ref = f"localhost/hourly-test/race-{test_scan_id}:nightly-2023-09-03"
    make_image(docker_client, ref, NightlySpec("2023-09-03", mode="hang"))
    labels = {"hourly.owner.host": socket.gethostname(), "hourly.owner.pid": "1",
              "hourly.owner.lock": str(tmp_path / "gone.lock"), "hourly.race": test_scan_id}
    made = set()
    try:
        for i in range(4):
            c = docker_client.containers.run(ref, ["/bin/sh", "/dir/test.sh"], detach=True, labels=labels,
                                             name=f"hourly-race-{test_scan_id}-{i}")
            made.add(c.name)
        barrier = threading.Barrier(6)
        removed: list[list[str]] = []
        errors: list[BaseException] = []
        left: list[list[str]] = []

        def one() -> None:
            barrier.wait()
            try:
                removed.append(remove_dead_runs(docker_client))
                # gone when it returns, not still going: a removal another asked for is waited for
                left.append([x.name for x in C.listed(docker_client, {"label": f"hourly.race={test_scan_id}"})])
            except BaseException as e:  # the failure this test is about
                errors.append(e)

        threads = [threading.Thread(target=one) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert errors == []
        assert left == [[]] * 6 and made & {n for r in removed for n in r}
    finally:
        for c in docker_client.containers.list(all=True, filters={"label": f"hourly.race={test_scan_id}"}):
            c.remove(force=True)
        docker_client.images.remove(ref, force=True)


# ---------------------------------------------------------------- gaps (issue 22: never "no steps found" over them)

def _stored_window(tmp_path, points):
    from hourly.adapters.store import Store
    s = N.NightlySettings("2023-08-20", "2023-08-24", mounts=[f"{tmp_path}:/dir"], gpus="none",
                          workdir=str(tmp_path / "work"))
    store = Store(tmp_path / "work")
    store.save_settings(N.LEVEL, s.as_dict())
    for p in points:
        p.samples = [p.value] if p.value is not None else []
        store.add_nightly(s.key(), p)
    store.close()
    return tmp_path / "work"


@pytest.mark.parametrize("kinds", [["crashed"] * 5, ["timeout", "no_metric", "crashed", "crashed", "timeout"]])
def test_a_window_where_every_date_failed_is_no_answer(tmp_path, capsys, kinds):
    """Every date's run failing (crashed, timed out, no metric) printed "no steps found ... nothing
    to hand over", exit 0: no date measured anything, so no step could show."""
    from hourly.cli import main
    dates = ("2023-08-20", "2023-08-21", "2023-08-22", "2023-08-23", "2023-08-24")
    work = _stored_window(tmp_path, [P(d, k) for d, k in zip(dates, kinds, strict=True)])
    code = main(["nightly", "--show", "--workdir", str(work)])
    out, err = capsys.readouterr()
    err = " ".join(err.split())
    assert code == 1 and "no steps found" not in out and "nothing to hand over" not in out
    assert "no date measured the metric: no step could show" in out
    assert (f"no boundary to hand over: no date measured the metric (5 of 5 dates ran and failed: 2023-08-20 "
            f"{kinds[0]} .. 2023-08-24 {kinds[-1]})") in err and "hourly container --date 2023-08-20" in err


def test_an_interrupted_nightly_window_is_incomplete_not_all_clear(tmp_path, capsys):
    from hourly.cli import main
    work = _stored_window(tmp_path, [P("2023-08-20", "ok", 100), P("2023-08-21", "ok", 100.2),
                                     P("2023-08-22", "ok", 99.9)])  # 08-23 and 08-24 never ran
    code = main(["nightly", "--show", "--workdir", str(work)])
    out, err = capsys.readouterr()
    assert code == 1 and "no steps found" not in out
    assert "2023-08-23 .. 2023-08-24: not measured yet" in out and "hourly nightly" in err
    assert main(["nightly", "--show", "--json", "--workdir", str(work)]) == 1
    got = json.loads(capsys.readouterr().out)
    assert got["complete"] is False
    assert got["gaps"] == [{"kind": "not measured", "from": "2023-08-23", "to": "2023-08-24", "dates": 2,
                            "where": "edge"}]


def test_missing_images_at_the_windows_end_are_named(tmp_path, capsys):
    from hourly.cli import main
    missing = [NightlyPoint(d, f"img:{d}", Status.MISSING, detail="no such image") for d in ("2023-08-23", "2023-08-24")]
    work = _stored_window(tmp_path, [P("2023-08-20", "ok", 100), P("2023-08-21", "ok", 100.2),
                                     P("2023-08-22", "ok", 99.9), *missing])
    code = main(["nightly", "--show", "--workdir", str(work)])
    out = capsys.readouterr().out
    assert code == 1 and "no steps found" not in out  # named, not all clear
    # three dates of one run each: their noise is assumed, so no "no step found" either
    assert "too few dates to measure the noise" in out and "--repeats 3" in out
    assert "2023-08-23 .. 2023-08-24: no nightly image at the window's end" in out
    # a missing day inside the window is bracketed by measured days: a step across it still shows
    pts = [P("2023-08-20", "ok", 100), NightlyPoint("2023-08-21", "img", Status.MISSING, detail="no such image"),
           P("2023-08-22", "ok", 100)]
    assert N.NightlyReport(pts, None, N.NightlySettings("2023-08-20", "2023-08-22"), 0, []).gaps() == []


# ---------------------------------------------------------------- issue 33 item 2: two steps in a week

def _week(tmp_path, runs: int):
    """Six dates valued 100, 100, 80, (no image), 80, 60, each measured ``runs`` times (±0 %)."""
    from hourly.adapters.store import Store
    s = N.NightlySettings("2023-08-20", "2023-08-25", mounts=[f"{tmp_path}:/dir"], gpus="none",
                          workdir=str(tmp_path / "work"))
    store = Store(tmp_path / "work")
    store.save_settings(N.LEVEL, s.as_dict())
    for d, v in zip(["2023-08-20", "2023-08-21", "2023-08-22", "2023-08-23", "2023-08-24", "2023-08-25"],
                    [100.0, 100.0, 80.0, None, 80.0, 60.0], strict=True):
        p = (NightlyPoint(d, f"img:{d}", Status.MISSING, detail="no such image") if v is None
             else P(d, "ok", v))
        p.samples = [v] * runs if v is not None else []
        store.add_nightly(s.key(), p)
    store.close()
    return tmp_path / "work"


def test_two_steps_in_a_week_of_repeated_nightlies_are_both_found(tmp_path, capsys):
    """The repeats (±0.0 %) measure the noise: the two steps are found and the larger one handed
    over, where the noise read from the differences between dates (12.9 %) said "no steps found"."""
    from hourly.cli import main
    work = _week(tmp_path, runs=3)
    assert main(["nightly", "--show", "--json", "--workdir", str(work)]) == 0
    got = json.loads(capsys.readouterr().out)
    assert [(st["before"], st["after"]) for st in got["steps"]] == [("2023-08-21", "2023-08-22"),
                                                                   ("2023-08-24", "2023-08-25")]
    assert (got["boundary"]["good"]["date"], got["boundary"]["bad"]["date"]) == ("2023-08-24", "2023-08-25")
    assert got["undecided"] is None


def test_a_week_of_single_nightlies_is_too_short_to_tell_and_names_the_repeats(tmp_path, capsys):
    """One value per date: the dates cannot tell noise from steps; never "no steps found ...
    nothing to hand over", but exit 1 with the command that measures each date three times."""
    from hourly.cli import main
    work = _week(tmp_path, runs=1)
    code = main(["nightly", "--show", "--workdir", str(work)])
    out, err = capsys.readouterr()
    assert code == 1 and "no steps found" not in out and "nothing to hand over" not in out
    assert "too few dates to tell noise from steps" in out
    assert "hourly nightly --from 2023-08-20 --to 2023-08-25" in err and "--repeats 3" in err and "--rerun" in err
    assert main(["nightly", "--show", "--json", "--workdir", str(work)]) == 1
    assert "--repeats 3" in json.loads(capsys.readouterr().out)["undecided"]


def test_show_nightly_of_a_week_too_short_to_tell_exits_1_too(tmp_path, capsys):
    from hourly.cli import main
    work = _week(tmp_path, runs=1)
    assert main(["show", "--nightly", "--workdir", str(work)]) == 1
    out, err = capsys.readouterr()
    assert "too few dates to tell noise from steps" in out and "--repeats 3" in err


def _noisy_window(tmp_path, noise: float, runs: int = 3):
    """Eight dates of one level, each measured ``runs`` times with ±``noise`` (seeded)."""
    import numpy as np

    from hourly.adapters.store import Store
    s = N.NightlySettings("2023-08-20", "2023-08-27", mounts=[f"{tmp_path}:/dir"], gpus="none",
                          workdir=str(tmp_path / "work"))
    store = Store(tmp_path / "work")
    store.save_settings(N.LEVEL, s.as_dict())
    rng = np.random.default_rng(7)
    for day in range(20, 28):
        samples = [float(v) for v in 500.0 * (1 + noise * rng.standard_normal(runs))]
        p = P(f"2023-08-{day}", "ok", float(np.median(samples)))
        p.samples = samples
        store.add_nightly(s.key(), p)
    store.close()
    return tmp_path / "work"


def test_dates_too_noisy_to_show_a_1_percent_step_are_no_all_clear(tmp_path, capsys):
    """±6 % a run, three runs a date: a step of several per cent could hide between two dates. Never
    "no steps found ... nothing to hand over", exit 0: the smallest step the dates could show, and
    the command that measures each date often enough to see 1 %."""
    from hourly.cli import main
    work = _noisy_window(tmp_path, 0.06)
    code = main(["nightly", "--show", "--workdir", str(work)])
    out, err = capsys.readouterr()
    assert code == 1 and "no steps found" not in out and "nothing to hand over" not in out, out + err
    assert "no step of " in out and "cannot be told from this noise (8 dates, 3 runs each" in out
    assert "hourly nightly --from 2023-08-20 --to 2023-08-27" in err and "--rerun" in err
    repeats = int(err.split("--repeats ")[1].split()[0])
    assert repeats > 3 and f"measure each date {repeats} times to see steps of 1" in err
    assert main(["nightly", "--show", "--json", "--workdir", str(work)]) == 1
    res = json.loads(capsys.readouterr().out)["resolution"]
    assert res["resolves"] is False and res["repeats_needed"] == repeats and f"--repeats {repeats}" in res["fix"]
    # with the window's last date lacking an image too: the gap named, still no all-clear (it said
    # "no step found among the 7 dates measured", exit 0)
    from hourly.adapters.store import Store
    store = Store(work)
    store.add_nightly(N.NightlySettings(**store.load_settings(N.LEVEL)).key(),
                      NightlyPoint("2023-08-27", "img:2023-08-27", Status.MISSING, detail="no such image"))
    store.close()
    code = main(["nightly", "--show", "--workdir", str(work)])
    out, err = capsys.readouterr()
    said = " ".join(out.split())
    assert code == 1 and "no step of " in said and "the window is not all there:" in said, out + err
    assert "2023-08-27: no nightly image at the window's end" in said and "--rerun" in err


def test_quiet_dates_say_no_steps_found_with_their_resolution(tmp_path, capsys):
    from hourly.cli import main
    work = _noisy_window(tmp_path, 0.001)
    assert main(["nightly", "--show", "--workdir", str(work)]) == 0
    out = capsys.readouterr().out
    assert "no steps found" in out and "resolution: a step of " in out and "between any two neighbouring dates" in out
    assert main(["nightly", "--show", "--json", "--workdir", str(work)]) == 0
    res = json.loads(capsys.readouterr().out)["resolution"]
    assert res["resolves"] is True and res["fix"] is None


def test_a_hunt_over_dates_too_noisy_to_show_a_step_has_no_window_yet(tmp_path):
    """The hunt's daily level over such dates: "no window to hunt yet" with the smallest step they
    could show, never "nothing to hunt" (the command exits 1 through require_decided)."""
    import io

    from rich.console import Console

    from hourly.adapters.store import Store
    from hourly.errors import UserError
    from hourly.hunt.run import HuntReport
    from hourly.render.hunt import print_report
    work = _noisy_window(tmp_path, 0.06)
    report = HuntReport()
    report.nightly = N.stored_nightly(Store(work, create=False, read_only=True))
    buf = io.StringIO()
    print_report(Console(file=buf, width=200), report)
    assert buf.getvalue().startswith("no window to hunt yet: no step of ") and "nothing to hunt" not in buf.getvalue()
    with pytest.raises(UserError, match="no boundary to hand over: no step of"):
        report.nightly.require_decided()


def test_a_window_where_no_date_has_an_image_is_no_answer(tmp_path, capsys):
    """Every date's image missing once printed "no steps found ... nothing to hand over", exit 0."""
    from hourly.cli import main
    dates = ("2023-08-20", "2023-08-21", "2023-08-22", "2023-08-23", "2023-08-24")
    work = _stored_window(tmp_path, [NightlyPoint(d, f"img:{d}", Status.MISSING, detail="no such image") for d in dates])
    code = main(["nightly", "--show", "--workdir", str(work)])
    out, err = capsys.readouterr()
    err = " ".join(err.split())
    assert code == 1 and "no step found among" not in out and "nothing to hand over" not in out
    assert "no date has an image: no step could show" in out
    assert ("no boundary to hand over: no nightly image for any of the 5 dates (img:2023-08-20 .. img:2023-08-24) "
            "— check --image (`docker pull img:2023-08-20` says why)") in err
    assert main(["nightly", "--show", "--json", "--workdir", str(work)]) == 1


@pytest.mark.docker
def test_each_container_is_asked_for_a_count_of_samples(docker_client, bench_dir, test_scan_id):
    """Every benchmark run hourly starts gets HOURLY_SAMPLES (docs/measuring.md), a nightly's
    containers too: the default 12, or --samples N (here the benchmark prints what it was asked)."""
    tmpl = f"localhost/hourly-test/asked-{test_scan_id}:nightly-{{date}}"
    make_image(docker_client, tmpl.format(date="2023-09-01"), NightlySpec("2023-09-01", value=1.0))
    for extra, want in (([], 12.0), (["--samples", "7"], 7.0)):
        res = hourly("nightly", "--from", "2023-09-01", "--to", "2023-09-01", "--image", tmpl, "--no-pull",
                     "--gpus", "none", "--bench-cmd", "sh -c 'echo MLUPS: $HOURLY_SAMPLES'", *extra,
                     "--workdir", str(bench_dir / f"w{int(want)}"), "--json", cwd=bench_dir)
        assert res.returncode == 0, res.output
        assert [p["value"] for p in json.loads(res.output)["points"]] == [want], res.output
    assert _leftovers(docker_client, test_scan_id) == []
