"""The per-phase JAX harness (hourly/jaxbench_phases.py) and `hourly bench`, run for real on CPU jax
on a small MLP training step: each phase has its samples, the cached compile is recorded apart
from the cold one, device memory on the CPU is said to be unavailable, a make() that raises is one
line, and the options printed for a scan run the same harness through hourly's own benchmark runner."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import textwrap
from io import StringIO
from pathlib import Path

import pytest

if importlib.util.find_spec("jax") is None:  # looked up, not imported: the tests run jax in subprocesses
    pytest.skip("jax is not installed", allow_module_level=True)

from hourly import jaxbench_phases as harness
from hourly import metric
from hourly.cli import main
from hourly.measure import phases
from hourly.measure.benchmark import BenchSpec, run_benchmark
from hourly.model import Status
from hourly.render.bench import print_report
from hourly.render.console import console

ROOT = Path(__file__).resolve().parents[1]
HARNESS = ROOT / "hourly" / "jaxbench_phases.py"
REPEATS, ITERS = 2, 8  # each front-end repeat compiles the step three times: two show each is a sample

BENCH = textwrap.dedent('''\
    import sys

    import jax
    import jax.numpy as jnp
    import numpy as np


    def loss(params, x, y):
        for w, b in params[:-1]:
            x = jax.nn.relu(x @ w + b)
        w, b = params[-1]
        return jnp.mean((x @ w + b - y) ** 2)


    def step(params, x, y):  # not jitted: the harness jits it
        grads = jax.grad(loss)(params, x, y)
        return jax.tree_util.tree_map(lambda p, g: p - 1e-3 * g, params, grads)


    def make():
        import bisect
        # the harness ran by path needs no hourly, and hourly's bisect/ does not shadow the stdlib's
        assert "hourly" not in sys.modules, "the harness imported hourly"
        assert "hourly" not in (bisect.__file__ or ""), bisect.__file__
        assert not jax.config.jax_enable_x64, "x64 is on although --x64 was not given"
        # NumPy draws the values: jax.random compiles a program per shape first (~1 s here)
        rng = np.random.default_rng(0)
        params = [(jnp.asarray(rng.standard_normal((32, 32), np.float32) / 32 ** 0.5), jnp.zeros(32))
                  for _ in range(3)]
        x = jnp.asarray(rng.standard_normal((16, 32), np.float32))
        return step, (params, x, jnp.zeros((16, 32)))


    @jax.jit
    def scaled(x, *, factor):
        return x * factor


    def make_jitted():  # jitted already, with a keyword argument
        return scaled, (jnp.ones(4),), {"factor": 2.0}


    def make_broken():
        sizes = {"width": 32}
        return step, (sizes["depth"],)


    def make_bad_fn():
        return (lambda x: x.no_such_attribute), (jnp.ones(3),)


    def make_wide():  # a float64 NumPy input, with x64 off
        return (lambda x: x * 2), (np.ones(4),)
    ''')


@pytest.fixture(scope="module")
def bench_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("bench")
    (d / "mlp_bench.py").write_text(BENCH)
    (d / "tmp").mkdir()
    return d


@pytest.fixture(scope="module")
def measured(bench_dir):
    """One `hourly bench --json` run of the MLP (the harness as a subprocess), its JSON and its log."""
    log = bench_dir / "bench.log"
    argv = ["bench", str(bench_dir / "mlp_bench.py"), "--repeats", str(REPEATS), "--iters", str(ITERS),
            "--warmup", "0", "--out", str(log), "--json",
            # x64 asked by the environment is turned off (make() checks); the cache folder lands here
            "--env", "JAX_ENABLE_X64=1", "--env", f"TMPDIR={bench_dir / 'tmp'}"]
    out, err = StringIO(), StringIO()
    import contextlib
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    assert code == 0, err.getvalue() + log.read_text()
    return json.loads(out.getvalue()), log.read_text()


FRONT = ("trace_ms", "lower_ms", "compile_ms", "compile_cached_ms", "first_call_ms")
LOOPS = ("dispatch_us", "step_dispatch_us", "step_ms")


def test_every_phase_has_its_own_samples_from_one_process(measured):
    report, log = measured
    got = report["phases"]
    assert set(got) == {*FRONT, *LOOPS, "live_array_bytes", "compiled_temp_bytes"}
    for name in FRONT:
        assert got[name]["n"] == REPEATS, name
    for name in LOOPS:
        assert got[name]["n"] == ITERS, name
    for name, stats in got.items():
        assert all(v >= 0 for v in stats["samples"]) and stats["median"] == statistics.median(stats["samples"])
        assert stats["higher_is_better"] is False and stats["unit"] == name.rsplit("_", 1)[1]
    for name in (*FRONT, *LOOPS):
        assert got[name]["min"] > 0, name
    assert got["live_array_bytes"]["median"] > 3 * 32 * 32 * 4  # at least the weights are alive
    # one process: the harness ran once (one header), and its lines are the samples
    assert log.count("# hourly-bench:") == 1
    assert len(re.findall(r"^METRIC step_ms: ", log, re.M)) == ITERS


def test_the_cached_compile_is_recorded_apart_and_loads_faster_than_a_cold_one(measured, bench_dir):
    got = measured[0]["phases"]
    assert got["compile_cached_ms"]["median"] < got["compile_ms"]["median"] / 2, got
    assert "missed the persistent cache" not in measured[1]
    # the private cache folder was removed after the run
    assert list((bench_dir / "tmp").iterdir()) == []


def test_device_memory_on_the_cpu_is_said_to_be_unavailable_never_a_zero(measured):
    report, log = measured
    reason = report["unavailable"]["peak_memory_bytes"]
    assert "cpu" in reason and "memory_stats" in reason and "live_array_bytes" in reason
    assert "METRIC peak_memory_bytes" not in log and "peak_memory_bytes" not in report["phases"]


def test_the_lines_are_of_the_documented_forms_and_the_median_line_is_the_median(measured):
    log = measured[1]
    ours = [ln for ln in log.splitlines() if re.match(r"(METRIC|MEDIAN|UNAVAILABLE|#) ", ln)]
    samples = metric.read_metrics(log)
    for line in ours:
        assert re.fullmatch(r"(METRIC|MEDIAN) [a-z_]+_(ms|us|bytes): [-+0-9.e]+|UNAVAILABLE [a-z_]+: .+|# .*",
                            line), line
    for name, values in samples.items():
        median = metric.parse_metric(log, metric.named_line_regex(name, metric.MEDIAN_PREFIX))
        assert median == pytest.approx(statistics.median(values), rel=1e-5), name


def test_the_table_shows_each_phase_and_says_what_is_unavailable(measured, bench_dir):
    report = phases.read_report(measured[1], ["python", "harness"])
    scan = phases.scan_options(str(bench_dir / "mlp_bench.py"), phases.HarnessOptions(), list(report.phases),
                               cwd=bench_dir)
    out = StringIO()
    print_report(console(file=out, width=200), report, scan)
    text = out.getvalue()
    for name in (*FRONT, *LOOPS):
        assert re.search(rf"│ {name} +│ (ms|µs) +│ +[0-9.]+ +│", text), name
    assert "peak_memory_bytes: not available — the cpu backend reports no device.memory_stats()" in text
    assert "--lower-is-better" in text and "MEDIAN step_ms:" in text


@pytest.fixture(scope="module")
def through_the_runner(bench_dir, tmp_path_factory):
    """What `hourly scan --bench-cmd ... --metric-regex ...` does with each run, from another folder
    (python3 is the state's Python, its folder first on PATH; the log is parsed by the regex), for
    the jitted function with a keyword argument and two phases: (scan options, result, log)."""
    tmp = tmp_path_factory.mktemp("runner")
    options = phases.HarnessOptions(repeats=2, iters=3, warmup=0, phases=("trace", "step"))
    scan = phases.scan_options("mlp_bench.py:make_jitted", options, ["trace_ms", "step_ms"], cwd=bench_dir)
    spec = BenchSpec(cmd=shlex.split(scan.bench_cmd), cwd=str(tmp), metric_regex=scan.per_metric["step_ms"][1],
                     python=sys.executable, timeout=300)
    result = run_benchmark(spec, repeats=1, log_dir=tmp, tag="phases")
    return scan, result, Path(result.runs[0].log_path).read_text()


def test_the_printed_scan_options_run_the_harness_through_hourlys_benchmark_runner(through_the_runner, bench_dir):
    scan, result, log = through_the_runner
    assert scan.bench_cmd.split()[:3] == ["python3", str(HARNESS), f"{bench_dir / 'mlp_bench.py'}:make_jitted"]
    regex = scan.per_metric["step_ms"][1]
    assert scan.per_metric["step_ms"] == ["--metric-regex", regex, "--lower-is-better"]
    assert result.status is Status.OK, log
    assert result.value == pytest.approx(statistics.median(metric.read_metrics(log)["step_ms"]), rel=1e-5)
    assert set(metric.read_metrics(log)) == {"trace_ms", "step_ms"}  # --phases trace,step measured those alone


def run_harness(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, str(HARNESS), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_an_error_in_the_function_is_one_clear_line_naming_the_users_line(bench_dir):
    done = run_harness("mlp_bench.py:make_bad_fn", "--iters", "1", "--warmup", "0", cwd=bench_dir)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1, done.stderr  # no traceback unless --traceback
    assert re.fullmatch(r"hourly-bench: error: (tracing|compiling|calling) fn raised AttributeError: .*"
                        r"no_such_attribute.* \(mlp_bench\.py:49\)", lines[0]), lines[0]


def test_a_make_that_raises_is_one_clear_line_and_the_log_keeps_the_traceback(bench_dir, tmp_path, capsys):
    log = tmp_path / "broken.log"
    code = main(["bench", str(bench_dir / "mlp_bench.py:make_broken"), "--out", str(log)])
    err = capsys.readouterr().err
    said = "make_broken() in mlp_bench.py raised KeyError: 'depth' (mlp_bench.py:45)"
    assert code == 1 and err.strip().splitlines() == [
        f"hourly: error: {said} — fix the benchmark; traceback and full output: {log}"]
    text = log.read_text()
    assert "Traceback (most recent call last)" in text
    assert f"hourly-bench: error: {said}" in text.splitlines()  # the harness's own last word
    # a file that is not there, a phase that does not exist: said before any process starts
    assert main(["bench", str(tmp_path / "nothere.py")]) == 1
    assert "no such file" in capsys.readouterr().err
    assert main(["bench", str(bench_dir / "mlp_bench.py"), "--phases", "step,warp"]) == 2
    assert "warp is no phase" in capsys.readouterr().err


def test_a_64_bit_input_is_warned_about_on_stderr_not_only_in_the_log(bench_dir, tmp_path, capsys):
    """docs/measuring.md: 64-bit inputs "get a warning on stderr". The harness prints it on its
    stderr, which hourly bench keeps in the log; before, it reached only the log."""
    log = tmp_path / "wide.log"
    code = main(["bench", f"{bench_dir / 'mlp_bench.py'}:make_wide", "--phases", "step", "--repeats", "1",
                 "--iters", "2", "--warmup", "0", "--out", str(log), "--json"])
    got = capsys.readouterr()
    assert code == 0, got.err
    said = "64-bit inputs ([0] is float64): with x64 off JAX truncates them to 32-bit on transfer"
    assert f"hourly bench: warning: {said}" in got.err.splitlines()
    assert json.loads(got.out)["warnings"] == [said]
    assert f"hourly-bench: warning: {said}" in log.read_text()


def test_a_jitted_function_with_keyword_arguments_is_measured_as_it_is(through_the_runner):
    _, result, log = through_the_runner  # make_jitted, --phases trace,step --repeats 2 --iters 3 --warmup 0
    assert result.status is Status.OK, log
    found = metric.read_metrics(log)
    assert set(found) == {"trace_ms", "step_ms"} and len(found["trace_ms"]) == 2 and len(found["step_ms"]) == 3


def test_the_harness_imports_only_the_standard_library_and_jax():
    tree = ast.parse(HARNESS.read_text())
    roots = {(a.name if isinstance(n, ast.Import) else n.module or "").split(".")[0]
             for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
             for a in (n.names if isinstance(n, ast.Import) else [n])}
    assert roots - set(sys.stdlib_module_names) - {"__future__"} <= {"jax", "jaxlib"}, roots


def test_the_line_grammar_is_the_one_hourly_reads():
    assert (harness.SAMPLE, harness.MEDIAN, harness.UNAVAILABLE) == \
        (metric.SAMPLE_PREFIX, metric.MEDIAN_PREFIX, metric.UNAVAILABLE_PREFIX)
    assert harness.ERROR_PREFIX == phases.ERROR_PREFIX
    for p in harness.PHASES:  # every phase's name carries a unit whose direction is known
        assert metric.higher_is_better(p.metric) is False, p.metric


def test_scan_options_for_a_nightly_container_and_for_a_module(tmp_path):
    options = phases.HarnessOptions(repeats=2)
    (tmp_path / "sub").mkdir()
    inside = phases.scan_options("sub/b.py:make_small", options, ["step_ms"], cwd=tmp_path)
    assert inside.nightly == [
        "--mount", f"{tmp_path.resolve()}:/dir",
        "--mount", f"{HARNESS}:/opt/hourly/jaxbench_phases.py:ro",
        "--bench-cmd", shlex.join(["python3", "/opt/hourly/jaxbench_phases.py", "/dir/sub/b.py:make_small",
                                   *options.to_args()])]
    outside = phases.scan_options("/elsewhere/b.py", options, ["step_ms"], cwd=tmp_path)
    assert outside.nightly is None and "outside the current folder" in outside.nightly_gap
    module = phases.scan_options("pkg.bench:make", options, ["step_ms"], cwd=tmp_path)
    assert module.bench_cwd == str(tmp_path.resolve()) and "pkg.bench:make" in module.bench_cmd
    assert module.nightly is None and module.nightly_gap


def test_the_documented_example_and_every_phase_are_in_the_docs():
    doc = (ROOT / "docs" / "measuring.md").read_text()
    for p in harness.PHASES:
        assert f"| `{p.metric}` |" in doc, p.metric  # the table of what each phase measures
    example = ROOT / "docs" / "examples" / "jaxbench_phases_example.py"
    done = run_harness(f"{example}:make_small", "--phases", "trace,lower", "--repeats", "1", "--warmup", "0",
                       cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert set(metric.read_metrics(done.stdout)) == {"trace_ms", "lower_ms"}
