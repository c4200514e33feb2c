#!/usr/bin/env bash
# Run THERE (the TPU machine, no package index), from the repository root, after
# benchmarks/tpu/prepare.sh ran here and its folder is carried: a window of
# benchmarks/real_history_2026.py alone, without session.sh's profile check.
#
#   run(command="WINDOW=change bash benchmarks/tpu/run.sh", carry=["benchmarks/tpu/carry"], timeout_s=600)
#
# It is benchmarks/tpu/session.sh with SKIP_PROFILE=1, WINDOW default change: hourly's own way,
# `--only jax`'s overlay over the machine's python3 with PYTHONPATH as the machine sets it (no venv
# of ours for the benchmark); hourly-venv holds hourly and its dependencies from the carried wheels;
# pip, setuptools and wheel are added at the end of PYTHONPATH only when the machine's Python lacks
# them. Stopped at its deadline (exit 130), the same call goes on where it stopped while /tmp
# survives. Environment: as session.sh's (WINDOW, RUNS, DEADLINE, FRESH, EXTRA, WORK, OUT, MACHINE_PY).
set -euo pipefail
export SKIP_PROFILE=1 WINDOW=${WINDOW:-change}
exec bash "$(dirname "$0")/session.sh" "$@"
