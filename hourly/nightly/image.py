"""``hourly container``: the pinned nightly container for the second phase, with hourly inside.

hourly reaches the container without any package index: the hourly package and the packages it
needs are copied (with their bytecode) from the Python running hourly on the host into ``<workdir>/.container/python``
and mounted read-only at ``/opt/hourly/python``; an ``hourly`` launcher mounted at
``/opt/hourly/bin`` (first on ``PATH``) puts that directory first on ``sys.path`` of hourly's own
process only. Nothing is added to ``PYTHONPATH``, so the benchmarks hourly runs see the image's
Python exactly as it is. numpy and matplotlib are never copied: hourly uses the image's numpy
(the JAX images have it), and plots are optional. One dependency is compiled (pydantic-core,
through typer), so the copy works as is when the image's Python has the host's minor version;
otherwise the compiled packages (and those built on them) are left out and :func:`start` says
what to install inside, or to use the image from docker/Dockerfile.

The current directory is mounted at ``/dir`` (the container starts there, like the nightly runs)
and the workdir too, so results stay on the host. The container keeps running (``tail -f
/dev/null`` under an init process) until stopped, and is removed when it stops. hourly does not
drive the user's terminal: it prints the exact commands to enter and to stop the container.
"""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import docker.errors

from hourly.adapters import containers
from hourly.errors import UserError

PY_TARGET = "/opt/hourly/python"
BIN_TARGET = "/opt/hourly/bin"
WORKDIR_TARGET = "/hourly-work"
#: heavy or unneeded distributions that are never copied: JAX images bring numpy and scipy
#: (jax requires both), and the scan side needs none of the others
SKIP = {"numpy", "scipy", "matplotlib", "colorama", "pillow",
        "contourpy", "kiwisolver", "fonttools", "setuptools", "pip"}

# hourly's own packages first on sys.path of this process only (never via PYTHONPATH, which the
# benchmark would inherit)
LAUNCHER = (
    "#!/bin/sh\n"
    "exec python3 -c 'import runpy, sys; sys.path.insert(0, \"%s\"); sys.argv[0] = \"hourly\"; "
    "runpy.run_module(\"hourly\", run_name=\"__main__\", alter_sys=True)' \"$@\"\n" % PY_TARGET)


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_names(dist: md.Distribution) -> list[str]:
    """Names of what ``dist`` requires outside any extra (environment markers are not
    evaluated: a requirement that does not apply here is simply not installed)."""
    out = []
    for req in dist.requires or []:
        if "extra ==" in req:
            continue
        m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
        if m:
            out.append(m.group(1))
    return out


def required_roots() -> tuple[str, ...]:
    """What hourly needs inside the container: the distributions hourly's installed metadata
    really requires (pyproject's dependencies), less :data:`SKIP`; their dependencies follow."""
    skip_n = {_norm(s) for s in SKIP}
    return tuple(n for n in _requirement_names(md.distribution("hourly")) if _norm(n) not in skip_n)


def dependency_closure(roots: Iterable[str] | None = None, skip: Iterable[str] = SKIP) -> list[md.Distribution]:
    """Installed distributions reachable from ``roots`` (default: :func:`required_roots`), skipping
    ``skip``, host-side."""
    skip_n = {_norm(s) for s in skip}
    seen: dict[str, md.Distribution] = {}
    stack = list(required_roots() if roots is None else roots)
    while stack:
        name = _norm(stack.pop())
        if name in seen or name in skip_n:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue  # e.g. tomli on Python >= 3.11: the container may need it; see missing()
        seen[name] = dist
        stack.extend(_requirement_names(dist))
    return list(seen.values())


def _compiled(dist: md.Distribution) -> bool:
    return any(str(f).endswith((".so", ".pyd")) for f in dist.files or [])


def compiled_closure(dists: list[md.Distribution]) -> set[str]:
    """Names of the compiled distributions and of those that require them (pure)."""
    out = {_norm(d.metadata["Name"]) for d in dists if _compiled(d)}
    changed = True
    while changed:
        changed = False
        for d in dists:
            name = _norm(d.metadata["Name"])
            if name in out:
                continue
            reqs = {_norm(m.group(1)) for r in d.requires or [] if "extra ==" not in r
                    for m in [re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", r)] if m}
            if reqs & out:
                out.add(name)
                changed = True
    return out


def _place(src: str, dst: str, link: bool) -> None:
    """``src`` at ``dst``: a hard link with ``link`` where the filesystem allows it (an installed
    distribution's files are never written in place: installers replace them), else a copy
    keeping its mtime."""
    if link:
        try:
            os.link(src, dst)
            return
        except OSError:  # another filesystem, or a file the kernel won't link for us (protected_hardlinks)
            pass
    shutil.copy2(src, dst)


def _copy_with_bytecode(src: str, dst: str, link: bool = False) -> None:
    """``src`` at ``dst`` (:func:`_place`) and, for a module, the bytecode this Python compiled it
    to, if any: the copy is mounted read-only, so a container whose Python has this one's version
    would otherwise compile every module again at each ``hourly`` it starts (half a second each).
    Another version never reads it (its own cache tag names its files); a stale one is checked
    against the source's mtime and size, and ignored. (Python replaces a ``.pyc``, never rewrites
    it, so it may be linked too.)"""
    _place(src, dst, link)
    if src.endswith(".py"):
        pyc = importlib.util.cache_from_source(src)
        if os.path.isfile(pyc):
            target = importlib.util.cache_from_source(dst)
            if not os.path.isdir(os.path.dirname(target)):
                os.mkdir(os.path.dirname(target))
            _place(pyc, target, link)


def build_python_dir(dest: Path, with_compiled: bool = True) -> list[str]:
    """Copy hourly and its dependencies, with this Python's bytecode of them, into ``dest``
    (compiled ones, and those built on them, only ``with_compiled``); returns the copied
    distribution names. ``dest`` is rebuilt from scratch each time. The dependencies' files are
    hard links where the filesystem allows (thousands of files, a second or more to copy on a
    busy disk at every container start); hourly's own package, which a checkout may edit in
    place, is copied."""
    import hourly
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    pkg = Path(hourly.__file__).resolve().parent
    shutil.copytree(pkg, dest / "hourly", ignore=shutil.ignore_patterns("__pycache__"),
                    copy_function=_copy_with_bytecode)
    names = []
    made: set[Path] = set()
    dists = dependency_closure()
    leave_out = set() if with_compiled else compiled_closure(dists)
    for dist in dists:
        if _norm(dist.metadata["Name"]) in leave_out:
            continue
        for f in dist.files or []:
            parts = Path(str(f)).parts
            if not parts or parts[0] == ".." or "__pycache__" in parts or parts[0].endswith(".data"):
                continue
            src = Path(str(dist.locate_file(f)))  # a path for an installed distribution
            if not src.is_file():
                continue
            target = dest.joinpath(*parts)
            if target.parent not in made:  # once per folder: thousands of files share a few hundred
                target.parent.mkdir(parents=True, exist_ok=True)
                made.add(target.parent)
            _copy_with_bytecode(str(src), str(target), link=True)
        names.append(dist.metadata["Name"])
    return sorted(names)


@dataclass
class Started:
    name: str
    image: str
    created: bool  # False: it was already running
    workdir_inside: str
    warning: str | None = None

    def instructions(self) -> list[str]:
        return [f"docker exec -it {self.name} bash",
                f"docker stop {self.name}   # when done; the container is then removed"]


def container_name(image: str) -> str:
    tag = image.rsplit("/", 1)[-1]
    return "hourly-" + re.sub(r"[^a-zA-Z0-9_.-]", "-", tag)


def start(image: str, workdir: str | Path, *, gpus: str = "all", pull: bool = True,
          env: list[str] | None = None, extra_mounts: list[str] | None = None,
          name: str | None = None, docker_client: Any = None) -> Started:
    """Start (or find running) the pinned container of ``image`` with hourly inside."""
    c = docker_client or containers.client()
    res = containers.ensure_image(image, pull=pull, docker_client=c)
    if not res.present:
        raise UserError(f"image {image} is not available ({res.reason})",
                        "pick a date that has a nightly (see `hourly nightly`), or drop --no-pull")
    name = name or container_name(image)
    cwd = Path.cwd().resolve()
    wd = Path(workdir).expanduser().absolute()
    wd.mkdir(parents=True, exist_ok=True)
    try:
        rel = wd.resolve().relative_to(cwd)
        workdir_inside = str(Path("/dir") / rel)
    except ValueError:
        workdir_inside = WORKDIR_TARGET
    try:
        existing = c.containers.get(name)
    except docker.errors.NotFound:
        existing = None
    if existing is not None:
        if existing.status == "running" and existing.image.id == c.images.get(image).id:
            return Started(name, image, False, workdir_inside)
        raise UserError(f"a container named {name} already exists ({existing.status})",
                        f"stop it first: docker stop {name}")
    warning = python_mismatch(image, docker_client=c)
    bundle = wd / ".container"
    build_python_dir(bundle / "python", with_compiled=warning is None)
    (bundle / "bin").mkdir(parents=True, exist_ok=True)
    launcher = bundle / "bin" / "hourly"
    launcher.write_text(LAUNCHER)
    launcher.chmod(0o755)
    base = containers.image_env(image, docker_client=c)
    path = base.get("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    mounts = [f"{cwd}:/dir", f"{bundle / 'python'}:{PY_TARGET}:ro", f"{bundle / 'bin'}:{BIN_TARGET}:ro"]
    if workdir_inside == WORKDIR_TARGET:
        mounts.append(f"{wd}:{WORKDIR_TARGET}")
    mounts += list(extra_mounts or [])
    envs = [f"PATH={BIN_TARGET}:{path}", *(env or [])]
    containers.start_detached(image, ["tail", "-f", "/dev/null"], name=name,
                              labels={"hourly.role": "interactive", "hourly.image": image},
                              mounts=mounts, env=envs, gpus=gpus, workdir="/dir",
                              docker_client=c)
    return Started(name, image, True, workdir_inside, warning)


def python_mismatch(image: str, docker_client: Any = None) -> str | None:
    """None when the image's ``python3`` has the host's minor version (so the copied packages,
    compiled ones included, import there); otherwise what to do about it."""
    import sys
    host = f"{sys.version_info.major}.{sys.version_info.minor}"
    try:
        res = containers.run_container(
            image, ["python3", "-c", "import sys; print('PY=%d.%d' % sys.version_info[:2])"],
            labels={"hourly.role": "probe"}, timeout=60, docker_client=docker_client)
    except UserError:  # no python3 to start
        return "the image has no python3 on PATH, so hourly can't run inside it"
    m = re.search(r"PY=(\d+\.\d+)", res.output)
    if m and m.group(1) == host:
        return None
    inside = m.group(1) if m else "no python3"
    dists = dependency_closure()
    left_out = compiled_closure(dists)
    names = " ".join(sorted(d.metadata["Name"] for d in dists if _norm(d.metadata["Name"]) in left_out))
    return (f"the image has Python {inside}, hourly runs on Python {host} here, so its compiled "
            f"dependencies ({names}) were not copied in. Inside, run `pip install {names}` "
            f"(needs a package index), or build an image with hourly from docker/Dockerfile.")
