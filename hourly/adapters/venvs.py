"""Virtual environments for released wheels: made and filled by uv when it is there, pip otherwise.

uv (a dependency of hourly: the ``uv`` package puts its binary next to hourly's Python; or any
``uv`` on PATH) creates an environment in milliseconds, installs jax + jaxlib 10-100x faster than
pip, and can resolve an old release's dependencies as of its day; without it, ``python -m venv --without-pip``
makes the environment and hourly's own pip fills it through ``pip --python`` (no pip is
bootstrapped into each environment). Every process goes through hourly/adapters/proc.py.

An environment is ready only once its marker file is written, after the install succeeded; one
without it (an install killed half-way) is removed and made again.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path

from packaging.tags import Tag, compatible_tags, cpython_tags, sys_tags

from hourly.adapters import proc
from hourly.errors import UserError
from hourly.model import InstallerKind

READY = ".hourly-ready"
INSTALL_TIMEOUT = 1800


@dataclass(frozen=True)
class Installer:
    kind: InstallerKind  # UV or PIP, never AUTO
    exe: str             # the uv binary, or the Python whose pip installs

    def describe(self) -> str:
        return f"uv ({self.exe})" if self.kind is InstallerKind.UV else f"pip ({self.exe} -m pip)"


def find_uv() -> str | None:
    """The uv binary: the one installing hourly put next to hourly's Python (its
    scripts directory, whether or not it is on PATH), else one on PATH."""
    exe = "uv.exe" if os.name == "nt" else "uv"
    for scripts in dict.fromkeys([sysconfig.get_path("scripts"), str(Path(sys.executable).parent)]):
        candidate = Path(scripts) / exe
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("uv")


def in_venv(python: str) -> bool:
    """Whether ``python`` is a virtual environment's interpreter (``pyvenv.cfg`` one folder above
    its own, symlinks not followed): uv installs into one without ``--system``."""
    exe = shutil.which(python) or python
    return (Path(exe).absolute().parent.parent / "pyvenv.cfg").is_file()


def reinstall_commands(python: str, wheels: list[str]) -> list[list[str]]:
    """The commands that put ``wheels`` into ``python``'s environment in place of what is there
    (no dependencies), to try in turn until one succeeds: uv first where it can (a virtual
    environment), then pip. uv installs a wheel in a fifth of pip's time (0.2 s against 1.1 s on a
    quiet machine, 1.8 s against 8.5-10.7 s under load). ``--no-cache``: every state's wheel may
    carry the same name and version, and a cached unpack of another state's wheel must never be
    what is installed."""
    pip = [python, "-m", "pip", "install", "--quiet", "--force-reinstall", "--no-deps",
           "--disable-pip-version-check", *wheels]
    uv = find_uv() if in_venv(python) else None
    if not uv:
        return [pip]
    return [[uv, "pip", "install", "--quiet", "--python", python, "--reinstall", "--no-deps", "--offline",
             "--no-cache", *wheels], pip]


def reinstall(python: str, wheels: list[str], *, timeout: float | None, log_path: Path | None = None,
              check: bool = False) -> proc.Result:
    """Put ``wheels`` into ``python``'s environment (:func:`reinstall_commands`, each tried in turn
    until one succeeds): the last command's result. With ``log_path``, pip logs there and uv beside
    it (``.uv.log``); ``check``: a failure of the last raises."""
    cmds = reinstall_commands(python, wheels)
    for i, cmd in enumerate(cmds):
        last = i == len(cmds) - 1
        log = log_path if log_path is None or last else log_path.with_suffix(".uv.log")
        res = proc.run(cmd, log_path=log, timeout=timeout, check=check and last)
        if res.ok:
            break
    return res


def choose_installer(kind: InstallerKind | str = InstallerKind.AUTO) -> Installer:
    kind = InstallerKind(kind)
    if kind in (InstallerKind.AUTO, InstallerKind.UV):
        uv = find_uv()
        if uv:
            return Installer(InstallerKind.UV, uv)
        if kind is InstallerKind.UV:
            raise UserError("--installer uv, but uv is not installed",
                            "pip install uv, or pass --installer pip")
    return Installer(InstallerKind.PIP, sys.executable)


@dataclass(frozen=True)
class TargetPython:
    """The interpreter the environments are made from."""

    exe: str
    version: str  # "3.11.7"
    tags: frozenset[Tag]

    @property
    def short(self) -> str:
        return "cp" + "".join(self.version.split(".")[:2])


def target_python(python: str | None) -> TargetPython:
    """``python`` (default: the one running hourly), its version and its wheel tags."""
    if not python or Path(python).absolute() == Path(sys.executable).absolute():
        v = ".".join(map(str, sys.version_info[:3]))
        return TargetPython(sys.executable, v, frozenset(sys_tags()))
    exe = shutil.which(python) or python
    res = proc.run([exe, "-c", "import sys, json; print(json.dumps([list(sys.version_info[:3]),"
                   " sys.implementation.name]))"], timeout=60)
    (major, minor, micro), impl = json.loads(res.output.strip().splitlines()[-1])
    if impl != "cpython":
        raise UserError(f"--python {python} is {impl}; released jaxlib wheels are for CPython",
                        "pass a CPython interpreter")
    tags = list(cpython_tags((major, minor))) + list(compatible_tags((major, minor)))
    return TargetPython(exe, f"{major}.{minor}.{micro}", frozenset(tags))


@dataclass
class EnvResult:
    python: str          # the environment's interpreter
    installer: str       # "uv" | "pip"
    reused: bool
    log_path: str | None


def env_python(env: Path) -> Path:
    return env / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_env(env: Path, requirements: list[str], source_args: list[str], installer: Installer,
               target: TargetPython, log_path: Path, pre: bool = False) -> EnvResult:
    """Make ``env`` with ``requirements`` installed (or reuse it when it is ready).

    Raises :class:`~hourly.errors.ProcessError` when the install fails (its log names why).
    """
    marker = env / READY
    if marker.exists():
        info = json.loads(marker.read_text())
        return EnvResult(str(env_python(env)), info.get("installer", "?"), True, info.get("log"))
    if env.exists():
        shutil.rmtree(env)  # half made: an install was killed
    env.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    py = env_python(env)
    pip_env = dict(os.environ)
    if installer.kind is InstallerKind.UV:
        proc.run([installer.exe, "venv", "--quiet", "--python", target.exe, str(env)], env=pip_env,
                 timeout=300, log_path=log_path.with_suffix(".venv.log"))
        cmd = [installer.exe, "pip", "install", "--python", str(py), *source_args]
        if pre:
            cmd += ["--prerelease", "allow"]
    else:
        proc.run([target.exe, "-m", "venv", "--without-pip", str(env)], timeout=300,
                 log_path=log_path.with_suffix(".venv.log"))
        cmd = [installer.exe, "-m", "pip", "--python", str(py), "install",
               "--disable-pip-version-check", "--no-input", *source_args]
        if "--no-index" in source_args:
            cmd.insert(3, "--isolated")  # a local directory only: no pip.conf indexes or links
        if pre:
            cmd.append("--pre")
    proc.run(cmd + requirements, env=pip_env, timeout=INSTALL_TIMEOUT, log_path=log_path)
    marker.write_text(json.dumps({"installer": installer.kind.value, "requirements": requirements,
                                  "seconds": round(time.monotonic() - start, 2), "log": str(log_path)}))
    return EnvResult(str(py), installer.kind.value, False, str(log_path))


def overlay_env(env: Path, base_python: str, log_path: Path) -> str:
    """An environment of its own over ``base_python``'s packages: what a Slurm job installs its
    build into, so that jobs sharing one ``--python`` never install over each other.

    Made without pip (``python -m venv --without-pip``); a ``.pth`` line adds the base's
    site-packages after the environment's own, so the job's wheels come first and everything else
    the benchmark imports (and pip itself) comes from the base. Returns the environment's Python."""
    if env.exists():
        shutil.rmtree(env)  # a killed job's: made again, never trusted
    # one process: the base's site-packages, and where the new environment's own will be
    probe = ("import json, site, sys, venv; b = venv.EnvBuilder(with_pip=False); b.create(sys.argv[1]); "
             "print(json.dumps(site.getsitepackages()))")
    sites = json.loads(proc.run([base_python, "-c", probe, str(env)], timeout=300,
                                log_path=log_path).output.strip().splitlines()[-1])
    py = env_python(env)
    own = next(env.glob("lib/python3*/site-packages"), None) or env / "Lib" / "site-packages"
    own.mkdir(parents=True, exist_ok=True)
    (own / "_hourly_base.pth").write_text(
        "".join(f"import site; site.addsitedir({d!r})\n" for d in sites if Path(d).is_dir()))
    return str(py)
