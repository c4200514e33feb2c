"""python -m hourly.harness.trace and hourly trace, run as a user would: real JAX in subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

pytest.importorskip("jax")

from hourly.commands.trace import trace
from hourly.errors import ProcessError, UsageError, UserError
from hourly.profile.capture import TraceOptions, capture, tracing_command
from hourly.profile.compare import load_capture, parse_memory_profile, parse_perfetto_trace

ROOT = Path(__file__).resolve().parents[1]

# Allocates known arrays between two checkpoints, keeps them alive to the end, runs a jitted
# function, and records argv and the bytes it created.
ALLOCATING = textwrap.dedent("""\
    import json, sys
    import jax, jax.numpy as jnp
    from hourly import jaxbench

    @jax.jit
    def scaled_sum(x):
        return jnp.tanh(x) * 3.0 + 1.0

    jaxbench.memory_checkpoint("before")
    a = jnp.ones((1000, 250), jnp.float32)
    b = jnp.zeros((64, 64, 8), jnp.float32)
    c = scaled_sum(a)
    jax.block_until_ready(c)
    jaxbench.memory_checkpoint("after")
    json.dump({"argv": sys.argv, "nbytes": a.nbytes + b.nbytes + c.nbytes},
              open(sys.argv[1], "w"))
    if len(sys.argv) > 2:
        sys.exit(int(sys.argv[2]))
    """)


def env() -> dict[str, str]:
    e = {**os.environ}
    e["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), e.get("PYTHONPATH")) if p)
    e.pop("HOURLY_MEMPROF_AT", None)
    e.pop("HOURLY_TRACE_DIR", None)
    return e


def run_tracer(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hourly.harness.trace", *args], cwd=cwd, env=env(),
                          capture_output=True, text=True, timeout=180)


def trace_app() -> typer.Typer:
    app = typer.Typer()
    app.command()(trace)
    app.command("other")(lambda: None)  # two commands, so `trace` is a subcommand as in hourly
    return app


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """One real capture of ALLOCATING by `hourly trace` (which runs it under `python -m
    hourly.harness.trace`), shared by the tests that only read it: (folder, capture, facts, the command's
    result)."""
    work = tmp_path_factory.mktemp("traced")
    (work / "alloc.py").write_text(ALLOCATING)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        for name in ("HOURLY_MEMPROF_AT", "HOURLY_TRACE_DIR"):
            mp.delenv(name, raising=False)
        result = CliRunner().invoke(trace_app(), ["trace", "--out", "cap", "--memprof-at", "before,after",
                                                  "--python-tracer-level", "0", "--", sys.executable,
                                                  "alloc.py", "facts.json"])
    assert result.exit_code == 0, result.output
    return work, work / "cap", json.loads((work / "facts.json").read_text()), result


def test_script_runs_unchanged_with_its_argv(traced):
    work, out, facts, _ = traced
    assert facts["argv"] == ["alloc.py", "facts.json"]


def test_manifest_lists_what_was_captured(traced):
    _, out, _, _ = traced
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "ok" and manifest["exit_code"] == 0
    assert manifest["backend"] == "cpu"
    assert manifest["profiler_options"]["python_tracer_level"] == 0
    assert manifest["memory_checkpoints_requested"] == ["after", "before"]
    files = manifest["files"]
    assert files["memory_profiles"] == ["memory-after.prof", "memory-before.prof", "memory.prof"]
    assert len(files["xplane"]) == 1 and len(files["perfetto"]) == 1
    for rel in files["xplane"] + files["perfetto"] + files["memory_profiles"]:
        assert (out / rel).stat().st_size > 0


def test_trace_is_real_and_holds_the_jitted_ops(traced):
    _, out, _, _ = traced
    capture_files = load_capture(out)
    assert capture_files.perfetto is not None
    summary = parse_perfetto_trace(capture_files.perfetto)
    assert summary.source == "hlo_op"  # CPU: the XLA ops the runtime reports
    ours = [op for name, op in summary.ops.items() if name.startswith("jit_scaled_sum/")]
    assert ours and all(op.count >= 1 and op.total_us > 0 for op in ours)
    # python tracer off: no Python function events were recorded
    assert not any(name.startswith("$") for name in parse_perfetto_trace(
        capture_files.perfetto).ops)


def test_memory_profiles_account_for_the_arrays_created(traced):
    _, out, facts, _ = traced
    before = parse_memory_profile(out / "memory-before.prof")
    after = parse_memory_profile(out / "memory-after.prof")
    final = parse_memory_profile(out / "memory.prof")
    assert after.total_bytes() - before.total_bytes() == facts["nbytes"]
    assert after.total_count() - before.total_count() == 3
    # the arrays are still alive when the program ends: the final profile holds them too
    assert final.total_bytes() >= facts["nbytes"]
    sites = after.by_site()
    lines = {s.split(":")[-1].rstrip(")") for s in sites if "alloc.py" in s}
    assert {"10", "11", "12"} <= lines, sites.keys()


def test_exit_status_of_the_program_is_kept_and_capture_still_written(tmp_path):
    (tmp_path / "alloc.py").write_text(ALLOCATING)
    proc = run_tracer(["--out", "cap", "--python-tracer-level", "0", "--", "alloc.py",
                       "facts.json", "3"], tmp_path)
    assert proc.returncode == 3, proc.stderr
    manifest = json.loads((tmp_path / "cap" / "manifest.json").read_text())
    assert (manifest["status"], manifest["exit_code"]) == ("failed", 3)
    nbytes = json.loads((tmp_path / "facts.json").read_text())["nbytes"]
    # sys.exit happened with the arrays alive: the final profile still holds them
    assert parse_memory_profile(tmp_path / "cap" / "memory.prof").total_bytes() >= nbytes
    assert manifest["files"]["perfetto"]


@pytest.fixture(scope="module")
def crashed_module(tmp_path_factory):
    """One real capture of a module run with `-m` that computes, prints, then raises: (folder, process).
    The module form and the crash in one jax process (a module's success: the script's path, the
    traced fixture; a script's failure: the exit status test)."""
    work = tmp_path_factory.mktemp("module")
    pkg = work / "mybench"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "run.py").write_text("import sys, jax.numpy as jnp\n"
                                "print('ARGV', sys.argv[1:], __name__)\n"
                                "print(float(jnp.arange(4.0).sum()))\n"
                                "raise RuntimeError('benchmark broke')\n")
    proc = run_tracer(["--out", "cap", "--python-tracer-level", "0", "--", "-m", "mybench.run",
                       "--n", "2"], work)
    return work, proc


def test_a_crash_is_reported_and_the_capture_kept(crashed_module):
    work, proc = crashed_module
    assert proc.returncode == 1
    assert "RuntimeError: benchmark broke" in proc.stderr
    manifest = json.loads((work / "cap" / "manifest.json").read_text())
    assert manifest["status"] == "crashed" and "benchmark broke" in manifest["error"]
    assert (work / "cap" / "memory.prof").exists()


def test_module_form_runs_with_python_m_semantics(crashed_module):
    work, proc = crashed_module
    assert "ARGV ['--n', '2'] __main__" in proc.stdout and "6.0" in proc.stdout, proc.stderr
    assert json.loads((work / "cap" / "manifest.json").read_text())["argv"] == [
        "-m", "mybench.run", "--n", "2"]


def test_tracer_refuses_an_empty_command(tmp_path):
    proc = run_tracer(["--out", "cap", "--"], tmp_path)
    assert proc.returncode == 2 and "nothing to run" in proc.stderr


# ----------------------------------------------------------------------------- hourly trace


@pytest.mark.parametrize("cmd, expected_head, expected_tail", [
    (["python", "b.py", "--n", "3"], ["python"], ["b.py", "--n", "3"]),
    (["python3", "-u", "-X", "dev", "b.py"], ["python3", "-u", "-X", "dev"], ["b.py"]),
    (["/venv/bin/python3.11", "-m", "pkg.bench", "x"], ["/venv/bin/python3.11"],
     ["-m", "pkg.bench", "x"]),
    (["bench.py", "7"], ["/my/python"], ["bench.py", "7"]),
])
def test_python_commands_are_rewritten_to_run_under_the_tracer(cmd, expected_head,
                                                               expected_tail):
    opts = TraceOptions(host_tracer_level=1, memprof_at=["a", "b"])
    got = tracing_command(cmd, "/o", opts, python="/my/python")
    assert got == [*expected_head, "-m", "hourly.harness.trace", "--out", "/o",
                   "--host-tracer-level", "1", "--memprof-at", "a,b", "--", *expected_tail]


@pytest.mark.parametrize("cmd, error", [
    ([], UsageError), (["python", "-c", "print(1)"], UserError), (["python"], UsageError),
    (["./run.sh"], UserError), (["python", "-m"], UsageError),
])
def test_commands_that_cannot_be_traced_are_refused(cmd, error):
    with pytest.raises(error):
        tracing_command(cmd, "/o")


def test_capture_raises_the_commands_exit_status_and_keeps_its_log(tmp_path):
    """capture()'s wiring without jax: the command rewritten to run under hourly.harness.trace by the given
    Python, hourly's folder put before an empty PYTHONPATH, the run's log written, and a failing run
    raised as a ProcessError with its exit status (check) or returned (no check). The Python here is a
    real program that exits 4 at once; the capture of a real jax run: test_capture_through_proc_run
    and test_hourly_trace_command."""
    python = tmp_path / "python3"
    python.write_text('#!/bin/sh\necho "$@" > argv.txt\necho "$PYTHONPATH" > pythonpath.txt\nexit 4\n')
    python.chmod(0o755)
    with pytest.raises(ProcessError) as err:
        capture(["alloc.py", "facts.json"], tmp_path / "cap", python=str(python), env={"PYTHONPATH": ""},
                cwd=tmp_path, options=TraceOptions(python_tracer_level=0, memprof_at=["after"]))
    assert err.value.returncode == 4
    assert (tmp_path / "argv.txt").read_text().split() == [
        "-m", "hourly.harness.trace", "--out", str(tmp_path / "cap"), "--python-tracer-level", "0", "--memprof-at", "after",
        "--", "alloc.py", "facts.json"]
    shim = (tmp_path / "pythonpath.txt").read_text().strip()  # hourly's folder alone: no empty entry after it
    assert shim and os.pathsep not in shim and not Path(shim).exists()  # removed once the run ended
    log = (tmp_path / "cap" / "run.log").read_text()
    assert log.startswith(f"$ {python} -m hourly.harness.trace ") and "# exit: 4" in log
    kept = capture(["alloc.py"], tmp_path / "cap2", python=str(python), cwd=tmp_path, check=False)
    assert not kept.ok and kept.result.returncode == 4 and kept.manifest == {}


# quick: test_capture_raises_the_commands_exit_status_and_keeps_its_log covers capture()'s command, log and
# ProcessError; test_hourly_trace_command covers capture() of a real jax run (perfetto trace, --memprof-at)
@pytest.mark.slow
def test_capture_through_proc_run(tmp_path):
    (tmp_path / "alloc.py").write_text(ALLOCATING)
    result = capture([sys.executable, "alloc.py", "facts.json"], tmp_path / "cap",
                     env={"PYTHONPATH": ""}, cwd=tmp_path,
                     options=TraceOptions(python_tracer_level=0, memprof_at=["after"]))
    assert result.ok and result.manifest["status"] == "ok"
    assert result.perfetto and result.memory_profile
    assert (tmp_path / "cap" / "memory-after.prof").exists()
    assert (tmp_path / "cap" / "run.log").read_text().startswith("$ ")
    with pytest.raises(ProcessError) as err:
        capture([sys.executable, "alloc.py", "facts.json", "4"], tmp_path / "cap2",
                cwd=tmp_path, options=TraceOptions(python_tracer_level=0))
    assert err.value.returncode == 4


def test_a_benchmark_python_without_hourly_finds_the_tracer_through_the_shim(tmp_path):
    """The benchmark's Python (a venv holding the build under test) has no hourly installed: the
    folder put on its PYTHONPATH must expose the whole ``hourly`` package, not the folder of the
    module that makes it (``hourly/profile/``; on a real venv this failed with ``No module named
    hourly.harness.trace``)."""
    from hourly.profile.capture import hourly_pythonpath
    shim = hourly_pythonpath()
    try:
        # -S: no site-packages, so the hourly installed into this test's Python is out of reach
        done = subprocess.run([sys.executable, "-S", "-c", "import hourly.harness.trace; print(hourly.harness.trace.__file__)"],
                              env={"PYTHONPATH": shim}, cwd=tmp_path, capture_output=True, text=True)
    finally:
        import shutil
        shutil.rmtree(shim, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(Path(shim) / "hourly" / "harness" / "trace.py")


def test_hourly_trace_command(traced, tmp_path, monkeypatch):
    work, out, _, result = traced  # the capture of ALLOCATING, made by `hourly trace`
    assert "trace folder:" in result.output and "memory-after.prof" in result.output
    assert "memory-before.prof" in result.output and "perfetto_trace.json.gz" in result.output
    assert (out / "manifest.json").exists()
    # a Python that exits 5 at once never ran the profiler, let alone the program: that is the
    # profiler's failure (exit 1, the log named), not the program's exit status (a program that runs
    # and exits 5 passes its status on: test_exit_status_of_the_program_is_kept_...)
    (tmp_path / "alloc.py").write_text(ALLOCATING)
    monkeypatch.chdir(tmp_path)
    python = tmp_path / "python3"
    python.write_text("#!/bin/sh\nexit 5\n")
    python.chmod(0o755)
    failed = CliRunner().invoke(trace_app(), ["trace", "--out", "cap2", "--python-tracer-level", "0",
                                              "--", str(python), "alloc.py", "facts.json", "5"])
    assert failed.exit_code == 1, failed.output
    assert "stopped before it ran the program" in str(failed.exception)


@pytest.mark.parametrize("argv", [["missing.py"], ["--", sys.executable, "-X", "importtime", "missing.py", "a.py"]])
def test_hourly_trace_of_a_script_that_is_not_there_is_one_line_and_makes_no_folder(tmp_path, monkeypatch, capsys,
                                                                                    argv):
    """issue 33: the profiler ran, the script's "can't open file" went by, and an empty trace folder
    was made and listed as the capture."""
    from hourly.cli import main
    monkeypatch.chdir(tmp_path)
    code = main(["trace", "--out", "cap", *argv])
    err = capsys.readouterr().err
    assert code == 1 and err.strip() == ("hourly: error: no such file: missing.py — give the benchmark script's path, "
                                         "e.g. hourly trace -- python bench.py")
    assert not (tmp_path / "cap").exists()
