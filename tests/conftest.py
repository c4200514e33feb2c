"""Shared fixtures: real stand-in repositories, builds and benchmarks (see hourly.demo.repos)."""

from __future__ import annotations

import os
import site
import subprocess
import venv
from pathlib import Path

import pytest

from hourly.demo.repos import DEMO_CHANGES, make_repos


@pytest.fixture(scope="session")
def _pristine(tmp_path_factory):
    """The demo's repositories, made once; tests get their own copies."""
    root = tmp_path_factory.mktemp("pristine")
    return make_repos(root / "repos", DEMO_CHANGES)


@pytest.fixture
def made(tmp_path):
    """Fresh real repositories with the demo's history (cheap: about 0.3 s)."""
    return make_repos(tmp_path / "repos", DEMO_CHANGES)


def make_venv_seeing_this_python(path) -> str:
    """A venv whose own site-packages come first, then those of the Python running the tests.

    ``system_site_packages=True`` is not that when the tests run in a venv themselves: it
    reaches the *base* interpreter's site-packages, where jax (or anything the suite installed)
    is not. A ``.pth`` line that calls ``site.addsitedir`` on the running interpreter's
    site-packages adds them, with their own ``.pth`` files (an editable hourly) processed."""
    venv.EnvBuilder(with_pip=False, system_site_packages=False).create(path)
    python = str(path / "bin" / "python")
    own = subprocess.run([python, "-c", "import site; print(site.getsitepackages()[0])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    dirs = [d for d in site.getsitepackages() if os.path.isdir(d)]
    (Path(own) / "_running_python.pth").write_text(
        "".join(f"import site; site.addsitedir({d!r})\n" for d in dirs))
    return python


@pytest.fixture(scope="session")
def venv_python(tmp_path_factory) -> str:
    """A virtual environment that receives the builds (never the test runner's own Python), and
    sees the packages of the Python running the tests (jax, for the profile test)."""
    return make_venv_seeing_this_python(tmp_path_factory.mktemp("venv"))


@pytest.fixture
def scan_args(made, venv_python, tmp_path):
    """Arguments of a scan over the demo repos; narrow windows keep tests fast."""
    def make(frm="Aug 24 2023 12:00", to="Aug 24 2023 15:00", *extra):
        return ["scan", "--from", frm, "--to", to, "--xla-repo", str(made.xla), "--jax-repo", str(made.jax),
                "--build-cmd", str(made.build_script), "--python", venv_python,
                "--bench-cmd", f"python3 {made.bench_script}", "--workdir", str(tmp_path / "work"),
                *extra]
    return make


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path, monkeypatch):
    """Run each test in its own directory so no ./hourly.toml leaks in; crash logs and the build cache
    stay there."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOURLY_LOG_DIR", str(tmp_path / "crash-logs"))
    monkeypatch.setenv("HOURLY_CACHE_DIR", str(tmp_path / "cache"))  # never the real ~/.cache/hourly
    monkeypatch.setenv("DEMO_NOISE", os.environ.get("DEMO_NOISE", "0.002"))
