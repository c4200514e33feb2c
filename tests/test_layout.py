"""The house rules of the package layout, checked on the code itself.

* The command line starts without the heavy libraries: each is imported where it is used.
* The core never reaches up into the command layer: hourly/commands/ and hourly/cli.py may import
  the core, never the other way round.
"""

from __future__ import annotations

import ast
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


def _imported_modules(path: Path) -> set[str]:
    """Absolute names of every module ``path`` imports, wherever the import statement is."""
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            names.add(prefix)
            names.update(f"{prefix}.{a.name}" for a in node.names)
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
