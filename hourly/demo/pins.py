"""Stand-in jax, xla and llvm repositories whose pin files move like the real ones (tests of
``--pairing pin`` and of the descent into pin bumps; docs/bisect.md).

* JAX pins XLA in each historical form in turn: ``WORKSPACE`` (``http_archive``), then
  ``third_party/xla/workspace.bzl`` (``XLA_COMMIT``), then ``third_party/xla/revision.bzl``, then
  ``MODULE.bazel`` (``archive_override``) beside ``revision.bzl``.
* XLA pins LLVM in ``third_party/llvm/workspace.bzl`` (``LLVM_COMMIT``); its "Integrate LLVM at
  llvm/llvm-project@…" commit moves the pin over the LLVM commit with the planted regression.
* The stand-in build (``build-jax.sh``) builds a real wheel from the JAX tree and the XLA tree
  hourly names (``HOURLY_XLA_PATH``), with LLVM at the XLA tree's pin (read from the LLVM clone),
  or — in a descent — the LLVM tree ``HOURLY_LLVM_PATH`` names. Every ``perf/*.txt`` of the three
  multiplies the metric; a JAX ``requires.txt`` names XLA features (``features/<name>``) the build
  fails without, as JAX needing an XLA newer than the one beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Union

from hourly.demo.repos import _git, _init, _write, write_bench_script, write_launcher

Files = dict[str, Union[str, None]]
#: a commit: (when, subject, files, or a function of the shas made so far giving the files)
Spec = tuple[str, str, Union[Files, Callable[[dict[str, str]], Files]]]


def workspace_form(x: str) -> str:
    return ('load("@bazel_tools//tools/build_defs/repo:http.bzl", "http_archive")\n\n'
            "# To update XLA to a new revision,\n# a) update URL and strip_prefix to the new git commit hash\n"
            'http_archive(\n    name = "xla",\n    sha256 = "617a968b2d4154ef4368e2676c72e2bc9a019be3b6a1941c8dc741d3e5ea3d8e",\n'
            f'    strip_prefix = "xla-{x}",\n    urls = [\n'
            f'        "https://github.com/openxla/xla/archive/{x}.tar.gz",\n    ],\n)\n\n'
            'load("//third_party/ducc:workspace.bzl", ducc = "repo")\nducc()\n')


def bzl_form(x: str) -> str:
    return ('load("@bazel_tools//tools/build_defs/repo:http.bzl", "http_archive")\n\n'
            "# To update XLA to a new revision,\n# a) update XLA_COMMIT to the new git commit hash\n"
            f'XLA_COMMIT = "{x}"\nXLA_SHA256 = "45b1d9b0a25130b5805184278e0e3342ed95b7638c1a1fc6fd663188e6784401"\n\n'
            'def repo():\n    http_archive(\n        name = "xla",\n        sha256 = XLA_SHA256,\n'
            '        strip_prefix = "xla-{commit}".format(commit = XLA_COMMIT),\n    )\n')


def loading_bzl() -> str:
    return ('load("//third_party:repo.bzl", "tf_http_archive", "tf_mirror_urls")\n'
            'load("//third_party/xla:revision.bzl", "XLA_COMMIT", "XLA_SHA256")\n\n'
            'def repo():\n    tf_http_archive(\n        name = "xla",\n        sha256 = XLA_SHA256,\n'
            '        strip_prefix = "openxla-xla-{commit}".format(commit = XLA_COMMIT[:7]),\n    )\n')


def revision_form(x: str) -> str:
    return ("# buildifier: disable=module-docstring\n# a) update XLA_COMMIT to the new git commit hash\n"
            f'XLA_COMMIT = "{x}"\nXLA_SHA256 = "36fd883a02fbdabd8c105cf28a973374208a72b17d3849bee9572670d8dd2809"\n')


def module_form(x: str) -> str:
    return ('module(name = "jax")\n\nbazel_dep(name = "rules_ml_toolchain")\narchive_override(\n'
            '    module_name = "rules_ml_toolchain",\n    strip_prefix = "rules_ml_toolchain-b11745590f513ec55b32e2d126073576fde18c71",\n'
            '    urls = ["https://github.com/google-ml-infra/rules_ml_toolchain/archive/b11745590f513ec55b32e2d126073576fde18c71.tar.gz"],\n)\n\n'
            'bazel_dep(name = "xla")\narchive_override(\n    module_name = "xla",\n'
            '    integrity = "sha256-Nv2IOgL72r2MEFzyipczdCCKcrF9OEm+6VcmcNjdKAk=",\n'
            f'    strip_prefix = "xla-{x}",\n    urls = ["https://github.com/openxla/xla/archive/{x}.tar.gz"],\n)\n')


def llvm_form(sha: str) -> str:
    return ('load("//third_party:repo.bzl", "tf_http_archive")\n\ndef repo(name):\n'
            '    """Imports LLVM."""\n'
            f'    LLVM_COMMIT = "{sha}"\n    LLVM_SHA256 = "0d1d52e1b8d4d2c6f1f5d6e1b9d1e5a0c7b2a8f0e1d2c3b4a5968778695a4b3c"\n\n'
            "    tf_http_archive(\n        name = name,\n        sha256 = LLVM_SHA256,\n"
            '        strip_prefix = "llvm-project-{commit}".format(commit = LLVM_COMMIT),\n    )\n')


LLVM: list[Spec] = [
    ("2023-08-20T10:00:00Z", "Initial commit", {"README": "stand-in for llvm/llvm-project\n", "perf/llvm.txt": "1.0\n"}),
    ("2023-08-20T11:00:00Z", "[mlir] Fix a typo in a comment (NFC)", {"mlir.txt": "1\n"}),
    ("2023-08-20T12:00:00Z", "[X86] Add a test for shuffle lowering", {"x86.txt": "1\n"}),
    ("2023-08-20T13:00:00Z", "[NVPTX] Change the default scheduling of loads", {"perf/llvm.txt": "0.9\n"}),
    ("2023-08-20T14:00:00Z", "[InstCombine] Fold select of constants (NFC)", {"ic.txt": "1\n"}),
    ("2023-08-20T15:00:00Z", "[docs] Update release notes", {"notes.txt": "1\n"}),
]


def _xla(llvm: dict[str, str]) -> list[Spec]:
    return [
        ("2023-08-22T00:00:00Z", "Initial commit", {"README": "stand-in for openxla/xla\n", "perf/base.txt": "1.0\n",
                                                     "third_party/llvm/workspace.bzl": llvm_form(llvm["Initial commit"])}),
        ("2023-08-22T06:00:00Z", "[XLA:GPU] Clean up NCCL thunk", {"nccl.txt": "1\n"}),
        ("2023-08-22T08:00:00Z", "Integrate LLVM at llvm/llvm-project@" + llvm["[InstCombine] Fold select of constants (NFC)"][:12],
         {"third_party/llvm/workspace.bzl": llvm_form(llvm["[InstCombine] Fold select of constants (NFC)"])}),
        ("2023-08-22T10:00:00Z", "[XLA] Fix typo in comment", {"typo.txt": "1\n"}),
        ("2023-08-22T12:00:00Z", "[XLA:CPU] Tidy runtime", {"cpu.txt": "1\n"}),
        ("2023-08-22T14:00:00Z", "[XLA:GPU] Add autotuning cache key", {"autotune.txt": "1\n"}),
        # committed an hour after the JAX commit that pins it (committer times out of order)
        ("2023-08-23T14:00:00Z", "[XLA:GPU] Add the feature-x API", {"features/feature-x": "1\n"}),
    ]


def _jax(x: dict[str, str]) -> list[Spec]:
    x0, x1, x3 = x["Initial commit"], x["[XLA:GPU] Clean up NCCL thunk"], x["[XLA] Fix typo in comment"]
    x4, x5, x6 = x["[XLA:CPU] Tidy runtime"], x["[XLA:GPU] Add autotuning cache key"], x["[XLA:GPU] Add the feature-x API"]

    def bump(sha: str) -> str:
        return f"Update XLA dependency to use revision http://github.com/openxla/xla/commit/{sha}."
    return [
        ("2023-08-22T00:30:00Z", "Initial commit", {"README": "stand-in for jax-ml/jax\n", "perf/base.txt": "1.0\n",
                                                     ".gitignore": "dist/\nbuild/cache/\n*.pyc\n", "WORKSPACE": workspace_form(x0)}),
        ("2023-08-22T01:00:00Z", "Move the XLA commit out of the top-level JAX WORKSPACE file and into a separate .bzl file.",
         {"WORKSPACE": 'load("//third_party/xla:workspace.bzl", jax_xla_workspace = "repo")\njax_xla_workspace()\n',
          "third_party/xla/workspace.bzl": bzl_form(x0)}),
        ("2023-08-22T07:00:00Z", bump(x1), {"third_party/xla/workspace.bzl": bzl_form(x1)}),
        ("2023-08-22T09:00:00Z", "Add jax.numpy.fft docstrings", {"docs/fft.md": "fft\n"}),
        ("2023-08-22T11:00:00Z", bump(x3), {"third_party/xla/workspace.bzl": bzl_form(x3)}),
        ("2023-08-22T12:30:00Z", "Move the XLA revision into third_party/xla/revision.bzl",
         {"third_party/xla/workspace.bzl": loading_bzl(), "third_party/xla/revision.bzl": revision_form(x3)}),
        ("2023-08-22T13:00:00Z", bump(x4), {"third_party/xla/revision.bzl": revision_form(x4)}),
        ("2023-08-22T15:00:00Z", "Switch to Bzlmod: XLA as an archive_override in MODULE.bazel",
         {"MODULE.bazel": module_form(x4)}),
        ("2023-08-22T16:00:00Z", bump(x5), {"MODULE.bazel": module_form(x5), "third_party/xla/revision.bzl": revision_form(x5)}),
        ("2023-08-23T13:00:00Z", bump(x6) + " Use the feature-x API",
         {"MODULE.bazel": module_form(x6), "third_party/xla/revision.bzl": revision_form(x6), "requires.txt": "feature-x\n"}),
    ]


def _make(path: Path, specs: list[Spec]) -> dict[str, str]:
    shas: dict[str, str] = {}
    for i, (when, subject, files) in enumerate(specs):
        content = files(shas) if callable(files) else files
        if i == 0:
            _init(path, {k: v for k, v in content.items() if v is not None}, when)
        else:
            _write(path, content)
            _git(path, "commit", "-q", "--allow-empty", "-m", subject, when=when)
        shas[subject] = _git(path, "rev-parse", "HEAD")
    return shas


@dataclass
class PinMade:
    root: Path
    jax: Path
    xla: Path
    llvm: Path
    shas: dict[str, dict[str, str]]  # repo -> subject -> sha
    build_script: Path
    bench_script: Path


BUILD_PY = r'''
"""Stand-in for build-jax.sh: a real wheel from the JAX tree, the XLA tree (HOURLY_XLA_PATH, as
--local_xla_path) and LLVM at XLA's pin, or the LLVM tree HOURLY_LLVM_PATH names (as
--override_repository=llvm-raw=...)."""
import base64, hashlib, os, pathlib, re, subprocess, sys, zipfile

XLA = pathlib.Path(os.environ.get("HOURLY_XLA_PATH") or sys.argv[1])
LLVM_CLONE = pathlib.Path(sys.argv[2])
JAX = pathlib.Path.cwd()

def git(p, *args):
    return subprocess.run(["git", "-C", str(p), *args], capture_output=True, text=True, check=True).stdout

for name in ((JAX / "requires.txt").read_text().split() if (JAX / "requires.txt").exists() else []):
    if not (XLA / "features" / name).exists():
        print(f"ERROR: jaxlib/gpu/{name}.cc:12: no member named '{name}' in namespace 'xla'", file=sys.stderr)
        sys.exit(1)
factor = 1.0
for tree in (XLA, JAX):
    for f in sorted((tree / "perf").glob("*.txt")):
        factor *= float(f.read_text())
if os.environ.get("HOURLY_LLVM_PATH"):
    llvm_tree = pathlib.Path(os.environ["HOURLY_LLVM_PATH"])
    llvm_sha = git(llvm_tree, "rev-parse", "HEAD").strip()
    for f in sorted((llvm_tree / "perf").glob("*.txt")):
        factor *= float(f.read_text())
else:
    llvm_sha = re.search(r'LLVM_COMMIT = "([0-9a-f]+)"', (XLA / "third_party/llvm/workspace.bzl").read_text()).group(1)
    for name in git(LLVM_CLONE, "ls-tree", "--name-only", llvm_sha, "perf/").split():
        factor *= float(git(LLVM_CLONE, "show", f"{llvm_sha}:{name}"))
xla_sha, jax_sha = git(XLA, "rev-parse", "HEAD").strip(), git(JAX, "rev-parse", "HEAD").strip()
version = f"0.1.0+x{xla_sha[:8]}.j{jax_sha[:8]}.l{llvm_sha[:8]}"
files = {
    "jax_demo/__init__.py": f"XLA_SHA = {xla_sha!r}\nJAX_SHA = {jax_sha!r}\nLLVM_SHA = {llvm_sha!r}\nFACTOR = {factor!r}\nCRASH = False\n",
    f"jax_demo-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: jax_demo\nVersion: {version}\n",
    f"jax_demo-{version}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: hourly-demo\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = []
for name, text in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
    record.append(f"{name},sha256={digest},{len(text.encode())}")
record_name = f"jax_demo-{version}.dist-info/RECORD"
record.append(f"{record_name},,")
files[record_name] = "\n".join(record) + "\n"
dist = pathlib.Path(os.environ.get("HOURLY_WHEEL_DIR") or JAX / "dist")
dist.mkdir(parents=True, exist_ok=True)
wheel = dist / f"jax_demo-{version}-py3-none-any.whl"
with zipfile.ZipFile(wheel, "w") as z:
    for name, text in files.items():
        z.writestr(name, text)
print(f"built {wheel.name} (factor {factor:.4f}, llvm {llvm_sha[:8]})")
'''


def make_pin_repos(root: str | Path) -> PinMade:
    """The three stand-ins (upstreams and clones with ``origin/main``), the build and the benchmark."""
    root = Path(root).absolute()
    up = {name: root / "upstream" / name for name in ("llvm", "xla", "jax")}
    shas = {"llvm": _make(up["llvm"], LLVM)}
    shas["xla"] = _make(up["xla"], _xla(shas["llvm"]))
    shas["jax"] = _make(up["jax"], _jax(shas["xla"]))
    clones = {}
    for name, path in up.items():
        clone = root / name
        _git(root, "clone", "-q", str(path), str(clone))
        _git(clone, "config", "advice.detachedHead", "false")
        clones[name] = clone
    build = write_launcher(root / "bin", "build_pins.py", BUILD_PY, f"{clones['xla']}", f"{clones['llvm']}")
    bench = write_bench_script(root / "bench")
    return PinMade(root, clones["jax"], clones["xla"], clones["llvm"], shas, build, bench)
