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

import functools
import glob
import json
import os
import shutil
import sys
import sysconfig
import time
import zipfile
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
    if len(cmds) > 1:  # uv first
        forget_module_bytecode(python, wheels)
    for i, cmd in enumerate(cmds):
        last = i == len(cmds) - 1
        log = log_path if log_path is None or last else log_path.with_suffix(".uv.log")
        res = proc.run(cmd, log_path=log, timeout=timeout, check=check and last)
        if res.ok:
            break
    return res


def forget_module_bytecode(python: str, wheels: list[str]) -> None:
    """Remove the bytecode of the top-level modules ``wheels`` hold (``NAME.py``) from the site-packages
    of ``python``'s virtual environment. uv's reinstall removes a package's folder whole, its
    ``__pycache__`` with it, but leaves ``site-packages/__pycache__/NAME.*.pyc`` (uv 0.13; pip removes
    it): the module a state installs within the second of the last import, at the same size, would run
    the earlier state's bytecode."""
    names: set[str] = set()
    for wheel in wheels:
        try:
            with zipfile.ZipFile(wheel) as z:
                names.update(n[:-3] for n in z.namelist() if "/" not in n and n.endswith(".py"))
        except (OSError, zipfile.BadZipFile):
            continue  # the install names what is wrong with it
    env = Path(shutil.which(python) or python).absolute().parent.parent
    for cache in [*env.glob("lib/python3*/site-packages/__pycache__"), env / "Lib" / "site-packages" / "__pycache__"]:
        for name in names:
            for pyc in cache.glob(f"{glob.escape(name)}.*.pyc"):
                pyc.unlink(missing_ok=True)


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


# -- overlays: an environment of its own over another Python's packages ---------------------------

#: the file that makes a folder an overlay of hourly's: what it was made over (JSON)
OVERLAY_MARK = ".hourly-overlay"
#: the module every Python of an overlay runs at start-up (through ``_hourly_overlay.pth``)
OVERLAY_MODULE = "_hourly_overlay"
#: raise it when the start-up module changes: overlays made by an older hourly are made again
OVERLAY_FORMAT = 2
#: set in a process's environment: every Python of the overlay appends there where it found ``jax``
SEEN_VAR = "HOURLY_JAX_SEEN"

#: the packages a layout reports, by normalized name
REPORTED = ("jax", "jaxlib", "numpy", "ml-dtypes", "scipy", "opt-einsum", "jax-demo")
#: and every package whose name starts so: libtpu (libtpu-nightly), the CUDA and ROCm plugins
#: (jax-cuda12-plugin, jax-cuda12-pjrt, jax-cuda13-*, jax-rocm*)
REPORTED_PREFIXES = ("libtpu", "jax-cuda", "jax-rocm")

#: run by the base Python in the benchmark's environment: its path beyond the standard library,
#: where each entry came from, and the packages it would import (version and the entry of each)
_LAYOUT = r"""
import json, os, re, site, subprocess, sys
from importlib import metadata
bare = subprocess.run([sys.executable, "-S", "-E", "-c", "import json, sys; print(json.dumps(sys.path))"],
                      capture_output=True, text=True)
norm = lambda p: os.path.normcase(os.path.abspath(p))
std = {norm(p) for p in json.loads(bare.stdout) if p} if bare.returncode == 0 else set()
pythonpath = [norm(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
sites = [norm(p) for p in (site.getsitepackages() if hasattr(site, "getsitepackages") else [])]
user = norm(site.getusersitepackages()) if site.ENABLE_USER_SITE else None
def via(p):
    p = norm(p)
    return ("PYTHONPATH" if p in pythonpath else "site-packages" if p in sites else "user site" if p == user
            else ".pth")
entries = []
for p in sys.path:
    if p and norm(p) not in std and norm(p) not in [e["path"] for e in entries]:
        entries.append({"path": norm(p), "via": via(p)})
want, prefixes = json.loads(sys.argv[1])
packages = {}
for dist in metadata.distributions():
    name = re.sub(r"[-_.]+", "-", (dist.metadata["Name"] or "").lower())
    if name in packages or not (name in want or name.startswith(tuple(prefixes))):
        continue
    where = str(dist.locate_file(""))
    info = {"version": dist.version, "location": norm(where), "via": via(where)}
    if name == "jaxlib":
        info["xla_commit"] = None
        for f in dist.files or []:
            if str(f).replace("\\", "/") == "jaxlib/version.py":
                try:
                    m = re.search(r"^_?_?xla_(?:git_hash|commit)_?_?\s*=\s*['\"]([0-9a-fA-F]{7,40})['\"]",
                                  f.locate().read_text(), re.M)
                    info["xla_commit"] = m and m.group(1)
                except OSError:
                    pass
                break
    packages[name] = info
print(json.dumps({"python": sys.executable, "version": ".".join(map(str, sys.version_info[:3])),
                  "entries": entries, "sites": sites, "user_site": user, "packages": packages}))
"""


def _python_env(env: dict[str, str] | None) -> tuple[tuple[str, str], ...]:
    """What of an environment changes a Python's path: its ``PYTHON*`` variables."""
    return tuple(sorted((k, v) for k, v in (os.environ if env is None else env).items() if k.startswith("PYTHON")))


@functools.lru_cache(maxsize=64)
def _layout(python: str, pyenv: tuple[tuple[str, str], ...]) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(pyenv)
    try:
        res = proc.run([python, "-c", _LAYOUT, json.dumps([REPORTED, REPORTED_PREFIXES])], env=env, check=False, timeout=120)
    except UserError as e:  # no such interpreter
        return {"error": e.message}
    try:
        return json.loads(res.output.strip().splitlines()[-1]) if res.ok else {"error": res.tail(3)}
    except (ValueError, IndexError):
        return {"error": res.tail(3)}


def python_layout(python: str, env: dict[str, str] | None = None) -> dict:
    """What ``python`` sees when it runs in ``env`` (default: hourly's environment), nothing imported:
    ``entries`` (its path beyond the standard library, in order, each with ``via``: ``PYTHONPATH``,
    ``site-packages``, ``user site`` or ``.pth``), ``sites`` (its site folders) and ``packages`` (of
    :data:`REPORTED` and :data:`REPORTED_PREFIXES`, the copy it would import: ``version``, ``location``, ``via``; jaxlib's
    ``xla_commit`` when its ``version.py`` names one). ``{"error": ...}`` when it cannot tell.
    Asked once per Python and ``PYTHON*`` variables in a process (:func:`forget_layouts` forgets)."""
    return dict(_layout(python, _python_env(env)))


def forget_layouts() -> None:
    """Ask every Python again (its packages were changed meanwhile)."""
    _layout.cache_clear()


def accelerator_packages(layout: dict) -> dict[str, dict]:
    """The packages of a layout that a JAX state runs on and does not bring: jaxlib, libtpu, the
    CUDA/ROCm plugins (``--only jax`` keeps them as they are), by name."""
    return {n: p for n, p in sorted((layout.get("packages") or {}).items())
            if n == "jaxlib" or n.startswith(REPORTED_PREFIXES)}


_STARTUP = '''"""hourly's overlay (hourly.adapters.venvs): this environment's own packages first, then
everything its base Python saw, in the base's order. Run at start-up by {module}.pth."""
import os
import site
import sys

PATHS = {paths!r}
SITES = {sites!r}


def _extend():
    for p in PATHS:
        if p in SITES:
            site.addsitedir(p)  # with its .pth files, as the base reads them
        elif p not in sys.path:
            sys.path.append(p)


_extend()

_SEEN = os.environ.get({seen!r})
if _SEEN:
    class _JaxWatch:
        """Notes where the first ``import jax`` of this process finds jax (the import itself is
        left to the other finders): hourly checks that it is the state's."""

        @classmethod
        def find_spec(cls, name, path=None, target=None):
            if name != "jax":
                return None
            try:
                sys.meta_path.remove(cls)
            except ValueError:
                pass
            try:
                import importlib.util
                spec = importlib.util.find_spec("jax")
                where = "(not found)" if spec is None else (
                    spec.origin or ";".join(spec.submodule_search_locations or []) or "(no origin)")
            except Exception as e:  # said, never raised: the import goes on as it would
                where = "(error: %r)" % (e,)
            try:
                with open(_SEEN, "a") as f:
                    f.write(where + "\\n")
            except OSError:
                pass
            return None

    sys.meta_path.insert(0, _JaxWatch)
'''


@dataclass(frozen=True)
class Overlay:
    """An environment of its own over a base Python's packages (:func:`make_overlay`): what is
    installed into it shadows the base's copy of the same package, and nothing else of the base."""

    dir: Path
    python: str          # its interpreter
    site: Path           # its own site-packages: ahead of everything the base has
    base_python: str
    layout: dict         # python_layout of the base when it was made

    def activate(self, env: dict[str, str]) -> dict[str, str]:
        """``env`` as a process of this overlay gets it: its ``bin`` first on PATH, ``VIRTUAL_ENV``,
        no ``PYTHONHOME``, and its own packages first on PYTHONPATH — ahead of the folders a
        PYTHONPATH of the base names (those stay, after it), so a ``jax`` there never shadows the
        state's, in this Python or in any other the command starts."""
        out = dict(env)
        out.pop("PYTHONHOME", None)
        out["VIRTUAL_ENV"] = str(self.dir)
        bin_dir, path = str(Path(self.python).parent), out.get("PATH", "")
        if path.split(os.pathsep)[0] != bin_dir:
            out["PATH"] = bin_dir + os.pathsep + path
        rest = [p for p in out.get("PYTHONPATH", "").split(os.pathsep) if p and Path(p) != self.site]
        out["PYTHONPATH"] = os.pathsep.join([str(self.site), *rest])
        return out

    def clear(self) -> None:
        """Remove what was installed into it: before each state's install (it holds one state, never
        a file of an earlier one), and for a state installed in place (which needs the base's, or the
        tree's, own packages)."""
        keep = {f"{OVERLAY_MODULE}.py", f"{OVERLAY_MODULE}.pth", "__pycache__"}
        for p in self.site.iterdir():
            if p.name in keep:
                continue
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink()


def _own_site(env: Path) -> Path:
    own = next(env.glob("lib/python3*/site-packages"), None) or env / "Lib" / "site-packages"
    own.mkdir(parents=True, exist_ok=True)
    return own


def overlay_of(python: str | None) -> Overlay | None:
    """The overlay ``python`` is the interpreter of, or None when it is no overlay of hourly's."""
    if not python or os.sep not in python:
        return None
    env = Path(python).absolute().parent.parent
    try:
        info = json.loads((env / OVERLAY_MARK).read_text())
    except (OSError, ValueError):
        return None
    return Overlay(env, str(env_python(env)), _own_site(env), info.get("base_python", ""), info.get("layout") or {})


def make_overlay(env: Path, base_python: str, log_path: Path, run_env: dict[str, str] | None = None,
                 reuse: bool = False) -> Overlay:
    """An environment of its own at ``env`` over ``base_python`` as it runs in ``run_env`` (default:
    hourly's environment): whatever the base imports from anywhere on its path — its site-packages,
    a ``.pth`` file's folders, PYTHONPATH, the user site — stays importable, after the overlay's own
    packages. Made without pip (``python -m venv --without-pip``); nothing is written into the base.
    ``reuse``: an overlay made before over the same base with the same path is kept as it is (what
    was installed into it too); otherwise it is made afresh. :class:`UserError` when the base cannot
    say what it imports from."""
    layout = python_layout(base_python, run_env)
    if "error" in layout:
        raise UserError(f"cannot read what {base_python} imports from: {layout['error']}",
                        "pass --python with the Python that runs the benchmark")
    made_over = json.loads(json.dumps({"format": OVERLAY_FORMAT, "base_python": base_python, "layout": layout}))
    if reuse:
        try:
            old = json.loads((env / OVERLAY_MARK).read_text())
        except (OSError, ValueError):
            old = None
        over = overlay_of(str(env_python(env))) if old == made_over else None
        if over is not None and Path(over.python).exists():
            return over
    if env.exists() or env.is_symlink():
        shutil.rmtree(env)  # another base, a killed run's, or half made: made again, never trusted
    env.parent.mkdir(parents=True, exist_ok=True)
    create = "import sys, venv; venv.EnvBuilder(with_pip=False, symlinks=True).create(sys.argv[1])"
    proc.run([base_python, "-c", create, str(env)], timeout=300, log_path=log_path)
    own = _own_site(env)
    paths = [e["path"] for e in layout.get("entries", []) if Path(e["path"]) != own]
    sites = [*(layout.get("sites") or []), *([layout["user_site"]] if layout.get("user_site") else [])]
    (own / f"{OVERLAY_MODULE}.py").write_text(
        _STARTUP.format(module=OVERLAY_MODULE, paths=paths, sites=sites, seen=SEEN_VAR))
    (own / f"{OVERLAY_MODULE}.pth").write_text(f"import {OVERLAY_MODULE}\n")
    (env / OVERLAY_MARK).write_text(json.dumps(made_over))
    return Overlay(env, str(env_python(env)), own, base_python, layout)


def overlay_env(env: Path, base_python: str, log_path: Path) -> str:
    """An environment of its own over ``base_python``'s packages (:func:`make_overlay`): what a
    Slurm job and ``hourly shell`` install their build into, so that runs sharing one ``--python``
    never install over each other. Returns the environment's Python."""
    return make_overlay(env, base_python, log_path).python
