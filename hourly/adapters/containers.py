"""The narrow adapter between hourly and a Docker engine (through the Docker SDK, never the CLI).

Everything hourly does with containers goes through here:

* :func:`ensure_image` — use a local image, else pull it (tenacity retries on transient registry
  errors). A tag that does not exist comes back as :attr:`ImageStatus.MISSING`; an auth or network
  failure that persists raises :class:`~hourly.errors.UserError`.
* :func:`image_digest` — the image's repo digest (or its ID when it never came from a registry).
* :func:`run_container` — run one command in a fresh container and ALWAYS remove it: after a
  normal exit, a failure, a timeout and a Ctrl-C.
* :func:`read_commits` — the JAX and XLA commits baked into an image, read from the files of the
  source trees' ``.git`` directories (git need not be installed in the image).
* :func:`cleanup` — remove every container left with a scan's label.
"""

from __future__ import annotations

import io
import os
import re
import tarfile
import time
import uuid
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import docker.errors
import docker.types
import requests.exceptions
from tenacity import Retrying, retry_if_exception, stop_after_attempt, stop_after_delay, wait_exponential, wait_fixed

import docker
from hourly.errors import HourlyError, UserError

LABEL_PREFIX = "hourly"
SHA_RE = re.compile(r"^[0-9a-f]{40}$")

# Source-tree layouts of the NVIDIA JAX-Toolbox images, oldest first.
SOURCE_LAYOUTS: tuple[tuple[str, str], ...] = (
    ("/opt/jax-source", "/opt/xla-source"),
    ("/opt/jax", "/opt/xla"),
)


# --------------------------------------------------------------------------------------------
# client

_CLIENT: docker.DockerClient | None = None


def client() -> docker.DockerClient:
    """The shared client; the API version is negotiated so old and new engines both work."""
    global _CLIENT
    if _CLIENT is None:
        _CLIENT = new_client()
    return _CLIENT


def new_client() -> docker.DockerClient:
    """A fresh client (one per thread when running dates in parallel)."""
    try:
        c = docker.from_env(version="auto", timeout=120)
        c.ping()
        return c
    except (docker.errors.DockerException, requests.exceptions.RequestException) as e:
        raise UserError(f"no Docker engine reachable ({_first_line(e)})",
                        "start it (e.g. `sudo systemctl start docker` or `sudo dockerd &`), "
                        "make its socket readable by you, or set DOCKER_HOST") from e


# --------------------------------------------------------------------------------------------
# images

class ImageStatus(Enum):
    LOCAL = "local"      # already present, not pulled
    PULLED = "pulled"    # pulled now
    MISSING = "missing"  # tag does not exist (or not local with pull=False)


@dataclass(frozen=True)
class ImageResult:
    ref: str
    status: ImageStatus
    digest: str | None = None
    reason: str = ""

    @property
    def present(self) -> bool:
        return self.status is not ImageStatus.MISSING


class _Transient(Exception):
    """A registry error worth retrying (5xx, connection trouble, rate limits)."""


_MISSING_PATTERNS = ("manifest unknown", "not found", "does not exist", "no such image")
_AUTH_PATTERNS = ("unauthorized", "denied", "authentication required", "no basic auth",
                  "forbidden", "incorrect username or password")
_TRANSIENT_PATTERNS = ("connection refused", "connection reset", "timeout", "timed out",
                       "temporary failure", "no such host", "tls handshake", "eof",
                       "toomanyrequests", "too many requests", "service unavailable",
                       "bad gateway", "gateway timeout", "internal server error",
                       "network is unreachable", "i/o timeout")


def classify_pull_error(status_code: int | None, message: str) -> str:
    """Classify a failed pull as 'missing', 'auth', 'transient' or 'other' (pure function).

    Engines report registry errors inconsistently (a missing tag may come back as 404 or 500, an
    auth failure as 401, 404 or 500), so the message decides before the status code does.
    """
    m = message.lower()
    if any(p in m for p in _AUTH_PATTERNS):
        return "auth"
    if "manifest unknown" in m or (status_code == 404 and any(p in m for p in _MISSING_PATTERNS)):
        return "missing"
    if any(p in m for p in _TRANSIENT_PATTERNS):
        return "transient"
    if status_code is not None and (status_code >= 500 or status_code == 429):
        return "transient"
    if status_code == 404:
        return "missing"
    return "other"


def _local_image(c: docker.DockerClient, ref: str) -> Any:
    try:
        return c.images.get(ref)
    except docker.errors.ImageNotFound:
        return None


#: seconds before the second pull attempt (then doubling); HOURLY_PULL_RETRY_WAIT sets it (tests: lower)
PULL_RETRY_WAIT_S = 2.0


def ensure_image(ref: str, pull: bool = True, *, attempts: int = 4, wait_s: float | None = None,
                 docker_client: docker.DockerClient | None = None) -> ImageResult:
    """Make ``ref`` available locally.

    Returns LOCAL or PULLED (with the digest), or MISSING when the tag does not exist (or is not
    local and ``pull`` is False). Transient registry errors are retried ``attempts`` times with
    exponential backoff starting at ``wait_s`` (default ``$HOURLY_PULL_RETRY_WAIT``, else
    :data:`PULL_RETRY_WAIT_S`); if they persist, or the registry refuses credentials, raises
    :class:`UserError`.
    """
    if wait_s is None:
        wait_s = float(os.environ.get("HOURLY_PULL_RETRY_WAIT") or PULL_RETRY_WAIT_S)
    c = docker_client or client()
    if _local_image(c, ref) is not None:
        return ImageResult(ref, ImageStatus.LOCAL, image_digest(ref, docker_client=c))
    if not pull:
        return ImageResult(ref, ImageStatus.MISSING, None, "not present locally (--no-pull)")
    repo, tag = _split_ref(ref)

    def attempt() -> None:
        try:
            c.images.pull(repo, tag=tag)
        except docker.errors.APIError as e:
            kind = classify_pull_error(e.status_code, _explanation(e))
            if kind == "transient":
                raise _Transient(_explanation(e)) from e
            raise
        except requests.exceptions.ConnectionError as e:  # the engine itself went away
            raise _Transient(str(e)) from e

    retrying = Retrying(stop=stop_after_attempt(max(1, attempts)),
                        wait=wait_exponential(multiplier=wait_s, max=60),
                        retry=retry_if_exception(lambda e: isinstance(e, _Transient)),
                        reraise=True)
    try:
        retrying(attempt)
    except _Transient as e:
        raise UserError(f"could not pull {ref} after {attempts} attempts: {_first_line(e)}",
                        "check the network and the registry, or use --no-pull with local "
                        "images") from e
    except docker.errors.APIError as e:
        msg = _explanation(e)
        kind = classify_pull_error(e.status_code, msg)
        if kind == "missing":
            return ImageResult(ref, ImageStatus.MISSING, None, _first_line(msg))
        if kind == "auth":
            registry = repo.split("/")[0] if _has_registry(repo) else "docker.io"
            raise UserError(f"the registry refused to give {ref}: {_first_line(msg)}",
                            f"log in to {registry} (e.g. `docker login {registry}`) or fix the "
                            "image name") from e
        raise UserError(f"could not pull {ref}: {_first_line(msg)}",
                        "check the image reference") from e
    return ImageResult(ref, ImageStatus.PULLED, image_digest(ref, docker_client=c))


def image_digest(ref: str, *, docker_client: docker.DockerClient | None = None) -> str | None:
    """The repo digest (``sha256:…``) ``ref``'s repository was pulled by, else the image ID; None
    if absent. (A digest under another repository name is not this ref's.)"""
    c = docker_client or client()
    img = _local_image(c, ref)
    if img is None:
        return None
    repo, _ = _split_ref(ref)
    digests = img.attrs.get("RepoDigests") or []
    for d in digests:
        name, _, digest = d.partition("@")
        if name == repo:
            return digest
    return img.id


def _has_registry(repo: str) -> bool:
    first = repo.split("/")[0]
    return "/" in repo and ("." in first or ":" in first or first == "localhost")


def _split_ref(ref: str) -> tuple[str, str | None]:
    """``registry:5000/a/b:tag`` → (``registry:5000/a/b``, ``tag``); digests stay with the repo."""
    if "@" in ref:
        return ref, None
    last = ref.rsplit("/", 1)[-1]
    if ":" in last:
        repo, tag = ref.rsplit(":", 1)
        return repo, tag
    return ref, "latest"


# --------------------------------------------------------------------------------------------
# running

@dataclass
class RunResult:
    exit_code: int | None  # None when it timed out
    output: str
    duration: float
    timed_out: bool = False
    name: str = ""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


def parse_gpus(spec: str | int | Sequence[str] | None) -> list[docker.types.DeviceRequest]:
    """``'all'`` / ``'none'`` / ``N`` / ``'0,2'`` / ``['0', '2']`` → device requests (pure).

    ``N`` asks for N GPUs; a comma list or a list names devices (index or UUID).
    """
    if spec is None:
        return []
    if isinstance(spec, int):
        count = spec
        if count < 0:
            raise UserError(f"--gpus {spec}: a GPU count can't be negative", "use all, none or N")
        return [docker.types.DeviceRequest(count=count, capabilities=[["gpu"]])] if count else []
    if isinstance(spec, str):
        s = spec.strip().lower()
        if s in ("", "none", "0"):
            return []
        if s == "all":
            return [docker.types.DeviceRequest(count=-1, capabilities=[["gpu"]])]
        if s.isdigit():
            return parse_gpus(int(s))
        if s.startswith("device="):
            s = s[len("device="):]
        ids = [p.strip() for p in s.strip("\"'").split(",") if p.strip()]
        if not ids or not all(re.fullmatch(r"[0-9]+|gpu-[0-9a-f-]+|mig-[0-9a-z/-]+", i) for i in ids):
            raise UserError(f"--gpus {spec!r} is not understood",
                            "use all, none, a count N, or device ids like 0,2")
        return [docker.types.DeviceRequest(device_ids=ids, capabilities=[["gpu"]])]
    ids = [str(i) for i in spec]
    return [docker.types.DeviceRequest(device_ids=ids, capabilities=[["gpu"]])] if ids else []


def parse_mount(spec: str | tuple[str, str] | docker.types.Mount) -> docker.types.Mount:
    """``SRC:DST[:ro]`` or ``(src, dst)`` → a bind mount; the source must exist (pure but for
    the existence check)."""
    if isinstance(spec, docker.types.Mount):
        return spec
    read_only = False
    if isinstance(spec, tuple):
        src, dst = spec
    else:
        parts = spec.split(":")
        if len(parts) == 3 and parts[2] in ("ro", "rw"):
            read_only = parts[2] == "ro"
            parts = parts[:2]
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise UserError(f"--mount {spec!r} is not SRC:DST", "write it like --mount $PWD:/dir")
        src, dst = parts
    src_path = Path(src).expanduser().resolve()
    if not src_path.exists():
        raise UserError(f"mount source {src} does not exist", "create it or fix the --mount path")
    if not str(dst).startswith("/"):
        raise UserError(f"mount target {dst} is not absolute", "use an absolute path like /dir")
    return docker.types.Mount(target=str(dst), source=str(src_path), type="bind",
                              read_only=read_only)


def _env_list(env: Mapping[str, str] | Iterable[str] | None) -> list[str]:
    if env is None:
        return []
    if isinstance(env, Mapping):
        return [f"{k}={v}" for k, v in env.items()]
    from hourly.adapters.proc import parse_env  # the one KEY=VALUE check; --env NAME: this environment's value
    return [f"{k}={v}" for k, v in parse_env(list(env)).items()]


def scan_labels(scan_id: str, **extra: str) -> dict[str, str]:
    """The labels every container of one scan carries (``hourly.scan=<id>`` and extras)."""
    labels = {f"{LABEL_PREFIX}.scan": scan_id}
    labels.update({f"{LABEL_PREFIX}.{k}": str(v) for k, v in extra.items()})
    return labels


def run_container(image: str, cmd: Sequence[str] | str, *, name: str | None = None,
                  labels: Mapping[str, str] | None = None,
                  mounts: Iterable[str | tuple[str, str] | docker.types.Mount] = (),
                  env: Mapping[str, str] | Iterable[str] | None = None,
                  gpus: str | int | Sequence[str] | None = None,
                  timeout: float | None = None, workdir: str | None = None,
                  log_path: str | Path | None = None,
                  docker_client: docker.DockerClient | None = None) -> RunResult:
    """Run ``cmd`` in a fresh container of ``image`` and return its exit code and output.

    The container is ALWAYS removed: after a normal exit, a failure, a timeout (it is killed;
    ``timed_out`` is set) and a KeyboardInterrupt (removed, then the interrupt propagates).
    ``log_path`` gets the full output with a header naming image, command and outcome.
    """
    c = docker_client or client()
    name = name or f"hourly-{uuid.uuid4().hex[:12]}"
    command = ["/bin/sh", "-c", cmd] if isinstance(cmd, str) else [str(x) for x in cmd]
    mount_objs = [parse_mount(m) for m in mounts]
    device_requests = parse_gpus(gpus)
    container = None
    start = time.monotonic()
    timed_out = False
    exit_code: int | None = None
    output = ""
    try:
        try:
            container = c.containers.create(
                image, command=command, name=name, labels=dict(labels or {}),
                mounts=mount_objs, environment=_env_list(env), working_dir=workdir,
                device_requests=device_requests or None, detach=True)
            container.start()
        except docker.errors.APIError as e:
            raise _start_error(image, e, bool(device_requests)) from e
        try:
            res = container.wait(timeout=timeout)
            exit_code = int(res.get("StatusCode", -1))
        except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError) as e:
            # over a unix socket the SDK reports its read timeout as a ConnectionError
            if timeout is None or time.monotonic() - start < timeout:
                raise UserError(f"lost the Docker engine while {name} ran: {e}",
                                "check that dockerd is still running") from e
            timed_out = True
            try:
                container.kill()
            except docker.errors.APIError:
                pass  # it finished between the timeout and the kill
            _wait_quietly(container)
        output = container.logs(stdout=True, stderr=True).decode("utf-8", errors="replace")
    finally:
        _remove(c, container, name)
    duration = time.monotonic() - start
    if log_path is not None:
        log_path = Path(log_path)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        outcome = "timeout" if timed_out else str(exit_code)
        log_path.write_text(f"# image: {image}\n# container: {name}\n$ {' '.join(command)}\n"
                            f"{output}\n# exit: {outcome} after {duration:.2f}s\n")
    return RunResult(exit_code, output, duration, timed_out, name)


def _start_error(image: str, e: docker.errors.APIError, wants_gpu: bool) -> HourlyError:
    msg = _explanation(e)
    low = msg.lower()
    if wants_gpu and ("device driver" in low or "nvidia" in low or "gpu" in low):
        return UserError(f"the Docker engine can't give GPUs to containers: {_first_line(msg)}",
                         "install the NVIDIA Container Toolkit and restart dockerd, or pass "
                         "--gpus none")
    if isinstance(e, docker.errors.ImageNotFound) or "no such image" in low:
        return UserError(f"image {image} is not present locally", "pull it or drop --no-pull")
    return UserError(f"could not start a container of {image}: {_first_line(msg)}",
                     "check the image, the mounts and the command")


def _wait_quietly(container: Any) -> None:
    try:
        container.wait(timeout=30)
    except (requests.exceptions.RequestException, docker.errors.APIError):
        pass


def _remove(c: docker.DockerClient, container: Any, name: str) -> None:
    """Force-remove the container; a second Ctrl-C during removal does not stop it."""
    interrupted: BaseException | None = None
    for _ in range(3):
        try:
            if container is not None:
                container.remove(force=True)
            else:  # create() may have succeeded before an interrupt hid its result
                c.api.remove_container(name, force=True)
            break
        except docker.errors.NotFound:
            break
        except docker.errors.APIError as e:
            if _removal_in_progress(e):
                break
            time.sleep(0.2)
        except KeyboardInterrupt as e:
            interrupted = e
    if interrupted is not None:
        raise interrupted


@dataclass(frozen=True)
class Listed:
    """A container as the engine's listing gives it (no inspection)."""
    id: str
    name: str
    labels: dict[str, str]


def listed(c: docker.DockerClient, filters: dict) -> list[Listed]:
    """Every container (running or not) matching ``filters``, from one listing call. The SDK's
    ``containers.list`` inspects each container it lists, and a container removed in between
    (one started with auto-remove that has just stopped) made it raise NotFound: seen in CI."""
    return [Listed(r["Id"], (r.get("Names") or ["/" + r["Id"][:12]])[0].lstrip("/"), r.get("Labels") or {})
            for r in c.api.containers(all=True, filters=filters)]


def remove_listed(c: docker.DockerClient, cont: Listed) -> bool:
    """Remove a listed container, forced; False when it is gone already, or going: another hourly
    starting at the same moment (each removes dead runs' containers as it starts) asked first, and
    the engine refuses the second with 409 "removal ... is already in progress"."""
    try:
        c.api.remove_container(cont.id, force=True)
        return True
    except docker.errors.NotFound:
        return False
    except docker.errors.APIError as e:
        if _removal_in_progress(e):
            _wait_gone(c, cont.id)  # gone when this returns, as after our own removal
            return False
        raise


def _removal_in_progress(e: docker.errors.APIError) -> bool:
    """The engine's refusal of a removal another caller started: the container is going."""
    return e.status_code == 409 and "already in progress" in _explanation(e).lower()


class _StillThere(Exception):
    pass


def _wait_gone(c: docker.DockerClient, cid: str, seconds: float = 30.0) -> None:
    """Wait (at most ``seconds``) until the engine no longer knows container ``cid``: another's
    removal of it is under way."""
    def gone() -> None:
        try:
            c.api.inspect_container(cid)
        except docker.errors.NotFound:
            return
        raise _StillThere(cid)
    try:
        Retrying(stop=stop_after_delay(seconds), wait=wait_fixed(0.1),
                 retry=retry_if_exception(lambda e: isinstance(e, _StillThere)), reraise=True)(gone)
    except _StillThere:
        pass  # the other removal takes long: it is still the other's to finish


def cleanup(label: str, *, docker_client: docker.DockerClient | None = None) -> list[str]:
    """Remove every container carrying ``label`` (``key`` or ``key=value``); returns their
    names. For scans interrupted hard enough (SIGKILL) that :func:`run_container` could not."""
    c = docker_client or client()
    return [cont.name for cont in listed(c, {"label": label}) if remove_listed(c, cont)]


# --------------------------------------------------------------------------------------------
# commits baked into an image

@dataclass(frozen=True)
class ImageCommits:
    jax: str | None
    xla: str | None
    layout: tuple[str, str] | None  # which (jax, xla) directories they came from


class _ContainerFiles:
    """Reads files out of a created-but-never-started container via ``get_archive``."""

    def __init__(self, container: Any) -> None:
        self.container = container

    def read(self, path: str, limit: int = 64 * 1024 * 1024) -> bytes | None:
        try:
            stream, stat = self.container.get_archive(path)
        except docker.errors.NotFound:
            return None
        if stat.get("mode", 0) & 0x80000000:  # a directory
            return None
        buf = io.BytesIO()
        for chunk in stream:
            buf.write(chunk)
            if buf.tell() > limit + 1024 * 1024:
                return None
        buf.seek(0)
        with tarfile.open(fileobj=buf) as tar:
            for member in tar:
                if member.isfile():
                    f = tar.extractfile(member)
                    return f.read() if f else None
                if member.issym() or member.islnk():
                    target = member.linkname
                    if not target.startswith("/"):
                        target = str(Path(path).parent / target)
                    return self.read(target, limit)
        return None

    def text(self, path: str) -> str | None:
        data = self.read(path)
        return None if data is None else data.decode("utf-8", errors="replace")


def resolve_head(read_text: Callable[[str], str | None], git_dir: str) -> str | None:
    """The commit HEAD points to in ``git_dir``, using only file reads (pure given ``read_text``).

    ``read_text(path) -> str | None``. Handles a detached HEAD, a symbolic ref stored loose or in
    ``packed-refs``, a ``.git`` *file* (``gitdir: …``) and worktrees' ``commondir``.
    """
    head = read_text(f"{git_dir}/HEAD")
    if head is None:
        gitfile = read_text(git_dir)  # a submodule/worktree checkout: .git is a file
        if gitfile and gitfile.startswith("gitdir:"):
            target = gitfile.split(":", 1)[1].strip()
            if not target.startswith("/"):
                target = str(Path(git_dir).parent / target)
            return resolve_head(read_text, _normalize(target))
        return None
    common = read_text(f"{git_dir}/commondir")
    common_dir = git_dir
    if common:
        c = common.strip()
        common_dir = _normalize(c if c.startswith("/") else f"{git_dir}/{c}")
    value = head.strip()
    for _ in range(10):  # symbolic refs may chain
        if SHA_RE.match(value):
            return value
        if not value.startswith("ref:"):
            return None
        ref = value[4:].strip()
        loose = read_text(f"{git_dir}/{ref}") or read_text(f"{common_dir}/{ref}")
        if loose is not None:
            value = loose.strip()
            continue
        packed = read_text(f"{common_dir}/packed-refs") or ""
        for line in packed.splitlines():
            parts = line.strip().split(" ", 1)
            if len(parts) == 2 and parts[1] == ref and SHA_RE.match(parts[0]):
                return parts[0]
        return None
    return None


def _normalize(path: str) -> str:
    parts: list[str] = []
    for p in path.split("/"):
        if p in ("", "."):
            continue
        if p == "..":
            if parts:
                parts.pop()
        else:
            parts.append(p)
    return "/" + "/".join(parts)


def read_commits(image: str, *, docker_client: docker.DockerClient | None = None
                 ) -> ImageCommits:
    """The JAX and XLA HEAD commits in ``image`` (either known layout); None for any not found.

    Creates a container that is never started, reads the ``.git`` files out of it with
    ``get_archive`` (no git, no shell needed in the image), and removes it.
    """
    c = docker_client or client()
    name = f"hourly-commits-{uuid.uuid4().hex[:12]}"
    container = None
    try:
        try:
            container = c.containers.create(image, command=["/hourly-never-started"], name=name,
                                            labels={f"{LABEL_PREFIX}.role": "read-commits"},
                                            network_disabled=True)
        except docker.errors.APIError as e:
            raise UserError(f"could not open image {image}: {_first_line(_explanation(e))}",
                            "check that the image exists locally") from e
        files = _ContainerFiles(container)
        for jax_dir, xla_dir in SOURCE_LAYOUTS:
            jax = resolve_head(files.text, f"{jax_dir}/.git")
            xla = resolve_head(files.text, f"{xla_dir}/.git")
            if jax or xla:
                return ImageCommits(jax, xla, (jax_dir, xla_dir))
        return ImageCommits(None, None, None)
    finally:
        _remove(c, container, name)


# --------------------------------------------------------------------------------------------

def _explanation(e: BaseException) -> str:
    if isinstance(e, docker.errors.APIError):
        exp = e.explanation
        if isinstance(exp, bytes):
            exp = exp.decode("utf-8", errors="replace")
        return str(exp or e)
    return str(e)


def _first_line(e: BaseException | str) -> str:
    s = _explanation(e) if isinstance(e, BaseException) else e
    s = s.strip()
    return s.splitlines()[0] if s else type(e).__name__


# --------------------------------------------------------------------------------------------
# interactive containers

def image_env(image: str, *, docker_client: docker.DockerClient | None = None) -> dict[str, str]:
    """The environment baked into ``image`` (so PATH can be extended, not replaced)."""
    c = docker_client or client()
    env = (c.images.get(image).attrs.get("Config") or {}).get("Env") or []
    return dict(e.split("=", 1) for e in env if "=" in e)


def start_detached(image: str, cmd: Sequence[str], *, name: str,
                   labels: Mapping[str, str] | None = None,
                   mounts: Iterable[str | tuple[str, str] | docker.types.Mount] = (),
                   env: Mapping[str, str] | Iterable[str] | None = None,
                   gpus: str | int | Sequence[str] | None = None, workdir: str | None = None,
                   docker_client: docker.DockerClient | None = None) -> Any:
    """Start a long-lived container for interactive use; it is removed when it stops
    (``auto_remove``), and removed at once if starting it fails."""
    c = docker_client or client()
    device_requests = parse_gpus(gpus)
    container = None
    try:
        container = c.containers.run(
            image, command=list(cmd), name=name, labels=dict(labels or {}),
            mounts=[parse_mount(m) for m in mounts], environment=_env_list(env),
            working_dir=workdir, device_requests=device_requests or None, detach=True,
            auto_remove=True, stdin_open=True, tty=True, init=True)
        return container
    except docker.errors.APIError as e:
        if e.status_code == 409:  # the name is taken: that container is not ours to remove
            raise UserError(f"a container named {name} already exists",
                            f"attach to it (docker exec -it {name} bash) or stop it "
                            f"(docker stop {name})") from e
        _remove(c, container, name)
        raise _start_error(image, e, bool(device_requests)) from e
    except BaseException:
        _remove(c, container, name)
        raise


def exec_in(container_name: str, cmd: Sequence[str], *, workdir: str | None = None,
            env: Mapping[str, str] | Iterable[str] | None = None,
            log_path: str | Path | None = None, on_line: Callable[[str], None] | None = None,
            docker_client: docker.DockerClient | None = None) -> RunResult:
    """Run ``cmd`` in the running container ``container_name`` (``docker exec``) and return its
    exit code and output (stdout and stderr together); ``log_path`` gets the full output and
    ``on_line`` each line as it comes."""
    c = docker_client or client()
    start = time.monotonic()
    chunks: list[bytes] = []
    try:
        exec_id = c.api.exec_create(container_name, [str(x) for x in cmd], stdout=True, stderr=True,
                                    workdir=workdir, environment=_env_list(env))["Id"]
        pending = b""
        for chunk in c.api.exec_start(exec_id, stream=True):
            chunks.append(chunk)
            if on_line is not None:
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    on_line(line.decode("utf-8", errors="replace"))
        if on_line is not None and pending:
            on_line(pending.decode("utf-8", errors="replace"))
        exit_code = c.api.exec_inspect(exec_id).get("ExitCode")
    except docker.errors.APIError as e:
        raise UserError(f"could not run a command in {container_name}: {_first_line(_explanation(e))}",
                        "check that the container is still running") from e
    output = b"".join(chunks).decode("utf-8", errors="replace")
    duration = time.monotonic() - start
    if log_path is not None:
        log_path = Path(log_path)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.write_text(f"# container: {container_name}\n$ {' '.join(map(str, cmd))}\n"
                            f"{output}\n# exit: {exit_code} after {duration:.2f}s\n")
    return RunResult(exit_code, output, duration, False, container_name)
