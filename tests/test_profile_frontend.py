"""The front-end profile of ``hourly profile``: tracing, lowering and dispatch profiled in Python at
both states (hourly/frontend_profile.py) and diffed (hourly/profile/frontend.py).

Real JAX on the CPU: two versions of a small package the benchmark's function calls while it is
traced, one with a planted slow function; the diff must name that function first. The pure diff is
driven with plain lists.
"""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from hourly.profile import frontend
from hourly.profile.frontend import diff, diff_phase, harness_target, hunted_metric, moved, plan

# ----------------------------------------------------------------------------- pure parts


def test_the_hunted_phase_is_read_from_the_metric_regex():
    assert hunted_metric(r"MEDIAN trace_ms:\s*(?P<value>[-+]?\d+\.?\d*)") == "trace_ms"
    assert hunted_metric(r"MEDIAN step_dispatch_us:\s*(?P<value>\S+)") == "step_dispatch_us"
    assert hunted_metric(r"MEDIAN dispatch_us:\s*(?P<value>\S+)") == "dispatch_us"
    assert hunted_metric(r"MEDIAN compile_cached_ms:\s*(?P<value>\S+)") == "compile_cached_ms"
    assert hunted_metric(r"MLUPS:\s*(?P<value>\S+)") is None
    assert hunted_metric(r"my_trace_ms_total:\s*(?P<value>\S+)") is None  # part of another name


def test_the_harness_target_is_found_in_the_benchmark_command():
    assert harness_target(["python3", "/x/hourly/jaxbench_phases.py", "/w/bench.py:make_small", "--phases",
                           "trace"]) == "/w/bench.py:make_small"
    assert harness_target(["python", "-m", "hourly.jaxbench_phases", "pkg.bench:make"]) == "pkg.bench:make"
    assert harness_target(["python3", "bench.py"]) is None


def test_the_plan_profiles_a_front_end_step_of_the_harness_and_says_why_not_otherwise():
    harness = ["python3", "/x/jaxbench_phases.py", "/w/bench.py", "--phases", "trace"]
    p = plan("auto", r"MEDIAN trace_ms:\s*(?P<value>\S+)", harness, "/w")
    assert (p.target, p.cwd, p.metric, p.why) == ("/w/bench.py", "/w", "trace_ms", "the step is in trace_ms")
    step = plan("auto", r"MEDIAN step_ms:\s*(?P<value>\S+)", harness, None)
    assert step.target is None and "the step is in step_ms, not a front-end phase" in step.why
    other = plan("auto", r"MEDIAN lower_ms:\s*(?P<value>\S+)", ["python3", "bench.py"], None)
    assert other.target is None and "--front-end bench.py[:make]" in other.why
    assert plan("off", r"MEDIAN trace_ms:(?P<value>\S+)", harness, None).target is None
    forced = plan("mine.py:make", r"MLUPS:\s*(?P<value>\S+)", ["python3", "bench.py"], "/w")
    assert (forced.target, forced.cwd) == ("mine.py:make", "/w")


def test_a_change_counts_beyond_its_floor_when_the_repeats_tell_the_states_apart():
    good, bad = [10.0, 10.2, 9.9, 10.1, 10.05], [14.0, 14.3, 13.9, 14.1, 14.2]
    assert moved(good, bad, floor=1.0) is True
    assert moved(good, bad, floor=5.0) is False        # under the floor: no change, whatever the test says
    assert moved(good, [10.1, 9.8, 10.3, 10.0, 9.9], floor=0.01) is False  # interleaved: noise
    assert moved([10.0, 10.1], [14.0, 14.2], floor=1.0) is None  # two repeats say nothing of the noise
    assert moved([0.0] * 5, [3.0, 3.1, 2.9, 3.0, 3.2], floor=1.0) is True  # a new function
    # a process slowed for most of its repeats: the medians and the test say "moved", the fastest
    # repeats do not (MLIR's context set-up in two processes of this machine under load)
    spiky, steady = [2.4587, 8.3963, 5.4142, 10.7838, 8.0975, 6.5413, 6.7398], [2.4596, 2.4219, 2.4471, 2.4241,
                                                                                 2.4389, 2.4115, 2.4851]
    assert moved(spiky, steady, floor=0.2) is False


def _doc(rows: dict[str, tuple[list[float], list[float], list[int]]], wall: list[float]) -> dict:
    return {"wall_ms": wall, "plain_ms": [w / 2 for w in wall],
            "functions": {k: {"own_ms": own, "cum_ms": cum, "calls": calls} for k, (own, cum, calls) in rows.items()}}


def test_the_diff_puts_the_function_whose_own_time_grew_first_and_its_callers_on_the_path():
    jitter = [0.0, 0.3, -0.2, 0.1, -0.1, 0.2, -0.3]
    base = {"jax._src.core:bind": ([5 + j for j in jitter], [60 + j for j in jitter], [129] * 7),
            "jax._src.pjit:trace": ([1 + j / 10 for j in jitter], [100 + j for j in jitter], [1] * 7),
            "<built-in method builtins.isinstance>": ([2 + j / 10 for j in jitter], [2 + j / 10 for j in jitter],
                                                      [5403] * 7)}
    good = _doc(base, [100 + j for j in jitter])
    grown = dict(base)
    grown["tracelib.core:_canonicalize"] = ([30 + j for j in jitter], [30 + j for j in jitter], [8] * 7)
    grown["jax._src.pjit:trace"] = ([1 + j / 10 for j in jitter], [131 + j for j in jitter], [1] * 7)
    grown["jax._src.core:bind"] = ([5 + j for j in jitter], [60 + j for j in jitter], [130] * 7)
    bad = _doc(grown, [131 + j for j in jitter])
    d = diff_phase(good, bad)
    assert d["total"]["beyond_noise"] is True and d["total"]["delta_ms"] == pytest.approx(31)
    assert [r["function"] for r in d["grew_own"]] == ["tracelib.core:_canonicalize"]
    assert d["grew_own"][0]["only"] == "bad" and d["grew_own"][0]["calls"] == {"good": 0, "bad": 8}
    assert [r["function"] for r in d["grew_cum"]] == ["jax._src.pjit:trace", "tracelib.core:_canonicalize"]
    assert {r["function"] for r in d["calls_changed"]} == {"tracelib.core:_canonicalize", "jax._src.core:bind"}
    assert d["shrank_own"] == [] and d["unjudged_count"] == 0


def test_with_too_few_repeats_nothing_is_judged_and_the_record_says_so():
    good = {"repeats": 2, "phases": {"trace": _doc({"m:f": ([1.0, 1.1], [1.0, 1.1], [1, 1])}, [10.0, 10.5])}}
    bad = {"repeats": 2, "phases": {"trace": _doc({"m:f": ([9.0, 9.1], [9.0, 9.1], [1, 1])}, [18.0, 18.5])}}
    d = diff(good, bad, "trace_ms")
    ph = d["phases"]["trace"]
    assert ph["total"]["beyond_noise"] is None and ph["grew_own"] == [] and ph["unjudged"] == ["m:f"]
    assert any("fewer than 3 repeats" in n for n in d["notes"])
    text = "\n".join(frontend.lines(d))
    assert "not judged: too few repeats" in text and "not judged (too few repeats): 1 functions" in text


# ----------------------------------------------------------------------------- real JAX, two states

CORE_GOOD = textwrap.dedent("""\
    import jax.numpy as jnp

    def _check_shapes(x):
        return x.shape

    def layer(x, w):
        _check_shapes(x)
        return jnp.tanh(x @ w)
    """)

CORE_BAD = CORE_GOOD.replace('''def layer(x, w):
    _check_shapes(x)
''', '''def _canonicalize_slowly(shape):
    acc = 0
    for i in range(30000):
        acc += (i * 7) % 13
    return shape

def layer(x, w):
    _check_shapes(x)
    _canonicalize_slowly(x.shape)
''')

BENCH = textwrap.dedent("""\
    import jax, jax.numpy as jnp
    import tracelib.core

    def model(params, x):
        for w in params:
            x = tracelib.core.layer(x, w)
        return x.sum()

    def make():
        params = [jnp.ones((32, 32), jnp.float32) * 0.01 for _ in range(8)]
        return jax.grad(model), (params, jnp.ones((8, 32), jnp.float32))
    """)


@pytest.fixture(scope="module")
def two_states(tmp_path_factory):
    """Each state's front-end profile, its Python seeing its own version of `tracelib`."""
    pytest.importorskip("jax")
    work = tmp_path_factory.mktemp("frontend")
    (work / "bench.py").write_text(BENCH)
    docs = {}
    for side, core in (("good", CORE_GOOD), ("bad", CORE_BAD), ("good-again", CORE_GOOD)):
        pkg = work / side / "tracelib"
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "core.py").write_text(core)
        out = work / side / frontend.FILE
        res = frontend.run_profile(sys.executable, "bench.py", out, str(work), {"PYTHONPATH": str(work / side)},
                                   repeats=7, warmup=1, iters=30, timeout=600)
        assert res.ok and out.is_file(), res.output
        docs[side] = frontend.load(out)
    return docs


def test_the_profile_file_holds_each_phase_per_repeat_by_module_and_function(two_states):
    doc = two_states["bad"]
    assert doc["profiler"] == "cProfile" and doc["repeats"] == 7 and doc["backend"] == "cpu"
    assert set(doc["phases"]) == {"trace", "lower", "dispatch"}
    trace = doc["phases"]["trace"]
    assert len(trace["wall_ms"]) == len(trace["plain_ms"]) == 7
    planted = trace["functions"]["tracelib.core:_canonicalize_slowly"]
    assert planted["calls"] == [8] * 7 and min(planted["own_ms"]) > 0
    assert "jax._src.interpreters.partial_eval:trace_to_jaxpr" in trace["functions"] or \
        any(k.startswith("jax._src.") for k in trace["functions"])
    # a C function carries the Python function that spent most time in it
    assert any(k.startswith("<") and f.get("via") for k, f in trace["functions"].items())
    # nothing compiles in the dispatch rounds (they follow the front end's cleared caches)
    assert not any("compile" in k for k in doc["phases"]["dispatch"]["functions"]), \
        [k for k in doc["phases"]["dispatch"]["functions"] if "compile" in k]


def test_the_diff_names_the_planted_function_first(two_states):
    d = diff(two_states["good"], two_states["bad"], "trace_ms")
    assert list(d["phases"]) == ["trace", "lower", "dispatch"]  # the hunted phase first
    trace = d["phases"]["trace"]
    first = trace["grew_own"][0]
    assert first["function"] == "tracelib.core:_canonicalize_slowly", trace["grew_own"][:3]
    assert first["only"] == "bad" and first["calls"] == {"good": 0, "bad": 8}
    assert first["d_own_ms"] > 0 and first["own_moved"] is True
    assert "tracelib.core:_canonicalize_slowly" in [r["function"] for r in trace["grew_cum"]]
    # lowering does not run the planted code: none of its functions is the planted one
    assert "tracelib.core:_canonicalize_slowly" not in [r["function"] for r in d["phases"]["lower"]["grew_own"]]
    text = "\n".join(frontend.lines({**d, "target": "bench.py"}))
    assert "own time grew beyond noise (where the time went), largest first:" in text
    row = next(line for line in text.splitlines() if "_canonicalize_slowly" in line)
    assert "(new)" in row and "calls 0 → 8" in row


def test_two_processes_of_one_state_differ_in_no_functions_own_time(two_states):
    """Noise is judged across the repeats: the good state profiled again in another process grows no
    function's own time beyond noise. (Its totals and cumulative times may move with the machine's
    load between the two processes: docs/explain.md says so; under a load average of 9 to 12 here
    the trace total of such a pair came out 'beyond noise' in 4 of 6 orderings, own time in none.)"""
    d = diff(two_states["good"], two_states["good-again"], "trace_ms")
    assert [(p, r["function"]) for p, ph in d["phases"].items() for r in ph["grew_own"] + ph["shrank_own"]] == []
    assert d["phases"]["trace"]["functions"] > 100


def test_a_failing_target_leaves_no_profile_and_one_line_with_its_error(tmp_path):
    pytest.importorskip("jax")
    (tmp_path / "bench.py").write_text("def make():\n    raise KeyError('depth')\n")
    out = tmp_path / "p" / frontend.FILE
    res = frontend.run_profile(sys.executable, "bench.py", out, str(tmp_path), None, repeats=3, timeout=300)
    assert not res.ok and not out.exists()
    assert "hourly-frontend-profile: error: make() in bench.py raised KeyError: 'depth' (bench.py:2)" in res.output
    assert out.with_suffix(".log").is_file()


# ----------------------------------------------------------------------------- hourly profile, end to end

STEP_BENCH = textwrap.dedent("""\
    import jax, jax.numpy as jnp
    import jax_demo

    def expand_rules(n):
        acc = 0
        for i in range(n):
            acc += (i * 7) % 13
        return acc

    def model(params, x):
        for w in params:
            expand_rules(int(round((1 - jax_demo.FACTOR) * 400000)))
            x = jnp.tanh(x @ w)
        return x.sum()

    def make():
        params = [jnp.ones((32, 32), jnp.float32) * 0.01 for _ in range(8)]
        return jax.grad(model), (params, jnp.ones((8, 32), jnp.float32))
    """)


@pytest.mark.slow
def test_hourly_profile_diffs_the_front_end_of_a_tracing_step(capsys, made, venv_python, tmp_path):
    from hourly.cli import main
    from hourly.measure.phases import HARNESS
    pytest.importorskip("jax")
    bench = tmp_path / "bench_fe.py"
    bench.write_text(STEP_BENCH)
    work = tmp_path / "work"
    code = main(["scan", "--from", "Aug 24 2023 13:00", "--to", "Aug 24 2023 14:00",
                 "--xla-repo", str(made.xla), "--jax-repo", str(made.jax), "--build-cmd", str(made.build_script),
                 "--python", venv_python, "--workdir", str(work), "--repeats", "1",
                 "--bench-cmd", f"python3 {HARNESS} {bench} --phases trace --repeats 3 --warmup 1",
                 "--metric-regex", r"MEDIAN trace_ms:\s*(?P<value>[0-9.]+)", "--lower-is-better"])
    assert code == 0, capsys.readouterr()
    capsys.readouterr()
    code = main(["profile", "--workdir", str(work), "--good", "Aug 24 2023 13:00", "--bad", "Aug 24 2023 14:00",
                 "--front-end-repeats", "5", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    rec = json.loads(out)["profiles"][0]
    fe = rec["front_end"]
    assert fe["metric"] == "trace_ms" and fe["target"] == str(bench) and fe["why"] == "the step is in trace_ms"
    first = fe["phases"]["trace"]["grew_own"][0]
    assert first["function"] == "bench_fe:expand_rules", fe["phases"]["trace"]["grew_own"][:3]
    assert first["calls"] == {"good": 8, "bad": 8} and first["d_own_ms"] > 0
    assert rec["comparison"]["op_reading"].startswith("host ops: XLA's thunks")  # the CPU: no device timeline
    folder = work / "profiles" / "manual"
    assert json.loads((folder / "profile.json").read_text())["front_end"]["phases"]["trace"]["grew_own"][0][
        "function"] == "bench_fe:expand_rules"
    text = (folder / "comparison.txt").read_text()
    assert "Front end (Python level: cProfile of" in text and "bench_fe:expand_rules" in text
    main(["report", "--workdir", str(work)])
    md = (work / "report" / "report.md").read_text()
    assert "## Traces and memory profiles" in md and "bench_fe:expand_rules" in md
    assert "op times: host ops: XLA's thunks" in md
