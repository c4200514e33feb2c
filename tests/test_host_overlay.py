"""``--only jax`` on a host as it is (issue 36 item 1): a base Python whose jaxlib, libtpu and
plugins lie outside its own site-packages — on PYTHONPATH (a TPU VM's folder) or behind a ``.pth``
file — read-only, with a jax of its own beside them. Each state's ``jax`` goes into the workdir's
overlay, which shadows that jax alone; nothing is written into the base; the fingerprint names
jaxlib, libtpu and the plugin with their versions and folders; a benchmark that still runs the
base's jax is refused instead of measured.

Everything is real: wheels built like the demo's, installed by pip into a folder and by uv into
the overlay, real git histories, ``pip wheel`` builds, benchmark processes, SQLite. The tests run
as root here, so ``chmod a-w`` cannot stop a write: the base is compared file by file (content,
size, mode, modification time) before and after."""

from __future__ import annotations

import compileall
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from test_only import JAX_HISTORY, XLA_OF_JAXLIB

from hourly.cli import main
from hourly.demo.repos import Made
from hourly.demo.split import JAXLIB_VERSION, jax_base_files, jaxlib_wheel, write_bench, write_wheel

CULPRIT = "Remove trivial execution from jax (slower dispatch)"
LIBTPU = "0.0.21"
PLUGIN = "jax_cuda12_plugin"
#: the machine's own jax: what every state would run if it shadowed theirs (a version no state has)
MACHINE_JAX = "0.4.30"

#: the window after the jaxlib requirement was relaxed again: 03:40 (good), the culprit, two more
WINDOW = ["--good", "Aug 24 2023 03:50", "--bad", "Aug 24 2023 06:30"]
#: its first two states: 03:40 (good) and the culprit, each built by pip wheel and installed by pip
ENDS = ["--good", "Aug 24 2023 03:50", "--bad", "Aug 24 2023 04:30"]


def pip_machine_folder(root: Path, libtpu: str = LIBTPU) -> Path:
    """A TPU VM's package folder at ``root / "machine"``: jaxlib (with its XLA commit), libtpu, a
    CUDA plugin and a jax of its own, installed by pip from real wheels (not compiled yet)."""
    wheels = root / "wheels"
    built = [
        jaxlib_wheel(wheels, JAXLIB_VERSION, XLA_OF_JAXLIB, 1.0),
        write_wheel(wheels, "libtpu", libtpu, {"libtpu/__init__.py": f"VERSION = {libtpu!r}\n"}),
        write_wheel(wheels, PLUGIN, JAXLIB_VERSION, {f"{PLUGIN}/__init__.py": "PLUGIN = True\n"}),
        write_wheel(wheels, "jax", MACHINE_JAX, {
            "jax/__init__.py": f"__version__ = {MACHINE_JAX!r}\nFACTOR = 1.0\nCRASH = False\nMACHINE = True\n"}),
    ]
    folder = root / "machine"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                    "--disable-pip-version-check", "--target", str(folder), *map(str, built)],
                   check=True, capture_output=True)
    return folder


@pytest.fixture(scope="module")
def machine_folder(tmp_path_factory):
    """``make(root, libtpu=LIBTPU)``: a TPU VM's package folder at ``root / "machine"`` (see
    ``pip_machine_folder``), compiled as a package manager leaves it (then made read-only by the
    test). pip installs each libtpu's folder once per module (~0.5 s of CPU a time); each test gets
    a copy of its own, compiled where it lies."""
    installed: dict[str, Path] = {}

    def make(root: Path, libtpu: str = LIBTPU) -> Path:
        if libtpu not in installed:
            installed[libtpu] = pip_machine_folder(tmp_path_factory.mktemp("machine"), libtpu)
        folder = root / "machine"
        shutil.copytree(installed[libtpu], folder, symlinks=True)
        compileall.compile_dir(str(folder), quiet=1)
        return folder
    return make


def host_python(root: Path, pth_to: Path | None = None) -> Path:
    """The host's Python: a venv over the interpreter (which has pip, for ``pip wheel``) with no jax
    of its own; ``pth_to``: a ``.pth`` file in its site-packages names that folder."""
    venv.EnvBuilder(with_pip=False, system_site_packages=True).create(root / "host")
    if pth_to is not None:
        site = next((root / "host").glob("lib/python3*/site-packages"))
        (site / "machine.pth").write_text(f"{pth_to}\n")
    return root / "host" / "bin" / "python"


def read_only(*roots: Path) -> None:
    for root in roots:
        for p in [root, *root.rglob("*")]:
            if not p.is_symlink():
                p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def writable(*roots: Path) -> None:
    for root in roots:
        for p in [root, *root.rglob("*")]:
            if not p.is_symlink():
                p.chmod(p.stat().st_mode | stat.S_IWUSR)


def snapshot(*roots: Path) -> dict[str, tuple]:
    """Every file and folder under ``roots``: its kind, mode, size, modification time and content."""
    out: dict[str, tuple] = {}
    for root in roots:
        for p in sorted([root, *root.rglob("*")]):
            st = p.lstat()
            digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() and not p.is_symlink() else None
            out[str(p)] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_size, st.st_mtime_ns, digest)
    return out


@pytest.fixture
def host(tmp_path, monkeypatch, machine_folder):
    """A read-only host whose jaxlib, libtpu, plugin and jax are reachable only through PYTHONPATH."""
    folder = machine_folder(tmp_path / "m")
    python = host_python(tmp_path / "h")
    read_only(folder, tmp_path / "h" / "host")
    monkeypatch.setenv("PYTHONPATH", str(folder))
    before = snapshot(folder, tmp_path / "h" / "host")
    yield python, folder
    assert snapshot(folder, tmp_path / "h" / "host") == before, "hourly wrote into the base"
    writable(folder, tmp_path / "h" / "host")


def run(capsys, args: list[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(args)
    out = capsys.readouterr()
    return rc, out.out, out.err


def common(made, python: Path, bench: Path, work: Path, cmd: str | None = None) -> list[str]:
    return ["--only", "jax", "--jax-repo", str(made.jax), "--python", str(python),
            "--bench-cmd", cmd or f"python3 {bench}", "--workdir", str(work), "--cache-dir", str(work.parent / "cache")]


def bisect_to_the_culprit(capsys, repos_cache, tmp_path: Path, python: Path) -> tuple[Made, Path, Path, dict]:
    """Bisect the history with ``python`` into ``tmp_path / "work"``: the repositories, the
    benchmark, the workdir and the answer, which names the culprit, confirmed."""
    made = repos_cache(tmp_path / "repos", JAX_HISTORY, base={"jax": jax_base_files()})
    bench = write_bench(tmp_path / "bench")
    work = tmp_path / "work"
    rc, out, err = run(capsys, ["bisect", *WINDOW, *common(made, python, bench, work), "--json"])
    assert rc == 0, err + out
    a = json.loads(out)["regressions"][0]
    assert a["culprit"]["sha"] == made.shas[CULPRIT] and a["confirmed"]
    return made, bench, work, a


def test_each_state_runs_its_own_jax_over_the_hosts_pythonpath(tmp_path, host, capsys, repos_cache, monkeypatch):
    """As on the TPU machine: no uv there, so pip installs each state. pip, run by the overlay's
    Python, finds the machine's jax first (PYTHONPATH), leaves it (outside the environment) and
    would install over the last state's files without removing them: the overlay is emptied
    before each install, and holds the state's files alone."""
    monkeypatch.setattr("hourly.adapters.venvs.find_uv", lambda: None)
    python, folder = host
    made = repos_cache(tmp_path / "repos", JAX_HISTORY, base={"jax": jax_base_files()})
    bench = write_bench(tmp_path / "bench")
    work = tmp_path / "work"
    # the silent wrong answer this guards against: run as it is, the host's python3 imports the
    # machine's jax whatever is installed elsewhere, and every state would measure that one
    seen = subprocess.run([str(python), "-c", "import jax; print(jax.__version__)"], capture_output=True, text=True)
    assert seen.stdout.strip() == MACHINE_JAX

    rc, out, err = run(capsys, ["bisect", *ENDS, *common(made, python, bench, work), "--json"])
    assert rc == 0, err + out
    a = json.loads(out)["regressions"][0]
    assert a["culprit"]["repo"] == "jax" and a["culprit"]["sha"] == made.shas[CULPRIT] and a["confirmed"]
    assert a["jaxlib_builds"] == 0 and a["jax_builds"] == a["builds"] >= 2

    # each state's jax went into an overlay of its own (paired rounds run the states alternately:
    # work/states/<state>), never into the host
    sites = [next(e.glob("lib/python3*/site-packages")) for e in (work / "states").iterdir()]
    assert len(sites) == len({(p["xla"], p["jax"]) for p in a["probes"]}) >= 2
    assert all([d.name for d in site.glob("jax-*.dist-info")] == ["jax-0.4.15.dist-info"] for site in sites)
    assert not list(folder.glob("jax-0.4.15*")) and not list((tmp_path / "h").rglob("jax-0.4.15*"))
    assert all("uv" not in p.name for p in (work / "logs").glob("install-*"))  # pip's, as on the TPU
    # and the benchmark's processes found it there, each run (hourly checked it: the seen files)
    seen_files = list((work / "logs").glob("jax-seen-*.txt"))
    assert seen_files and all(any(ln.startswith(str(site)) for site in sites)
                              for f in seen_files for ln in f.read_text().splitlines())

    # the fingerprint: jaxlib, libtpu and the plugin kept, each with its version and folder
    pinned = a["pinned"]
    assert pinned["side"] == "xla" and pinned["jaxlib_version"] == JAXLIB_VERSION
    assert pinned["jaxlib_location"] == str(folder) and pinned["jaxlib_via"] == "PYTHONPATH"
    packages = pinned["packages"]
    assert packages["libtpu"] == {"version": LIBTPU, "location": str(folder), "via": "PYTHONPATH"}
    assert packages["jax-cuda12-plugin"]["version"] == JAXLIB_VERSION
    assert packages["jaxlib"]["xla_commit"] == XLA_OF_JAXLIB
    assert pinned["shadowed_jax"]["version"] == MACHINE_JAX  # the host's own, shadowed by each state's

    # the text answer and the report say the same
    rc, out, err = run(capsys, ["bisect", "--log", *ENDS, "--workdir", str(work)])
    assert rc == 0, err
    assert f"libtpu {LIBTPU} from {folder} (PYTHONPATH)" in out
    rc, out, err = run(capsys, ["report", "--workdir", str(work), "--out", str(tmp_path / "report")])
    assert rc == 0, err
    md = (tmp_path / "report" / "report.md").read_text()
    assert f"- libtpu: {LIBTPU} from `{folder}` (PYTHONPATH)" in md
    assert f"- jaxlib: {JAXLIB_VERSION} from `{folder}` (PYTHONPATH)" in md
    assert f"- jax: {MACHINE_JAX} from `{folder}` (PYTHONPATH) — shadowed" in md


# quick: test_host_overlay.py::test_a_pth_folder_is_named_as_such_shadowed_by_the_overlay_and_a_run_without_jax_refused
# covers the .pth layout, the overlay over it and the refusal of a run without jax; the bisection's
# wiring over a host: test_each_state_runs_its_own_jax_over_the_hosts_pythonpath and
# test_a_pythonpath_set_inside_the_benchmark_is_caught_not_measured (the same check, its other branch)
@pytest.mark.slow
def test_a_pth_file_of_the_host_and_its_folder_are_kept(tmp_path, capsys, repos_cache, monkeypatch, machine_folder):
    """A container's or a venv's way: the packages come from a folder a ``.pth`` file names (uv
    installs each state here)."""
    folder = machine_folder(tmp_path / "m")
    python = host_python(tmp_path / "h", pth_to=folder)
    read_only(folder, tmp_path / "h" / "host")
    monkeypatch.delenv("PYTHONPATH", raising=False)
    before = snapshot(folder, tmp_path / "h" / "host")
    try:
        made, bench, work, a = bisect_to_the_culprit(capsys, repos_cache, tmp_path, python)
        assert a["pinned"]["packages"]["libtpu"] == {"version": LIBTPU, "location": str(folder), "via": ".pth"}
        for env in (work / "states").iterdir():  # each state's own overlay
            site = next(env.glob("lib/python3*/site-packages"))
            assert [d.name for d in site.glob("jax-*.dist-info")] == ["jax-0.4.15.dist-info"]

        # a benchmark run by the host's own Python, named by its path and isolated (-I: no
        # PYTHONPATH), imports the machine's jax: hourly cannot see which jax ran, and says so
        # instead of comparing states that all ran the same code
        rc, out, err = run(capsys, ["bisect", *WINDOW, *common(made, python, bench, tmp_path / "work-I",
                                                             f"{python} -I {bench}")])
        assert rc == 1 and "no run of the benchmark imported jax through the state's Python" in err, err + out
        assert "python3" in err and err.strip().splitlines()[-1].startswith("hourly: error: no run")
    finally:
        assert snapshot(folder, tmp_path / "h" / "host") == before, "hourly wrote into the base"
        writable(folder, tmp_path / "h" / "host")


def test_a_pythonpath_set_inside_the_benchmark_is_caught_not_measured(tmp_path, host, capsys, repos_cache):
    """The case that made every state run the same code on the TPU machine: a PYTHONPATH naming
    the machine's folder ahead of the state's jax (here set by the benchmark command itself, as a
    wrapper script would). The benchmark's process says where it found jax; hourly refuses."""
    python, folder = host
    made = repos_cache(tmp_path / "repos", JAX_HISTORY, base={"jax": jax_base_files()})
    bench = write_bench(tmp_path / "bench")
    work = tmp_path / "work"
    cmd = f"env PYTHONPATH={folder} python3 {bench}"
    rc, out, err = run(capsys, ["bisect", *WINDOW, *common(made, python, bench, work, cmd)])
    assert rc == 1, err + out
    assert f"the benchmark imported jax from {folder}/jax/__init__.py, not the state's" in err
    assert "leave PYTHONPATH to hourly" in err and err.strip().splitlines()[-1].startswith("hourly: error: the benchmark")
    # nothing was measured under that jax: no row, no answer
    rc, out, err = run(capsys, ["bisect", "--log", *WINDOW, "--workdir", str(work)])
    assert "git bisect bad" not in out


def pipless_host(root: Path) -> Path:
    """A host Python that cannot import pip (a TPU VM's may have none of its own): a venv over the
    interpreter without pip and without the interpreter's site-packages."""
    venv.EnvBuilder(with_pip=False, system_site_packages=False).create(root / "host")
    python = root / "host" / "bin" / "python"
    alone = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    assert subprocess.run([str(python), "-c", "import pip"], capture_output=True, env=alone).returncode == 1
    return python


def test_a_host_python_without_pip_is_refused_before_anything_is_built(tmp_path, capsys, repos_cache, monkeypatch,
                                                                       machine_folder):
    """Every state's `pip wheel` (and pip install, without uv) would fail one after another: one line
    with the fix instead, before a build or an overlay is made."""
    monkeypatch.setattr("hourly.adapters.venvs.find_uv", lambda: None)
    folder = machine_folder(tmp_path / "m")
    monkeypatch.setenv("PYTHONPATH", str(folder))
    python = pipless_host(tmp_path / "h")
    made = repos_cache(tmp_path / "repos", JAX_HISTORY, base={"jax": jax_base_files()})
    bench = write_bench(tmp_path / "bench")
    work = tmp_path / "work"
    rc, out, err = run(capsys, ["bisect", *WINDOW, *common(made, python, bench, work)])
    assert rc == 1, err + out
    line = err.strip().splitlines()[-1]
    assert line.startswith(f"hourly: error: --python {python} cannot import pip, which the build of each "
                           "state's jax (--jax-build-cmd pip-wheel: python -m pip wheel) needs — "), err
    assert line.endswith("then add DIR at the END of PYTHONPATH (docs/accelerators.md)")
    assert not (work / "overlay").exists() and not list((tmp_path / "cache").rglob("*.whl"))


def test_a_host_python_whose_setuptools_cannot_build_a_wheel_is_refused_before_anything_is_built(
        tmp_path, capsys, repos_cache, monkeypatch, machine_folder):
    """jax's tree is built by setuptools; one older than 70.1 builds wheels through the wheel
    package's bdist_wheel, and without it every state's `pip wheel` fails ("invalid command
    'bdist_wheel'"): one line naming what is missing instead, before a build is made. The same host
    with a tree of another build backend is not refused (the next test: no setuptools at all)."""
    import pip
    monkeypatch.setattr("hourly.adapters.venvs.find_uv", lambda: None)
    folder = machine_folder(tmp_path / "m")
    tools = tmp_path / "tools"
    (tools / "setuptools").mkdir(parents=True)
    (tools / "pip").symlink_to(Path(pip.__file__).parent)
    (tools / "setuptools" / "__init__.py").write_text('__version__ = "65.5.0"\n')  # a setuptools of 2022
    monkeypatch.setenv("PYTHONPATH", f"{folder}{os.pathsep}{tools}")
    python = pipless_host(tmp_path / "h")
    base = {**jax_base_files(), "pyproject.toml": '[build-system]\nrequires = ["setuptools"]\n'
                                                  'build-backend = "setuptools.build_meta"\n'}
    made = repos_cache(tmp_path / "repos", JAX_HISTORY, base={"jax": base})
    bench = write_bench(tmp_path / "bench")
    work = tmp_path / "work"
    rc, out, err = run(capsys, ["bisect", *WINDOW, *common(made, python, bench, work)])
    assert rc == 1, err + out
    line = err.strip().splitlines()[-1]
    assert line.startswith(f"hourly: error: --python {python} cannot build a wheel of jax: it lacks wheel (its "
                           "setuptools is older than 70.1: bdist_wheel comes from the wheel package), which the "
                           "build of each state's jax"), err
    assert f"`{python} -m pip install wheel` where it has an index" in line
    assert not (work / "overlay").exists() and not list((tmp_path / "cache").rglob("*.whl"))


def test_pip_carried_at_the_end_of_pythonpath_builds_and_installs_each_state(tmp_path, capsys, repos_cache,
                                                                             monkeypatch, machine_folder):
    """The fix the refusal names, as benchmarks/tpu/session.sh applies it on the TPU machine: a
    folder holding pip after the machine's on PYTHONPATH; each state is built with that pip and
    installed into its overlay, and the culprit is named."""
    import pip
    monkeypatch.setattr("hourly.adapters.venvs.find_uv", lambda: None)
    folder = machine_folder(tmp_path / "m")
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "pip").symlink_to(Path(pip.__file__).parent)
    monkeypatch.setenv("PYTHONPATH", f"{folder}{os.pathsep}{tools}")
    python = pipless_host(tmp_path / "h")
    *_, a = bisect_to_the_culprit(capsys, repos_cache, tmp_path, python)
    assert a["jax_builds"] >= 2
    assert a["pinned"]["jaxlib_location"] == str(folder)


def test_the_key_follows_the_kept_packages(tmp_path, capsys, repos_cache, monkeypatch, machine_folder):
    """The measurement key holds the kept jaxlib, libtpu and plugins (version and folder): a
    bisection over a scan measured with another libtpu is refused with what moved."""
    a_dir, b_dir = machine_folder(tmp_path / "a"), machine_folder(tmp_path / "b", libtpu="0.0.22")
    python = host_python(tmp_path / "h")
    made = repos_cache(tmp_path / "repos", JAX_HISTORY, base={"jax": jax_base_files()})
    bench = write_bench(tmp_path / "bench")
    work = tmp_path / "work"
    monkeypatch.setenv("PYTHONPATH", str(a_dir))
    rc, out, err = run(capsys, ["scan", "--from", "Aug 24 2023 05:00", "--to", "Aug 24 2023 05:00",  # one state
                                *common(made, python, bench, work)])
    assert rc == 0, err + out
    key = json.loads(_measure_key(work))
    assert key["identity"]["build"]["pinned"]["libtpu"] == [LIBTPU, str(a_dir)]
    monkeypatch.setenv("PYTHONPATH", str(b_dir))
    rc, out, err = run(capsys, ["bisect", "--workdir", str(work)])
    assert rc == 1 and f"measured under another installed libtpu {LIBTPU} → 0.0.22, jax-cuda12-plugin at {a_dir}" in err, err


def _measure_key(work: Path) -> str:
    from hourly.adapters.store import Store
    from hourly.measure.settings import MEASURE_KEY
    return json.dumps(Store(work).load_settings(MEASURE_KEY))


def test_the_overlay_is_made_afresh_when_the_hosts_path_changes(tmp_path, monkeypatch):
    """Kept between runs of a workdir while the base's path is the same; made again when not."""
    from hourly.adapters.venvs import forget_layouts, make_overlay
    a_dir, b_dir = tmp_path / "a", tmp_path / "b"
    a_dir.mkdir(), b_dir.mkdir()
    env = {**os.environ, "PYTHONPATH": str(a_dir)}
    first = make_overlay(tmp_path / "ov", sys.executable, tmp_path / "ov.log", env, reuse=True)
    (first.site / "left.txt").write_text("a state's\n")
    again = make_overlay(tmp_path / "ov", sys.executable, tmp_path / "ov.log", env, reuse=True)
    assert (again.site / "left.txt").exists()
    forget_layouts()
    other = make_overlay(tmp_path / "ov", sys.executable, tmp_path / "ov.log", {**env, "PYTHONPATH": str(b_dir)},
                         reuse=True)
    assert not (other.site / "left.txt").exists()
    got = subprocess.run([other.python, "-c", "import sys; print(sys.path)"], capture_output=True, text=True,
                         env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, check=True).stdout
    assert str(b_dir) in got and str(a_dir) not in got


def test_a_jax_that_needs_a_newer_python_is_untestable_before_it_is_built(tmp_path):
    """JAX dropped Python 3.11 on 2026-06-18 (5ab345f1b4: python_requires='>=3.12'), and a TPU VM's
    Python is 3.11: pip refuses to build such a commit. The gate says so before anything is built,
    rather than a build failure at every state."""
    from hourly.adapters.gitrepo import GitRepo
    from hourly.demo.repos import Change, make_repos
    from hourly.measure.pinned import JaxlibGate, minimum_python
    setup = "setup(\n    name='jax',\n    python_requires='>={}',\n)\n"
    made = make_repos(tmp_path / "repos", [
        Change("jax", "2023-08-24T01:00:00Z", "Drop support for Python 3.11", {"setup.py": setup.format("3.12")}),
        Change("jax", "2023-08-24T02:00:00Z", "pyproject names it", {"setup.py": None,
                                                                     "pyproject.toml": 'requires-python = ">=3.13"\n'})],
        base={"jax": {**jax_base_files(), "setup.py": setup.format("3.11")}})
    repo = GitRepo(made.jax, "jax")
    base, dropped, pyproject = [sha for sha, _ in reversed(repo.history("origin/main"))]
    assert [minimum_python(repo, s) for s in (base, dropped, pyproject)] == ["3.11", "3.12", "3.13"]
    gate = JaxlibGate(repo, JAXLIB_VERSION, "3.11.2")
    assert gate.untestable(base) is None
    assert gate.untestable(dropped) == ("untestable: this jax needs Python >= 3.12 (its python_requires), "
                                        "--python is 3.11.2")
    assert JaxlibGate(repo, JAXLIB_VERSION, "3.13.0").untestable(pyproject) is None
    assert JaxlibGate(repo, JAXLIB_VERSION).untestable(dropped) is None  # a pin stored before: not known


def test_hourly_shell_at_a_jax_state_runs_that_jax_over_the_hosts_pythonpath(tmp_path, host, repos_cache):
    """``hourly shell --only jax``: the state's jax in the shell's own overlay, first on PYTHONPATH
    in the shell, the machine's jaxlib and libtpu still there."""
    python, folder = host
    made = repos_cache(tmp_path / "repos", JAX_HISTORY, base={"jax": jax_base_files()})
    probe = "import jax, jaxlib, libtpu; print('RAN', jax.__version__, jax.__file__, jaxlib.__file__, libtpu.VERSION)"
    got = subprocess.run([sys.executable, "-m", "hourly", "shell", "Aug 24 2023 05:00", "--only", "jax",
                          "--jax-repo", str(made.jax), "--python", str(python), "--workdir", str(tmp_path / "work"),
                          "--cache-dir", str(tmp_path / "cache"), "--", "python3", "-c", probe],
                         capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stderr
    _, version, jax_file, jaxlib_file, libtpu = next(ln for ln in got.stdout.splitlines() if ln.startswith("RAN")).split()
    assert version == "0.4.15" and Path(jax_file).is_relative_to(tmp_path / "work" / "shells")
    assert Path(jaxlib_file).is_relative_to(folder) and libtpu == LIBTPU


def test_a_pth_folder_is_named_as_such_shadowed_by_the_overlay_and_a_run_without_jax_refused(tmp_path, machine_folder):
    """The quick counterpart of the .pth host's bisection (slow): the layout names the packages a
    ``.pth`` file of the host brings, with their folder and ``via: .pth``; an overlay over that host
    imports its own jax first and the host's libtpu still; and under ``--only jax`` a benchmark none
    of whose runs imported jax through the state's Python (``python -I``) is refused."""
    from hourly.adapters.venvs import forget_layouts, make_overlay, python_layout
    from hourly.measure.pinned import ShadowedJax, check_jax_seen
    folder = machine_folder(tmp_path / "m")
    python = host_python(tmp_path / "h", pth_to=folder)
    read_only(folder, tmp_path / "h" / "host")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    before = snapshot(folder, tmp_path / "h" / "host")
    try:
        forget_layouts()
        packages = python_layout(str(python), env)["packages"]
        assert packages["libtpu"] == {"version": LIBTPU, "location": str(folder), "via": ".pth"}
        assert packages["jaxlib"]["via"] == ".pth" and packages["jaxlib"]["xla_commit"] == XLA_OF_JAXLIB
        assert packages["jax"]["version"] == MACHINE_JAX and packages["jax"]["via"] == ".pth"
        overlay = make_overlay(tmp_path / "ov", str(python), tmp_path / "ov.log", env, reuse=False)
        (overlay.site / "jax").mkdir()
        (overlay.site / "jax" / "__init__.py").write_text("__version__ = '0.4.15'\n")
        got = subprocess.run([overlay.python, "-c", "import jax, libtpu; print(jax.__version__, jax.__file__, "
                              "libtpu.VERSION, libtpu.__file__)"], capture_output=True, text=True, env=env, check=True)
        version, jax_file, libtpu, libtpu_file = got.stdout.split()
        assert version == "0.4.15" and Path(jax_file).is_relative_to(overlay.site)
        assert libtpu == LIBTPU and Path(libtpu_file).is_relative_to(folder)
    finally:
        assert snapshot(folder, tmp_path / "h" / "host") == before, "hourly wrote into the base"
        writable(folder, tmp_path / "h" / "host")
    seen = tmp_path / "jax-seen.txt"
    seen.write_text("")  # the runs of `python -I bench.py`: the overlay's start-up module never ran
    with pytest.raises(ShadowedJax) as e:
        check_jax_seen(seen, overlay.site, "the state's jax", str(python), required=True, ran=True)
    assert "no run of the benchmark imported jax through the state's Python" in e.value.one_line()
    assert "python3" in e.value.one_line()
    check_jax_seen(seen, overlay.site, "the state's jax", str(python), required=False, ran=True)  # not --only jax
    seen.write_text(f"{overlay.site / 'jax' / '__init__.py'}\n")
    check_jax_seen(seen, overlay.site, "the state's jax", str(python), required=True, ran=True)
