"""One-repository hunts (``--only jax`` / ``--only xla``): the side that stays put, and what it is.

``--only jax``: the candidates are JAX's first-parent commits; XLA is whatever jaxlib the
benchmark's Python has installed. hourly reads that jaxlib's version (and, when its
``jaxlib/version.py`` says so, the XLA commit it was built from) and names the pinned side by it:
the pairs of such a hunt read ``(jaxlib-0.4.14, <jax sha>)``. A JAX commit whose minimum jaxlib
(``_minimum_jaxlib_version`` of ``jax/version.py``, else of ``setup.py``) is above the installed
version cannot run with it: it is *untestable*, a skip with that reason (so is one that refuses a
newer jaxlib, or needs a newer Python than ``--python``).

Each ``--only jax`` state is installed into the workdir's overlay over ``--python``
(:func:`host_overlay`, :func:`hourly.adapters.venvs.make_overlay`), never into ``--python``: the
base's jaxlib, libtpu and plugins stay wherever they lie on its path (PYTHONPATH included), and
the pin records each with its version and folder (:func:`fingerprint`, part of the measurement
key). The benchmark's processes note where they found ``jax``; :func:`check_jax_seen` refuses a
state whose benchmark ran another one (docs/accelerators.md).

``--only xla``: the candidates are XLA's first-parent commits; JAX stays at ``--jax-ref``
(default: the JAX checkout's HEAD when the hunt starts).

Either way the pinned side is a one-commit "walk" that stood since the epoch, so resolution and
the bisection's states (:mod:`hourly.measure.resolve`, :mod:`hourly.analysis.bisection`) need no special case:
every state holds the pinned value, and only the other repository's commits make new states.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from hourly.adapters import proc
from hourly.adapters.venvs import Overlay, accelerator_packages, env_python, make_overlay, overlay_of, python_layout
from hourly.errors import UserError

if TYPE_CHECKING:
    from hourly.adapters.gitrepo import GitRepo

SIDES = ("jax", "xla")


class Settings(Protocol):
    """What this module reads of the scan's settings (:class:`hourly.measure.settings.Settings`
    has it): declared here, so that the settings, which ask this module for their Python and their
    pin's fingerprint, and this module do not import each other."""

    @property
    def python(self) -> str: ...
    @property
    def only(self) -> str | None: ...
    @property
    def workdir(self) -> str: ...
    @property
    def jax_repo(self) -> str: ...
    def env_dict(self) -> dict[str, str]: ...
    def jax_package_cmd(self) -> str: ...

_MIN_RE = re.compile(r"""^_minimum_jaxlib_version\s*=\s*['"]([^'"]+)['"]""", re.M)
_SETUP_RE = re.compile(r"""jaxlib\s*>=\s*([0-9][0-9a-zA-Z.]*)""")
_JAX_VERSION_RE = re.compile(r"""^(?:_version|__version__)\s*(?::\s*str\s*)?=\s*['"]([^'"]+)['"]""", re.M)
#: the message of JAX's own check (jax/_src/lib/__init__.py) that refuses a jaxlib newer than itself
_NEWER_CHECK = "is newer than and"  # the message goes on, "incompatible with jax version", on the next line


@dataclass(frozen=True)
class Pin:
    """The side that stays put: ``label`` is what its place in every pair holds."""

    side: str            # "xla" (jaxlib as installed, --only jax) or "jax" (--jax-ref, --only xla)
    label: str           # the pairs' value for that side: "jaxlib-<version>[@<xla commit>]" or a JAX sha
    hunted: str          # the repository whose commits are the candidates
    detail: dict

    def walk(self) -> list[tuple[str, int]]:
        """A history of one commit that stood at every instant (committer time 0)."""
        return [(self.label, 0)]

    def describe(self) -> str:
        if self.side == "xla":
            d = self.detail
            return (f"xla pinned to the installed jaxlib {d['jaxlib_version']}"
                    + (f" (XLA commit {d['xla_commit']})" if d.get("xla_commit") else " (its XLA commit is not recorded in the wheel)")
                    + "; only jax commits are candidates")
        return f"jax pinned at {self.label} ({self.detail['jax_ref']}); only xla commits are candidates"

    def as_json(self) -> dict:
        return {"side": self.side, "to": self.label, "hunted": self.hunted, **self.detail}


def installed_jaxlib(python: str, env: dict[str, str] | None = None) -> dict:
    """The jaxlib the benchmark's Python imports when it runs in ``env`` (default: hourly's
    environment), read without importing it (importing may need a GPU or the TPU, and takes
    seconds), from wherever it lies on that Python's path (site-packages, a ``.pth`` file's folder,
    PYTHONPATH, the user site): ``version``, ``xla_commit`` (or None), ``location``, ``via``, and
    ``packages``: jaxlib, libtpu and the CUDA/ROCm plugins, each with its version and origin."""
    layout = python_layout(python, env)
    if "error" in layout:
        raise UserError(f"cannot read the installed jaxlib of {python}: {layout['error']}",
                        "pass --python with the Python that runs the benchmark")
    jaxlib = (layout.get("packages") or {}).get("jaxlib")
    if jaxlib is None:
        raise UserError(f"--only jax keeps the installed jaxlib, but {python} has none",
                        "pip install jaxlib into that Python, or pass --python with one that has it")
    return {**jaxlib, "packages": accelerator_packages(layout), "python_version": layout.get("version"),
            "base_jax": (layout.get("packages") or {}).get("jax")}


def run_env(s: Settings) -> dict[str, str]:
    """The environment the benchmark runs in, as far as a Python's path goes: hourly's, then ``--env``."""
    return {**os.environ, **s.env_dict()}


def fingerprint(s: Settings) -> dict:
    """What a ``--only jax`` measurement ran on besides the state: jaxlib, libtpu and the plugins of
    ``--python`` as the benchmark sees them, each ``[version, location]`` (part of the measurement
    key: :meth:`hourly.measure.settings.Settings.build_identity`)."""
    layout = python_layout(s.python, run_env(s))
    if "error" in layout:
        return {"unreadable": s.python}
    return {n: [p.get("version"), p.get("location")] for n, p in accelerator_packages(layout).items()}


def package_line(name: str, info: dict) -> str:
    """``jaxlib 0.10.2 from /opt/tpu (PYTHONPATH)``."""
    return f"{name} {info.get('version')} from {info.get('location')} ({info.get('via')})"


def version_tuple(text: str) -> tuple[int, ...]:
    """The release part of a version ("0.4.14.dev20230801" → (0, 4, 14))."""
    m = re.match(r"\s*v?(\d+(?:\.\d+)*)", text)
    if not m:
        return ()
    return tuple(int(x) for x in m.group(1).split("."))


def minimum_jaxlib(jax: GitRepo, sha: str) -> str | None:
    """The minimum jaxlib version of a JAX commit, read from the commit (no checkout)."""
    for path, pattern in (("jax/version.py", _MIN_RE), ("setup.py", _MIN_RE), ("setup.py", _SETUP_RE)):
        res = proc.run(["git", "show", f"{sha}:{path}"], cwd=jax.path, check=False, timeout=60)
        if res.ok:
            m = pattern.search(res.output)
            if m:
                return m.group(1)
    return None


_PY_REQUIRES = re.compile(r"""(?:python_requires\s*=|requires-python\s*=)\s*['"]\s*>=\s*([0-9][0-9.]*)""")


def minimum_python(jax: GitRepo, sha: str) -> str | None:
    """The oldest Python a JAX commit installs on (``python_requires`` of ``setup.py``, else
    ``requires-python`` of ``pyproject.toml``), read from the commit (no checkout)."""
    for path in ("setup.py", "pyproject.toml"):
        res = proc.run(["git", "show", f"{sha}:{path}"], cwd=jax.path, check=False, timeout=60)
        m = _PY_REQUIRES.search(res.output) if res.ok else None
        if m:
            return m.group(1)
    return None


def jaxlib_upper_bound(jax: GitRepo, sha: str) -> str | None:
    """The newest jaxlib a JAX commit imports with: its own version, when the commit refuses a
    newer jaxlib at import (jax/_src/lib/__init__.py, "jaxlib version X is newer than and
    incompatible with jax version Y"); None when it has no such check."""
    lib = proc.run(["git", "show", f"{sha}:jax/_src/lib/__init__.py"], cwd=jax.path, check=False, timeout=60)
    if not (lib.ok and _NEWER_CHECK in lib.output):
        return None
    res = proc.run(["git", "show", f"{sha}:jax/version.py"], cwd=jax.path, check=False, timeout=60)
    m = _JAX_VERSION_RE.search(res.output) if res.ok else None
    return m.group(1) if m else None


#: ``Pin.detail["jaxlib_gate"]`` of a hunt run with ``--no-jaxlib-gate``
GATE_OVERRIDDEN = "overridden"


def make_pin(only: str | None, python: str, jax: GitRepo | None, jax_ref: str | None,
             env: dict[str, str] | None = None, gate: bool = True) -> Pin | None:
    """The pin of ``--only`` (None: both repositories are hunted); ``env``: the benchmark's
    environment (its PYTHONPATH decides which jaxlib ``python`` imports); ``gate=False``
    (``--no-jaxlib-gate``, ``--only jax``): the JAX commits the installed jaxlib's check refuses are
    run anyway, and the pin says so wherever it is recorded (the scan's table and JSON, the store,
    every answer, the report)."""
    if not only:
        return None
    if only == "jax":
        info = installed_jaxlib(python, env)
        label = f"jaxlib-{info['version']}" + (f"@{info['xla_commit'][:12]}" if info.get("xla_commit") else "")
        detail = {"jaxlib_version": info["version"], "xla_commit": info.get("xla_commit"),
                  "jaxlib_location": info.get("location"), "jaxlib_via": info.get("via"),
                  "python": python, "python_version": info.get("python_version"),
                  "packages": info["packages"], "shadowed_jax": info.get("base_jax")}
        if not gate:
            detail["jaxlib_gate"] = GATE_OVERRIDDEN
        return Pin("xla", label, "jax", detail)
    if jax is None:
        raise UserError("--only xla keeps JAX at one commit, but no JAX checkout was given", "pass --jax-repo")
    ref = jax_ref or "HEAD"
    return Pin("jax", jax.rev_parse(ref), "xla", {"jax_ref": ref})


def pinned_line(pinned: dict | None) -> str | None:
    """What a one-repository hunt kept fixed (``--only``), as one line; None for a two-repository hunt."""
    if not pinned or not pinned.get("side"):
        return None
    if pinned["side"] == "xla":
        line = (f"--only jax: xla pinned to the installed jaxlib {pinned.get('jaxlib_version')}"
                + (f" (XLA commit {pinned['xla_commit']})" if pinned.get("xla_commit") else "")
                + (f"; {GATE_WORDS}" if pinned.get("jaxlib_gate") == GATE_OVERRIDDEN else ""))
        kept = pinned.get("packages") or {}
        if kept:
            line += "; kept as installed: " + ", ".join(package_line(n, p) for n, p in kept.items())
        return line
    return f"--only xla: jax pinned at {pinned.get('to')} ({pinned.get('jax_ref')})"


class JaxlibGate:
    """Which JAX commits the installed jaxlib cannot run (``--only jax``)."""

    def __init__(self, jax: GitRepo, installed: str, python: str | None = None):
        self.jax = jax
        self.installed = installed
        self.python = python  # the version of --python ("3.11.7"), when known
        self._seen: dict[str, str | None] = {}

    def untestable(self, sha: str) -> str | None:
        if sha not in self._seen:
            need = minimum_jaxlib(self.jax, sha)
            py_need = minimum_python(self.jax, sha) if self.python else None
            why = None
            if py_need and self.python and version_tuple(py_need) > version_tuple(self.python):
                # pip refuses to build or install it (JAX dropped Python 3.11 on 2026-06-18; a TPU
                # VM's Python is 3.11): a build failure in every state, named for what it is
                why = (f"untestable: this jax needs Python >= {py_need} (its python_requires), "
                       f"--python is {self.python}")
            elif need and version_tuple(need) > version_tuple(self.installed):
                why = (f"untestable: this jax needs jaxlib >= {need} (its _minimum_jaxlib_version), "
                       f"the installed jaxlib is {self.installed}")
            else:
                # JAX also refuses, at import, a jaxlib newer than itself (jaxlib 0.4.18 with JAX
                # 0.4.15.dev of 2023-08): a crash in every run, which exit mode would call bad
                top = jaxlib_upper_bound(self.jax, sha)
                if top and version_tuple(self.installed) > version_tuple(top):
                    why = (f"untestable: this jax ({top}) refuses a newer jaxlib at import, "
                           f"the installed jaxlib is {self.installed}")
            self._seen[sha] = why
        return self._seen[sha]


#: what a hunt whose gate was overridden says of it, wherever its pin is shown
GATE_WORDS = ("jaxlib gate overridden (--no-jaxlib-gate): JAX commits whose own check refuses this jaxlib "
              "were run anyway")

#: how to get through the gate, for an environment that patches or shims JAX's check
GATE_FIX = "--no-jaxlib-gate runs them anyway where the environment patches or shims that check"


def gate_for(jax: GitRepo, pin: Pin | None) -> JaxlibGate | None:
    """The gate of a hunt whose JAX side moves against a pinned jaxlib (``--only jax``); None otherwise,
    and None when it was overridden (``--no-jaxlib-gate``, recorded in the pin).
    The one place it is made: the Measurer, the hosts and the bisection ask here."""
    if not pin or pin.side != "xla" or pin.detail.get("jaxlib_gate") == GATE_OVERRIDDEN:
        return None
    return JaxlibGate(jax, pin.detail["jaxlib_version"], pin.detail.get("python_version"))


# -- the environment a --only jax state runs in -------------------------------------------------

#: the folder of a workdir that holds its overlay (hourly.adapters.venvs.make_overlay)
OVERLAY_DIR = "overlay"


def overlay_dir(workdir: str | os.PathLike) -> Path:
    return Path(workdir).expanduser().absolute() / OVERLAY_DIR


def run_python(s: Settings) -> str:
    """The Python the states are installed into and the benchmark runs with: ``--python`` itself;
    with ``--only jax`` the workdir's overlay over it (:func:`host_overlay`), unless ``--python`` is
    an overlay already (a Slurm job's, ``hourly shell``'s)."""
    if s.only == "jax" and overlay_of(s.python) is None:
        return str(env_python(overlay_dir(s.workdir)))
    return s.python


def host_overlay(s: Settings, log_dir: Path) -> Overlay:
    """The environment a ``--only jax`` hunt installs each state's ``jax`` into: an overlay of the
    workdir's own over ``--python`` as the benchmark runs it (PYTHONPATH, ``--env`` included), so
    jaxlib, libtpu, the CUDA plugins and numpy stay the base's wherever they lie on its path, and
    nothing is written into the base (a TPU VM's user is no root). Kept between runs of the
    workdir while the base's path is the same (the workdir's lock makes it one run's at a time);
    ``--python`` that is an overlay already is used as it is."""
    have = overlay_of(s.python)
    if have is not None:
        return have
    check_pip(s)
    log_dir.mkdir(parents=True, exist_ok=True)
    return make_overlay(overlay_dir(s.workdir), s.python, log_dir / "overlay.log", run_env(s), reuse=True)


def pip_use(s: Settings) -> str | None:
    """What of a ``--only jax`` hunt runs pip with ``--python`` as the benchmark sees it (the
    overlay's Python finds the base's pip): the built-in build of each state's jax (``pip wheel``),
    and each install where uv is missing; None when nothing does (``--build-cmd none``; a build
    command of the user's, installed by uv)."""
    from hourly.adapters.venvs import find_uv
    from hourly.measure.build_names import NO_BUILD, PIP_WHEEL
    cmd = s.jax_package_cmd().strip()
    if cmd == NO_BUILD:
        return None
    if cmd == PIP_WHEEL:
        return f"the build of each state's jax (--jax-build-cmd {PIP_WHEEL}: python -m pip wheel)"
    return None if find_uv() else "the install of each state's jax into the workdir's overlay (no uv here)"


_PIP_SEEN: dict[tuple, list[str]] = {}

#: what a Python lacks of pip, setuptools and wheel (setuptools before 70.1 builds wheels through the
#: wheel package's bdist_wheel: without it, `pip wheel --no-build-isolation` of jax fails with
#: "invalid command 'bdist_wheel'"), printed as names
_LACKS = """\
import importlib.util
lacks = []
try:
    import pip
except Exception:
    lacks.append("pip")
if importlib.util.find_spec("setuptools") is None:
    lacks.append("setuptools")
if "setuptools" not in lacks:
    try:  # its metadata first: importing setuptools can fail where building with it works (distutils)
        from importlib.metadata import version
        v = version("setuptools")
    except Exception:
        try:
            import setuptools
            v = setuptools.__version__
        except Exception:
            v = ""
    try:
        old = tuple(int(x) for x in v.split(".")[:2]) < (70, 1)
    except ValueError:
        old = False
    if old and importlib.util.find_spec("wheel") is None:
        lacks.append("wheel")
print(" ".join(lacks))
"""


def _setuptools_builds(tree: str | None) -> bool:
    """Whether the jax tree's checkout is built by setuptools (jax's own ``setuptools.build_meta``, or
    a ``setup.py`` without a ``pyproject.toml``); False where it names another backend or cannot be read."""
    if not tree:
        return False
    try:
        text = (Path(tree) / "pyproject.toml").read_text(errors="replace")
    except OSError:
        return (Path(tree) / "setup.py").is_file()
    m = re.search(r"""^\s*build-backend\s*=\s*["']([^"']+)""", text, re.M)
    return m is None or m.group(1).split(".")[0] == "setuptools"


def check_pip(s: Settings) -> None:
    """Refuse, before anything is built, a ``--python`` that cannot import pip where the hunt needs
    it (:func:`pip_use`), or that cannot build jax's wheel where hourly builds it (``pip wheel
    --no-build-isolation``: setuptools, and wheel with a setuptools before 70.1): every state would
    fail to build or install, one after another. A TPU VM's Python may have no pip of its own; its
    wheels carried into a folder at the end of PYTHONPATH do."""
    from hourly.measure.build_names import PIP_WHEEL
    use = pip_use(s)
    if use is None:
        return
    env = run_env(s)
    key = (s.python, env.get("PYTHONPATH", ""), env.get("PYTHONHOME", ""), env.get("PYTHONNOUSERSITE", ""))
    if key not in _PIP_SEEN:
        r = proc.run([s.python, "-c", _LACKS], env=env, timeout=120, check=False)
        _PIP_SEEN[key] = r.output.split() if r.ok else ["pip"]
    lacks = _PIP_SEEN[key]
    carry = ("without an index or root: `python3 -m pip install --no-index --no-deps --target DIR pip-*.whl "
             "setuptools-*.whl wheel-*.whl` with pip from any other Python, then add DIR at the END of PYTHONPATH "
             "(docs/accelerators.md)")
    if "pip" in lacks:
        raise UserError(
            f"--python {s.python} cannot import pip, which {use} needs",
            f"install pip (and setuptools, which jax's own build needs) where that Python finds them; {carry}")
    building = [m for m in lacks if m != "pip"] if (s.jax_package_cmd().strip() == PIP_WHEEL
                                                     and _setuptools_builds(s.jax_repo)) else []
    if building:
        why = " and ".join(building) + (" (its setuptools is older than 70.1: bdist_wheel comes from the wheel "
                                        "package)" if building == ["wheel"] else "")
        raise UserError(
            f"--python {s.python} cannot build a wheel of jax: it lacks {why}, which {use} needs",
            f"`{s.python} -m pip install {' '.join(building)}` where it has an index; {carry}")


class ShadowedJax(UserError):
    """The benchmark ran another jax than the state's: every state would have measured the same code."""


def check_jax_seen(seen: Path, expected: Path, what: str, python: str, required: bool, ran: bool) -> None:
    """Where the benchmark's processes found ``jax`` (the lines the overlay's start-up module wrote
    to ``seen``, :data:`hourly.adapters.venvs.SEEN_VAR`) must lie in ``expected`` (``what``: the
    state's own jax, in the overlay or the JAX tree). ``required`` (``--only jax``) and ``ran`` (a
    run ended well): no process of the state's Python importing jax at all is refused too — hourly
    could not tell which jax was measured."""
    try:
        found = [ln.strip() for ln in seen.read_text().splitlines() if ln.strip()]
    except OSError:
        found = []
    root = expected.absolute()
    wrong = [f for f in found if not _inside(f, root)]
    if wrong:
        raise ShadowedJax(
            f"the benchmark imported jax from {wrong[0]}, not the state's ({what}: {root}): every state would "
            "measure that same jax",
            "leave PYTHONPATH to hourly, which puts the state's jax first and keeps yours after it (do not set "
            "it inside the benchmark command or a script it runs), and run the benchmark with `python3` or "
            "`python`, which hourly puts first on PATH (docs/accelerators.md)")
    if required and ran and not found:
        raise ShadowedJax(
            f"no run of the benchmark imported jax through the state's Python ({python}): hourly cannot tell "
            "that it measured each state's jax",
            "run the benchmark with `python3` or `python` (hourly puts the state's first on PATH), not an "
            "interpreter named by its path, nor with -I, -E or -S (docs/accelerators.md)")


def _inside(path: str, root: Path) -> bool:
    if not os.path.isabs(path):
        return False  # "(not found)", "(error: ...)"
    return Path(os.path.abspath(path)).is_relative_to(root)
