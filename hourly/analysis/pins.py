"""Pins: the commit of a dependency a repository names in its own files (pure text parsing).

JAX names the XLA commit it builds against, in a file whose place moved over the years:

* ``WORKSPACE`` (until August 2023): ``http_archive(name = "xla", strip_prefix = "xla-<sha>", urls = [".../<sha>.tar.gz"])``
* ``third_party/xla/workspace.bzl`` (August 2023 – June 2025): ``XLA_COMMIT = "<sha>"``
* ``third_party/xla/revision.bzl`` (from June 2025): ``XLA_COMMIT = "<sha>"`` (workspace.bzl loads it)
* ``MODULE.bazel`` (Bzlmod, from January 2026): ``archive_override(module_name = "xla", strip_prefix = "xla-<sha>", ...)``

XLA names LLVM's commit in ``third_party/llvm/workspace.bzl`` (``LLVM_COMMIT = "<sha>"``) and
Triton's in ``third_party/triton/workspace.bzl`` (``TRITON_COMMIT = "<rev>"``).

:data:`PIN_FILES` lists, per dependency, the files to read in order (the first that names the pin
wins: the newest form first); :func:`parse_pin` reads one file's text. Reading the files from git
is :mod:`hourly.measure.pins`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SHA = r"[0-9a-f]{7,40}"
#: ``NAME_COMMIT = "<rev>"`` at the start of a line (comments are skipped: they start with #)
_ASSIGN = {name: re.compile(rf'^\s*{name}_COMMIT\s*=\s*"(?P<rev>[^"]+)"', re.M)
           for name in ("XLA", "LLVM", "TRITON")}
#: an ``http_archive``/``archive_override`` call whose name or module_name is the dependency
_CALL = re.compile(r"(?P<fn>http_archive|archive_override)\s*\((?P<body>.*?)\n\s*\)", re.S)


def _archive_rev(text: str, name: str) -> str | None:
    """The commit of the archive named ``name`` in a WORKSPACE or MODULE.bazel text: its
    ``strip_prefix = "<name>-<sha>"``, else the sha in its ``.../archive/<sha>.tar.gz`` URL."""
    for m in _CALL.finditer(_strip_comments(text)):
        body = m["body"]
        if not re.search(rf'\b(name|module_name)\s*=\s*"{re.escape(name)}"', body):
            continue
        sp = re.search(rf'strip_prefix\s*=\s*"{re.escape(name)}-(?P<sha>{_SHA})"', body)
        if sp:
            return sp["sha"]
        url = re.search(rf"/archive/(?P<sha>{_SHA})\.(tar\.gz|zip)", body)
        if url:
            return url["sha"]
    return None


def _strip_comments(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


@dataclass(frozen=True)
class PinFile:
    """A file that may name a dependency's pin, and how it names it."""

    path: str
    form: str  # "assign" (NAME_COMMIT = "..."), "archive" (http_archive / archive_override)
    name: str  # XLA, LLVM, TRITON (assign) or the archive's name (archive)


#: per dependency (and the repository that pins it), the files to read, newest form first
PIN_FILES: dict[str, list[PinFile]] = {
    "xla": [PinFile("MODULE.bazel", "archive", "xla"),
            PinFile("third_party/xla/revision.bzl", "assign", "XLA"),
            PinFile("third_party/xla/workspace.bzl", "assign", "XLA"),
            PinFile("WORKSPACE", "archive", "xla")],
    "llvm": [PinFile("third_party/llvm/workspace.bzl", "assign", "LLVM")],
    "triton": [PinFile("third_party/triton/workspace.bzl", "assign", "TRITON")],
}
#: which repository pins each dependency
PINNED_BY = {"xla": "jax", "llvm": "xla", "triton": "xla"}


def parse_pin(f: PinFile, text: str) -> str | None:
    """The revision ``text`` (the content of ``f.path``) pins, or None when it names none."""
    if f.form == "assign":
        m = _ASSIGN[f.name].search(text)
        return m["rev"] if m else None
    return _archive_rev(text, f.name)


def chain_text(links: list[dict]) -> str:
    """``JAX 6b4fbe9 (XLA pin bump) → XLA 3c665e2 (LLVM pin bump) → LLVM a1b2c3d``: each link a dict
    with ``repo``, ``sha`` and, for a link that moved a pin, ``bumps`` (the dependency)."""
    parts = []
    for link in links:
        word = link["repo"].upper()
        part = f"{word} {link['sha'][:10]}"
        if link.get("bumps"):
            part += f" ({link['bumps'].upper()} pin bump)"
        parts.append(part)
    return " → ".join(parts)
