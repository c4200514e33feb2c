"""One-repository hunts (``--only jax`` / ``--only xla``): the side that stays put, and what it is.

``--only jax``: the candidates are JAX's first-parent commits; XLA is whatever jaxlib the
benchmark's Python has installed. hourly reads that jaxlib's version (and, when its
``jaxlib/version.py`` says so, the XLA commit it was built from) and names the pinned side by it:
the pairs of such a hunt read ``(jaxlib-0.4.14, <jax sha>)``. A JAX commit whose minimum jaxlib
(``_minimum_jaxlib_version`` of ``jax/version.py``, else of ``setup.py``) is above the installed
version cannot run with it: it is *untestable*, a skip with that reason.

``--only xla``: the candidates are XLA's first-parent commits; JAX stays at ``--jax-ref``
(default: the JAX checkout's HEAD when the hunt starts).

Either way the pinned side is a one-commit "walk" that stood since the epoch, so resolution and
the bisection's states (:mod:`hourly.measure.resolve`, :mod:`hourly.analysis.bisection`) need no special case:
every state holds the pinned value, and only the other repository's commits make new states.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from hourly.adapters import proc
from hourly.errors import UserError

if TYPE_CHECKING:
    from hourly.adapters.gitrepo import GitRepo

SIDES = ("jax", "xla")

#: reads the installed jaxlib without importing it (importing may need a GPU, and takes seconds)
_JAXLIB = r"""
import json, re
from importlib import metadata
try:
    dist = metadata.distribution("jaxlib")
except metadata.PackageNotFoundError:
    print(json.dumps(None)); raise SystemExit
xla = None
for f in dist.files or []:
    if str(f).replace("\\", "/") == "jaxlib/version.py":
        try:
            text = f.locate().read_text()
        except OSError:
            break
        m = re.search(r"^_?_?xla_(?:git_hash|commit)_?_?\s*=\s*['\"]([0-9a-fA-F]{7,40})['\"]", text, re.M)
        xla = m and m.group(1)
print(json.dumps({"version": dist.version, "xla_commit": xla, "location": str(dist.locate_file(""))}))
"""

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


def installed_jaxlib(python: str) -> dict:
    """The jaxlib the benchmark's Python has installed: version, XLA commit (or None), location."""
    res = proc.run([python, "-c", _JAXLIB], check=False, timeout=120)
    try:
        info = json.loads(res.output.strip().splitlines()[-1]) if res.ok else "error"
    except (ValueError, IndexError):
        info = "error"
    if info == "error":
        raise UserError(f"cannot read the installed jaxlib of {python}: {res.tail(3)}",
                        "pass --python with the Python that runs the benchmark")
    if info is None:
        raise UserError(f"--only jax keeps the installed jaxlib, but {python} has none",
                        "pip install jaxlib into that Python, or pass --python with one that has it")
    return cast(dict, info)  # what _JAXLIB prints when jaxlib is there: a JSON object


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


def make_pin(only: str | None, python: str, jax: GitRepo | None, jax_ref: str | None, gate: bool = True) -> Pin | None:
    """The pin of ``--only`` (None: both repositories are hunted); ``gate=False`` (``--no-jaxlib-gate``,
    ``--only jax``): the JAX commits the installed jaxlib's check refuses are run anyway, and the pin
    says so wherever it is recorded (the scan's table and JSON, the store, every answer, the report)."""
    if not only:
        return None
    if only == "jax":
        info = installed_jaxlib(python)
        label = f"jaxlib-{info['version']}" + (f"@{info['xla_commit'][:12]}" if info.get("xla_commit") else "")
        detail = {"jaxlib_version": info["version"], "xla_commit": info.get("xla_commit"),
                  "jaxlib_location": info.get("location"), "python": python}
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
        return (f"--only jax: xla pinned to the installed jaxlib {pinned.get('jaxlib_version')}"
                + (f" (XLA commit {pinned['xla_commit']})" if pinned.get("xla_commit") else "")
                + (f"; {GATE_WORDS}" if pinned.get("jaxlib_gate") == GATE_OVERRIDDEN else ""))
    return f"--only xla: jax pinned at {pinned.get('to')} ({pinned.get('jax_ref')})"


class JaxlibGate:
    """Which JAX commits the installed jaxlib cannot run (``--only jax``)."""

    def __init__(self, jax: GitRepo, installed: str):
        self.jax = jax
        self.installed = installed
        self._seen: dict[str, str | None] = {}

    def untestable(self, sha: str) -> str | None:
        if sha not in self._seen:
            need = minimum_jaxlib(self.jax, sha)
            why = None
            if need and version_tuple(need) > version_tuple(self.installed):
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
    return JaxlibGate(jax, pin.detail["jaxlib_version"])
