"""Stand-ins for hunts where jaxlib and the jax package are built apart (``--only``, build pricing).

Everything is real, as in :mod:`hourly.demo.repos`: a JAX tree that ``python -m pip wheel --no-deps
--no-build-isolation`` builds into a real ``jax`` wheel (through a PEP 517 backend kept in the tree,
so no setuptools is needed), a ``jaxlib`` wheel built from an XLA tree (and JAX's native inputs), a
stand-in ``build-jax.sh`` that builds both and counts its jaxlib builds in a file, and a benchmark
that imports both and prints ``MLUPS: <value>``.

The metric is ``577.1 × jax.FACTOR × jaxlib.FACTOR``: the jax package multiplies the factors of
``jax/perf/*.txt`` (read at import, so an editable tree works too), jaxlib those of the XLA tree's
``perf/*.txt`` and the JAX tree's ``jaxlib/perf/*.txt`` as they stood at its build. A ``jax/CRASH``
file makes the benchmark crash. ``jax/version.py`` holds ``_minimum_jaxlib_version`` as JAX does.
"""

from __future__ import annotations

import base64
import hashlib
import textwrap
import zipfile
from pathlib import Path

from hourly.adapters.venvs import reinstall

from .repos import write_launcher

JAXLIB_VERSION = "0.4.14"

BACKEND = r'''
"""PEP 517 backend of the stand-in JAX tree: a wheel of the jax/ package, nothing else."""
import base64, hashlib, pathlib, re, zipfile

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _version():
    text = (ROOT / "jax" / "version.py").read_text()
    return re.search(r"^_version\s*=\s*['\"]([^'\"]+)['\"]", text, re.M).group(1)


def _files():
    return sorted(p for p in (ROOT / "jax").rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    info = f"jax-{version}.dist-info"
    files = {str(p.relative_to(ROOT)): p.read_bytes() for p in _files()}
    files[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: jax\nVersion: {version}\n".encode()
    files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: hourly-standin\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    name = f"jax-{version}-py3-none-any.whl"
    with zipfile.ZipFile(pathlib.Path(wheel_directory) / name, "w") as z:
        for n, data in files.items():
            z.writestr(n, data)
    return name
'''

JAX_INIT = '''"""Stand-in jax package: its speed factor comes from jax/perf/*.txt, read at import."""
import pathlib

from jax.version import __version__, _minimum_jaxlib_version

_HERE = pathlib.Path(__file__).parent
FACTOR = 1.0
for _f in sorted((_HERE / "perf").glob("*.txt")):
    FACTOR *= float(_f.read_text())
CRASH = (_HERE / "CRASH").exists()
'''


def jax_version_py(version: str = "0.4.15", minimum_jaxlib: str = JAXLIB_VERSION) -> str:
    return f'_version = "{version}"\n__version__ = _version\n_minimum_jaxlib_version = "{minimum_jaxlib}"\n'


def jax_base_files(minimum_jaxlib: str = JAXLIB_VERSION) -> dict[str, str]:
    """The first commit of the stand-in JAX tree."""
    return {
        "README": "stand-in for jax-ml/jax (jax package and jaxlib sources)\n",
        ".gitignore": "dist/\n*.pyc\n",
        "pyproject.toml": textwrap.dedent("""\
            [build-system]
            requires = []
            build-backend = "standin_backend"
            backend-path = ["_backend"]
            """),
        "_backend/standin_backend.py": BACKEND,
        "jax/__init__.py": JAX_INIT,
        "jax/version.py": jax_version_py(minimum_jaxlib=minimum_jaxlib),
        "jax/perf/base.txt": "1.0\n",
        "jaxlib/BUILD": "# stand-in for jaxlib's Bazel targets\n",
        "jaxlib/perf/base.txt": "1.0\n",
        "WORKSPACE": 'XLA_COMMIT = "0000000"\n',
        ".bazelrc": "build --config=short_logs\n",
    }


def xla_base_files() -> dict[str, str]:
    return {"README": "stand-in for openxla/xla\n", "perf/base.txt": "1.0\n"}


def _factor(*dirs: Path) -> float:
    f = 1.0
    for d in dirs:
        for p in sorted(d.glob("*.txt")) if d.is_dir() else []:
            f *= float(p.read_text())
    return f


def write_wheel(out_dir: Path, name: str, version: str, files: dict[str, str]) -> Path:
    """A real wheel (zip with METADATA, WHEEL and RECORD) of ``files``."""
    info = f"{name}-{version}.dist-info"
    files = dict(files)
    files[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    files[f"{info}/WHEEL"] = "Wheel-Version: 1.0\nGenerator: hourly-standin\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = []
    for n, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{n},sha256={digest},{len(text.encode())}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = "\n".join(record) + "\n"
    out_dir.mkdir(parents=True, exist_ok=True)
    wheel = out_dir / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for n, text in files.items():
            z.writestr(n, text)
    return wheel


def jaxlib_wheel(out_dir: Path, version: str, xla_commit: str | None, factor: float) -> Path:
    """A stand-in jaxlib wheel; ``jaxlib/version.py`` names the XLA commit when one is given."""
    version_py = f'_version = "{version}"\n__version__ = _version\n'
    if xla_commit:
        version_py += f'_xla_git_hash = "{xla_commit}"\n'
    return write_wheel(out_dir, "jaxlib", version, {
        "jaxlib/__init__.py": f"from jaxlib.version import __version__\nFACTOR = {factor!r}\n",
        "jaxlib/version.py": version_py})


def install(python: str, *wheels: Path) -> None:
    reinstall(python, list(map(str, wheels)), timeout=300, check=True)


BENCH_PY = r'''
"""Stand-in benchmark: imports the installed jax and jaxlib, prints MLUPS."""
import os, random, sys
import jax, jaxlib

if jax.CRASH:
    print("RuntimeError: stand-in crash", file=sys.stderr)
    sys.exit(1)
noise = float(os.environ.get("DEMO_NOISE", "0.002"))
value = 577.1 * jax.FACTOR * jaxlib.FACTOR * (1 + random.gauss(0, noise))
print(f"jax {jax.__version__} jaxlib {jaxlib.__version__}")
print(f"MLUPS: {value:.2f}")
'''

BUILD_PY = r'''
"""Stand-in build-jax.sh: a jaxlib wheel from the XLA tree and JAX's native sources, then the jax
wheel (through the tree's PEP 517 backend); one line per jaxlib build in $STANDIN_JAXLIB_COUNT."""
import os, pathlib, subprocess, sys
sys.path.insert(0, {hourly_root!r})
from hourly.demo.split import _factor as factor, jaxlib_wheel

XLA = pathlib.Path(os.environ["HOURLY_XLA_DIR"])
JAX = pathlib.Path.cwd()
out = pathlib.Path(os.environ.get("HOURLY_WHEEL_DIR") or JAX / "dist")
xla_sha = subprocess.run(["git", "-C", str(XLA), "rev-parse", "HEAD"], capture_output=True, text=True,
                         check=True).stdout.strip()
count = os.environ.get("STANDIN_JAXLIB_COUNT")
if count:
    with open(count, "a") as f:
        f.write(f"{{xla_sha}} {{os.environ.get('HOURLY_JAX_SHA', '')}}\n")
jaxlib_wheel(out, {version!r}, xla_sha, factor(XLA / "perf", JAX / "jaxlib" / "perf"))
sys.path.insert(0, str(JAX / "_backend"))
import standin_backend
print("built", standin_backend.build_wheel(str(out)))
'''


def write_split_build(bin_dir: Path, version: str = JAXLIB_VERSION) -> Path:
    """The stand-in build-jax.sh of the two-repository hunt (see the module's text)."""
    hourly_root = str(Path(__file__).resolve().parents[2])
    return write_launcher(bin_dir, "build_split.py", BUILD_PY.format(hourly_root=hourly_root, version=version))


def write_bench(bench_dir: Path) -> Path:
    bench_dir.mkdir(parents=True, exist_ok=True)
    p = bench_dir / "bench_split.py"
    p.write_text(BENCH_PY)
    return p
