"""`hourly profile`: real builds, real JAX on the CPU, real traces and memory profiles."""

import importlib.util

import pytest

from hourly.cli import main

if importlib.util.find_spec("jax") is None:  # looked up, not imported: the tests run jax in subprocesses
    pytest.skip("jax is not installed", allow_module_level=True)

JAX_BENCH = '''
import jax, jax.numpy as jnp
import jax_demo

def work(x, n):
    for _ in range(n):
        x = jnp.tanh(x @ x)
    return x

def slow_path(x):
    return work(x, int(round(8 / jax_demo.FACTOR - 7)) * 6)

x = jax.device_put(jnp.ones((128, 128), jnp.float32)).block_until_ready()
keep = []
if jax_demo.FACTOR < 1:  # the regression also holds on to a 4 MiB buffer
    keep.append(jnp.zeros((1024, 1024), jnp.float32).block_until_ready())
y = jax.jit(slow_path)(x).block_until_ready()
print("MLUPS:", 577.1 * jax_demo.FACTOR)
'''


# quick: test_text_output.py::test_profile_prints_paths_verbatim covers `hourly profile` end to end on a scanned
# workdir (this file's JAX_BENCH captured at both ends of a detected step, the comparison written and printed);
# test_profiles.py::test_comparison_finds_the_extra_memory_at_its_site, ::test_comparison_finds_the_extra_compute
# and ::test_rendered_comparison_names_the_site_and_the_pprof_command cover the comparison (memory by
# allocation site, op time, the pprof command) on real captures; test_profile_frontend.py::
# test_the_plan_profiles_a_front_end_step_of_the_harness_and_says_why_not_otherwise covers why no front end
@pytest.mark.slow
def test_profile_compares_good_and_bad_states_of_a_detected_step(capsys, scan_args, made, tmp_path):
    made.bench_script.write_text(JAX_BENCH)
    # --warmup-runs 0: the profile reads the compiled program, the allocations and the op times of its
    # own runs, not the scan's clock (the benchmark prints a planted level without noise); a warm-up
    # run of each of the four states is four more processes of real jax
    code = main(scan_args("Aug 24 2023 11:00", "Aug 24 2023 20:00", "--warmup-runs", "0"))
    assert code == 0
    capsys.readouterr()
    code = main(["profile", "--workdir", str(tmp_path / "work")])
    out, err = capsys.readouterr()
    assert code == 0, err
    comparison = (tmp_path / "work" / "profiles" / "step-1" / "comparison.txt").read_text()
    assert comparison in out
    for side in ("good", "bad"):
        assert (tmp_path / "work" / "profiles" / "step-1" / side / "memory.prof").stat().st_size > 0
    # the bad state holds 4 MiB more, allocated at the benchmark's line
    line = JAX_BENCH.split("\n").index(next(x for x in JAX_BENCH.split("\n") if "keep.append" in x)) + 1
    site = next(x for x in comparison.splitlines() if f"MLUPS3d.py:{line})" in x)
    assert "+4.000" in site
    assert "jit_slow_path" in comparison  # the extra work shows up as op time
    assert "pprof -http=: --diff_base" in out
    # MLUPS is no front-end phase of the per-phase harness: no Python-level profile, and why
    assert ("Front end (Python-level profile): not made — the metric is not one of the per-phase harness's, "
            "not a front-end phase") in comparison
    import json
    rec = json.loads((tmp_path / "work" / "profiles" / "step-1" / "profile.json").read_text())
    assert rec["front_end"]["skipped"].startswith("the metric is not one of the per-phase harness's")
    assert rec["comparison"]["op_source"] == "hlo_op" and rec["comparison"]["traces"]["bad"]["reader"] == "xplane"
    # the report links the captures
    main(["report", "--workdir", str(tmp_path / "work")])
    md = (tmp_path / "work" / "report" / "report.md").read_text()
    assert "profiles/step-1" in md or "step-1" in md


@pytest.mark.parametrize("last,fix", [
    ("ModuleNotFoundError: No module named 'jax'", "install jax into the Python that runs it (--python)"),
    ("RuntimeError: CUDA_ERROR_ILLEGAL_ADDRESS", "check that it runs without hourly trace")])
def test_a_benchmark_failing_under_the_profiler_is_said_with_its_last_line(tmp_path, last, fix):
    """issue 33: the error named only the log and said "check that it runs without hourly trace",
    also when the profiler itself could not import jax in the benchmark's Python."""
    from hourly.profile.run import profiler_failed
    log = tmp_path / "run.log"
    log.write_text(f"$ python3 -m hourly.harness.trace -- bench.py\n# cwd: /x\nTraceback (most recent call last):\n"
                   f"  File \"trace.py\", line 151, in main\n{last}\n\n# exit: 1 after 0.10s\n")
    e = profiler_failed("the benchmark failed under the profiler for the good state of step-1", log,
                        "check that it runs without hourly trace")
    assert e.message == f"the benchmark failed under the profiler for the good state of step-1 (log {log}): {last}"
    assert fix in e.fix and e.details[-2:] == [last, "# exit: 1 after 0.10s"]
