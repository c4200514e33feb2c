"""Every state is built from its own commit alone (issue 22 item 5): hourly cleans the trees it
owns before each build, and never a user's untracked files unless --force (then they come back).
A real JAX-like tree whose build, like setuptools, copies into an ignored build/lib/ and packs what
is there; real pip wheel builds, real git, real SQLite."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from test_only import venv_with_jaxlib

from hourly.adapters import proc
from hourly.adapters.gitrepo import GitRepo
from hourly.adapters.venvs import reinstall, reinstall_commands
from hourly.cli import main
from hourly.demo.repos import Change, make_repos
from hourly.demo.split import BACKEND, jax_base_files, write_bench, write_wheel
from hourly.errors import UserError
from hourly.measure.benchmark import BenchSpec, bench_env
from hourly.measure.build import Workspace
from hourly.measure.machine import capture
from hourly.model import Pair

#: like setuptools' build_py: copy the package into build/lib (never removing what is there), then
#: pack build/lib — a file a newer commit deleted still ships when build/lib is left from before
STALE_BACKEND = BACKEND.replace(
    '''    files = {str(p.relative_to(ROOT)): p.read_bytes() for p in _files()}''',
    '''    lib = ROOT / "build" / "lib"
    for p in _files():
        dest = lib / p.relative_to(ROOT)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(p.read_bytes())
    files = {str(p.relative_to(lib)): p.read_bytes() for p in sorted(lib.rglob("*")) if p.is_file()}''')

DELETE = "Remove the fast path of dispatch"
HISTORY = [
    Change("jax", "2023-08-24T01:00:00Z", "Document dispatch", {"docs/dispatch.md": "dispatch\n"}),
    Change("jax", "2023-08-24T02:00:00Z", "Tidy the tests", {"tests/dispatch_test.py": "# test\n"}),
    Change("jax", "2023-08-24T03:00:00Z", DELETE, {"jax/perf/fastpath.txt": None}),
    Change("jax", "2023-08-24T04:00:00Z", "Document the cache", {"docs/cache.md": "cache\n"}),
    Change("jax", "2023-08-24T05:00:00Z", "Tidy the docs", {"docs/index.md": "index\n"}),
]


def base_files() -> dict[str, str]:
    files = jax_base_files()
    files["_backend/standin_backend.py"] = STALE_BACKEND
    files[".gitignore"] = "dist/\nbuild/\n*.pyc\n"  # as JAX ignores build/lib and bytecode
    files["jax/perf/fastpath.txt"] = "1.25\n"  # deleted by DELETE: 20 % slower without it
    return files


def run_json(capsys, args, expect: int = 0):
    capsys.readouterr()
    rc = main([*args, "--json"])
    out = capsys.readouterr()
    assert rc == expect, out.err + out.out
    return json.loads(out.out)


def test_a_file_a_commit_deleted_never_ships_and_the_bisection_names_the_commit(tmp_path, capsys):
    python = venv_with_jaxlib(tmp_path / "env")
    made = make_repos(tmp_path / "repos", HISTORY, base={"jax": base_files()})
    bench = write_bench(tmp_path / "bench")
    common = ["--only", "jax", "--jax-repo", str(made.jax), "--python", python,
              "--bench-cmd", f"python3 {bench}", "--workdir", str(tmp_path / "work")]
    # the commit before the deletion is built first, the deletion next, in the same tree: a build that
    # left build/lib as it was would ship the file in the second wheel too, and measure no step.
    # (The step at the window's edge is not measured again: the bisection below confirms it.)
    scan = run_json(capsys, ["scan", "--from", "Aug 24 2023 02:00", "--to", "Aug 24 2023 03:00", *common,
                             "--no-confirm-edges", "--warmup-runs", "0"],  # no check reads a warm-up run
                    expect=1)  # two pairs of one run each: the step rests on an assumed noise, "cannot tell"
    by_time = {p["time"][11:16]: p for p in scan["points"]}
    assert scan["builds"] == 2 and by_time["03:00"]["value"] < 0.85 * by_time["02:00"]["value"]
    wheels = list((tmp_path / "cache" / "wheels").glob(f"*{made.shas[DELETE][:12]}*/jax-*.whl"))
    assert wheels
    with zipfile.ZipFile(wheels[0]) as z:
        assert "jax/perf/fastpath.txt" not in z.namelist()
    # the bisection of the scan's step names the commit that deleted the file, and confirms it
    out = run_json(capsys, ["bisect", "--workdir", str(tmp_path / "work")])
    a = out["regressions"][0]
    assert a["culprit"]["sha"] == made.shas[DELETE] and a["confirmed"]


def test_a_users_untracked_files_are_refused_then_forced_and_given_back(capsys, scan_args, made, tmp_path):
    (made.jax / "notes.txt").write_text("mine\n")
    (made.jax / "build" / "cache").mkdir(parents=True)
    (made.jax / "build" / "cache" / "stale.o").write_text("an earlier build's output\n")  # ignored
    code = main(scan_args("Aug 24 2023 12:00", "Aug 24 2023 13:00"))
    err = capsys.readouterr().err
    assert code == 1 and "notes.txt (untracked)" in err and "--force" in err
    assert (made.jax / "notes.txt").read_text() == "mine\n"
    # a workdir inside the tree is hourly's own: kept, never the user's change
    work = made.jax / "hourly-work"
    args = scan_args("Aug 24 2023 12:00", "Aug 24 2023 13:00", "--force")
    args[args.index("--workdir") + 1] = str(work)
    assert main(args + ["--json"]) == 0, capsys.readouterr().err
    assert (made.jax / "notes.txt").read_text() == "mine\n"  # given back
    assert not (made.jax / "build" / "cache" / "stale.o").exists()  # outputs of earlier builds are not kept
    assert (work / "hourly.sqlite").exists()


#: one mtime for every state's sources: as if each were installed or checked out within one second
SAME_SECOND = 1_700_000_000


def test_a_wheel_of_the_same_name_and_version_replaces_the_installed_one(tmp_path, venv_python, monkeypatch):
    # real builds of two states of one tree often carry the same wheel name and version
    # (jax-0.4.16.dev…-py3-none-any.whl); uv installs them without its cache, so the second is
    # what is installed, never a cached unpack of the first. And never the first's bytecode: the user's
    # PYTHONPYCACHEPREFIX keeps it in one cache, by path, checked only against the source's mtime (whole
    # seconds) and size, and uv compiles nothing; nor does uv remove a top-level module's .pyc
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)  # bytecode written, as users have it
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(tmp_path / "pyc"))
    site = next(Path(venv_python).parents[1].glob("lib/python3*/site-packages"))

    def state(value: int):
        out = tmp_path / f"state{value}"
        out.mkdir()
        return str(write_wheel(out, "samename", "1.0", {"samename/__init__.py": f"VALUE = {value}\n",
                                                        "samemodule.py": f"VALUE = {value}\n"}))

    def imported() -> str:  # as hourly runs a benchmark
        return proc.run([venv_python, "-c", "import samename, samemodule; print(samename.VALUE, samemodule.VALUE)"],
                        env=bench_env(BenchSpec([], python=venv_python))).output.strip()

    first, second = state(1), state(2)
    cmds = reinstall_commands(venv_python, [first])
    assert [c[1:3] for c in cmds] == [["pip", "install"], ["-m", "pip"]], "uv first in a virtual environment"
    for wheel, value in ((first, 1), (second, 2), (first, 1)):
        assert reinstall(venv_python, [wheel], timeout=120, check=True).cmd[1:3] == ["pip", "install"]  # by uv
        for source in (site / "samename" / "__init__.py", site / "samemodule.py"):
            os.utime(source, (SAME_SECOND, SAME_SECOND))  # installed within the second of the last import
        assert imported() == f"{value} {value}"
    # pip, where uv is not used, does the same
    proc.run(reinstall_commands(venv_python, [second])[-1], timeout=300)
    assert imported() == "2 2"


def test_no_run_gets_a_bytecode_cache_the_states_share(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(tmp_path / "inherited"))
    given = {"PYTHONPYCACHEPREFIX": str(tmp_path / "given")}  # --env
    run = proc.run([sys.executable, "-c", "import sys; print(sys.pycache_prefix)"], env=bench_env(BenchSpec([], env=given)))
    assert run.output.strip() == "None"
    assert "PYTHONPYCACHEPREFIX" not in capture(sys.executable, given)["env"]  # stored as the runs got it


def git_tree(path: Path, values: list[str]) -> tuple[GitRepo, list[str]]:
    """A real git tree with a commit per value, each with ``mod.py`` holding it (one size for all);
    its .gitignore, none, ignores no bytecode."""
    path.mkdir()

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True, text=True).stdout

    git("init", "-q")
    shas = []
    for value in values:
        (path / "mod.py").write_text(f"VALUE = {value}\n")
        git("add", "-A")
        git("-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-qm", value)
        shas.append(git("rev-parse", "HEAD").strip())
    return GitRepo(path, "jax"), shas


@pytest.mark.parametrize("prefix", [False, True], ids=["beside-the-sources", "PYTHONPYCACHEPREFIX"])
def test_a_checkout_never_runs_the_bytecode_of_the_commit_before(tmp_path, monkeypatch, prefix):
    # --only jax with the tree installed in place: the benchmark imports straight from the checkout,
    # which git rewrites in place
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    if prefix:
        monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(tmp_path / "pyc"))
    repo, shas = git_tree(tmp_path / "jax", ["1", "2"])
    with Workspace([repo]) as trees:
        for sha, value in ((shas[0], "1"), (shas[1], "2"), (shas[0], "1")):
            trees.checkout(Pair("", sha))
            os.utime(repo.path / "mod.py", (SAME_SECOND, SAME_SECOND))
            run = proc.run([sys.executable, "-c", "import mod; print(mod.VALUE)"], cwd=repo.path,
                           env=bench_env(BenchSpec([])))
            assert run.output.strip() == value
    assert not list(repo.path.rglob("*.pyc"))  # given back without the states' bytecode


def test_bytecode_in_a_tree_is_never_the_users_change(tmp_path):
    repo, _ = git_tree(tmp_path / "jax", ["1"])
    for pyc in ("__pycache__/mod.cpython-311.pyc", "pkg/__pycache__/a.cpython-311.pyc", "stray.pyc"):
        (repo.path / pyc).parent.mkdir(parents=True, exist_ok=True)
        (repo.path / pyc).write_bytes(b"")
    (repo.path / "notes.txt").write_text("mine\n")
    with pytest.raises(UserError) as refused:
        with Workspace([repo]):
            pass
    assert "(notes.txt (untracked))" in refused.value.message  # the user's file alone
    (repo.path / "notes.txt").unlink()
    with Workspace([repo]):  # bytecode alone: taken
        pass
    assert not list(repo.path.rglob("*.pyc"))
