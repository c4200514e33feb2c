"""Shared fixtures: real stand-in repositories, builds and benchmarks (see hourly.demo.repos)."""

from __future__ import annotations

import os
import venv

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


@pytest.fixture(scope="session")
def venv_python(tmp_path_factory) -> str:
    """A virtual environment that receives the builds (never the test runner's own Python)."""
    path = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(with_pip=False, system_site_packages=True).create(path)
    return str(path / "bin" / "python")


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
    """Run each test in its own directory so no ./hourly.toml leaks in; crash logs stay there."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOURLY_LOG_DIR", str(tmp_path / "crash-logs"))
    monkeypatch.setenv("DEMO_NOISE", os.environ.get("DEMO_NOISE", "0.002"))
