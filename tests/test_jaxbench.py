"""hourly.jaxbench with real JAX on the CPU."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp

from hourly import jaxbench
from hourly.jaxbench import BenchResult, PrecisionWarning
from hourly.profile.compare import parse_memory_profile

ROOT = Path(__file__).resolve().parents[1]


def child_env(**extra: str) -> dict[str, str]:
    env = {**os.environ, **extra}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.pop("HOURLY_MEMPROF_AT", None)
    return env


# ----------------------------------------------------------------------------- statistics


@pytest.mark.parametrize("q", [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0])
def test_quantile_matches_numpy_linear_method(q):
    values = sorted(np.random.default_rng(1).exponential(size=37).tolist())
    assert jaxbench.quantile(values, q) == pytest.approx(np.percentile(values, q * 100))


def test_result_statistics_match_numpy():
    times = np.random.default_rng(2).normal(1e-3, 1e-4, size=51).tolist()
    r = BenchResult("step", times, compile_time_s=0.5, warmup=3)
    med = np.median(times)
    assert r.median_s == pytest.approx(med)
    assert r.iqr_s == pytest.approx(np.percentile(times, 75) - np.percentile(times, 25))
    assert r.mad_s == pytest.approx(np.median(np.abs(np.array(times) - med)))
    assert (r.min_s, r.max_s, r.iters) == (min(times), max(times), 51)


def test_result_rejects_nonsense():
    with pytest.raises(ValueError):
        BenchResult("step", [], 0.1, 0)
    with pytest.raises(ValueError):
        BenchResult("step", [1.0], 0.1, 0, unit="hours")


def test_metric_lines_are_read_back_by_the_documented_regexes():
    r = BenchResult("step_time", [0.0012, 0.0013, 0.0011], compile_time_s=0.532, warmup=1)
    text = "\n".join([r.summary(), *r.metric_lines()])
    m = re.search(jaxbench.metric_regex("step_time_ms"), text)
    assert float(m.group("value")) == pytest.approx(r.median_s * 1e3, rel=1e-5)
    m = re.search(jaxbench.COMPILE_TIME_REGEX, text)
    assert float(m.group("value")) == pytest.approx(0.532)
    # the summary line must not be mistaken for a metric line
    assert len(re.findall(jaxbench.metric_regex("step_time_ms"), text)) == 1
    # a name that already carries the unit is not doubled; other units scale
    us = BenchResult("latency_us", [2e-6], 0.1, 0, unit="us")
    assert us.metric_lines()[0] == "METRIC latency_us: 2"


def test_documented_regex_is_the_one_exported():
    doc = (ROOT / "docs" / "measuring.md").read_text()
    assert jaxbench.metric_regex("step_time_ms") in doc
    assert jaxbench.COMPILE_TIME_REGEX in doc


# ----------------------------------------------------------------------------- timing


def _slow_to_compile(x):
    # 300 unrolled ops: XLA takes a long time to compile this, running it takes microseconds
    for i in range(300):
        x = jnp.sin(x) * 1.0001 + i
    return x


def test_compile_time_is_kept_out_of_the_step_times():
    fn = jax.jit(_slow_to_compile)
    r = jaxbench.benchmark(fn, np.ones(8, np.float32), iters=20, warmup=2)
    assert r.iters == 20 and r.warmup == 2
    assert r.compile_time_s > 50 * r.median_s, r.summary()
    assert r.compile_time_s > r.max_s, r.summary()
    # the function really ran each time: the median is a positive, finite time
    assert 0 < r.median_s < 0.1


def test_pytree_outputs_are_waited_for_and_inputs_end_up_on_the_device():
    @jax.jit
    def step(params, x):
        return {"w": params["w"] @ x, "stats": (jnp.sum(x), jnp.max(x))}

    params = {"w": np.ones((64, 64), np.float32)}
    r = jaxbench.benchmark(step, params, np.ones((64, 64), np.float32), iters=5, warmup=1,
                           name="tree_step")
    assert r.metric == "tree_step_ms" and r.iters == 5
    placed = jaxbench.put_on_device({"a": np.arange(4, dtype=np.float32)})
    assert isinstance(placed["a"], jax.Array)
    assert placed["a"].devices() == {jax.devices()[0]}


def test_float64_inputs_warn_when_float32_is_expected():
    fn = jax.jit(lambda x: x * 2)
    with pytest.warns(PrecisionWarning, match="64-bit where float32 is expected"):
        r = jaxbench.benchmark(fn, np.ones(4, np.float64), iters=2, warmup=0)
    assert any("float64" in w for w in r.warnings)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrecisionWarning)
        jaxbench.benchmark(fn, np.ones(4, np.float32), iters=2, warmup=0)
        jaxbench.benchmark(fn, np.ones(4, np.float64), iters=2, warmup=0, expect_dtype=None)


def test_x64_mode_warns_in_a_real_program():
    code = ("import jax, jax.numpy as jnp\nfrom hourly import jaxbench\n"
            "jaxbench.benchmark(jax.jit(lambda x: x + 1), jnp.ones(4, jnp.float32), iters=2)"
            ".report()\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=child_env(JAX_ENABLE_X64="1"), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "PrecisionWarning" in proc.stderr and "jax_enable_x64 is on" in proc.stderr
    assert "METRIC step_time_ms:" in proc.stdout


# ----------------------------------------------------------------------------- checkpoints


def test_memory_checkpoint_does_nothing_unless_asked(tmp_path, monkeypatch):
    monkeypatch.delenv("HOURLY_MEMPROF_AT", raising=False)
    assert jaxbench.memory_checkpoint("init", out_dir=tmp_path) is None
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError):
        jaxbench.memory_checkpoint("../escape")


def test_memory_checkpoint_saves_a_profile_that_sees_the_new_array(tmp_path, monkeypatch):
    monkeypatch.setenv("HOURLY_MEMPROF_AT", "before, after")
    monkeypatch.setenv("HOURLY_TRACE_DIR", str(tmp_path))
    before = jaxbench.memory_checkpoint("before")
    held = jnp.ones((123, 457), jnp.float32)
    after = jaxbench.memory_checkpoint("after")
    assert jaxbench.memory_checkpoint("elsewhere") is None
    assert (before, after) == (tmp_path / "memory-before.prof", tmp_path / "memory-after.prof")
    grown = parse_memory_profile(after).total_bytes() - parse_memory_profile(before).total_bytes()
    assert grown == held.nbytes


# ----------------------------------------------------------------------------- the example


def test_documented_example_runs_and_prints_its_metric():
    example = ROOT / "docs" / "examples" / "jaxbench_example.py"
    proc = subprocess.run([sys.executable, str(example), "--iters", "5", "--warmup", "1",
                           "--width", "64", "--batch", "32"],
                          capture_output=True, text=True, env=child_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr
    value = re.search(jaxbench.metric_regex("train_step_ms"), proc.stdout)
    compile_s = re.search(jaxbench.COMPILE_TIME_REGEX, proc.stdout)
    assert value and float(value.group("value")) > 0
    assert compile_s and float(compile_s.group("value")) > 0
    assert "PrecisionWarning" not in proc.stderr
