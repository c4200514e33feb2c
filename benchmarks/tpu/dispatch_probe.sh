#!/usr/bin/env bash
# Before a bisection on the TPU machine: does a benchmark variant see the change at all there?
# Runs benchmarks/real_jax/dispatch_op.py (every block a sample, HOURLY_SAMPLES blocks) at two jax
# commits of the carried linear copy, each variant ROUNDS times, the states interleaved, and prints
# every process's median and the two states' medians of those, per variant. The jax package of each
# commit is its source tree's jax/ folder put first on PYTHONPATH (jaxlib, libtpu: the machine's).
#
#   bash benchmarks/tpu/dispatch_probe.sh CLONE MAP BEFORE AFTER   # commit ids of jax-ml/jax (MAP: the copy's map.txt)
# Environment: ROUNDS (2), SAMPLES (10), VARIANTS ("--pipelined;--device cpu"), MACHINE_PY (python3).
set -uo pipefail
CLONE=$1 MAP=$2 BEFORE=$3 AFTER=$4
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=${MACHINE_PY:-python3}
ROUNDS=${ROUNDS:-2}
IFS=';' read -r -a VARIANTS <<< "${VARIANTS:---pipelined;--device cpu}"
TREES=$(mktemp -d)
declare -A TREE
for c in "$BEFORE" "$AFTER"; do
    copy=$(awk -v c="$c" 'index($1, c) == 1 {print $2}' "$MAP" | head -1)
    [ -n "$copy" ] || { echo "dispatch_probe: $MAP does not map $c" >&2; exit 1; }
    mkdir -p "$TREES/$c" && git -C "$CLONE" archive "$copy" jax | tar -x -C "$TREES/$c" || exit 1
    TREE[$c]=$TREES/$c
done
for v in "${VARIANTS[@]}"; do
    for r in $(seq "$ROUNDS"); do
        for c in "$BEFORE" "$AFTER"; do
            t0=$(date +%s%N)
            # shellcheck disable=SC2086
            line=$(HOURLY_SAMPLES=${SAMPLES:-10} PYTHONPATH=${TREE[$c]}${PYTHONPATH:+:$PYTHONPATH} timeout 120 \
                "$PY" "$ROOT/benchmarks/real_jax/dispatch_op.py" --op neg --calls 200 --each $v 2>&1 | tail -1)
            echo "probe [$v] round $r $c ($(( ($(date +%s%N) - t0) / 1000000 )) ms): $line"
        done
    done
done | tee "$TREES/probe.txt"
"$PY" - "$TREES/probe.txt" "$BEFORE" "$AFTER" <<'PYEOF'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"probe \[(.*)\] round \d+ (\S+) .*blocks (.*)$", line)
    if m:
        rows.setdefault(m[1], {}).setdefault(m[2], []).append(statistics.median(float(b) for b in m[3].split()))
for v, by in rows.items():
    a, b = (statistics.median(by.get(c, [float("nan")])) for c in sys.argv[2:4])
    print(f"variant [{v}]: {sys.argv[2]} {a:.2f} µs {by.get(sys.argv[2])}, {sys.argv[3]} {b:.2f} µs {by.get(sys.argv[3])}: {100 * (b / a - 1):+.1f} %")
PYEOF
rm -rf "$TREES"
