"""The daily level over every named metric a run prints, in real (fake JAX-Toolbox) nightly
containers: one row per metric per date, each metric's steps, the boundary from the metric that
regressed (needs a Docker engine and the test registry, like tests/test_nightly.py)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from hourly.adapters.proc import run
from hourly.adapters.store import Store

pytest_plugins = ["tests.conftest_docker"] if __package__ else ["conftest_docker"]

ROOT = Path(__file__).resolve().parent.parent

#: every date's image says its value (/opt/bench/value) or crashes; this benchmark prints it as a
#: rate (higher is better: the images' step down from 100 to 80 is a regression) five times a run,
#: beside a step time that never moves
NAMED_BENCH = """#!/bin/sh
mode=$(cat /opt/bench/mode)
if [ "$mode" = crash ]; then echo "fake crash" >&2; exit 1; fi
v=$(cat /opt/bench/value)
i=0
while [ $i -lt 5 ]; do
  echo "METRIC images_per_s: $v"
  echo "METRIC step_ms: 2.5$i"
  i=$((i+1))
done
"""


def hourly(*args, cwd, timeout=300):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    return run([sys.executable, "-m", "hourly", *args], cwd=cwd, env=env, timeout=timeout, check=False)


@pytest.mark.docker
def test_nightly_records_every_named_metric_and_hands_over_the_one_that_regressed(docker_client, nightly_images,
                                                                                  tmp_path):
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "test.sh").write_text(NAMED_BENCH)
    (bench / "test.sh").chmod(0o755)
    wd = bench / "work"
    res = hourly("nightly", "--from", "2023-08-20", "--to", "2023-08-26", "--image", nightly_images.local_template,
                 "--no-pull", "--gpus", "none", "--metrics", "all", "--warmup-samples", "1", "--workdir", str(wd),
                 "--json", cwd=bench)
    assert res.returncode == 0, res.output
    out = json.loads(res.output)
    rate, step = out["metrics"]["images_per_s"], out["metrics"]["step_ms"]
    assert rate["higher_is_better"] is True and step["higher_is_better"] is False
    [reg] = rate["steps"]
    assert (reg["before"], reg["after"], reg["kind"]) == ("2023-08-22", "2023-08-25", "regression")
    assert step["verdict"] == "unchanged" and step["steps"] == []
    b = out["boundary"]
    assert (b["good"]["date"], b["bad"]["date"], b["kind"]) == ("2023-08-22", "2023-08-25", "slower")
    ok = [p for p in rate["points"] if p["status"] == "ok"]
    assert [(p["runs"], p["run_samples"]) for p in ok] == [(1, 4)] * 5  # one run, four samples after its warm-up
    assert {p["date"]: p["status"] for p in step["points"]}["2023-08-24"] == "crashed"
    store = Store(wd)
    metrics = {r[0] for r in store.conn.execute("SELECT DISTINCT metric FROM nightly")}
    assert metrics == {"images_per_s", "step_ms", ""}  # the crash and the missing date: one row each
    store.close()
    shown = hourly("nightly", "--show", "--workdir", str(wd), cwd=bench)
    assert shown.returncode == 0, shown.output
    assert "per metric: images_per_s -20." in shown.output and "step_ms unchanged (within ±" in shown.output
