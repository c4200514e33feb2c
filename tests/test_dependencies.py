"""No import works by accident: every third-party module hourly imports comes from a distribution
that pyproject.toml declares (issue 9: `import click` worked only where click happened to be
installed, and crashed every command in a fresh venv once typer stopped shipping it)."""

from __future__ import annotations

import ast
import importlib.metadata as md
import re
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: hourly declares tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]

#: the program under measurement, never hourly's own dependency: imported only inside functions
#: that run in the benchmark's Python (hourly.jaxbench, hourly.harness.trace), which the user provides
MEASURED = {"jax", "jaxlib"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def imports(path: Path) -> list[tuple[str, int, bool]]:
    """(top-level module, line, at module level?) for every absolute import in ``path``, those
    inside functions, classes and ``try`` blocks included."""
    tree = ast.parse(path.read_text(), str(path))
    top_level = {id(n) for n in tree.body}
    for node in tree.body:  # `try: import x` / `if ...: import x` at module level is module level too
        if isinstance(node, (ast.Try, ast.If)):
            top_level |= {id(n) for n in ast.walk(node)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name.split(".")[0], node.lineno, id(node) in top_level) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.module.split(".")[0], node.lineno, id(node) in top_level))
    return out


def declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {_norm(re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", r).group(1))
            for r in project["dependencies"]}


def test_every_third_party_import_of_hourly_is_declared():
    dists = md.packages_distributions()
    wanted = declared()
    files = sorted((ROOT / "hourly").rglob("*.py"))
    assert len(files) > 20  # the walk really sees the package
    problems, seen = [], set()
    for f in files:
        for mod, line, module_level in imports(f):
            where = f"{f.relative_to(ROOT)}:{line}"
            if mod in sys.stdlib_module_names or mod == "hourly" or mod == "__future__":
                continue
            seen.add(mod)
            if mod in MEASURED:
                if module_level:
                    problems.append(f"{where}: {mod} is imported at module level; it belongs to the "
                                    "measured program and must be imported where it is used")
                continue
            owners = {_norm(d) for d in dists.get(mod, [])}
            if not owners and _norm(mod) in wanted:
                continue  # declared for other Pythons only (tomli before 3.11)
            if not owners:
                problems.append(f"{where}: {mod} is imported but no installed distribution provides it")
            elif not owners & wanted:
                problems.append(f"{where}: {mod} comes from {sorted(owners)}, which pyproject.toml "
                                "does not declare")
    assert not problems, "\n".join(problems)
    # the check saw the libraries hourly is built on (so an empty walk cannot pass)
    assert {"typer", "rich", "git", "docker", "tenacity", "dateutil"} <= seen


def test_the_check_catches_an_undeclared_import(tmp_path):
    """The walk finds imports inside functions too, and knows which ones are at module level."""
    f = tmp_path / "m.py"
    f.write_text("import os\ntry:\n    import tomli\nexcept ImportError:\n    pass\n"
                 "def f():\n    import click.exceptions\n    from jax import numpy\n")
    assert imports(f) == [("os", 1, True), ("tomli", 3, True), ("click", 7, False), ("jax", 8, False)]
    assert "click" not in declared() and "typer" in declared()


def test_container_copy_starts_from_what_pyproject_declares():
    """`hourly container` copies hourly's declared dependencies (less the heavy ones the images
    bring), not a hand-kept list: click (gone with typer 0.29) is not among them, and every root
    that applies to this Python is installed, so the copy is complete."""
    from hourly.nightly.image import SKIP, dependency_closure, required_roots
    roots = {_norm(r) for r in required_roots()}
    assert roots == declared() - {_norm(s) for s in SKIP}
    assert "click" not in roots and {"typer", "rich", "gitpython", "docker", "python-dateutil"} <= roots
    copied = {_norm(d.metadata["Name"]) for d in dependency_closure()}
    assert roots - copied <= ({"tomli"} if sys.version_info >= (3, 11) else set())
    assert not copied & {_norm(s) for s in SKIP}
