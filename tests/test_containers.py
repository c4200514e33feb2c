"""hourly.adapters.containers against a real Docker engine and a real loopback registry."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import docker.types
import pytest

import docker
from hourly.adapters import containers as C
from hourly.errors import UserError

pytest_plugins = ["tests.conftest_docker"] if __package__ else ["conftest_docker"]

ROOT = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------- pure parts (no engine needed)

@pytest.mark.parametrize("status,msg,kind", [
    (404, "manifest for ghcr.io/nvidia/jax:nightly-2023-07-07 not found: manifest unknown", "missing"),
    (500, "manifest unknown: manifest unknown", "missing"),
    (500, "Get \"https://ghcr.io/v2/\": dial tcp: lookup ghcr.io: no such host", "transient"),
    (500, "received unexpected HTTP status: 503 Service Unavailable", "transient"),
    (429, "toomanyrequests: retry later", "transient"),
    (500, "Head \"http://127.0.0.1:5001/v2/x/manifests/y\": no basic auth credentials", "auth"),
    (404, "pull access denied for x, repository does not exist or may require 'docker login'", "auth"),
    (400, "invalid reference format", "other"),
])
def test_classify_pull_error(status, msg, kind):
    assert C.classify_pull_error(status, msg) == kind


def test_parse_gpus():
    assert C.parse_gpus("none") == [] and C.parse_gpus(None) == [] and C.parse_gpus(0) == []
    (req,) = C.parse_gpus("all")
    assert req["Count"] == -1 and req["Capabilities"] == [["gpu"]]
    (req,) = C.parse_gpus("2")
    assert req["Count"] == 2
    (req,) = C.parse_gpus("0,3")
    assert req["DeviceIDs"] == ["0", "3"]
    (req,) = C.parse_gpus(["1"])
    assert req["DeviceIDs"] == ["1"]
    with pytest.raises(UserError):
        C.parse_gpus("some")


def test_parse_mount(tmp_path):
    m = C.parse_mount(f"{tmp_path}:/dir")
    assert (m["Source"], m["Target"], m["ReadOnly"]) == (str(tmp_path), "/dir", False)
    assert C.parse_mount(f"{tmp_path}:/w:ro")["ReadOnly"] is True
    with pytest.raises(UserError, match="does not exist"):
        C.parse_mount(f"{tmp_path}/nope:/dir")
    with pytest.raises(UserError, match="SRC:DST"):
        C.parse_mount("justone")


def test_resolve_head_from_file_reads():
    sha, other = "a" * 40, "b" * 40
    files = {
        "/r/.git/HEAD": "ref: refs/heads/main\n",
        "/r/.git/packed-refs": f"# pack-refs\n{other} refs/heads/x\n{sha} refs/heads/main\n^{other}\n",
        "/s/.git": "gitdir: ../r/.git\n",
        "/w/.git/HEAD": "ref: refs/heads/wt\n",
        "/w/.git/commondir": "../../r/.git\n",
        "/r/.git/refs/heads/wt": other + "\n",
    }
    assert C.resolve_head(files.get, "/r/.git") == sha
    assert C.resolve_head(files.get, "/s/.git") == sha
    assert C.resolve_head(files.get, "/w/.git") == other
    assert C.resolve_head(files.get, "/none/.git") is None


# ---------------------------------------------------------------- against the engine

@pytest.mark.docker
def _not_local(client, ref):
    """Other tests of the session may have pulled ``ref``: take the local tag away again."""
    try:
        client.images.remove(ref)
    except docker.errors.ImageNotFound:
        pass


def test_ensure_image_local(docker_client, nightly_images, test_scan_id):
    # a tag of its own, never pushed anywhere (other tests may push or pull the shared ones)
    ref = f"localhost/hourly-test/local-{test_scan_id}:nightly-2023-08-20"
    docker_client.images.get(nightly_images.local_template.format(date="2023-08-20")).tag(ref)
    res = C.ensure_image(ref, docker_client=docker_client)
    assert res.status is C.ImageStatus.LOCAL
    assert res.digest == docker_client.images.get(ref).id  # never pushed from here: the ID


@pytest.mark.docker
def test_ensure_image_pulls_from_registry(docker_client, nightly_images):
    ref = nightly_images.registry_template.format(date="2023-08-21")
    _not_local(docker_client, ref)
    assert C.image_digest(ref, docker_client=docker_client) is None  # not local yet
    res = C.ensure_image(ref, docker_client=docker_client)
    assert res.status is C.ImageStatus.PULLED
    assert res.digest and res.digest.startswith("sha256:")
    repo_digests = docker_client.images.get(ref).attrs["RepoDigests"]
    assert f"{ref.rsplit(':', 1)[0]}@{res.digest}" in repo_digests
    # now it is local
    assert C.ensure_image(ref, docker_client=docker_client).status is C.ImageStatus.LOCAL


@pytest.mark.docker
def test_ensure_image_missing_tag_is_missing_not_error(docker_client, nightly_images):
    ref = nightly_images.registry_template.format(date="2023-08-23")
    res = C.ensure_image(ref, docker_client=docker_client)
    assert res.status is C.ImageStatus.MISSING and not res.present
    assert "manifest unknown" in res.reason


@pytest.mark.docker
def test_ensure_image_no_pull_uses_local_only(docker_client, nightly_images):
    ref = nightly_images.registry_template.format(date="2023-08-22")
    _not_local(docker_client, ref)
    res = C.ensure_image(ref, pull=False, docker_client=docker_client)
    assert res.status is C.ImageStatus.MISSING
    assert C.image_digest(ref, docker_client=docker_client) is None  # really not pulled


@pytest.mark.docker
def test_ensure_image_unreachable_registry_is_a_clear_error_after_retries(docker_client):
    t0 = time.monotonic()
    with pytest.raises(UserError) as e:
        C.ensure_image("127.0.0.1:1/nothing/jax:nightly-2023-08-20", attempts=3, wait_s=0.2,
                       docker_client=docker_client)
    assert "after 3 attempts" in e.value.message and "connection refused" in e.value.message
    assert time.monotonic() - t0 >= 0.2 + 0.4  # it did wait between attempts


@pytest.mark.docker
def test_ensure_image_auth_failure_is_a_clear_error(docker_client, auth_registry):
    with pytest.raises(UserError) as e:
        C.ensure_image(f"{auth_registry}/private/jax:nightly-2023-08-20", attempts=2, wait_s=0.1,
                       docker_client=docker_client)
    assert "refused" in e.value.message and "log in" in e.value.fix


@pytest.mark.docker
def test_run_ok_captures_metric_and_removes_container(docker_client, nightly_images, bench_dir,
                                                      no_leftovers, tmp_path):
    ref = nightly_images.local_template.format(date="2023-08-25")
    log = tmp_path / "logs" / "2023-08-25.log"
    res = C.run_container(ref, ["/bin/bash", "/dir/test.sh"], labels={"hourly.scan": no_leftovers.split("=")[1]},
                          mounts=[f"{bench_dir}:/dir"], env={"XLA_FLAGS": "--xla_dummy"},
                          workdir="/dir", timeout=60, log_path=log, docker_client=docker_client)
    assert res.ok and res.exit_code == 0 and not res.timed_out
    assert "MLUPS: 80.0" in res.output
    assert "MLUPS: 80.0" in log.read_text() and "# exit: 0" in log.read_text()
    with pytest.raises(docker.errors.NotFound):
        docker_client.containers.get(res.name)


@pytest.mark.docker
def test_run_env_workdir_and_mounts_reach_the_container(docker_client, nightly_images, tmp_path,
                                                        no_leftovers):
    ref = nightly_images.local_template.format(date="2023-08-20")
    (tmp_path / "w").mkdir()
    res = C.run_container(ref, 'echo "$FOO $(pwd)"; echo out > /w/made', mounts=[(str(tmp_path / "w"), "/w")],
                          env=["FOO=bar"], workdir="/opt", timeout=30,
                          labels={"hourly.scan": no_leftovers.split("=")[1]},
                          docker_client=docker_client)
    assert res.output.strip() == "bar /opt"
    assert (tmp_path / "w" / "made").read_text() == "out\n"


@pytest.mark.docker
def test_run_crash_output_and_exit_code(docker_client, nightly_images, bench_dir, no_leftovers):
    ref = nightly_images.local_template.format(date="2023-08-24")
    res = C.run_container(ref, ["/bin/bash", "/dir/test.sh"], mounts=[f"{bench_dir}:/dir"],
                          labels={"hourly.scan": no_leftovers.split("=")[1]}, timeout=60,
                          docker_client=docker_client)
    assert res.exit_code == 1 and not res.ok and not res.timed_out
    assert "XlaRuntimeError: INTERNAL: fake crash" in res.output  # stderr is kept too


@pytest.mark.docker
def test_run_timeout_kills_and_removes(docker_client, nightly_images, no_leftovers):
    ref = nightly_images.local_template.format(date="2023-08-20")
    t0 = time.monotonic()
    res = C.run_container(ref, "echo started; sleep 60", timeout=1.5,
                          labels={"hourly.scan": no_leftovers.split("=")[1]},
                          docker_client=docker_client)
    assert res.timed_out and res.exit_code is None and not res.ok
    assert "started" in res.output
    assert time.monotonic() - t0 < 20


@pytest.mark.docker
def test_run_unstartable_removes_container(docker_client, nightly_images, no_leftovers):
    ref = nightly_images.local_template.format(date="2023-08-20")
    with pytest.raises(UserError, match="could not start"):
        C.run_container(ref, ["/no/such/binary"], labels={"hourly.scan": no_leftovers.split("=")[1]},
                        docker_client=docker_client)


@pytest.mark.docker
def test_run_gpus_without_nvidia_runtime_is_a_user_error(docker_client, nightly_images, no_leftovers):
    if any(r == "nvidia" for r in docker_client.info().get("Runtimes", {})):
        pytest.skip("this engine has the NVIDIA runtime; the error path can't be shown here")
    ref = nightly_images.local_template.format(date="2023-08-20")
    with pytest.raises(UserError, match="NVIDIA Container Toolkit"):
        C.run_container(ref, ["true"], gpus="all", labels={"hourly.scan": no_leftovers.split("=")[1]},
                        docker_client=docker_client)


@pytest.mark.docker
def test_ctrl_c_during_run_leaves_no_container(docker_client, nightly_images, test_scan_id):
    """A real SIGINT to a real process running run_container: the container must go."""
    ref = nightly_images.local_template.format(date="2023-08-20")
    label = f"hourly.scan={test_scan_id}-sigint"
    script = textwrap.dedent(f"""
        from hourly.adapters import containers as C
        try:
            C.run_container({ref!r}, "sleep 60", labels={{"hourly.scan": {label.split('=')[1]!r}}})
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            raise SystemExit(130)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            running = docker_client.containers.list(filters={"label": label, "status": "running"})
            if running:
                break
            time.sleep(0.1)
        assert running, "the container never started"
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and "interrupted" in out
    assert docker_client.containers.list(all=True, filters={"label": label}) == []


@pytest.mark.docker
def test_cleanup_removes_leftovers_of_a_scan_only(docker_client, nightly_images, test_scan_id):
    ref = nightly_images.local_template.format(date="2023-08-20")
    mine, other = f"{test_scan_id}-mine", f"{test_scan_id}-other"
    a = docker_client.containers.create(ref, ["true"], labels={"hourly.scan": mine})
    b = docker_client.containers.create(ref, ["true"], labels={"hourly.scan": other})
    try:
        assert C.cleanup(f"hourly.scan={mine}", docker_client=docker_client) == [a.name]
        assert docker_client.containers.list(all=True, filters={"label": f"hourly.scan={mine}"}) == []
        assert [c.name for c in docker_client.containers.list(
            all=True, filters={"label": f"hourly.scan={other}"})] == [b.name]
    finally:
        b.remove(force=True)


@pytest.mark.docker
@pytest.mark.parametrize("date", ["2023-08-20", "2023-08-21", "2023-08-22", "2023-08-26"])
def test_read_commits_both_layouts_and_ref_styles(docker_client, nightly_images, date):
    spec = nightly_images.spec(date)
    got = C.read_commits(nightly_images.local_template.format(date=date),
                         docker_client=docker_client)
    assert (got.jax, got.xla) == (spec.jax, spec.xla)
    assert got.layout == (("/opt/jax", "/opt/xla") if spec.layout == "plain"
                          else ("/opt/jax-source", "/opt/xla-source"))
    repo = nightly_images.local_template.rsplit(":", 1)[0]  # this session's (other runs may share the engine)
    left = [r["Names"] for r in docker_client.api.containers(all=True, filters={"label": "hourly.role=read-commits"})
            if str(r.get("Image", "")).startswith(repo)]
    assert left == []


@pytest.mark.docker
def test_read_commits_of_an_image_without_sources(docker_client, nightly_images, tmp_path, test_scan_id):
    if __package__:
        from .docker_fixtures import _drop, _TarBuilder, busybox_path
    else:
        from docker_fixtures import _drop, _TarBuilder, busybox_path
    ref = f"localhost/hourly-test/bare-{test_scan_id}:1"
    t = _TarBuilder()
    t.file("bin/busybox", Path(busybox_path()).read_bytes(), 0o755)
    docker_client.api.import_image_from_data(t.bytes(), repository=ref.rsplit(":", 1)[0], tag="1")
    try:
        got = C.read_commits(ref, docker_client=docker_client)
    finally:
        _drop(docker_client, ref)
    assert got == C.ImageCommits(None, None, None)


@pytest.mark.docker
def test_the_session_leak_check_sees_an_untagged_image_and_a_container_of_the_session(docker_client,
                                                                                    test_scan_id):
    """What the end-of-session check reports: a failed build's untagged layer, a container of this
    session; and nothing once they are removed."""
    if __package__:
        from .conftest_docker import _engine_objects, _leaks
        from .docker_fixtures import _TarBuilder, busybox_path
    else:
        from conftest_docker import _engine_objects, _leaks
        from docker_fixtures import _TarBuilder, busybox_path
    images0, containers0 = _engine_objects(docker_client)
    t = _TarBuilder()
    t.file("bin/busybox", Path(busybox_path()).read_bytes(), 0o755)
    t.file(f"leak-{test_scan_id}", "x")  # a distinct image, not one already on the engine
    out = docker_client.api.import_image_from_data(t.bytes())  # no repository: untagged
    image_id = json.loads(out.strip().splitlines()[-1])["status"]  # {"status": "sha256:..."}
    c = docker_client.containers.create(image_id, ["/bin/busybox", "true"], name=f"leak-{test_scan_id}")
    try:
        images, conts = _leaks(docker_client, test_scan_id, images0, containers0)
        assert f"{image_id[7:19]} <untagged>" in images and conts == [f"leak-{test_scan_id} (created)"]
    finally:
        c.remove(force=True)
        docker_client.images.remove(image_id, force=True)
    images, conts = _leaks(docker_client, test_scan_id, images0, containers0)
    assert not [i for i in images if i.startswith(image_id[7:19])] and conts == []
