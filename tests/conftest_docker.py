"""Pytest plugin for tests that need a real Docker engine (and a loopback registry).

Load it from a test module with ``pytest_plugins = [...]`` (see tests/test_containers.py).
Tests that need Docker carry ``@pytest.mark.docker`` and use the ``docker_client`` fixture: when
no engine can be reached they are SKIPPED with the reason, except when ``CI=true``, where they
FAIL — CI must never silently skip them (``.ci/docker-up.sh`` starts the engine there).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from hourly.adapters import containers
from hourly.errors import UserError

try:  # tests/ as a package, or as a plain directory on sys.path
    from .docker_fixtures import BENCH_SCRIPT, build_nightly_set, make_python_image
except ImportError:
    from docker_fixtures import BENCH_SCRIPT, build_nightly_set, make_python_image

REGISTRY = os.environ.get("HOURLY_TEST_REGISTRY", "127.0.0.1:5000")
HINT = "start one with `sudo bash .ci/docker-up.sh`"


def pytest_configure(config):
    config.addinivalue_line("markers", "docker: needs a real Docker engine (see .ci/docker-up.sh)")


def _unavailable(what: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {what}; CI must run the Docker tests ({HINT})", pytrace=False)
    pytest.skip(f"{what}; {HINT}")


# Low-level listings throughout: the SDK's images.list()/containers.list() inspect each object
# after listing, and fail when another run sharing the engine removes one in between.

def _engine_objects(client) -> tuple[set[str], set[str]]:
    """IDs of every image (intermediate and dangling ones included) and every container."""
    return ({i["Id"] for i in client.api.images(all=True)},
            {c["Id"] for c in client.api.containers(all=True)})


def _tags(image: dict) -> list[str]:
    return [t for t in image.get("RepoTags") or [] if t != "<none>:<none>"]


def _leaks(client, sid: str, images0: set[str], containers0: set[str]) -> tuple[list[str], list[str]]:
    """What appeared on the engine since the session began and is this session's: untagged
    images (a failed build's layers) or ones tagged with ``sid``; containers whose name, image
    or labels carry ``sid``. Images tagged for other runs sharing the engine are theirs."""
    images = []
    for i in client.api.images(all=True):
        if i["Id"] in images0:
            continue
        tags = _tags(i)
        if any(sid in t for t in tags) or (not tags and not _anothers(client, i["Id"], sid)):
            images.append(f"{i['Id'][7:19]} {tags or '<untagged>'}")
    conts = []
    for c in client.api.containers(all=True):
        if c["Id"] in containers0:
            continue
        name = (c.get("Names") or ["?"])[0].lstrip("/")
        text = " ".join([name, str(c.get("Image", "")),
                         *(f"{k}={v}" for k, v in (c.get("Labels") or {}).items())])
        if sid in text:
            conts.append(f"{name} ({c.get('State', '?')})")
    return sorted(images), sorted(conts)


def _anothers(client, image_id: str, sid: str) -> bool:
    """Whether an untagged image is a layer built on another run's tagged image (its nearest
    tagged ancestor does not carry ``sid``)."""
    for _ in range(100):
        try:
            parent = client.api.inspect_image(image_id).get("Parent") or ""
            if not parent:
                return False
            tags = _tags({"RepoTags": client.api.inspect_image(parent).get("RepoTags")})
        except Exception:
            return False
        if tags:
            return not any(sid in t for t in tags)
        image_id = parent
    return False


@pytest.fixture(scope="session")
def docker_client(test_scan_id):
    """The engine; at the end of the session, every image and container the tests made must be
    gone (failed builds included). Images tagged with the session id are removed first (that is
    their cleanup); anything else of this session still there is a leak: an error under CI=true,
    a warning elsewhere (an untagged image may then be another run's, on a shared engine)."""
    try:
        client = containers.new_client()
    except UserError as e:
        _unavailable(e.message)
    images0, containers0 = _engine_objects(client)
    yield client
    remove_session_images(client, test_scan_id)
    images, conts = _leaks(client, test_scan_id, images0, containers0)
    if not images and not conts:
        return
    msg = (f"the Docker tests left {len(images)} image(s) and {len(conts)} container(s) on the "
           f"engine: images {images}, containers {conts}")
    if os.environ.get("CI") == "true":
        pytest.fail(msg, pytrace=False)
    import warnings
    warnings.warn(msg + " (not an error outside CI: untagged images may be another run's)", stacklevel=2)


def remove_session_images(client, sid: str) -> None:
    """Remove every image tagged with the session id ``sid`` (idempotent)."""
    for img in client.api.images():
        for tag in _tags(img):
            if sid in tag:
                try:
                    client.images.remove(tag, force=True)
                except Exception:
                    pass


def _registry_up(addr: str) -> bool:
    try:
        urllib.request.urlopen(f"http://{addr}/v2/", timeout=2).read()
        return True
    except Exception:
        return False


@pytest.fixture(scope="session")
def registry(docker_client) -> str:
    """Address of the loopback registry (``127.0.0.1:5000`` unless HOURLY_TEST_REGISTRY)."""
    if not _registry_up(REGISTRY):
        _unavailable(f"no registry answering on {REGISTRY}")
    return REGISTRY


@pytest.fixture(scope="session")
def test_scan_id():
    """Unique per session, so registry repos and labels never meet a previous run's; images
    whose tag carries it are removed at the end of the session."""
    sid = f"t{uuid.uuid4().hex[:10]}"
    yield sid
    try:
        client = containers.new_client()
    except UserError:
        return
    remove_session_images(client, sid)


#: what the shared Python image holds besides the stdlib: what the JAX images bring (hourly uses
#: their numpy and scipy) and pip
PYTHON_IMAGE_PACKAGES = ("numpy", "scipy", "pip")


@pytest.fixture(scope="session")
def python_image(docker_client, test_scan_id, tmp_path_factory) -> str:
    """busybox, git and the tests' own Python with :data:`PYTHON_IMAGE_PACKAGES`
    (docker_fixtures.make_python_image): the base of the day images of the hunt and manual tests
    and of `hourly container`'s and the Dockerfile's tests. Its ref carries the session id.

    A quarter of a GB takes the engine seconds to import, so the xdist workers of one run share
    one image: the first to ask makes it, the others add their own tag to it, under a lock in the
    run's temporary folder; each removes its tag at its end (under that lock), and the engine
    removes the image with its last tag."""
    ref = f"localhost/hourly-test/python-{test_scan_id}:base"
    run_dir = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        run_dir = run_dir.parent  # the run's folder, above each worker's own
    state = run_dir / "python-image.json"
    repo, tag = ref.rsplit(":", 1)
    with open(run_dir / "python-image.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        image_id = json.loads(state.read_text())["id"] if state.exists() else None
        try:
            if image_id is None:
                raise LookupError
            docker_client.images.get(image_id).tag(repo, tag)
        except Exception:  # none yet, or its last tag went with a worker that ended
            image_id = make_python_image(docker_client, ref, PYTHON_IMAGE_PACKAGES)
            state.write_text(json.dumps({"id": image_id}))
    yield ref
    with open(run_dir / "python-image.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            docker_client.images.remove(ref, force=True)
        except Exception:
            pass


@pytest.fixture(scope="session")
def nightly_images(docker_client, registry, test_scan_id):
    """The standard fake nightlies: local tags ``localhost/hourly-test/jax-<id>:nightly-<date>``
    and the same images pushed to ``<registry>/hourly-<id>/jax:nightly-<date>`` (not kept
    locally); the session id keeps runs that share an engine from removing each other's."""
    ns = build_nightly_set(docker_client, f"localhost/hourly-test/jax-{test_scan_id}:nightly-{{date}}",
                           f"{registry}/hourly-{test_scan_id}/jax:nightly-{{date}}")
    yield ns
    for d in ns.dates:
        try:
            docker_client.images.remove(ns.local_template.format(date=d), force=True)
        except Exception:
            pass


@pytest.fixture
def bench_dir(tmp_path) -> Path:
    """A user's directory with the guide's ``test.sh`` in it (mounted at /dir)."""
    d = tmp_path / "bench"
    d.mkdir()
    (d / "test.sh").write_text(BENCH_SCRIPT)
    (d / "test.sh").chmod(0o755)
    return d


@pytest.fixture
def no_leftovers(docker_client):
    """Asserts, after the test, that no container with an ``hourly.scan`` label is left."""
    label = f"hourly.scan=l{uuid.uuid4().hex[:10]}"
    yield label
    left = [c.name for c in containers.listed(docker_client, {"label": label})]
    assert left == [], f"containers left behind: {left}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def auth_registry(tmp_path_factory, docker_client) -> str:
    """A second real registry on loopback that requires credentials nobody has."""
    d = tmp_path_factory.mktemp("auth-registry")
    port = _free_port()
    # Any unauthenticated request gets 401, so the hash never needs to match a password.
    (d / "htpasswd").write_text("nobody:$2y$05$" + "a" * 53 + "\n")
    (d / "config.yml").write_text(f"""version: 0.1
log: {{level: error}}
storage: {{filesystem: {{rootdirectory: {d / 'storage'}}}}}
http: {{addr: 127.0.0.1:{port}}}
auth: {{htpasswd: {{realm: hourly-test, path: {d / 'htpasswd'}}}}}
""")
    try:
        proc = subprocess.Popen(["docker-registry", "serve", str(d / "config.yml")],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except FileNotFoundError:
        _unavailable("docker-registry is not installed")
    addr = f"127.0.0.1:{port}"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://{addr}/v2/", timeout=1)
        except urllib.error.HTTPError:  # 401: it is up and wants credentials
            break
        except Exception:
            time.sleep(0.1)
    yield addr
    proc.terminate()
    proc.wait(timeout=10)
