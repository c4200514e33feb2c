"""hourly.profile.compare: pprof and Perfetto parsing, and good-vs-bad comparison on real captures."""

from __future__ import annotations

import gzip
import json
import sys
import textwrap

import pytest

from hourly.profile import compare as profiles
from hourly.profile.compare import (
    ProfileFormatError,
    compare,
    iter_fields,
    parse_memory_profile,
    parse_perfetto_trace,
    pprof_diff_command,
)

# ----------------------------------------------------------------------------- wire format


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number: int, value: int | bytes) -> bytes:
    if isinstance(value, bytes):
        return varint(number << 3 | 2) + varint(len(value)) + value
    return varint(number << 3) + varint(value)


def test_varints_and_length_delimited_fields_decode():
    buf = field(1, 300) + field(2, b"abc") + field(3, (1 << 64) - 5) + field(15, 0)
    assert list(iter_fields(buf)) == [(1, 0, 300), (2, 2, b"abc"), (3, 0, (1 << 64) - 5),
                                      (15, 0, 0)]
    with pytest.raises(ProfileFormatError):
        list(iter_fields(field(2, b"abcdef")[:-2]))
    with pytest.raises(ProfileFormatError):
        list(iter_fields(b"\x0b"))  # wire type 3 (groups) is not in profile.proto


def test_hand_built_profile_decodes_packed_and_unpacked_samples():
    # strings: 0 "", 1 allocations, 2 count, 3 space, 4 bytes, 5 kind, 6 buffer, 7 f, 8 a.py,
    # 9 g, 10 b.py
    strings = ["", "allocations", "count", "space", "bytes", "kind", "buffer", "f", "a.py", "g",
               "b.py"]
    prof = field(1, field(1, 1) + field(2, 2)) + field(1, field(1, 3) + field(2, 4))
    # sample 1: packed location ids and values, with a label
    prof += field(2, field(1, varint(1) + varint(2)) + field(2, varint(2) + varint(4096))
                  + field(3, field(1, 5) + field(2, 6)))
    # sample 2: unpacked repeated fields (allowed by the wire format)
    prof += field(2, field(1, 2) + field(2, 1) + field(2, 100) + field(3, field(1, 5) + field(2, 6)))
    prof += field(4, field(1, 1) + field(4, field(1, 1) + field(2, 12)))
    prof += field(4, field(1, 2) + field(4, field(1, 2) + field(2, 34)))
    prof += field(5, field(1, 1) + field(2, 7) + field(4, 8))
    prof += field(5, field(1, 2) + field(2, 9) + field(4, 10))
    prof += b"".join(field(6, s.encode()) for s in strings)
    parsed = parse_memory_profile(gzip.compress(prof))
    assert parsed.sample_types == [("allocations", "count"), ("space", "bytes")]
    first, second = parsed.samples
    assert [str(f) for f in first.stack] == ["f (a.py:12)", "g (b.py:34)"]
    assert (first.count, first.bytes, first.kind) == (2, 4096, "buffer")
    assert (second.count, second.bytes) == (1, 100)
    assert parsed.total_bytes() == 4196 and parsed.total_count() == 3
    assert parse_memory_profile(prof).total_bytes() == 4196  # not gzip'd: fine too


def test_real_profile_totals_match_the_live_arrays(tmp_path):
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    def live_bytes():
        return sum(a.nbytes for a in jax.live_arrays())

    base = parse_memory_profile(jax.profiler.device_memory_profile())
    base_live = live_bytes()
    held = [jnp.ones((300, 700), jnp.float32), jnp.zeros((5, 5, 5), jnp.int32)]
    jax.block_until_ready(held)
    path = tmp_path / "m.prof"
    jax.profiler.save_device_memory_profile(str(path))
    now = parse_memory_profile(path)
    created = sum(a.nbytes for a in held)
    assert now.total_bytes() - base.total_bytes() == created
    assert live_bytes() - base_live == created
    sites = now.by_site()
    here = [s for s in sites if s.startswith("test_real_profile_totals_match_the_live_arrays ")]
    assert here, list(sites)
    assert sum(sites[s].bytes for s in here) >= created


def test_garbage_is_not_a_profile():
    with pytest.raises(ProfileFormatError):
        parse_memory_profile(gzip.compress(b"\xff\xff\xff"))


# ----------------------------------------------------------------------------- traces


def test_device_timeline_wins_and_derived_rows_are_not_double_counted(tmp_path):
    # The shape of a GPU trace's device process: kernels on streams plus derived rows.
    events = [
        {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/device:GPU:0"}},
        {"ph": "M", "pid": 1, "tid": 10, "name": "thread_name", "args": {"name": "Stream #13"}},
        {"ph": "M", "pid": 1, "tid": 11, "name": "thread_name", "args": {"name": "XLA Modules"}},
        {"ph": "M", "pid": 2, "name": "process_name", "args": {"name": "/host:CPU"}},
        {"ph": "X", "pid": 1, "tid": 10, "ts": 0, "dur": 5.0, "name": "gemm_kernel"},
        {"ph": "X", "pid": 1, "tid": 10, "ts": 9, "dur": 7.0, "name": "gemm_kernel"},
        {"ph": "X", "pid": 1, "tid": 10, "ts": 20, "dur": 1.5, "name": "loop_fusion"},
        {"ph": "X", "pid": 1, "tid": 11, "ts": 0, "dur": 30.0, "name": "jit_step"},
        {"ph": "X", "pid": 2, "tid": 3, "ts": 0, "dur": 99.0, "name": "PjitFunction(step)"},
    ]
    path = tmp_path / "perfetto_trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    summary = parse_perfetto_trace(path)
    assert summary.source == "device"
    assert {k: (v.total_us, v.count) for k, v in summary.ops.items()} == {
        "gemm_kernel": (12.0, 2), "loop_fusion": (1.5, 1)}
    assert summary.top(1)[0].name == "gemm_kernel"


def test_pprof_command_quotes_paths():
    assert pprof_diff_command("a b/good.prof", "bad.prof") == \
        "pprof -http=: --diff_base 'a b/good.prof' bad.prof"


# ----------------------------------------------------------------------------- good vs bad

GOOD_OR_BAD = textwrap.dedent("""\
    import sys
    import jax, jax.numpy as jnp

    @jax.jit
    def base_work(x):
        return jnp.tanh(x) + 1.0

    @jax.jit
    def extra_work(x):
        return x @ x

    def grow_cache():
        return jnp.ones((512, 1024), jnp.float32)

    x = jnp.ones((384, 384), jnp.float32)
    y = base_work(x)
    kept = []
    if sys.argv[1] == "bad":
        kept.append(grow_cache())
        for _ in range(25):
            y = extra_work(y)
    jax.block_until_ready(y)
    """)


@pytest.fixture(scope="module")
def good_and_bad(tmp_path_factory):
    pytest.importorskip("jax")
    from hourly.profile.capture import TraceOptions, capture

    work = tmp_path_factory.mktemp("goodbad")
    (work / "bench.py").write_text(GOOD_OR_BAD)
    options = TraceOptions(python_tracer_level=0)
    for state in ("good", "bad"):
        capture([sys.executable, "bench.py", state], work / state, cwd=work, options=options)
    return work


def test_comparison_finds_the_extra_memory_at_its_site(good_and_bad):
    result = compare(good_and_bad / "good", good_and_bad / "bad")
    top = result.memory[0]
    assert top.name.startswith("grow_cache (") and top.name.endswith("bench.py:13)"), top.name
    assert (top.good, top.bad, top.delta) == (0, 512 * 1024 * 4, 512 * 1024 * 4)
    assert result.bad_memory_total - result.good_memory_total == 512 * 1024 * 4


def test_comparison_finds_the_extra_compute(good_and_bad):
    result = compare(good_and_bad / "good", good_and_bad / "bad")
    assert result.op_source == "hlo_op"
    extra = [c for c in result.ops if c.name.startswith("jit_extra_work/")]
    assert extra and all(c.good == 0 and c.bad > 0 and c.bad_count >= 25 for c in extra)
    assert result.ops[0].name.startswith("jit_extra_work/"), result.render()
    base = [c for c in result.ops if c.name.startswith("jit_base_work/")]
    assert base and all(c.good_count == c.bad_count == 1 for c in base)


def test_rendered_comparison_names_the_site_and_the_pprof_command(good_and_bad):
    result = compare(good_and_bad / "good", good_and_bad / "bad")
    text = result.render(top=5)
    assert "grow_cache (" in text and "jit_extra_work/" in text
    assert "+2.000" in text  # MiB grown at that site
    good_prof, bad_prof = good_and_bad / "good" / "memory.prof", good_and_bad / "bad" / "memory.prof"
    assert f"pprof -http=: --diff_base {good_prof} {bad_prof}" in text
    assert result.pprof_command == pprof_diff_command(good_prof, bad_prof)


def test_compare_profiles_command(good_and_bad):
    import typer
    from typer.testing import CliRunner

    from hourly.commands.trace import compare_profiles

    app = typer.Typer()
    app.command("compare-profiles")(compare_profiles)
    app.command("other")(lambda: None)
    out = CliRunner().invoke(app, ["compare-profiles", str(good_and_bad / "good"),
                                   str(good_and_bad / "bad"), "--top", "3"])
    assert out.exit_code == 0, out.output
    assert "grow_cache (" in out.output and "--diff_base" in out.output


def test_missing_captures_are_noted_not_fatal(tmp_path, good_and_bad):
    (tmp_path / "empty").mkdir()
    result = compare(tmp_path / "empty", good_and_bad / "bad")
    assert result.ops == [] and result.memory == [] and result.pprof_command is None
    assert any(n.startswith("no trace (") for n in result.notes)
    assert any("no memory.prof" in n for n in result.notes)
    with pytest.raises(FileNotFoundError):
        profiles.load_capture(tmp_path / "absent")


def test_compare_profiles_on_a_folder_with_no_trace_is_one_line_exit_1(tmp_path, good_and_bad, capsys):
    # hourly's own entry point in this process: what is checked is the command's answer, not the process
    from hourly.cli import main
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("not a capture\n")
    for a, b in ((tmp_path / "empty", good_and_bad / "bad"), (good_and_bad / "good", tmp_path / "empty")):
        code = main(["compare-profiles", str(a), str(b)])
        out, err = capsys.readouterr()
        assert code == 1 and out == "", (out, err)
        assert err.startswith(f"hourly: error: no trace or memory profile in {tmp_path / 'empty'}"), err
        assert "hourly trace" in err and len(err.strip().splitlines()) == 1, err


def test_a_capture_folder_with_a_dangling_link_is_compared_not_a_traceback(tmp_path, good_and_bad, capsys):
    """A trace file name left as a broken link (a capture copied without its target, a cleaned cache)
    stopped compare-profiles with `unexpected error: FileNotFoundError` (exit 3)."""
    import shutil

    from hourly.cli import main
    good = tmp_path / "good"
    shutil.copytree(good_and_bad / "good", good)
    (good / "old.xplane.pb").symlink_to(tmp_path / "gone" / "vm.xplane.pb")
    (good / "stale").mkdir()
    (good / "stale" / "perfetto_trace.json.gz").symlink_to(tmp_path / "gone" / "t.json.gz")
    assert main(["compare-profiles", str(good), str(good_and_bad / "bad")]) == 0, capsys.readouterr().err
    out, err = capsys.readouterr()
    assert "jit_extra_work/" in out and "Traceback" not in err
    capture = profiles.load_capture(good)
    assert capture.xplane is not None and capture.xplane.name != "old.xplane.pb" and capture.xplane.exists()
