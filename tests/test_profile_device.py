"""Device traces: the profiler's XSpace (``*.xplane.pb``) read by hourly itself.

A real capture on the CPU (jax here has no accelerator) checks the reader against the Perfetto
reader on the same run; XSpaces in the shape of a TPU's and a GPU's device planes (line names and
stats as tsl/profiler/utils/xplane_schema names them) are encoded by the test with the protobuf
wire format, as the pprof tests build profiles. A real TPU trace is read by
``benchmarks/tpu/profile_capture.py`` on the TPU machine (docs/explain.md says what it checked).
"""

from __future__ import annotations

import gzip
import json
import struct
import sys
import textwrap

import pytest

from hourly.analysis import op_times
from hourly.profile.compare import compare, load_capture, parse_perfetto_trace, read_trace
from hourly.profile.xplane import op_table, parse_xspace

# ----------------------------------------------------------------------------- an XSpace encoder


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def fld(number: int, value: int | bytes | str | float) -> bytes:
    if isinstance(value, float):
        return varint(number << 3 | 1) + struct.pack("<d", value)
    if isinstance(value, str):
        value = value.encode()
    if isinstance(value, bytes):
        return varint(number << 3 | 2) + varint(len(value)) + value
    return varint(number << 3) + varint(value)


class Plane:
    """One XPlane: lines of (name, offset µs, duration µs, stats) events; metadata made as needed."""

    def __init__(self, pid: int, name: str):
        self.pid, self.name = pid, name
        self.events: dict[str, int] = {}
        self.stats: dict[str, int] = {}
        self.lines: list[bytes] = []

    def _event_id(self, name: str) -> int:
        return self.events.setdefault(name, len(self.events) + 1)

    def _stat(self, key: str, value) -> bytes:
        sid = self.stats.setdefault(key, len(self.stats) + 1)
        if isinstance(value, str):
            return fld(1, sid) + fld(5, value)
        if isinstance(value, float):
            return fld(1, sid) + fld(2, value)
        return fld(1, sid) + fld(4, value)

    def line(self, lid: int, name: str, timestamp_ns: int, events: list[tuple]) -> Plane:
        body = fld(1, lid) + fld(2, name) + fld(3, timestamp_ns)
        for ename, offset_us, dur_us, stats in events:
            ev = fld(1, self._event_id(ename)) + fld(2, int(offset_us * 1e6)) + fld(3, int(dur_us * 1e6))
            ev += b"".join(fld(4, self._stat(k, v)) for k, v in stats.items())
            body += fld(4, ev)
        self.lines.append(body)
        return self

    def encode(self) -> bytes:
        out = fld(1, self.pid) + fld(2, self.name) + b"".join(fld(3, ln) for ln in self.lines)
        for name, mid in self.events.items():
            out += fld(4, fld(1, mid) + fld(2, fld(1, mid) + fld(2, name)))
        for name, sid in self.stats.items():
            out += fld(5, fld(1, sid) + fld(2, fld(1, sid) + fld(2, name)))
        return out


def xspace(*planes: Plane) -> bytes:
    return b"".join(fld(1, p.encode()) for p in planes) + fld(4, "tpu-vm")


def host_plane() -> Plane:
    return Plane(1, "/host:CPU").line(1, "python", 1_000, [
        ("PjitFunction(step)", 0, 900.0, {}), ("ParseArguments", 1, 2.0, {})])


#: how the 2026-12-05 TPU machine (libtpu 0.0.42.1) named its XLA Ops events: the whole instruction
TPU_TEXT = {"fusion.1": "%fusion.1 = (f32[128,128]{1,0}) fusion(f32[128,128]{1,0} %p.1), kind=kLoop, "
                        "calls=%fused_computation",
            "convolution.2": "%convolution.2 = f32[128,128]{1,0} convolution(f32[128,128]{1,0} %a, "
                             "f32[128,128]{1,0} %b), dim_labels=bf_io->bf",
            "fusion.7": "ROOT %fusion.7 = f32[128]{0} fusion(f32[128,128]{1,0} %fusion.1), kind=kInput"}


def tpu_plane(ordinal: int, extra_op: bool, with_program_id: bool = True, as_text: bool = False) -> Plane:
    """A v5e chip's plane: XLA Modules around XLA Ops, Steps and Framework Ops repeating them.
    The step runs three times; ``extra_op`` adds a fusion the first-bad state gained; ``as_text``
    names each op by its whole instruction text (:data:`TPU_TEXT`), as a real TPU trace did."""
    op = (lambda n: TPU_TEXT[n]) if as_text else (lambda n: n)
    modules, ops, steps, framework = [], [], [], []
    for step in range(3):
        t = 100.0 * step
        pid = {"program_id": 77} if with_program_id else {}
        modules.append(("jit_train_step(77)", t, 60.0, dict(pid)))
        steps.append((f"{step}", t, 60.0, {}))
        ops.append((op("fusion.1"), t + 1, 10.0 + step * 0.1, dict(pid, hlo_category="loop fusion")))
        ops.append((op("convolution.2"), t + 12, 30.0, dict(pid, hlo_category="convolution")))
        framework.append(("jit(train_step)/dot_general", t + 12, 30.0, {}))
        if extra_op:
            ops.append((op("fusion.7"), t + 43, 8.0, dict(pid, hlo_category="loop fusion")))
    p = Plane(10 + ordinal, f"/device:TPU:{ordinal}")
    p.line(1, "Steps", 2_000, steps).line(2, "XLA Modules", 2_000, modules)
    p.line(3, "XLA Ops", 2_000, ops).line(4, "Framework Ops", 2_000, framework)
    return p


# ----------------------------------------------------------------------------- a real CPU trace

BENCH = textwrap.dedent("""\
    import jax, jax.numpy as jnp

    @jax.jit
    def f(x):
        return jnp.tanh(x @ x).sum()

    x = jnp.ones((96, 96), jnp.float32)
    for _ in range(6):
        y = f(x)
    jax.block_until_ready(y)
    """)


@pytest.fixture(scope="module")
def cpu_capture(tmp_path_factory):
    pytest.importorskip("jax")
    from hourly.profile.capture import TraceOptions, capture

    work = tmp_path_factory.mktemp("cpucap")
    (work / "bench.py").write_text(BENCH)
    capture([sys.executable, "bench.py"], work / "cap", cwd=work, options=TraceOptions(python_tracer_level=0))
    return work / "cap"


def test_the_xspace_reader_and_the_perfetto_reader_agree_on_a_real_cpu_trace(cpu_capture):
    cap = load_capture(cpu_capture)
    assert cap.xplane is not None and cap.perfetto is not None
    space = parse_xspace(cap.xplane)
    assert "/host:CPU" in [p["plane"] for p in space.inventory()]
    from_xplane, from_json = read_trace(cap), parse_perfetto_trace(cap.perfetto)
    assert from_xplane.reader == "xplane" and from_xplane.source == from_json.source == "hlo_op"
    assert {k: (v.count, round(v.total_us, 3)) for k, v in from_xplane.ops.items()} == \
        {k: (v.count, round(v.total_us, 3)) for k, v in from_json.ops.items()}
    f_ops = [k for k in from_xplane.ops if k.startswith("jit_f/")]
    assert f_ops and all(from_xplane.ops[k].count == 6 for k in f_ops)
    # no device timeline on the CPU: the table says it read host ops, and where
    assert from_xplane.describe().startswith("host ops: XLA's thunks on /host:CPU (no device timeline")
    assert cap.xplane.name in from_xplane.describe()


def test_the_manifest_keeps_the_devices_memory_stats_and_none_on_the_cpu(cpu_capture):
    manifest = json.loads((cpu_capture / "manifest.json").read_text())
    assert manifest["backend"] == "cpu" and manifest["device_memory"] == {}  # the CPU reports no memory_stats()


def test_an_unreadable_xspace_falls_back_to_the_perfetto_trace_and_says_so(cpu_capture, tmp_path):
    import shutil
    copy = tmp_path / "cap"
    shutil.copytree(cpu_capture, copy)
    xp = load_capture(copy).xplane
    xp.write_bytes(b"\x0b\x0b\x0b")  # wire type 3: no XSpace
    summary = read_trace(load_capture(copy))
    assert summary.reader == "perfetto" and summary.source == "hlo_op"
    assert any("could not be read" in n and "Perfetto trace was read instead" in n for n in summary.notes)


# ----------------------------------------------------------------------------- a TPU's planes


def test_a_tpu_trace_is_read_from_the_xla_ops_line_of_device_0_by_module():
    data = xspace(host_plane(), tpu_plane(0, extra_op=False), tpu_plane(1, extra_op=False))
    summary = op_table(parse_xspace(data), "t.xplane.pb")
    assert summary.source == "device" and summary.plane == "/device:TPU:0" and summary.lines == ["XLA Ops"]
    assert {k: v.count for k, v in summary.ops.items()} == {"jit_train_step/fusion.1": 3,
                                                            "jit_train_step/convolution.2": 3}
    conv = summary.ops["jit_train_step/convolution.2"]
    assert conv.total_us == pytest.approx(90.0) and conv.durations == pytest.approx([30.0] * 3)
    assert summary.ops["jit_train_step/fusion.1"].durations == pytest.approx([10.0, 10.1, 10.2])  # in time order
    assert summary.describe() == "device ops of /device:TPU:0 (the XLA Ops line, from t.xplane.pb)"
    assert any("/device:TPU:1" in n for n in summary.notes)  # the other chip is named, not summed in


def test_an_op_without_a_program_id_gets_the_module_whose_time_holds_it():
    summary = op_table(parse_xspace(xspace(tpu_plane(0, extra_op=True, with_program_id=False))))
    assert set(summary.ops) == {"jit_train_step/fusion.1", "jit_train_step/convolution.2", "jit_train_step/fusion.7"}
    assert not summary.notes


@pytest.mark.parametrize("as_text", [False, True], ids=["op-names", "instruction-text"])
def test_the_op_time_join_times_changed_instructions_from_device_ops(tmp_path, as_text):
    """What `hourly explain` does at a TPU culprit: the dump's changed instructions looked up in the
    device op tables of both states' traces (module/op keys as the HLO diff names them) — also when
    the chip names its ops by their whole instruction text (the real TPU's trace: 0 rows before)."""
    for side, extra in (("good", False), ("bad", True)):
        folder = tmp_path / side / "plugins" / "profile" / "2026_12_05"
        folder.mkdir(parents=True)
        (folder / "tpu-vm.xplane.pb").write_bytes(xspace(host_plane(), tpu_plane(0, extra, as_text=as_text)))
    g, b = read_trace(load_capture(tmp_path / "good")), read_trace(load_capture(tmp_path / "bad"))
    modules = [{"key": "jit_train_step", "identical": False,
                "changes": [{"kind": "added", "good": None, "bad": "fusion.7", "opcode": "fusion"},
                            {"kind": "changed", "good": "fusion.1", "bad": "fusion.1", "opcode": "fusion"}]}]
    rec = op_times.join(modules, {k: v.durations for k, v in g.ops.items()},
                        {k: v.durations for k, v in b.ops.items()}, source=b.source)
    assert rec["source"] == "device"
    added = next(r for r in rec["rows"] if r["name"] == "fusion.7")
    assert added["good"] is None and added["bad"]["calls"] == 3 and added["delta_us"] == pytest.approx(8.0)
    changed = next(r for r in rec["rows"] if r["name"] == "fusion.1")
    assert changed["good"]["calls"] == changed["bad"]["calls"] == 3 and changed["within_noise"] is True
    assert rec["ops"] == {"good": 2, "bad": 3} and rec["only_in_trace"] == {"good": [], "bad": []}
    assert sorted(b.ops) == ["jit_train_step/convolution.2", "jit_train_step/fusion.1", "jit_train_step/fusion.7"]


def test_compare_of_two_tpu_captures_names_the_device_and_its_peak_memory(tmp_path):
    for side, extra, peak in (("good", False, 6_375_424), ("bad", True, 8_472_576)):
        folder = tmp_path / side / "plugins" / "profile" / "2026_12_05"
        folder.mkdir(parents=True)
        (folder / "tpu-vm.xplane.pb").write_bytes(xspace(host_plane(), tpu_plane(0, extra)))
        (tmp_path / side / "manifest.json").write_text(json.dumps(
            {"backend": "tpu", "device_memory": {"TPU_0(process=0,(0,0,0,0))": {"peak_bytes_in_use": peak}}}))
    result = compare(tmp_path / "good", tmp_path / "bad")
    assert result.op_source == "device" and result.ops[0].name == "jit_train_step/fusion.7"
    assert result.peaks() == (6_375_424, 8_472_576)
    text = result.render()
    assert "Op time (sum of device ops of /device:TPU:0 (the XLA Ops line, from tpu-vm.xplane.pb))" in text
    assert "Peak device memory (device.memory_stats() at the end of the run): good 6.080 MiB, bad 8.080 MiB" in text
    as_json = result.as_dict()
    assert as_json["traces"]["bad"]["plane"] == "/device:TPU:0" and as_json["device_peak_bytes"]["bad"] == 8_472_576


# ----------------------------------------------------------------------------- a GPU's planes


def test_a_gpu_trace_is_read_from_its_stream_lines_with_the_kernels_hlo_stats():
    p = Plane(20, "/device:GPU:0")
    p.line(1, "XLA Modules", 5_000, [("jit_step(3)", 0, 50.0, {})])
    p.line(2, "Stream #13(MemcpyH2D,Compute)", 5_000, [
        ("loop_add_fusion", 1, 4.0, {"hlo_op": "add_fusion", "hlo_module": "jit_step", "correlation_id": 9}),
        ("sm90_xmma_gemm", 6, 20.0, {"hlo_op": "gemm.1", "hlo_module": "jit_step"})])
    p.line(3, "Stream #14(Compute)", 5_000, [
        ("loop_add_fusion", 30, 4.5, {"hlo_op": "add_fusion", "hlo_module": "jit_step"})])
    p.line(4, "Launch Stats", 5_000, [("launch", 1, 1.0, {})])
    summary = op_table(parse_xspace(xspace(host_plane(), p)))
    assert summary.source == "device" and summary.plane == "/device:GPU:0"
    assert summary.how == "the stream lines (kernels)"
    assert {k: (v.count, v.total_us) for k, v in summary.ops.items()} == {
        "jit_step/add_fusion": (2, pytest.approx(8.5)), "jit_step/gemm.1": (1, pytest.approx(20.0))}


def test_a_perfetto_trace_says_which_device_rows_it_summed(tmp_path):
    events = [
        {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/device:TPU:0"}},
        {"ph": "M", "pid": 1, "tid": 3, "name": "thread_name", "args": {"name": "XLA Ops"}},
        {"ph": "M", "pid": 1, "tid": 2, "name": "thread_name", "args": {"name": "XLA Modules"}},
        {"ph": "X", "pid": 1, "tid": 3, "ts": 1, "dur": 10.0, "name": "fusion.1"},
        {"ph": "X", "pid": 1, "tid": 2, "ts": 0, "dur": 60.0, "name": "jit_step(7)"},
    ]
    path = tmp_path / "perfetto_trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    summary = parse_perfetto_trace(path)
    assert summary.source == "device" and list(summary.ops) == ["fusion.1"]
    assert summary.describe() == "device ops of /device:TPU:0 (the XLA Ops row, from perfetto_trace.json.gz)"


def test_the_chips_planes_come_before_other_device_planes_and_names_before_display_names():
    other = Plane(30, "/device:TPU:0 SparseCore 0").line(1, "XLA Ops", 3_000, [("sc_op", 0, 5.0, {})])
    summary = op_table(parse_xspace(xspace(other, tpu_plane(0, extra_op=False))))
    assert summary.plane == "/device:TPU:0" and "jit_train_step/fusion.1" in summary.ops
    assert any("/device:TPU:0 SparseCore 0" in n for n in summary.notes)


@pytest.mark.slow
def test_the_tpu_capture_script_checks_itself_on_the_cpu(tmp_path):
    """benchmarks/tpu/profile_capture.py, the script run on the TPU machine, passes its own checks
    on the CPU (host ops where the TPU has device ops; no peak memory where the TPU has one), run as
    the TPU session runs it: 2 front-end processes a state (benchmarks/tpu/session.sh's
    PROFILE_ARGS), so its front-end check reads the calls that changed in every process (time is
    judged from 4 processes a state: test_profile_frontend's end-to-end test, through hourly
    profile, names the planted function by its own time). 4 processes a state were half this test's
    time. Its processes dispatch 5 calls a round, not 100 (no check reads the dispatch phase), and
    profile 3 rounds after 1 untimed one."""
    import subprocess
    from pathlib import Path
    pytest.importorskip("jax")
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "tpu" / "profile_capture.py"
    p = subprocess.run([sys.executable, str(script), "--out", str(tmp_path / "out"), "--repeats", "3",
                        "--warmup", "1", "--iters", "5", "--processes", "2"],
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
    checks = [line for line in p.stdout.splitlines() if line.startswith(("PASS ", "FAIL ", "SKIP "))]
    assert len(checks) == 7 and all(c.startswith("PASS ") for c in checks), checks
    (front,) = [c for c in checks if c.startswith("PASS front-end diff")]
    assert front.startswith("PASS front-end diff (calls): time not judged with 2 processes a state") and \
        "'profile_model:expand_rules'" in front.split("calls changed in every process:")[1], front
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["backend"] == "cpu"
