"""A run ends when its process exits: what it printed is read, and what it left behind is killed and
said, never waited for (a benchmark's ``sleep 100000 &`` once held hourly past --bench-timeout, for
ever). A log that cannot be written stops the run with the error, never a thread's traceback."""

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from hourly.adapters import proc


def _gone(pid: int) -> bool:
    """No such process, or a zombie waiting for whoever adopted it to reap it."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def _wait_gone(pid: int, limit: float = 3.0) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if _gone(pid):
            return True
        time.sleep(0.02)
    return False


def _in_thread(fn, limit: float):
    """``fn()``'s result, or AssertionError when it has not returned within ``limit`` seconds (the
    bug: it never returned)."""
    import threading
    box: list = []
    t = threading.Thread(target=lambda: box.append(fn()), daemon=True)
    t.start()
    t.join(limit)
    assert box, f"proc.run had not returned after {limit} s"
    return box[0]


def test_a_child_left_behind_in_the_group_is_killed_and_said_past_no_timeout(tmp_path):
    pid_file, log = tmp_path / "pid", tmp_path / "run.log"
    start = time.monotonic()
    r = _in_thread(lambda: proc.run(["sh", "-c", f"sleep 100000 & echo $! > {pid_file}; echo MLUPS: 5"],
                                    timeout=5, log_path=log, check=False), 8)
    assert time.monotonic() - start < 3 and not r.timed_out and r.returncode == 0
    assert r.output == "MLUPS: 5\n"
    assert len(r.notes) == 1 and "left" in r.notes[0] and "process group: killed" in r.notes[0]
    assert f"# hourly: {r.notes[0]}" in log.read_text()
    assert _wait_gone(int(pid_file.read_text()))


def test_a_child_in_a_session_of_its_own_holding_the_output_is_killed_and_said(tmp_path):
    pid_file = tmp_path / "pid"
    r = _in_thread(lambda: proc.run(["sh", "-c", f"setsid sh -c 'echo $$ > {pid_file}; exec sleep 100000' & "
                                    "sleep 0.2; echo done"], check=False), 8)
    assert r.output == "done\n" and r.returncode == 0
    assert any("outside its process group, holding its output open: killed" in n for n in r.notes), r.notes
    assert _wait_gone(int(pid_file.read_text()))


def test_a_long_output_is_read_to_its_end_and_nothing_is_said():
    r = proc.run(["sh", "-c", "seq 1 200000"])
    assert len(r.output.splitlines()) == 200000 and r.output.endswith("200000\n") and r.notes == ()


def test_a_log_that_cannot_be_written_stops_the_run_with_the_error_not_a_threads_traceback(tmp_path):
    """A real write failure: the log's file may not grow past 8 KiB (RLIMIT_FSIZE, in a process of
    its own), as a full disk refuses the next line."""
    pid_file = tmp_path / "pid"
    script = textwrap.dedent(f"""
        import errno, resource, signal, time
        from hourly.adapters import proc
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (8192, resource.RLIM_INFINITY))
        start = time.monotonic()
        try:
            proc.run(["sh", "-c", "echo $$ > {pid_file}; while :; do echo a line of output; done"],
                     log_path={str(tmp_path / 'run.log')!r}, check=False)
        except OSError as e:
            print("raised", errno.errorcode[e.errno], e.filename, round(time.monotonic() - start))
    """)
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert "Traceback" not in p.stderr and "Exception in thread" not in p.stderr, p.stderr
    assert p.stdout.split()[:3] == ["raised", "EFBIG", str(tmp_path / "run.log")], (p.stdout, p.stderr)
    assert int(p.stdout.split()[3]) < 5  # stopped at once, not when the endless writer stopped
    assert _wait_gone(int(Path(pid_file).read_text()))
    assert os.path.getsize(tmp_path / "run.log") <= 8192


def test_a_benchmark_that_leaves_a_child_behind_is_measured_at_its_exit_and_its_run_says_so(tmp_path):
    """Issue 44's case as given: --bench-cmd "sh -c 'sleep 100000 & echo MLUPS: 5'" --bench-timeout 5."""
    from hourly.measure.benchmark import BenchSpec, Status, run_benchmark
    start = time.monotonic()
    res = _in_thread(lambda: run_benchmark(BenchSpec(["sh", "-c", "sleep 100000 & echo MLUPS: 5"], timeout=5), 2,
                                           tmp_path / "logs", "left"), 10)
    assert time.monotonic() - start < 4
    assert res.status is Status.OK and res.samples == [5.0, 5.0]
    for run in res.runs:
        said = run.as_dict()["stopped"]
        assert len(said) == 1 and "running in its process group: killed" in said[0]
        assert f"# hourly: {said[0]}" in Path(run.log_path).read_text()


@pytest.mark.slow  # quick: the log write failure of proc.run above (RLIMIT_FSIZE), the same path
def test_a_disk_that_fills_mid_scan_is_the_one_clean_line_without_a_threads_traceback(scan_args, tmp_path):
    """Issue 44's case 9 on a real full disk: the workdir on a 1 MiB tmpfs, a benchmark whose output
    fills it while its log is written. Needs the right to mount (root, as in CI's container when it
    may); the write failure itself is covered without a mount above."""
    disk = tmp_path / "small-disk"
    disk.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)],
                                           capture_output=True).returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root and the right to mount)")
    try:
        bench = tmp_path / "loud.py"
        bench.write_text("import sys\nfor i in range(100000):\n    print('x' * 60, i)\nprint('MLUPS: 5')\n")
        args = scan_args("Aug 24 2023 12:00", "Aug 24 2023 13:00", "--bench-cmd", f"python3 {bench}",
                         "--workdir", str(disk / "work"))
        p = subprocess.run([sys.executable, "-m", "hourly", *args], capture_output=True, text=True, timeout=120)
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
    assert p.returncode == 1, p.stderr
    assert "Traceback" not in p.stderr and "Exception in thread" not in p.stderr, p.stderr
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("hourly: error: no space left on the device of ") and ".log" in last, p.stderr


def test_a_scan_whose_benchmark_leaves_a_child_behind_says_so_once_and_measures(capsys, scan_args, tmp_path):
    from hourly.cli import main
    pids = tmp_path / "pids"
    args = scan_args("Aug 24 2023 12:00", "Aug 24 2023 13:00", "--bench-cmd",
                     f"sh -c 'sleep 100000 & echo $! >> {pids}; echo MLUPS: 5'", "--bench-timeout", "5")
    start = time.monotonic()
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 0, err
    assert time.monotonic() - start < 30
    said = [line for line in (out + err).splitlines() if "running in its process group: killed" in line]
    assert len(said) == 1 and said[0].startswith("note: the command exited and left "), out + err
    assert all(_wait_gone(int(pid)) for pid in pids.read_text().split())
