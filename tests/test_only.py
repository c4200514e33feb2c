"""One-repository hunts: ``--only jax`` (jaxlib as installed, no XLA checkout) and ``--only xla``
(JAX kept at one commit). Real git repositories, real wheels (pip wheel of a real JAX-like tree,
a stand-in jaxlib wheel installed into a real venv), real benchmarks, real SQLite."""

from __future__ import annotations

import json
import sysconfig
import venv
from pathlib import Path

import pytest

from hourly.cli import main
from hourly.demo.repos import Change, make_repos
from hourly.demo.split import JAXLIB_VERSION, install, jax_base_files, jax_version_py, jaxlib_wheel, write_bench

XLA_OF_JAXLIB = "9f1e2d3c4b5a69788796a5b4c3d2e1f0a9b8c7d6"

#: JAX commits on the real paths of ../shared/data/history/jax_paths_2023-06_10.csv
JAX_HISTORY = [
    Change("jax", "2023-08-24T00:40:00Z", "[lax] loop error messages",
           {"jax/_src/lax/control_flow/loops.py": "# loops\n"}),
    Change("jax", "2023-08-24T01:30:00Z", "[triton] update the GPU kernel call", {"jaxlib/gpu/triton.cc": "// triton\n"}),
    Change("jax", "2023-08-24T02:10:00Z", "Update XLA pin", {"WORKSPACE": 'XLA_COMMIT = "1111111"\n'}),
    Change("jax", "2023-08-24T03:00:00Z", "Require jaxlib 0.4.16",
           {"jax/version.py": jax_version_py(minimum_jaxlib="0.4.16"), "setup.py": "# setup\n"}),
    Change("jax", "2023-08-24T03:40:00Z", "Relax the jaxlib requirement again",
           {"jax/version.py": jax_version_py()}),
    Change("jax", "2023-08-24T04:20:00Z", "Remove trivial execution from jax (slower dispatch)",
           {"jax/_src/interpreters/pxla.py": "# pxla\n", "jax/perf/dispatch.txt": "0.9\n"}),
    Change("jax", "2023-08-24T05:10:00Z", "[export] serialization version bump",
           {"jax/experimental/jax2tf/jax_export.py": "# export\n"}),
    Change("jax", "2023-08-24T06:00:00Z", "Document the pjit cache", {"docs/pjit.md": "pjit\n"}),
]


def venv_with_jaxlib(root: Path) -> str:
    """A venv with a stand-in jaxlib installed from a real wheel (and no jax)."""
    venv.EnvBuilder(with_pip=False, system_site_packages=True).create(root / "v")
    python = str(root / "v" / "bin" / "python")
    install(python, jaxlib_wheel(root / "wheels", JAXLIB_VERSION, XLA_OF_JAXLIB, 1.0))
    return python


@pytest.fixture
def jaxlib_python(tmp_path) -> str:
    return venv_with_jaxlib(tmp_path / "env")


def run_json(capsys, args: list[str]) -> dict:
    capsys.readouterr()
    rc = main([*args, "--json"])
    out = capsys.readouterr()
    assert rc == 0, out.err + out.out
    return json.loads(out.out)


def test_jax_only_hunt_with_the_installed_jaxlib_finds_the_culprit(tmp_path, jaxlib_python, capsys, repos_cache):
    made = repos_cache(tmp_path / "repos", JAX_HISTORY, base={"jax": jax_base_files()})  # made once, copied
    bench = write_bench(tmp_path / "bench")
    common = ["--only", "jax", "--jax-repo", str(made.jax), "--python", jaxlib_python,
              "--bench-cmd", f"python3 {bench}", "--workdir", str(tmp_path / "work")]
    scan = run_json(capsys, ["scan", "--from", "Aug 24 2023 00:00", "--to", "Aug 24 2023 06:30",
                             "--step", "30m", *common])
    pinned = scan["pinned"]
    assert pinned["side"] == "xla" and pinned["jaxlib_version"] == JAXLIB_VERSION
    assert pinned["xla_commit"] == XLA_OF_JAXLIB
    label = f"jaxlib-{JAXLIB_VERSION}@{XLA_OF_JAXLIB[:12]}"
    assert {p["xla"] for p in scan["points"]} == {label}
    by_time = {p["time"][11:16]: p for p in scan["points"]}
    # the commit that needs a newer jaxlib is untestable, not a crash of hourly
    assert by_time["03:30"]["status"] == "untestable"
    assert by_time["03:00"]["status"] == "untestable"
    assert by_time["04:00"]["status"] == "ok" and by_time["05:00"]["status"] == "ok"
    assert by_time["05:00"]["value"] < 0.93 * by_time["04:00"]["value"]
    assert scan["jaxlib_builds"] == 0 and scan["jax_builds"] == scan["builds"] >= 5  # the jax package alone
    # no wheel of the jax package was left behind in the tree: they went to hourly's own folder, then the cache
    assert not (made.jax / "dist").exists()
    assert not list((tmp_path / "work" / "jax-wheels").glob("*.whl"))
    assert list((tmp_path / "cache" / "wheels").glob("*/jax-0.4.15-py3-none-any.whl"))

    capsys.readouterr()
    assert main(["show", "--workdir", str(tmp_path / "work")]) == 0
    shown = capsys.readouterr().out
    assert "xla (pinned)" in shown and f"installed jaxlib {JAXLIB_VERSION}" in shown and "untestable" in shown
    assert main(["report", "--workdir", str(tmp_path / "work"), "--out", str(tmp_path / "report")]) == 0
    md = (tmp_path / "report" / "report.md").read_text()
    assert f"`{label}` (pinned)" in md and "--only jax" in md and "github.com/openxla/xla/commit/jaxlib" not in md

    out = run_json(capsys, ["bisect", "--good", "Aug 24 2023 00:00", "--bad", "Aug 24 2023 06:30",
                            "--workdir", str(tmp_path / "work")])
    a = out["regressions"][0]
    assert a["culprit"]["repo"] == "jax"
    assert a["culprit"]["sha"] == made.shas["Remove trivial execution from jax (slower dispatch)"]
    assert a["pinned"]["side"] == "xla" and a["pinned"]["to"] == label
    assert a["confirmed"]
    assert a["jaxlib_builds"] == 0 and a["jax_builds"] == a["builds"]  # only the jax package was ever built
    # the stored answer, as a git bisect log of the JAX repository, says what xla was
    capsys.readouterr()
    assert main(["bisect", "--log", "--good", "Aug 24 2023 00:00", "--bad", "Aug 24 2023 06:30",
                 "--workdir", str(tmp_path / "work")]) == 0
    log = capsys.readouterr().out
    assert f"xla pinned to the installed jaxlib {JAXLIB_VERSION}" in log and f"git bisect bad {a['culprit']['sha']}" in log


def test_jax_only_editable_tree_needs_only_a_checkout(tmp_path, jaxlib_python, capsys, repos_cache):
    made = repos_cache(tmp_path / "repos", JAX_HISTORY, base={"jax": jax_base_files()})  # made once, copied
    bench = write_bench(tmp_path / "bench")
    # an editable install: the venv's site-packages points at the tree (what `pip install -e` leaves)
    site = Path(jaxlib_python).parents[1] / "lib" / f"python{sysconfig.get_python_version()}" / "site-packages"
    pth = site / "hourly_test_editable_jax.pth"
    pth.write_text(str(made.jax) + "\n")
    try:
        out = run_json(capsys, ["bisect", "--only", "jax", "--build-cmd", "none", "--jax-repo", str(made.jax),
                                "--python", jaxlib_python, "--bench-cmd", f"python3 {bench}",
                                "--workdir", str(tmp_path / "work"), "--warmup-runs", "0",  # no check reads one
                                "--good", "Aug 24 2023 03:50", "--bad", "Aug 24 2023 05:30"])
    finally:
        pth.unlink()
    a = out["regressions"][0]
    assert a["culprit"]["sha"] == made.shas["Remove trivial execution from jax (slower dispatch)"]
    assert a["builds"] == 0  # nothing was built: every state is a checkout
    assert not list((tmp_path / "cache").glob("wheels/*/*.whl"))


def test_a_sha_end_of_the_pinned_side_is_a_clear_error(tmp_path, capsys, repos_cache):
    made = repos_cache(tmp_path / "repos", JAX_HISTORY, base={"jax": jax_base_files()})  # the editable test's
    capsys.readouterr()
    rc = main(["bisect", "--only", "jax", "--jax-repo", str(made.jax), "--python", venv_with_jaxlib(tmp_path / "env"),
               "--bench-cmd", "python3 -c pass", "--workdir", str(tmp_path / "work"),
               "--good", "xla@abcdef1", "--bad", "Aug 24 2023 03:00"])
    err = capsys.readouterr().err
    assert rc == 1 and "xla is pinned in this hunt" in err


def test_xla_only_keeps_jax_at_its_ref(tmp_path, python_for_demo, capsys):
    changes = [
        Change("xla", "2023-08-24T01:00:00Z", "[XLA] tidy", {"a.txt": "1\n"}),
        Change("jax", "2023-08-24T01:30:00Z", "jax slows down (not hunted)", {"perf/jax.txt": "0.8\n"}),
        Change("xla", "2023-08-24T02:00:00Z", "[XLA:GPU] fusion heuristic", {"perf/fusion.txt": "0.9\n"}),
        Change("xla", "2023-08-24T03:00:00Z", "[XLA] comment", {"b.txt": "1\n"}),
        Change("xla", "2023-08-24T04:00:00Z", "[XLA] more", {"c.txt": "1\n"}),
    ]
    made = make_repos(tmp_path / "repos", changes)
    first_jax = _initial(made.jax)
    # the window holds the jax change too: unpinned, the bad end would carry it
    out = run_json(capsys, ["bisect", "--only", "xla", "--jax-ref", first_jax, "--xla-repo", str(made.xla),
                            "--jax-repo", str(made.jax), "--build-cmd", str(made.build_script),
                            "--python", python_for_demo, "--bench-cmd", f"python3 {made.bench_script}",
                            "--workdir", str(tmp_path / "work"), "--warmup-runs", "0",  # no check reads one
                            "--good", "Aug 24 2023 00:30", "--bad", "Aug 24 2023 02:30"])
    a = out["regressions"][0]
    assert a["culprit"]["repo"] == "xla" and a["culprit"]["sha"] == made.shas["[XLA:GPU] fusion heuristic"]
    assert a["pinned"] == {"side": "jax", "to": first_jax, "hunted": "xla", "jax_ref": first_jax}
    assert {p["jax"] for p in a["probes"]} == {first_jax}
    # the default: the checkout's HEAD
    out = run_json(capsys, ["bisect", "--only", "xla", "--xla-repo", str(made.xla), "--jax-repo", str(made.jax),
                            "--build-cmd", str(made.build_script), "--python", python_for_demo,
                            "--bench-cmd", f"python3 {made.bench_script}", "--workdir", str(tmp_path / "work2"),
                            "--warmup-runs", "0", "--good", "Aug 24 2023 01:30", "--bad", "Aug 24 2023 02:30"])
    head = made.shas["jax slows down (not hunted)"]
    assert out["regressions"][0]["pinned"]["to"] == head
    assert out["regressions"][0]["culprit"]["sha"] == made.shas["[XLA:GPU] fusion heuristic"]


def _initial(repo: Path) -> str:
    import subprocess
    return subprocess.run(["git", "-C", str(repo), "rev-list", "--max-parents=0", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()


@pytest.fixture(scope="module")
def python_for_demo(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("venv-demo")
    venv.EnvBuilder(with_pip=False, system_site_packages=True).create(path)
    return str(path / "bin" / "python")


def test_minimum_jaxlib_is_read_from_the_commit(tmp_path):
    from hourly.adapters.gitrepo import GitRepo
    from hourly.measure.pinned import JaxlibGate, minimum_jaxlib, version_tuple
    made = make_repos(tmp_path / "repos", [
        Change("jax", "2023-08-24T01:00:00Z", "jax/version.py names it",
               {"jax/version.py": jax_version_py(minimum_jaxlib="0.4.16")})],
        base={"jax": {"setup.py": "install_requires=['jaxlib >= 0.4.7', 'numpy']\n"}})
    repo = GitRepo(made.jax, "jax")
    first, second = [sha for sha, _ in reversed(repo.history("origin/main"))]
    assert minimum_jaxlib(repo, first) == "0.4.7"   # setup.py, before jax/version.py had it
    assert minimum_jaxlib(repo, second) == "0.4.16"
    assert version_tuple("0.4.14.dev20230801") == (0, 4, 14) < version_tuple("0.4.16")
    gate = JaxlibGate(repo, "0.4.14.dev20230801")
    assert gate.untestable(first) is None
    assert "needs jaxlib >= 0.4.16" in gate.untestable(second) and "0.4.14.dev20230801" in gate.untestable(second)


def test_a_pinned_jaxlib_label_is_never_cut_in_names_and_progress_lines():
    """Progress lines and log names cut commits to 8/12 characters; cutting the pin's label read
    ``jaxlib-0/622472f7`` and ``build-jaxlib-0.4.1-…`` for jaxlib 0.4.18 (found on the real
    jax-ml/jax history, docs/bisect.md)."""
    from hourly.model import Pair, cut_side

    jax = "622472f78b61c34809cbe6a99ccf18a3c93a6ff6"
    # the answer's "last good: xla … jax …" lines too (render/bisect.py)
    assert cut_side("jaxlib-0.4.26", 12) == "jaxlib-0.4.26" and cut_side(jax, 12) == jax[:12]
    assert Pair("jaxlib-0.4.18", jax).short() == "jaxlib-0.4.18/622472f7"
    assert Pair("jaxlib-0.4.18", jax).key() == "jaxlib-0.4.18-622472f78b61"
    assert Pair("jaxlib-0.4.26", jax).key() != Pair("jaxlib-0.4.27", jax).key()
    label = f"jaxlib-{JAXLIB_VERSION}@{XLA_OF_JAXLIB[:12]}"
    assert Pair(label, jax).short() == f"{label}/622472f7"
    # commits on both sides are cut as before
    assert Pair(XLA_OF_JAXLIB, jax).key() == f"{XLA_OF_JAXLIB[:12]}-{jax[:12]}"
    assert Pair(XLA_OF_JAXLIB, jax).short() == f"{XLA_OF_JAXLIB[:8]}/{jax[:8]}"


def test_a_jax_older_than_the_installed_jaxlib_is_untestable_before_it_is_built(tmp_path):
    """JAX refuses at import a jaxlib newer than itself (jax/_src/lib/__init__.py; JAX 0.4.15.dev
    of 2023-08-25 with jaxlib 0.4.18: "jaxlib version 0.4.18 is newer than and incompatible with
    jax version 0.4.15..."). The gate skips such a commit with that reason instead of building it
    and crashing in every run (which exit mode would call bad); commits without the check, and
    commits at or above the installed version, are testable."""
    from hourly.adapters.gitrepo import GitRepo
    from hourly.measure.pinned import JaxlibGate, jaxlib_upper_bound
    check = ("  msg = (f'jaxlib version {jaxlib_version} is newer than and '\n"
             "         f'incompatible with jax version {jax_version}. Please '\n")
    made = make_repos(tmp_path / "repos", [
        Change("jax", "2023-08-24T01:00:00Z", "jax checks for a newer jaxlib", {"jax/_src/lib/__init__.py": check}),
        Change("jax", "2023-08-24T02:00:00Z", "Bump the version to 0.4.18",
               {"jax/version.py": jax_version_py(version="0.4.18", minimum_jaxlib="0.4.14")}),
        Change("jax", "2023-08-24T03:00:00Z", "The version the typed way",
               {"jax/version.py": '_version: str = "0.4.19"\n_minimum_jaxlib_version = "0.4.14"\n'})],
        base={"jax": {"jax/version.py": jax_version_py(version="0.4.15", minimum_jaxlib="0.4.14")}})
    repo = GitRepo(made.jax, "jax")
    no_check, old, bumped, typed = [sha for sha, _ in reversed(repo.history("origin/main"))]
    assert jaxlib_upper_bound(repo, no_check) is None
    assert jaxlib_upper_bound(repo, old) == "0.4.15" and jaxlib_upper_bound(repo, typed) == "0.4.19"
    gate = JaxlibGate(repo, "0.4.18")
    assert gate.untestable(no_check) is None
    why = gate.untestable(old)
    assert why and "(0.4.15) refuses a newer jaxlib" in why and "0.4.18" in why
    assert gate.untestable(bumped) is None and gate.untestable(typed) is None
