"""Builds priced by their inputs: jaxlib cached under (XLA commit, JAX's native inputs), the jax
package under its JAX commit. Real git repositories whose JAX commits touch the real paths of
../shared/data/history/jax_paths_2023-06_10.csv, a stand-in build-jax.sh that makes real jaxlib and
jax wheels and counts its jaxlib builds, real pip, real benchmarks, real SQLite."""

from __future__ import annotations

import csv
import json
import venv
from pathlib import Path

import pytest

from hourly.adapters.gitrepo import GitRepo
from hourly.cli import main
from hourly.demo.repos import Change
from hourly.demo.split import jax_base_files, write_bench, write_split_build, xla_base_files
from hourly.measure.native_inputs import DEFAULT_NATIVE_INPUTS, NativeKeys, is_native_path

PATHS_CSV = Path("/work/shared/data/history/jax_paths_2023-06_10.csv")
HERE_CSV = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "history" / "jax_paths_2023-06_10.csv"


def real_paths() -> dict[str, list[str]]:
    """Changed paths of real JAX commits: Python only, jaxlib/, WORKSPACE (from the shared data)."""
    src = next((p for p in (HERE_CSV, PATHS_CSV) if p.exists()), None)
    if src is None:
        pytest.skip("../shared/data/history/jax_paths_2023-06_10.csv is not here")
    rows = [r["paths"].split(";") for r in csv.DictReader(open(src, newline=""))]
    python = [ps for ps in rows if ps and all(p.startswith("jax/") and p.endswith(".py") for p in ps)]
    jaxlib = [ps for ps in rows if any(p.startswith("jaxlib/") for p in ps)]
    workspace = [ps for ps in rows if "WORKSPACE" in ps]
    return {"python": python, "jaxlib": jaxlib, "workspace": workspace}


def files_of(paths: list[str], tag: str) -> dict[str, str]:
    return {p: f"# {tag}\n" for p in paths if p not in ("WORKSPACE",)} | (
        {"WORKSPACE": f'XLA_COMMIT = "{tag}"\n'} if "WORKSPACE" in paths else {})


def history() -> tuple[list[Change], dict[str, str]]:
    """XLA moves before the window only; inside it, JAX commits of every kind; the culprit only
    touches Python (and the jax package's speed)."""
    real = real_paths()
    kinds = {}
    changes = [Change("xla", "2023-08-24T00:10:00Z", "[XLA] integrate LLVM", {"llvm.txt": "1\n"})]
    plan = [("python", 0), ("python", 1), ("jaxlib", 0), ("python", 2), ("python", 3), ("culprit", 4),
            ("python", 5), ("workspace", 0), ("python", 6), ("python", 7)]
    for i, (kind, k) in enumerate(plan):
        when = f"2023-08-24T{1 + i // 2:02d}:{15 + 30 * (i % 2):02d}:00Z"
        if kind == "culprit":
            paths = real["python"][k]
            files = files_of(paths, f"c{i}") | {"jax/perf/dispatch.txt": "0.9\n"}
            subject = "Remove trivial execution from jax"
        else:
            paths = real[kind][k]
            files = files_of(paths, f"c{i}")
            subject = f"{kind} change {i}: {paths[0]}"
        kinds[subject] = kind
        changes.append(Change("jax", when, subject, files))
    return changes, kinds


@pytest.fixture
def split(tmp_path, monkeypatch, repos_cache):
    changes, kinds = history()
    # made once per test process, copied for each test (tests/conftest.py repos_cache)
    made = repos_cache(tmp_path / "repos", changes, base={"jax": jax_base_files(), "xla": xla_base_files()})
    build = write_split_build(tmp_path / "bin")
    bench = write_bench(tmp_path / "bench")
    counter = tmp_path / "jaxlib-builds.txt"
    monkeypatch.setenv("STANDIN_JAXLIB_COUNT", str(counter))
    venv.EnvBuilder(with_pip=False, system_site_packages=True).create(tmp_path / "v")
    return made, build, bench, counter, str(tmp_path / "v" / "bin" / "python"), kinds


def test_native_paths_of_the_real_history():
    assert is_native_path("jaxlib/gpu/triton.cc") and is_native_path("WORKSPACE")
    assert is_native_path("third_party/xla/workspace.bzl") and is_native_path("jax/experimental/BUILD")
    assert is_native_path("build/build.py") and is_native_path(".bazelrc")
    assert not is_native_path("jax/_src/lax/lax.py") and not is_native_path("docs/conf.py")
    assert not is_native_path("jaxlib_notes.md") and not is_native_path("tests/BUILD.md")
    assert is_native_path("setup.py", ["setup.py"]) and not is_native_path("jax/setup.py", ["/setup.py"])
    real_paths()  # skips when the shared data is not here
    rows = list(csv.DictReader(open(next(p for p in (HERE_CSV, PATHS_CSV) if p.exists()), newline="")))
    python_only = sum(1 for r in rows if not any(is_native_path(p) for p in r["paths"].split(";") if p))
    assert (len(rows), python_only) == (1282, 915)  # the count, from the data


def test_native_keys_change_exactly_when_native_inputs_change(split):
    made, _, _, _, _, kinds = split
    repo = GitRepo(made.jax, "jax")
    keys = NativeKeys(repo, DEFAULT_NATIVE_INPUTS)
    walk = list(reversed(repo.history("origin/main")))
    subjects = {sha: info.subject for sha, info in repo.commits([s for s, _ in walk]).items()}
    seen_kinds = set()
    for (old, _), (new, _) in zip(walk, walk[1:], strict=False):
        changed = repo.git("diff-tree", "--no-commit-id", "--name-only", "-r", old, new).split()
        native = any(is_native_path(p) for p in changed)
        kind = kinds.get(subjects[new], "base")
        seen_kinds.add(kind)
        assert (keys(old) != keys(new)) == native, (subjects[new], changed)
        assert native == (kind in ("jaxlib", "workspace")), (subjects[new], changed)
    assert {"python", "jaxlib", "workspace", "culprit"} <= seen_kinds


def test_a_python_culprit_builds_jaxlib_at_most_twice(split, tmp_path, capsys):
    made, build, bench, counter, python, _ = split
    capsys.readouterr()
    rc = main(["bisect", "--json", "--xla-repo", str(made.xla), "--jax-repo", str(made.jax),
               "--build-cmd", str(build), "--python", python, "--bench-cmd", f"python3 {bench}",
               "--workdir", str(tmp_path / "work"), "--good", "Aug 24 2023 00:50", "--bad", "Aug 24 2023 04:30",
               "--warmup-runs", "0"])  # no check reads a warm-up run
    out = capsys.readouterr()
    assert rc == 0, out.err
    a = json.loads(out.out)["regressions"][0]
    assert a["culprit"]["repo"] == "jax" and a["culprit"]["sha"] == made.shas["Remove trivial execution from jax"]
    built = counter.read_text().splitlines()
    assert len(built) <= 2 and a["jaxlib_builds"] == len(built)
    assert a["jax_builds"] >= 2  # the states between were the jax package alone
    assert a["builds"] == a["jaxlib_builds"] + a["jax_builds"]
    assert a["states"] >= 7  # a jaxlib/ change lies inside the window: two native states
    # the cache holds jaxlib per native-input state and the jax package per commit, apart
    entries = sorted(p.name for p in (tmp_path / "cache" / "wheels").iterdir() if not p.name.startswith("."))
    assert sum(e.startswith("jaxlib-") for e in entries) == len(built)
    assert sum(e.startswith("jax-") for e in entries) >= a["jax_builds"]


# -- the native keys of many commits in one batch (two git processes, not one per commit) ---------

@pytest.fixture(scope="module")
def reshaped(tmp_path_factory):
    """A JAX history whose native inputs are added, changed, removed, renamed, turned from a folder
    into a file, and given a submodule (gitlink), between Python-only commits."""
    import os
    import subprocess
    root = tmp_path_factory.mktemp("reshaped") / "jax"
    root.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@example.com",
           "GIT_COMMITTER_NAME": "C", "GIT_COMMITTER_EMAIL": "c@example.com"}

    def git(*args):
        return subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True, text=True).stdout

    def write(files):
        for p, text in files.items():
            (root / p).parent.mkdir(parents=True, exist_ok=True)
            (root / p).write_text(text)

    git("init", "-q", "-b", "main")
    write({"jaxlib/x.cc": "x\n", "jax/a.py": "a\n", "WORKSPACE": "w\n", "third_party/t/BUILD": "t\n",
           "build/build.py": "b\n", "jax/BUILD": "jb\n"})
    steps = [
        lambda: write({"jax/a.py": "a2\n"}),
        lambda: (git("rm", "-q", "jaxlib/x.cc"), write({"jaxlib/y.cc": "y\n"})),
        lambda: git("mv", "third_party/t", "third_party/u"),
        lambda: write({"jax/BUILD": "jb2\n", "jax/b.py": "b\n"}),
        lambda: (git("rm", "-rq", "build"), write({"build": "a file now\n"})),
        lambda: git("update-index", "--add", "--cacheinfo", f"160000,{git('rev-parse', 'HEAD').strip()},third_party/sub"),
        lambda: write({"docs/x.md": "d\n"}),
        lambda: write({"WORKSPACE": "w2\n"}),
    ]
    git("add", "-A")
    git("commit", "-qm", "base")
    for i, step in enumerate(steps):
        step()
        git("add", "-A") if i != 5 else None
        git("commit", "-qm", f"step {i}")
    return GitRepo(root, "jax")


@pytest.mark.parametrize("order", ["oldest first", "newest first", "shuffled", "repeats"])
def test_a_batch_of_native_keys_is_the_key_of_each_tree(reshaped, order):
    import random
    shas = [s for s, _ in reversed(reshaped.history("main"))]
    one_by_one = {s: NativeKeys(reshaped)(s) for s in shas}
    assert len(set(one_by_one.values())) == 7  # step 0 and step 6 change no native input
    todo = {"oldest first": shas, "newest first": shas[::-1],
            "shuffled": random.Random(3).sample(shas, len(shas)), "repeats": shas + shas[::2]}[order]
    keys = NativeKeys(reshaped)
    keys.prefetch(todo)
    assert keys.processes == 2
    assert {s: keys(s) for s in shas} == one_by_one
    assert keys.processes == 2  # every key came from the batch


def test_pricing_many_pairs_spends_a_constant_number_of_processes(split, tmp_path, capsys):
    """A dry run of 3 pairs and one of many spend the same processes: one walk per repository and
    one batch for every pair's jaxlib key."""
    from hourly.adapters import proc
    from hourly.measure.build_cache import python_abi
    made, build, _, _, python, _ = split
    spent, pairs = {}, {}
    for step in ("3h", "15m"):
        python_abi.cache_clear()  # each run asks --python for its ABI (one process), as a fresh hourly does
        before = proc.spawned
        rc = main(["scan", "--dry-run", "--json", "--no-sync", "--xla-repo", str(made.xla), "--jax-repo", str(made.jax),
                   "--build-cmd", str(build), "--python", python, "--workdir", str(tmp_path / "w"),
                   "--from", "Aug 24 2023 00:00", "--to", "Aug 24 2023 06:00", "--step", step])
        out = capsys.readouterr()
        assert rc == 0, out.err
        spent[step], pairs[step] = proc.spawned - before, json.loads(out.out)["distinct_pairs"]
    assert pairs["15m"] >= 3 * pairs["3h"] >= 6
    # the two walks, the ABI of --python, one ls-tree and one diff-tree for every pair's jaxlib key,
    # one cat-file for every JAX commit's XLA pin (these stand-ins have no pin file: nothing to resolve)
    assert spent["15m"] == spent["3h"] == 6, spent
