"""`hourly explain` on the real jax-ml/jax history: a real commit that changed a lowering.

    python benchmarks/real_jax/explain_lowering.py --jax-clone /work/jaxclone
    python benchmarks/real_jax/explain_lowering.py ... --python /path/venv/bin/python --sweep

The commit is da23cf20a2 ("Fix `lax.special.igamma` and `lax.special.igammac` for `a = inf` &
`x` finite.", committed 2026-06-27 12:23 -07:00): it adds the `a = inf` case to the lowering
JAX itself writes for `lax.igamma` (jax/_src/lax/special.py), so the CPU's optimized HLO of a
jitted `lax.igamma` of two 4096-vectors grows from 752 to 764 instructions
(benchmarks/real_jax/lowering_kernel.py, which prints that count as `hlo_instructions:`).

What it runs, in order, each printed verbatim:

1. its own clone of ``--jax-clone`` (``git clone --no-checkout`` + a sparse checkout without
   the one blob a partial clone may lack, cloud_tpu_colabs/images/wave_movie.gif), never
   touching the clone given;
2. the check by hand: the kernel's instruction count at the parent and at the commit, each
   tree's ``jax/`` (``git archive``) put on PYTHONPATH of ``--python`` (a Python with jaxlib
   0.10.2: ``--python``, else a venv made under the workroot from ``--base-python`` with
   ``pip install jaxlib==0.10.2 numpy scipy ml_dtypes opt_einsum wheel setuptools``);
3. ``hourly bisect --only jax`` over 2026-06-27 00:00 → 19:30 UTC (6 first-parent states; the
   commit is the bad end's own state, committed 19:23 UTC), the jax package built from each state
   with ``pip wheel``, jaxlib what ``--python`` has;
4. ``hourly explain --workdir W`` (``--sweep --max-passes 2`` with ``--sweep``);
5. ``hourly report --workdir W --out W/report``;

then a summary: the commit named, the HLO diff summary lines of ``hourly explain``, and where the
dumps, the repro and the report went. Without a clone (no ``--jax-clone``, no
``$HOURLY_JAX_CLONE``, no /work/jaxclone) it prints one line and exits 0; CI never runs it.
Exit 1 when a step of hourly failed or the bisection named another commit.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
KERNEL = HERE / "lowering_kernel.py"
METRIC = r"hlo_instructions:\s*(?P<value>[0-9.]+)"
COMMIT = "da23cf20a2"
GOOD, BAD = "2026-06-27 00:00", "2026-06-27 19:30"
SPARSE = ["/*", "!/cloud_tpu_colabs/images/wave_movie.gif"]
JAXLIB = ["jaxlib==0.10.2", "numpy", "scipy", "ml_dtypes", "opt_einsum", "wheel", "setuptools"]


def sh(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def show(title: str, cmd: list[str], p: subprocess.CompletedProcess, wall: float | None = None) -> None:
    took = f" ({wall:.0f} s, exit {p.returncode})" if wall is not None else f" (exit {p.returncode})"
    print(f"\n## {title}{took}\n$ {' '.join(cmd)}", flush=True)
    for line in (p.stdout or "").rstrip("\n").splitlines():
        print(line)
    if p.returncode:
        for line in (p.stderr or "").rstrip("\n").splitlines()[-15:]:
            print(f"[stderr] {line}")
    sys.stdout.flush()


def own_clone(source: str, dest: Path) -> Path:
    if not (dest / ".git").is_dir():
        shutil.rmtree(dest, ignore_errors=True)
        subprocess.run(["git", "clone", "-q", "--no-checkout", source, str(dest)], check=True)
        subprocess.run(["git", "-C", str(dest), "sparse-checkout", "set", "--no-cone", *SPARSE], check=True)
        subprocess.run(["git", "-C", str(dest), "checkout", "-q", "origin/main"], check=False,
                       stderr=subprocess.DEVNULL)
    return dest


def the_python(args, root: Path) -> str:
    if args.python:
        return args.python
    venv = root / "venv"
    py = venv / "bin" / "python"
    if not py.exists():
        subprocess.run([args.base_python, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", *JAXLIB], check=True)
    return str(py)


def by_hand(repo: Path, python: str, root: Path, sha: str) -> tuple[int | None, str]:
    """The kernel's instruction count with the tree of ``sha`` on PYTHONPATH: (count, raw output)."""
    tree = root / "by-hand" / sha[:10]
    if not (tree / "jax").is_dir():
        tree.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(repo), "archive", sha, "jax"], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    p = sh([python, str(KERNEL)], env={**os.environ, "PYTHONPATH": str(tree)}, cwd=root)
    m = re.search(METRIC, p.stdout)
    return (int(float(m.group("value"))) if m else None), (p.stdout + p.stderr).strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jax-clone", default=os.environ.get("HOURLY_JAX_CLONE") or "/work/jaxclone",
                    help="a clone of jax-ml/jax holding 2026-06-27 [default: $HOURLY_JAX_CLONE or /work/jaxclone]")
    ap.add_argument("--python", help="a Python with jaxlib 0.10.2 [default: a venv made under --workroot]")
    ap.add_argument("--base-python", default=str(Path("~/.pyenv/versions/3.12.1/bin/python").expanduser()),
                    help="Python >= 3.12 the venv is made from when --python is not given")
    ap.add_argument("--workroot", default="/tmp/hourly-explain-lowering")
    ap.add_argument("--cache-dir", help="build cache [default: <workroot>/cache]")
    ap.add_argument("--sweep", action="store_true", help="also run hourly explain --sweep --max-passes 2")
    args = ap.parse_args()
    clone = Path(args.jax_clone).expanduser()
    if not (clone / ".git").exists() and not (clone / "HEAD").exists():
        print(f"explain_lowering: skipped — no clone of jax-ml/jax at {clone} (give --jax-clone or "
              "$HOURLY_JAX_CLONE); see docs/explain.md, 'On the real jax-ml/jax history'")
        return 0
    if sh(["git", "-C", str(clone), "cat-file", "-e", f"{COMMIT}^{{commit}}"]).returncode:
        print(f"explain_lowering: skipped — {clone} does not hold jax commit {COMMIT} (2026-06-27); fetch it")
        return 0
    root = Path(args.workroot).resolve()
    root.mkdir(parents=True, exist_ok=True)
    repo = own_clone(str(clone), root / "jax")
    python = the_python(args, root)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's hourly
    hourly = [sys.executable, "-m", "hourly"]
    full = sh(["git", "-C", str(repo), "rev-parse", COMMIT]).stdout.strip()
    parent = sh(["git", "-C", str(repo), "rev-parse", f"{COMMIT}^"]).stdout.strip()
    subject = sh(["git", "-C", str(repo), "log", "-1", "--format=%s (%ci)", COMMIT]).stdout.strip()
    jaxlib = sh([python, "-c", "import jaxlib.version as v; print(v.__version__)"]).stdout.strip()
    print(f"commit {full} {subject}\nparent {parent}\njaxlib {jaxlib} ({python})")

    print("\n## by hand: the kernel's optimized HLO at the parent and at the commit")
    counts = {}
    for role, sha in (("parent", parent), ("commit", full)):
        count, raw = by_hand(repo, python, root, sha)
        counts[role] = count
        # (the version a `git archive` tree reports is the date of today: it has no git to ask)
        print(f"{role} {sha[:10]}: hlo_instructions {count}" + ("" if count is not None else f"\n{raw}"))
    if counts["parent"] is None or counts["commit"] is None or counts["parent"] == counts["commit"]:
        print("the optimized HLO does not differ by instruction count here: nothing to bisect")
        return 1

    work = root / "work"
    shutil.rmtree(work, ignore_errors=True)
    cache = args.cache_dir or str(root / "cache")
    failed = False
    steps = [
        ("hourly bisect", ["bisect", "--only", "jax", "--jax-repo", str(repo), "--python", python,
                           "--good", GOOD, "--bad", BAD, "--bench-cmd", f"python3 {KERNEL}",
                           "--metric-regex", METRIC, "--lower-is-better", "--workdir", str(work),
                           "--cache-dir", cache]),
        ("hourly explain", ["explain", "--workdir", str(work)]),
    ]
    if args.sweep:
        steps.append(("hourly explain --sweep", ["explain", "--workdir", str(work), "--sweep", "--max-passes", "2"]))
    steps.append(("hourly report", ["report", "--workdir", str(work), "--out", str(work / "report")]))
    outputs = {}
    for title, cmd in steps:
        start = time.monotonic()
        p = sh(hourly + cmd, env=env, cwd=root)
        show(title, ["hourly", *cmd], p, time.monotonic() - start)
        outputs[title] = p.stdout
        failed |= p.returncode != 0

    print("\n## summary")
    named = re.search(r"culprit: jax ([0-9a-f]{40})", outputs.get("hourly bisect", ""))
    print(f"bisection named: {named.group(1) if named else 'no culprit'}"
          f" ({'the commit' if named and named.group(1) == full else 'NOT the commit'})")
    failed |= not (named and named.group(1) == full)
    for line in outputs.get("hourly explain", "").splitlines():
        s = line.strip()
        if s.startswith(("step-", "HLO:", "repro:", "repro of", "dumps:")) or re.match(r"jit_\w+: \d+ changed", s):
            print(line)
    report = work / "report" / "report.md"
    print(f"report: {report}" if report.is_file() else "report: not written")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
