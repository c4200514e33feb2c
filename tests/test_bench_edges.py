"""`hourly bench`'s last lines say what is so: a --python that is no Python is named as the
suspect (not "exited with status 1:  —"), and a stopped bench says that it stores nothing (it
said "Finished points are stored; resume with:")."""

import signal
import subprocess
import sys

from hourly.cli import main
from tests.waiting import wait_for


def test_a_python_that_prints_nothing_is_named_in_the_one_line(tmp_path, capsys):
    target = tmp_path / "b.py"
    target.write_text("def make():\n    return (lambda: 0), ()\n")
    log = tmp_path / "bench.log"
    assert main(["bench", str(target), "--python", "/bin/false", "--out", str(log)]) == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        "hourly: error: the harness exited with status 1 and printed nothing (is /bin/false a Python?) — "
        f"traceback and full output: {log}"], err


def test_a_stopped_bench_says_it_stores_nothing_and_how_to_run_it_again(tmp_path):
    target = tmp_path / "b.py"
    target.write_text("def make():\n    return (lambda: 0), ()\n")
    started = tmp_path / "started"
    python = tmp_path / "slow-python"
    python.write_text(f"#!/bin/sh\ntouch {started}\nexec sleep 30\n")
    python.chmod(0o755)
    p = subprocess.Popen([sys.executable, "-m", "hourly", "bench", str(target), "--python", str(python),
                          "--out", str(tmp_path / "bench.log")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        assert wait_for(lambda: started.exists() or p.poll() is not None, timeout=60)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130, err
    assert "interrupted. hourly bench stores nothing; run it again with:\n  hourly bench " in err, err
    assert "stored; resume" not in err


def test_samples_is_every_phases_count_and_hourly_samples_in_the_harness_environment(tmp_path, capsys):
    """``hourly bench --samples N``: the harness is asked for N samples of every phase (its --repeats
    and --iters) and finds HOURLY_SAMPLES=N in its environment, as every benchmark hourly runs does;
    beside a --repeats or --iters of another count it is a usage error."""
    target = tmp_path / "b.py"
    target.write_text("def make():\n    return (lambda: 0), ()\n")
    seen = tmp_path / "seen"
    python = tmp_path / "recording-python"  # a stand-in Python: records what it was given, fails
    python.write_text(f'#!/bin/sh\necho "$HOURLY_SAMPLES $*" > {seen}\nexit 1\n')
    python.chmod(0o755)
    assert main(["bench", str(target), "--python", str(python), "--samples", "7",
                 "--out", str(tmp_path / "bench.log")]) == 1
    got = seen.read_text().split()
    assert got[0] == "7" and " --repeats 7 --iters 7 " in f" {' '.join(got)} ", got
    capsys.readouterr()
    assert main(["bench", str(target), "--python", str(python), "--samples", "7", "--iters", "9"]) == 2
    assert "--samples sets the samples of every phase" in capsys.readouterr().err
