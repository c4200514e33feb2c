"""A small, self-contained copy of a stretch of JAX's first-parent history, for a machine without
network (the TPU machine of ../shared/docs/tpu-machine-notes.md).

    python benchmarks/tpu/linear_copy.py --source /work/jaxclone --dest carry/jax.git \\
        --since '2026-06-04 22:00' --until '2026-06-18 00:00'

A clone of jax-ml/jax cannot be made shallow or partial from the mirror (it lacks one blob and
packing fails), and a whole clone is a few hundred MB. This makes a bare repository whose
``main`` is a linear chain: the state before ``--since`` (the good end of a window starting
there), then every first-parent commit of ``--source``'s ``--ref`` committed in [since, until]
(UTC), each with its own author, committer, dates and message, and its tree without the
top-level folders ``--exclude`` names (docs, tests, jaxlib's C++, …: nothing ``pip wheel`` of the
jax package or ``import jax`` reads). hourly resolves times by committer date along the first
parent, so a bisection over a window inside [since, until] sees the same states as on the whole
clone, under new commit ids: ``<dest>/map.txt`` lists ``original new`` per commit, and each
message ends with ``Original-commit: <sha>``.

Standard library and git only. The objects are borrowed from ``--source`` while the copy is made
(``objects/info/alternates`` of ``<dest>.tmp``), then cloned over the pack protocol into
``--dest``, which ends standalone and holds only what the chain reaches.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

EXCLUDE = ["docs", "tests", "jaxlib", "examples", "benchmarks", ".github", "cloud_tpu_colabs", "images",
           "third_party", "ci"]


def git(repo: str | Path, *args: str, input: str | None = None, env: dict | None = None) -> str:
    p = subprocess.run(["git", "-C", str(repo), *args], input=input, capture_output=True, text=True,
                       env={**os.environ, **(env or {})})
    if p.returncode:
        sys.exit(f"git {' '.join(args[:3])} failed: {p.stderr.strip()}")
    return p.stdout


def headers(raw: str) -> tuple[dict[str, str], str]:
    """The header lines (first of each name) and the message of a raw commit object."""
    head, _, message = raw.partition("\n\n")
    out: dict[str, str] = {}
    for line in head.splitlines():
        name, _, value = line.partition(" ")
        out.setdefault(name, value)
    return out, message


def person(value: str) -> tuple[str, str, str]:
    """('Name', 'email', '<unix time> <zone>') of an author/committer header."""
    name, _, rest = value.partition(" <")
    email, _, date = rest.partition("> ")
    return name, email, date


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", required=True, help="a clone of jax-ml/jax")
    ap.add_argument("--dest", required=True, help="the bare repository to write (replaced)")
    ap.add_argument("--ref", default="origin/main")
    ap.add_argument("--since", required=True, help="UTC, e.g. '2026-06-04 22:00'")
    ap.add_argument("--until", required=True, help="UTC")
    ap.add_argument("--exclude", nargs="*", default=EXCLUDE, help="top-level folders left out")
    a = ap.parse_args()
    src = Path(a.source).resolve()
    objects = Path(git(src, "rev-parse", "--git-path", "objects").strip())
    objects = objects if objects.is_absolute() else (src / objects).resolve()
    shas = git(src, "rev-list", "--first-parent", "--reverse", f"--since={a.since} +0000",
               f"--until={a.until} +0000", a.ref).split()
    if not shas:
        sys.exit(f"no first-parent commit of {a.ref} in {a.since} .. {a.until} UTC")
    before = git(src, "rev-parse", f"{shas[0]}^1").strip()
    shas.insert(0, before)
    final = Path(a.dest).resolve()
    dest = final.with_name(final.name + ".tmp")
    for d in (final, dest):
        shutil.rmtree(d, ignore_errors=True)
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(dest)], check=True)
    (dest / "objects" / "info" / "alternates").write_text(f"{objects}\n")
    drop = set(a.exclude)
    parent: str | None = None
    lines = []
    for sha in shas:
        entries = [e for e in git(src, "ls-tree", sha).splitlines() if e.split("\t", 1)[1] not in drop]
        tree = git(dest, "mktree", input="\n".join(entries) + "\n").strip()
        h, message = headers(git(src, "cat-file", "commit", sha))
        an, ae, ad = person(h["author"])
        cn, ce, cd = person(h["committer"])
        env = {"GIT_AUTHOR_NAME": an, "GIT_AUTHOR_EMAIL": ae, "GIT_AUTHOR_DATE": ad,
               "GIT_COMMITTER_NAME": cn, "GIT_COMMITTER_EMAIL": ce, "GIT_COMMITTER_DATE": cd}
        message = message.rstrip("\n") + f"\n\nOriginal-commit: {sha}\n"
        new = git(dest, "commit-tree", tree, *(["-p", parent] if parent else []), input=message, env=env).strip()
        lines.append(f"{sha} {new}")
        parent = new
    git(dest, "update-ref", "refs/heads/main", parent)
    # a clone over the pack protocol takes the reachable objects alone (a repack would also copy
    # the source's promisor packs it borrows from, hundreds of MB)
    subprocess.run(["git", "clone", "-q", "--bare", "--no-local", str(dest), str(final)], check=True)
    shutil.rmtree(dest)
    dest = final
    git(dest, "fsck", "--connectivity-only")
    (dest / "map.txt").write_text("\n".join(lines) + "\n")
    size = sum(f.stat().st_size for f in dest.rglob("*") if f.is_file())
    print(f"{dest}: {len(shas)} commits ({before[:10]} .. {shas[-1][:10]}), {size / 1e6:.1f} MB; map in {dest / 'map.txt'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
