"""A stand-in for a build that installs the JAX tree in place (``pip install -e``) and leaves no
wheel: it puts a ``jax`` package in the tree (under the demo tree's ignored ``build/cache``) and that on the receiving Python's path (a
``.pth`` file, as an editable install does), so that the benchmark's Python finds jax in the tree."""

from pathlib import Path

#: the .pth sorts before the test venv's own (``_running_python.pth``): the tree's jax comes first
EDITABLE = """\
mkdir -p "$HOURLY_JAX_DIR/build/cache/jax" && touch "$HOURLY_JAX_DIR/build/cache/jax/__init__.py"
"$HOURLY_PYTHON" -c "import os, site; open(os.path.join(site.getsitepackages()[0], '00-editable-jax.pth'), 'w').write(os.environ['HOURLY_JAX_DIR'] + '/build/cache')"
"""


def editable_build(path: Path, extra: str = "") -> Path:
    """An executable build script at ``path`` that installs the JAX tree in place (then runs ``extra``)."""
    path.write_text(f"#!/bin/sh\nset -e\n{EDITABLE}{extra}")
    path.chmod(0o755)
    return path
