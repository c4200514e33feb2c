"""The house rules of the package layout, checked on the code itself.

* The command line starts without the heavy libraries: each is imported where it is used.
* The core never reaches up into the command layer: hourly/commands/ and hourly/cli.py may import
  the core, never the other way round.
"""

from __future__ import annotations

import ast
import functools
import json
import subprocess
import sys
from pathlib import Path

import pytest

import hourly

PACKAGE = Path(hourly.__file__).resolve().parent
HEAVY = ("scipy", "numpy", "matplotlib", "docker", "git", "jax")
COMMAND_LAYER = ("hourly.commands", "hourly.cli")


def test_importing_the_cli_leaves_the_heavy_libraries_out():
    code = ("import json, sys\nimport hourly.cli\n"
            f"print(json.dumps(sorted(m for m in {list(HEAVY)!r} if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


@pytest.mark.parametrize("argv", [["--help"], ["version"], ["config", "--json"]])
def test_light_commands_run_without_the_heavy_libraries(argv, tmp_path):
    code = ("import json, sys\nfrom hourly.cli import main\n"
            f"code = main({argv!r})\n"
            f"print(json.dumps([code, sorted(m for m in {list(HEAVY)!r} if m in sys.modules)]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [0, []]


def _import_statements(path: Path, runtime_only: bool = False):
    """(absolute module or prefix, names) of every import statement of ``path``, wherever it is
    (inside functions too); ``runtime_only`` leaves out those under ``if TYPE_CHECKING:``."""
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    skipped: set[int] = set()
    if runtime_only:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                skipped.update(id(n) for child in node.body for n in ast.walk(child))
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, []
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            yield prefix, [a.name for a in node.names]


def _imported_modules(path: Path) -> set[str]:
    """Absolute names of every module ``path`` imports, wherever the import statement is."""
    names = set()
    for prefix, imported in _import_statements(path):
        names.add(prefix)
        names.update(f"{prefix}.{n}" for n in imported)
    return names


def _is_command_layer(name: str) -> bool:
    return any(name == c or name.startswith(c + ".") for c in COMMAND_LAYER)


def test_the_core_never_imports_the_command_layer():
    core = [p for p in PACKAGE.rglob("*.py")
            if p.parent.name != "commands" and p.name not in ("cli.py", "__main__.py")]
    assert len(core) > 20
    offenders = {str(p.relative_to(PACKAGE)): sorted(n for n in _imported_modules(p) if _is_command_layer(n))
                 for p in core}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_import_rule_check_sees_relative_imports():
    # the checker itself: a relative import of the command layer from a core module is caught
    assert _is_command_layer("hourly.commands.bisect")
    names = _imported_modules(PACKAGE / "cli.py")
    assert "hourly.commands.scan" in names and "hourly.errors" in names


# -- the layers and the import graph (docs/architecture.md draws them) ----------------------------

#: The records and the small pure helpers everything may use: standard library only.
BASE = ("hourly.errors", "hourly.model", "hourly.text",
        "hourly.metric", "hourly.events", "hourly.options", "hourly.answers", "hourly.watch_records", "hourly")
#: The levels, lowest first: a level may import levels of a lower rank, never its own rank's
#: neighbours or a higher one (the bisection reads the scan's table; the hunt runs the daily and
#: release levels).
LEVEL_RANK = {"hourly.releases": 0, "hourly.nightly": 0, "hourly.scan": 1, "hourly.bisect": 2,
              "hourly.profile": 2, "hourly.hunt": 3, "hourly.shell": 3,
              "hourly.explain": 3, "hourly.watch": 4, "hourly.report": 4}
#: Entry points and the command layer: they may import any core module.
TOP = ("hourly.cli", "hourly.__main__", "hourly.commands", "hourly.worker", "hourly.demo")


def _module_name(path: Path) -> str:
    name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return name.removesuffix(".__init__")


def _runtime_imports(path: Path, runtime_only: bool = True) -> set[str]:
    """Every hourly module ``path`` imports when it runs (at the top or lazily inside a function),
    resolved to the module (``from hourly.a import b`` is ``hourly.a.b`` when that is a module).
    Imports under ``if TYPE_CHECKING:`` never run and are left out, unless ``runtime_only`` is false."""
    found: set[str] = set()
    for prefix, imported in _import_statements(path, runtime_only=runtime_only):
        if not (prefix == "hourly" or prefix.startswith("hourly.")):
            continue
        found.add(prefix)
        found.update(f"{prefix}.{n}" for n in imported if f"{prefix}.{n}" in MODULES)
    return {n for n in found if n in MODULES} - {_module_name(path)}


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}


@functools.cache
def _graph() -> dict[str, set[str]]:
    """Each hourly module's runtime imports of hourly modules (parsed once, when a test asks: every
    test process collects this file, and parsing the package at import cost each ~1.5 s)."""
    return {name: _runtime_imports(path) for name, path in MODULES.items()}


@functools.cache
def _graph_with_annotations() -> dict[str, set[str]]:
    """:func:`_graph` with the imports under ``if TYPE_CHECKING:`` too: the names a module's
    annotations take from another."""
    return {name: _runtime_imports(path, runtime_only=False) for name, path in MODULES.items()}


#: the packages whose modules may not form a circle even through imports made for annotations alone:
#: the bisection's drives and the pure analysis, read by whoever changes one of their seams
NO_CIRCLE_AT_ALL = ("hourly.bisect", "hourly.analysis")


def _within(name: str, roots) -> bool:
    return any(name == r or name.startswith(r + ".") for r in roots)


def _layer(name: str) -> str:
    if name in BASE or _within(name, ("hourly.text",)):
        return "base"
    for layer in ("analysis", "adapters", "measure", "execute", "render"):
        if _within(name, (f"hourly.{layer}",)):
            return layer
    if _within(name, tuple(LEVEL_RANK)):
        return "level"
    if _within(name, TOP):
        return "top"
    if name in ("hourly.jaxbench", "hourly.jaxbench_phases") or _within(name, ("hourly.harness",)):
        return "tracer"
    return "unplaced"


#: what each layer may import, besides its own layer (levels: see LEVEL_RANK)
MAY_IMPORT = {
    "base": set(),
    "tracer": {"base"},
    "analysis": {"base"},
    "adapters": {"base"},
    "measure": {"base", "analysis", "adapters"},
    "execute": {"base", "analysis", "adapters", "measure"},
    "level": {"base", "analysis", "adapters", "measure", "execute", "tracer"},
    "render": {"base", "analysis", "adapters", "measure", "execute", "level"},
    "top": {"base", "analysis", "adapters", "measure", "execute", "level", "render", "tracer"},
}


def _level_root(name: str) -> str:
    return next(r for r in LEVEL_RANK if _within(name, (r,)))


def _allowed(src: str, dst: str) -> bool:
    a, b = _layer(src), _layer(dst)
    if a == "level" and b == "level":
        ra, rb = _level_root(src), _level_root(dst)
        return ra == rb or LEVEL_RANK[rb] < LEVEL_RANK[ra]
    return a == b or b in MAY_IMPORT[a]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_graph_is_read():
    assert len(MODULES) > 60
    assert "hourly.scan.table" in _graph()["hourly.bisect.windows"]
    assert "hourly.adapters.proc" in _graph()["hourly.measure.build"]  # a module imported as a name


def test_every_module_has_a_place():
    assert {n: _layer(n) for n in MODULES if _layer(n) == "unplaced"} == {}


def test_the_import_graph_has_no_circle():
    assert _cycles(_graph()) == []


def test_the_bisection_and_the_analysis_have_no_circle_even_through_annotations():
    # a module that imports another for its annotations only (``if TYPE_CHECKING:``) still depends on
    # it: a circle through such an import is one a reader of either module must hold whole
    graph = _graph_with_annotations()
    inside = {n: {d for d in deps if _within(d, NO_CIRCLE_AT_ALL)} for n, deps in graph.items()
              if _within(n, NO_CIRCLE_AT_ALL)}
    assert _cycles(inside) == []


def test_the_annotation_graph_sees_type_only_and_lazy_imports():
    # the checker itself: an import under TYPE_CHECKING (the chain drive's of the lab) is in the
    # annotation graph and not the runtime one; a function-level one (the Bisector's of sampling) is in both
    assert "hourly.bisect.lab" in _graph_with_annotations()["hourly.bisect.chain_drive"]
    assert "hourly.bisect.lab" not in _graph()["hourly.bisect.chain_drive"]
    assert "hourly.bisect.sampling" in _graph()["hourly.bisect.search"]
    assert "hourly.bisect.sampling" in _graph_with_annotations()["hourly.bisect.search"]


def test_no_import_runs_back_up_the_layers():
    upward = sorted(f"{src} -> {dst}" for src, dsts in _graph().items() for dst in dsts if not _allowed(src, dst))
    assert upward == []


def test_analysis_imports_only_the_records_and_numpy():
    # pure: the records, errors and words of the base layer, the standard library, numpy and scipy
    for name, path in MODULES.items():
        if _layer(name) != "analysis":
            continue
        tree = ast.parse(path.read_text())
        outside = {(a.name if isinstance(n, ast.Import) else n.module or "").split(".")[0]
                   for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) and not getattr(n, "level", 0)
                   for a in (n.names if isinstance(n, ast.Import) else [n])}
        assert outside - set(sys.stdlib_module_names) - {"numpy", "scipy", "hourly", "__future__"} == set(), name


def test_importing_the_analysis_needs_no_adapter_library():
    # bisection maths and detection import without GitPython, tenacity, docker or rich
    code = ("import json, sys\nimport hourly.analysis.bisection, hourly.analysis.steps, hourly.analysis.series\n"
            "print(json.dumps(sorted(m for m in ('git', 'tenacity', 'docker', 'rich', 'matplotlib') if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_the_cycle_search_finds_a_circle():
    # the checker itself, on a small graph with one circle of three and a tail
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_layer_check_refuses_an_upward_import():
    assert not _allowed("hourly.analysis.detect", "hourly.adapters.store")
    assert not _allowed("hourly.adapters.gitrepo", "hourly.scan.run")
    assert not _allowed("hourly.scan.run", "hourly.bisect.search")
    assert _allowed("hourly.bisect.search", "hourly.scan.table")
    assert not _allowed("hourly.measure.build", "hourly.render.scan")


# -- the report renders what was gathered -------------------------------------------------------

#: what the report's renderer (hourly/render/report.py) may import when it runs: the records, the
#: pure analysis, the other renderers and the report's facts (hourly/report/data.py); the store,
#: the adapters, the measurement, the levels (hourly/report/gather.py among them) and any process
#: stay with the gathering
RENDERER_MAY_IMPORT = ("hourly.analysis", "hourly.render", "hourly.report.data")
#: the standard library and plotting it may import
RENDERER_MAY_USE = ("__future__", "math", "dataclasses", "datetime", "pathlib", "typing", "matplotlib")


def _renderer_outside(source: str, package: str = "hourly.render") -> list[str]:
    """The modules ``source`` imports when it runs (at the top or inside a function; not under
    ``if TYPE_CHECKING:``) beyond what the renderer may import (the records: :data:`BASE`)."""
    tree = ast.parse(source)
    skipped = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
               for child in node.body for n in ast.walk(child)}
    names = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            names += [f"hourly.{a.name}" for a in node.names] if module == "hourly" else [module]
    return sorted(n for n in set(names)
                  if not (_within(n, RENDERER_MAY_IMPORT) or n in BASE or _within(n, ("hourly.text",))
                          or _within(n, RENDERER_MAY_USE)))


def test_the_report_is_rendered_from_its_data_alone():
    # render/report.py makes markdown and plots from a ReportData; it opens no store, runs no
    # detection's level, no git and no process (hourly/report/gather.py does, first)
    assert _renderer_outside((PACKAGE / "render" / "report.py").read_text()) == []


def test_the_renderer_check_sees_the_store_git_and_processes_wherever_imported():
    source = ("from hourly.adapters.store import Store\nfrom hourly.render import markdown\nfrom hourly import proc\n"
              "def f():\n    import subprocess\n    from hourly.measure import machine\n"
              "    from ..scan.table import stored_scan\n    from hourly.analysis.steps import find_steps\n"
              "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from hourly.measure.settings import Settings\n")
    assert _renderer_outside(source) == ["hourly.adapters.store", "hourly.measure", "hourly.proc", "hourly.scan.table",
                                         "subprocess"]


# -- no class over 300 lines (issue 34): a class a newcomer reads whole -------------------------

#: the most lines a class of hourly/ may span (from its ``class`` line to its last, docstring,
#: comments and blank lines included)
MAX_CLASS_LINES = 300
#: the classes still over the limit, each with the length it had when written here: none may grow,
#: and once one is split its line goes (the test says so); any other class over the limit fails
OVER_THE_LIMIT: dict[str, int] = {}


def _class_lengths(source: str) -> dict[str, int]:
    """{class name: lines it spans} of every class in ``source``, nested ones included."""
    return {node.name: node.end_lineno - node.lineno + 1 for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None}


def test_no_class_is_over_300_lines():
    long = {f"{name}.{cls}": n for name, path in MODULES.items()
            for cls, n in _class_lengths(path.read_text()).items() if n > MAX_CLASS_LINES}
    assert {k: n for k, n in long.items() if n > OVER_THE_LIMIT.get(k, MAX_CLASS_LINES)} == {}, \
        f"split the class into focused ones (docs/architecture.md); at most {MAX_CLASS_LINES} lines each"
    assert sorted(set(OVER_THE_LIMIT) - set(long)) == [], "split now: take its line out of OVER_THE_LIMIT"


def test_the_class_length_check_counts_every_line_of_a_class():
    # the checker itself: a class of 301 lines (a nested one inside) and one of 2
    body = "    '''doc'''\n" + "\n".join(f"    x{i} = {i}" for i in range(297)) + "\n    class Inner:\n        y = 1\n"
    assert _class_lengths("import os\n\n\nclass Long:\n" + body + "\n\nclass Short:\n    z = 0\n") == \
        {"Long": 301, "Inner": 2, "Short": 2}


def test_at_most_twelve_modules_stand_at_the_packages_top():
    """hourly/ holds its records, its entry points and its public harnesses; the rest lives in folders
    by layer and level (docs/architecture.md)."""
    top = sorted(p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert len(top) <= 12, top
