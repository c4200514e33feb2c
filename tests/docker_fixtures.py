"""Make fake JAX-Toolbox nightly images locally, with no registry access.

Each image is a busybox-static root filesystem put through ``import_image`` (the SDK's
``docker import``), with fake JAX/XLA source trees whose ``.git`` holds a distinct commit, and a
``/opt/bench`` directory that tells the shared benchmark script (:data:`BENCH_SCRIPT`, mounted at
``/dir/test.sh`` like the guide's) what to do: print ``MLUPS: <value>``, crash, hang, or print no
metric. The standard set (:data:`NIGHTLY_SPECS`) has one missing date, one crash and a step down
in the middle, and its last date uses the newer ``/opt/jax`` + ``/opt/xla`` layout.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import sys
import tarfile
from dataclasses import dataclass, field

import docker.errors

import docker

BUSYBOX_CANDIDATES = ("/bin/busybox", "/usr/bin/busybox")

# The benchmark every date runs: same script, behaviour decided by the image (as in real life,
# where the same test.sh meets different JAX/XLA builds).
BENCH_SCRIPT = """#!/bin/sh
mode=$(cat /opt/bench/mode)
echo "benchmark on image built $(cat /opt/bench/date)"
case "$mode" in
  crash) echo "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: fake crash for testing" >&2
         exit 1 ;;
  hang) sleep 600 ;;
  nometric) echo "finished, but printed no metric" ;;
  *) echo "MLUPS: $(cat /opt/bench/value)" ;;
esac
"""

BASH_SHIM = '#!/bin/sh\nexec /bin/sh "$@"\n'


def fake_sha(*parts: str) -> str:
    """A distinct, deterministic 40-hex "commit" for a fixture."""
    return hashlib.sha1("/".join(parts).encode()).hexdigest()


@dataclass(frozen=True)
class NightlySpec:
    date: str
    mode: str = "ok"              # ok | crash | hang | nometric | missing (no image at all)
    value: float | None = None
    layout: str = "source"        # source: /opt/jax-source + /opt/xla-source; plain: /opt/jax + /opt/xla
    head: str = "detached"        # detached | branch (loose ref) | packed (packed-refs)

    @property
    def jax(self) -> str | None:
        return None if self.mode == "missing" else fake_sha("jax", self.date)

    @property
    def xla(self) -> str | None:
        return None if self.mode == "missing" else fake_sha("xla", self.date)


NIGHTLY_SPECS: tuple[NightlySpec, ...] = (
    NightlySpec("2023-08-20", value=100.0),
    NightlySpec("2023-08-21", value=101.0, head="branch"),
    NightlySpec("2023-08-22", value=99.0, head="packed"),
    NightlySpec("2023-08-23", mode="missing"),
    NightlySpec("2023-08-24", mode="crash", value=98.0),
    NightlySpec("2023-08-25", value=80.0),
    NightlySpec("2023-08-26", value=79.5, layout="plain", head="branch"),
)


def busybox_path() -> str:
    for p in BUSYBOX_CANDIDATES:
        if shutil.which(p):
            return p
    raise RuntimeError("busybox-static is not installed (apt-get install busybox-static, or run "
                       "bash .ci/docker-up.sh)")


class _TarBuilder:
    def __init__(self, out=None):
        """A tar in memory (:meth:`bytes`), or written as a stream to the file ``out``."""
        self.buf = io.BytesIO() if out is None else out
        self.tar = tarfile.open(fileobj=self.buf, mode="w" if out is None else "w|")
        self.dirs: set[str] = set()
        self.files: set[str] = set()

    def _dir(self, path: str) -> None:
        path = path.strip("/")
        if not path or path in self.dirs:
            return
        self._dir(path.rsplit("/", 1)[0] if "/" in path else "")
        info = tarfile.TarInfo(path)
        info.type = tarfile.DIRTYPE
        info.mode = 0o1777 if path == "tmp" else 0o755
        self.tar.addfile(info)
        self.dirs.add(path)

    def file(self, path: str, data: bytes | str, mode: int = 0o644, mtime: float = 0) -> None:
        data = data.encode() if isinstance(data, str) else data
        path = path.strip("/")
        if path in self.files:  # the engine refuses tars with duplicate paths
            return
        self.files.add(path)
        self._dir(path.rsplit("/", 1)[0] if "/" in path else "")
        info = tarfile.TarInfo(path)
        info.size = len(data)
        info.mode = mode
        info.mtime = int(mtime)
        self.tar.addfile(info, io.BytesIO(data))

    def copy(self, path: str, src, mode: int = 0o644) -> None:
        """The host file ``src`` at ``path``, with its modification time: a ``.pyc`` copied with
        its source stays valid (Python checks the source's size and mtime), so the image's Python
        need not compile the source again in every new container."""
        st = os.stat(src)
        with open(src, "rb") as f:
            self.file(path, f.read(), mode, st.st_mtime)
        if str(src).endswith(".py"):
            from importlib.util import cache_from_source
            pyc = cache_from_source(str(src))  # this Python's bytecode, where it compiled the source
            if os.path.isfile(pyc):
                self.copy(cache_from_source(path), pyc)

    def symlink(self, path: str, target: str) -> None:
        path = path.strip("/")
        if path in self.files:
            return
        self.files.add(path)
        self._dir(path.rsplit("/", 1)[0])
        info = tarfile.TarInfo(path)
        info.type = tarfile.SYMTYPE
        info.linkname = target
        self.tar.addfile(info)

    def dir(self, path: str) -> None:
        self._dir(path)

    def bytes(self) -> bytes:
        self.tar.close()
        return self.buf.getvalue()


def _applets(busybox: str) -> list[str]:
    # `busybox --list` is run once per session; the fixture module may use subprocess (tests
    # are not hourly code), but going through hourly.adapters.proc keeps one way of running things.
    from hourly.adapters.proc import run
    return [a for a in run([busybox, "--list"]).output.split() if a and "/" not in a]


_APPLETS: list[str] | None = None


def git_dir_files(git_dir: str, sha: str, head: str) -> dict[str, str]:
    """Files of a minimal ``.git`` whose HEAD resolves to ``sha`` in the given ``head`` style."""
    if head == "detached":
        return {f"{git_dir}/HEAD": sha + "\n"}
    if head == "branch":
        return {f"{git_dir}/HEAD": "ref: refs/heads/main\n",
                f"{git_dir}/refs/heads/main": sha + "\n"}
    if head == "packed":
        other = fake_sha("other", sha)
        return {f"{git_dir}/HEAD": "ref: refs/heads/main\n",
                f"{git_dir}/packed-refs": "# pack-refs with: peeled fully-peeled sorted \n"
                                          f"{other} refs/heads/feature\n"
                                          f"{sha} refs/heads/main\n"}
    raise ValueError(head)


def rootfs_tar(spec: NightlySpec) -> bytes:
    """The root filesystem of one fake nightly image, as an uncompressed tar."""
    global _APPLETS
    bb = busybox_path()
    if _APPLETS is None:
        _APPLETS = _applets(bb)
    t = _TarBuilder()
    with open(bb, "rb") as f:
        t.file("bin/busybox", f.read(), 0o755)
    for applet in _APPLETS:
        if applet != "busybox":
            t.symlink(f"bin/{applet}", "busybox")
    t.file("bin/bash", BASH_SHIM, 0o755)  # the guide runs `/bin/bash /dir/test.sh`
    for d in ("tmp", "dir", "proc", "sys", "dev", "etc", "root"):
        t.dir(d)
    t.file("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n")
    t.file("opt/bench/mode", spec.mode + "\n")
    t.file("opt/bench/date", spec.date + "\n")
    t.file("opt/bench/value", f"{spec.value if spec.value is not None else 0}\n")
    jax_dir, xla_dir = (("opt/jax-source", "opt/xla-source") if spec.layout == "source"
                        else ("opt/jax", "opt/xla"))
    for src_dir, sha in ((jax_dir, spec.jax), (xla_dir, spec.xla)):
        t.file(f"{src_dir}/README.md", f"fake source tree at {sha}\n")
        for path, text in git_dir_files(f"{src_dir}/.git", sha, spec.head).items():
            t.file(path, text)
    return t.bytes()


def make_image(client: docker.DockerClient, ref: str, spec: NightlySpec) -> str:
    """Import the fake nightly image for ``spec`` as ``ref``; returns its image ID."""
    repo, tag = ref.rsplit(":", 1)
    _drop(client, ref)
    client.api.import_image_from_data(rootfs_tar(spec), repository=repo, tag=tag)
    return client.images.get(ref).id


@dataclass
class NightlySet:
    """The standard set of fake nightlies, tagged locally and (optionally) in a registry."""
    local_template: str
    registry_template: str | None
    specs: tuple[NightlySpec, ...] = NIGHTLY_SPECS
    pushed: list[str] = field(default_factory=list)

    def spec(self, date: str) -> NightlySpec:
        return next(s for s in self.specs if s.date == date)

    @property
    def dates(self) -> list[str]:
        return [s.date for s in self.specs]


def build_nightly_set(client: docker.DockerClient, local_template: str,
                      registry_template: str | None = None,
                      specs: tuple[NightlySpec, ...] = NIGHTLY_SPECS) -> NightlySet:
    """Tag every non-missing date at ``local_template``; with ``registry_template`` also push it
    there and drop the registry tag locally, so the first use of a registry ref really pulls."""
    ns = NightlySet(local_template, registry_template, specs)
    for spec in specs:
        if spec.mode == "missing":
            continue
        local = local_template.format(date=spec.date)
        make_image(client, local, spec)
        if registry_template:
            remote = registry_template.format(date=spec.date)
            repo, tag = remote.rsplit(":", 1)
            client.images.get(local).tag(repo, tag)
            for line in client.images.push(repo, tag=tag, stream=True, decode=True):
                if "error" in line:
                    raise RuntimeError(f"push of {remote} failed: {line['error']}")
            client.images.remove(remote)
            ns.pushed.append(remote)
    return ns


# ------------------------------------------------------------------------------------------
# an image with a real Python (the one running the tests), for `hourly container`

_SKIP_STDLIB = {"test", "tests", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3",
                "pydoc_data", "site-packages"}


def _ldd_deps(paths: list[str]) -> set[str]:
    import re as _re

    from hourly.adapters.proc import run
    deps: set[str] = set()
    for p in paths:
        out = run(["ldd", p], check=False).output
        for line in out.splitlines():
            m = _re.search(r"=>\s*(/\S+)", line) or _re.match(r"\s*(/\S+)\s+\(", line)
            if m:
                deps.add(m.group(1))
    return deps


def _wanted(rel_parts: tuple[str, ...]) -> bool:
    """A file of the stdlib or of a distribution worth putting in the image: not a test suite
    (``tests`` packages are never imported by the code under them), no bytecode
    (:meth:`_TarBuilder.copy` adds this Python's own next to each source)."""
    return "tests" not in rel_parts[:-1] and "__pycache__" not in rel_parts


def _base_site() -> str:
    """The base interpreter's site-packages: the packages come from the Python running the tests,
    often a venv; the image has its base interpreter only, so they go there."""
    import site
    return site.getsitepackages([sys.base_prefix])[0]


def site_packages_files(t: _TarBuilder, site_packages: tuple[str, ...]) -> None:
    """The distributions ``site_packages`` names (and their dependencies), from the host's
    site-packages, into the image's base site-packages, with their bytecode."""
    from pathlib import Path

    from hourly.nightly.image import dependency_closure
    base_site = Path(_base_site())
    for dist in dependency_closure(site_packages, skip=()):
        for f in dist.files or []:
            src = Path(dist.locate_file(f))
            if str(f).startswith("..") or not _wanted(Path(str(f)).parts) or not src.is_file():
                continue
            t.copy(str(base_site / f), src, 0o755 if str(f).endswith(".so") else 0o644)


def python_rootfs_tar(site_packages: tuple[str, ...] = (), out=None) -> bytes:
    """busybox + git + the test run's own Python (stdlib only) at the same path, with
    ``python3`` on PATH: enough for hourly, once its dependencies are mounted in.
    ``site_packages`` names distributions (and their dependencies) to install from the host's
    site-packages, e.g. pip and setuptools to build an image on top of it without an index.
    Sources keep their modification times and come with this Python's bytecode, as in an image
    whose Python compiled its packages at install time. With ``out`` (a file) the tar is
    streamed there, and b"" returned."""
    from pathlib import Path

    t = _TarBuilder(out)
    global _APPLETS
    bb = busybox_path()
    if _APPLETS is None:
        _APPLETS = _applets(bb)
    with open(bb, "rb") as f:
        t.file("bin/busybox", f.read(), 0o755)
    for applet in _APPLETS:
        if applet != "busybox":
            t.symlink(f"bin/{applet}", "busybox")
    t.file("bin/bash", BASH_SHIM, 0o755)
    for d in ("tmp", "dir", "proc", "sys", "dev", "root", "usr/bin"):
        t.dir(d)
    t.file("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n")
    exe = os.path.realpath(sys.executable)
    prefix = Path(sys.base_prefix)
    stdlib = prefix / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    elves = [exe]
    t.copy(exe, exe, 0o755)
    t.symlink("usr/bin/python3", exe)
    for lib in (prefix / "lib").glob("libpython*.so*"):
        if lib.is_symlink():  # libpython3.X.so -> libpython3.X.so.1.0: one copy
            t.symlink(str(lib), os.readlink(lib))
            continue
        t.copy(str(lib), lib, 0o755)
        elves.append(str(lib))
    for root, dirs, files in os.walk(stdlib):
        dirs[:] = [d for d in dirs if d not in _SKIP_STDLIB and not d.startswith("config-")]
        for name in files:
            p = Path(root) / name
            if p.is_file() and not p.is_symlink() and _wanted(p.relative_to(stdlib).parts):
                t.copy(str(p), p, 0o755 if name.endswith(".so") else 0o644)
                if name.endswith(".so"):
                    elves.append(str(p))
    if site_packages:
        site_packages_files(t, site_packages)
    git = shutil.which("git")  # hourly imports GitPython, which wants a git binary (JAX images have one)
    if git:
        git = os.path.realpath(git)
        t.copy(git, git, 0o755)
        if git != "/usr/bin/git":
            t.symlink("usr/bin/git", git)
        elves.append(git)
    # every real image has the whole C runtime; compiled wheels (pydantic-core) need more of it
    for lib in ("libgcc_s.so.1", "libstdc++.so.6", "librt.so.1", "libpthread.so.0", "libdl.so.2",
                "libutil.so.1", "libresolv.so.2"):
        for d in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64"):
            if Path(d, lib).exists():
                elves.append(str(Path(d, lib)))
                t.file(str(Path(d, lib)), Path(d, lib).read_bytes(), 0o755)
                break
    for dep in sorted(_ldd_deps(elves)):
        if not dep.startswith(str(prefix)):
            t.file(dep, Path(dep).read_bytes(), 0o755)
    if out is not None:
        t.tar.close()
        return b""
    return t.bytes()


def _drop(client: docker.DockerClient, ref: str) -> None:
    """Remove the previous session's image under ``ref``, so re-imports leave no dangling ones."""
    try:
        client.images.remove(ref, force=True)
    except docker.errors.NotFound:
        pass


def make_python_image(client: docker.DockerClient, ref: str,
                      site_packages: tuple[str, ...] = ()) -> str:
    import sys
    from pathlib import Path
    repo, tag = ref.rsplit(":", 1)
    _drop(client, ref)
    # like the JAX images: the Python's script directory is on PATH
    path = f"{Path(sys.base_prefix) / 'bin'}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    # the tar (a quarter GB, seconds to read) streams to the engine as it is made: its making here
    # and the engine's unpacking overlap (half the time)
    import threading
    r, w = os.pipe()
    failed: list[BaseException] = []

    def produce() -> None:
        try:
            with os.fdopen(w, "wb") as f:
                python_rootfs_tar(site_packages, f)
        except BaseException as e:  # the engine got a cut tar (or stopped reading): raised below
            failed.append(e)

    tar = os.fdopen(r, "rb")

    def chunks():
        while chunk := tar.read(1 << 20):
            yield chunk
    maker = threading.Thread(target=produce, daemon=True)
    maker.start()
    try:
        client.api.import_image_from_data(chunks(), repository=repo, tag=tag, changes=[f"ENV PATH={path}"])
    finally:
        tar.close()  # if the engine stopped reading, the maker's next write fails instead of blocking
        maker.join()
    if failed:
        _drop(client, ref)
        raise failed[0]
    return client.images.get(ref).id


def add_site_packages(client: docker.DockerClient, base: str, ref: str, site_packages: tuple[str, ...]) -> str:
    """``base`` (an image of :func:`make_python_image`) with the distributions ``site_packages``
    names (and their dependencies) added from the host's site-packages, as one more layer, at
    ``ref``; its image ID. Only the new files travel to the engine, not the whole Python again."""
    repo, tag = ref.rsplit(":", 1)
    _drop(client, ref)
    t = _TarBuilder()
    site_packages_files(t, site_packages)
    c = client.containers.create(base, command=["true"])
    try:
        c.put_archive("/", t.bytes())
        c.commit(repository=repo, tag=tag)
    finally:
        c.remove(force=True)
    return client.images.get(ref).id
