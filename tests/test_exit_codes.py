"""The exit codes README's table promises that no other test file checks: ``hourly`` alone, and the
exit status of the command ``hourly trace`` runs passed on as hourly's (``hourly shell``'s:
tests/test_manual.py; usage errors: tests/test_cli_edges.py, tests/test_options.py; the watch's
10 and 11: tests/test_watch.py; 130, 143 and 129: tests/test_scan.py)."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from hourly.cli import main


def test_hourly_alone_prints_the_help_and_exits_2(capsys):
    assert main([]) == 2
    got = capsys.readouterr()
    assert "Usage: hourly" in got.out + got.err and "bisect" in got.out + got.err


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="hourly trace runs the program under jax's profiler")
def test_trace_exits_with_the_benchmarks_exit_status(capsys, tmp_path):
    script = tmp_path / "fails.py"
    script.write_text("import sys\nprint('ran')\nsys.exit(5)\n")
    assert main(["trace", "--out", str(tmp_path / "t"), "--", sys.executable, str(script)]) == 5
    got = capsys.readouterr()
    assert "ran" in got.out and "the benchmark exited with 5" in got.err


def test_a_profiler_that_cannot_start_is_not_called_the_benchmarks_exit(capsys, tmp_path):
    """A Python without jax cannot run the profiler: the program never ran, so its exit status is
    no answer (before, "the benchmark exited with 1")."""
    import venv
    venv.create(tmp_path / "bare", with_pip=False)  # no jax, no system site-packages
    script = tmp_path / "fine.py"
    script.write_text("print('ran')\n")
    assert main(["trace", "--out", str(tmp_path / "t"), "--", str(tmp_path / "bare" / "bin" / "python"), str(script)]) == 1
    got = capsys.readouterr()
    assert "the benchmark exited" not in got.err and "ran\n" not in got.out
    assert "the profiler (python -m hourly.harness.trace) stopped before it ran the program" in got.err
    assert "install jax into the Python that runs it" in got.err
