"""Real stand-in xla and jax repositories, builds and benchmarks — for ``hourly demo`` and tests.

Everything here is real: git repositories with commits at fixed dates (pinned author and
committer), pull requests merged with merge commits, clones whose ``origin/main`` is the upstream,
a stand-in ``build-jax.sh`` that builds a real wheel from the two checkouts (and, like the real
one, edits a tracked file of the JAX tree and leaves untracked outputs), and a benchmark that
imports the installed wheel and prints ``MLUPS: <value>``.

The wheel's behaviour comes from files in the trees: every ``perf/*.txt`` holds a factor that
multiplies the metric, a ``CRASH`` file in jax makes the benchmark crash, a ``BROKEN`` file in xla
makes the build fail.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from hourly.adapters import proc
from hourly.text.timeparse import parse_time

AUTHOR = {"GIT_AUTHOR_NAME": "Demo Author", "GIT_AUTHOR_EMAIL": "author@example.com",
          "GIT_COMMITTER_NAME": "Demo Committer", "GIT_COMMITTER_EMAIL": "committer@example.com"}


@dataclass
class Change:
    """One commit. ``merged_at`` makes it a pull request: committed at ``when`` on a side branch
    (from main as it stood then) and merged into main with a merge commit at ``merged_at``."""

    repo: str
    when: str
    subject: str
    files: dict[str, str | None] = field(default_factory=dict)
    merged_at: str | None = None
    author: str = "Demo Author"


@dataclass
class Made:
    root: Path
    xla: Path        # clone with origin/main
    jax: Path
    upstream: dict[str, Path]
    shas: dict[str, str]  # subject -> sha of the commit that lands on main (merge commit for PRs)
    branch_shas: dict[str, str]  # subject -> sha of the PR's own commit
    build_script: Path
    bench_script: Path


def _ts(when: str) -> str:
    t = parse_time(when).when
    return f"{int(t.timestamp())} +0000"


def _git(path: Path, *args: str, when: str | None = None, author: str | None = None) -> str:
    env = dict(os.environ)
    env.update(AUTHOR)
    env["TZ"] = "UTC"
    if author:
        env["GIT_AUTHOR_NAME"] = author
    if when:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = _ts(when)
    return proc.run(["git", *args], cwd=path, env=env).output.rstrip("\n")


def _write(repo: Path, files: Mapping[str, str | None]) -> None:
    for name, content in files.items():
        p = repo / name
        if content is None:
            _git(repo, "rm", "-q", name)
        else:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(content)
            _git(repo, "add", name)


def _init(path: Path, base_files: dict[str, str], when: str) -> None:
    path.mkdir(parents=True)
    _git(path, "init", "-q", "-b", "main")
    _git(path, "config", "commit.gpgsign", "false")
    _write(path, base_files)
    _git(path, "commit", "-q", "-m", "Initial commit", when=when)


def make_repos(root: str | Path, changes: list[Change], start: str = "2023-08-23T12:00:00Z",
               base: dict[str, dict[str, str]] | None = None) -> Made:
    """Create upstream repos from ``changes``, clone them, and write the build and bench scripts.
    ``base`` replaces a repository's first commit (e.g. hourly.demo.split's JAX package tree)."""
    root = Path(root).absolute()
    up = {"xla": root / "upstream" / "xla", "jax": root / "upstream" / "jax"}
    base = base or {}
    _init(up["xla"], base.get("xla") or {"README": "stand-in for openxla/xla\n", "perf/base.txt": "1.0\n"}, start)
    _init(up["jax"], base.get("jax") or {"README": "stand-in for jax-ml/jax\n", "perf/base.txt": "1.0\n",
                                         "build/requirements.in": "jaxlib\n", ".gitignore": "dist/\nbuild/cache/\n*.pyc\n"},
          start)
    events = []
    for i, c in enumerate(changes):
        events.append((parse_time(c.when).when, i, "commit", c))
        if c.merged_at:
            events.append((parse_time(c.merged_at).when, i, "merge", c))
    events.sort(key=lambda e: (e[0], e[1]))
    shas: dict[str, str] = {}
    branch_shas: dict[str, str] = {}
    for _, i, kind, c in events:
        repo = up[c.repo]
        branch = f"pr-{i}"
        if kind == "commit" and c.merged_at:
            _git(repo, "checkout", "-q", "-b", branch, "main")
            _write(repo, c.files)
            _git(repo, "commit", "-q", "--allow-empty", "-m", c.subject, when=c.when, author=c.author)
            branch_shas[c.subject] = _git(repo, "rev-parse", "HEAD")
            _git(repo, "checkout", "-q", "main")
        elif kind == "commit":
            _write(repo, c.files)
            _git(repo, "commit", "-q", "--allow-empty", "-m", c.subject, when=c.when, author=c.author)
            shas[c.subject] = _git(repo, "rev-parse", "HEAD")
        else:
            _git(repo, "merge", "-q", "--no-ff", branch, "-m",
                 f"Merge pull request #{1000 + i} from demo:{branch}\n\n{c.subject}", when=c.merged_at)
            shas[c.subject] = _git(repo, "rev-parse", "HEAD")
    # PR branches stay unmerged-looking refs upstream too, like GitHub's pull/N/head
    clones = {}
    for name, path in up.items():
        clone = root / name
        _git(root, "clone", "-q", str(path), str(clone))
        _git(clone, "config", "advice.detachedHead", "false")
        _git(clone, "fetch", "-q", "origin", "+refs/heads/*:refs/remotes/origin/*")
        clones[name] = clone
    build = write_build_script(root / "bin", clones["xla"])
    bench = write_bench_script(root / "bench")
    return Made(root, clones["xla"], clones["jax"], up, shas, branch_shas, build, bench)


BUILD_PY = r'''
"""Stand-in for build-jax.sh: builds a real wheel of the package `jax_demo` from the checkouts."""
import base64, hashlib, pathlib, subprocess, sys, zipfile

XLA = pathlib.Path(sys.argv[1])
JAX = pathlib.Path.cwd()

def head(p):
    return subprocess.run(["git", "-C", str(p), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()

if (XLA / "BROKEN").exists():
    print("ERROR: xla/service/gpu/fusion.cc:42: no matching function for call", file=sys.stderr)
    sys.exit(1)

factor = 1.0
for tree in (XLA, JAX):
    for f in sorted((tree / "perf").glob("*.txt")):
        factor *= float(f.read_text())
crash = (JAX / "CRASH").exists()
xla_sha, jax_sha = head(XLA), head(JAX)
version = f"0.1.0+x{xla_sha[:8]}.j{jax_sha[:8]}"

# like the real build-jax.sh: rewrite a tracked requirements file, leave untracked outputs
(JAX / "build" / "requirements.in").write_text(f"jaxlib @ file://{JAX}/dist\n")
(JAX / "build" / "cache").mkdir(parents=True, exist_ok=True)
(JAX / "build" / "cache" / f"{xla_sha[:8]}.o").write_text("object\n")

files = {
    "jax_demo/__init__.py": f"XLA_SHA = {xla_sha!r}\nJAX_SHA = {jax_sha!r}\nFACTOR = {factor!r}\nCRASH = {crash!r}\n",
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
dist = JAX / "dist"
dist.mkdir(exist_ok=True)
wheel = dist / f"jax_demo-{version}-py3-none-any.whl"
with zipfile.ZipFile(wheel, "w") as z:
    for name, text in files.items():
        z.writestr(name, text)
print(f"built {wheel.name} (factor {factor:.4f})")
'''

BENCH_PY = r'''
"""Stand-in for examples/performance/MLUPS3d.py: imports the installed build, prints MLUPS."""
import os, random, sys
import jax_demo

if jax_demo.CRASH:
    print("Traceback (most recent call last):\n  File \"MLUPS3d.py\", line 12\nRuntimeError: CUDA_ERROR_ILLEGAL_ADDRESS", file=sys.stderr)
    sys.exit(1)
noise = float(os.environ.get("DEMO_NOISE", "0.002"))
value = 577.1 * jax_demo.FACTOR * (1 + random.gauss(0, noise))
print(f"jax_demo {jax_demo.JAX_SHA[:8]} xla {jax_demo.XLA_SHA[:8]}")
print(f"JAX_ENABLE_COMPILATION_CACHE={os.environ.get('JAX_ENABLE_COMPILATION_CACHE', '(unset)')}")
print(f"MLUPS: {value:.2f}")
'''


def write_launcher(bin_dir: Path, py_name: str, py_text: str, *args: str) -> Path:
    """``bin_dir/build-jax.sh``: a stand-in for the nightly container's build script that runs
    ``py_text`` (saved as ``bin_dir/py_name``) with ``args`` and the script's own arguments."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    (bin_dir / py_name).write_text(py_text)
    quoted = "".join(f' "{a}"' for a in (str(bin_dir / py_name), *args))
    script = bin_dir / "build-jax.sh"
    script.write_text("#!/usr/bin/env bash\n# stand-in for the nightly container's build-jax.sh\nset -euo pipefail\n"
                      f'exec "${{HOURLY_PYTHON:-python3}}"{quoted} "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return script


def write_build_script(bin_dir: Path, xla_clone: Path) -> Path:
    # the XLA tree hourly names (a Slurm job's own worktree), else the clone
    return write_launcher(bin_dir, "build_standin.py", BUILD_PY, f"${{HOURLY_XLA_DIR:-{xla_clone}}}")


def write_bench_script(bench_dir: Path) -> Path:
    bench_dir.mkdir(parents=True, exist_ok=True)
    p = bench_dir / "MLUPS3d.py"
    p.write_text(BENCH_PY)
    return p


#: The demo's history: three days of both repos, two planted regressions, one improvement,
#: a build failure, a crash window, and JAX changes arriving through merged pull requests.
DEMO_CHANGES = [
    Change("xla", "2023-08-24T01:30:00Z", "Integrate LLVM at llvm/llvm-project@64bd5bbb9bbb", {"llvm.txt": "64bd5bb\n"}),
    Change("jax", "2023-08-24T02:10:00Z", "Add jax.numpy.fft docstrings", {"docs/fft.md": "fft\n"}),
    Change("jax", "2023-08-24T03:00:00Z", "[pallas] add block spec checks", {"pallas.txt": "1\n"},
           merged_at="2023-08-24T09:40:00Z", author="PR Author"),
    Change("xla", "2023-08-24T06:20:00Z", "[XLA:GPU] Clean up NCCL thunk", {"nccl.txt": "1\n"}),
    Change("xla", "2023-08-24T11:05:00Z", "[XLA:GPU] Add autotuning cache key", {"autotune.txt": "1\n"}),
    Change("xla", "2023-08-24T13:20:00Z", "[XLA:GPU] Change priority fusion heuristic",
           {"perf/fusion.txt": "0.93\n"}, author="Fusion Author"),
    Change("xla", "2023-08-24T13:45:00Z", "[XLA] Fix typo in comment", {"typo.txt": "1\n"}),
    Change("jax", "2023-08-24T18:30:00Z", "Bump version to 0.4.15.dev", {"version.txt": "0.4.15\n"}),
    Change("xla", "2023-08-24T22:10:00Z", "[XLA:CPU] Tidy runtime", {"cpu.txt": "1\n"}),
    Change("jax", "2023-08-25T01:00:00Z", "Use a faster dispatch path for pjit", {"perf/dispatch.txt": "0.95\n"},
           merged_at="2023-08-25T12:30:00Z", author="Dispatch Author"),
    Change("xla", "2023-08-25T05:40:00Z", "[XLA:GPU] Refactor triton emitter (breaks the build)", {"BROKEN": "1\n"}),
    Change("xla", "2023-08-25T08:15:00Z", "[XLA:GPU] Fix the build", {"BROKEN": None}),
    Change("jax", "2023-08-25T16:00:00Z", "Rewrite custom_vjp residuals", {"CRASH": "1\n"}),
    Change("jax", "2023-08-25T19:30:00Z", "Fix custom_vjp residual crash", {"CRASH": None}),
    Change("xla", "2023-08-26T03:10:00Z", "[XLA:GPU] Enable cuDNN fused attention", {"perf/cudnn.txt": "1.04\n"}),
    Change("jax", "2023-08-26T09:00:00Z", "Update changelog", {"CHANGELOG.md": "0.4.15\n"},
           merged_at="2023-08-26T15:20:00Z"),
    Change("xla", "2023-08-26T20:45:00Z", "[XLA] Integrate StableHLO", {"stablehlo.txt": "1\n"}),
]


def first_parent_chain(csv_path: str | Path) -> list[dict]:
    """The rows of a shared history CSV (``sha``, ``parent_sha``, ...) in first-parent order,
    oldest first."""
    import csv
    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    by_parent = {r["parent_sha"]: r for r in rows}
    shas = {r["sha"] for r in rows}
    chain = [next(r for r in rows if r["parent_sha"] not in shas)]
    while chain[-1]["sha"] in by_parent:
        chain.append(by_parent[chain[-1]["sha"]])
    return chain


def replay_history(csv_path: str | Path, dest: str | Path) -> dict[str, str]:
    """Replay a first-parent history from ``shared/data/history/*.csv`` (sha, parent, author and
    committer times, subject) into a new repository at ``dest``, with ``origin/main`` at its tip.

    The commits carry the real times and subjects (and the original SHA in their message), so
    resolution can be checked against what git picked on the real repositories. Returns
    {new sha: original sha}.
    """
    chain = first_parent_chain(csv_path)
    stream = []
    for i, r in enumerate(chain, 1):
        msg = f"{r['subject']}\n\noriginal: {r['sha']}\n".encode()
        stream.append(f"commit refs/heads/main\nmark :{i}\n"
                      f"author Real Author <author@example.com> {r['author_time_unix']} +0000\n"
                      f"committer Real Committer <committer@example.com> {r['committer_time_unix']} +0000\n"
                      f"data {len(msg)}\n{msg.decode()}" + (f"from :{i - 1}\n" if i > 1 else "") + "\n")
    dest = Path(dest)
    dest.mkdir(parents=True)
    proc.run(["git", "init", "-q", "-b", "main", str(dest)])
    proc.run(["git", "fast-import", "--quiet"], cwd=dest, input="".join(stream))
    proc.run(["git", "update-ref", "refs/remotes/origin/main", "refs/heads/main"], cwd=dest)
    out = proc.run(["git", "log", "--format=%H%x1f%b%x1e", "refs/heads/main"], cwd=dest).output
    mapping = {}
    for record in out.split("\x1e"):
        if "\x1f" in record:
            new, body = record.strip().split("\x1f", 1)
            mapping[new] = body.split("original:", 1)[1].split()[0]
    return mapping
