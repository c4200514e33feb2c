#!/bin/bash
# `hourly scan --only jax` on a host as it is (docs/accelerators.md): the machine's JAX, jaxlib and
# libtpu in the folder PYTHONPATH names first, hourly's own dependencies after it, no --python (the
# Python running hourly), nothing prepared by hand. Then the same with PYTHONPATH set inside the
# benchmark command, which must be refused. Prints what each state ran and where it came from.
#
#   benchmarks/real_jax/host_overlay.sh JAX_GIT [WHEELS]
#
# JAX_GIT: a bare copy of jax-ml/jax holding 2026-06-17 12:00 → 06-18 16:00 UTC
# (benchmarks/real_jax/linear_jax_copy.sh); WHEELS: a folder of hourly's dependencies as wheels,
# installed under $T/site and added to the end of PYTHONPATH (where the machine has no index).
# PY (default python3) runs hourly; T (default /tmp/hourly-host-overlay) is its scratch folder;
# OUT (default $T/out) receives scan.json and report.md. The scan takes about 2 minutes on a 2-core
# CPU machine, 8 states; on a TPU each benchmark process also spends 6–11 s opening the chip.
set -u
JAX_GIT=$1; WHEELS=${2:-}
R=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PY:-python3}
T=${T:-/tmp/hourly-host-overlay}; rm -rf "$T"; mkdir -p "$T"
OUT=${OUT:-$T/out}; mkdir -p "$OUT"
MACH=${PYTHONPATH%%:*}
echo "== hourly $(git -C "$R" log -1 --format='%h %s' 2>/dev/null)"
echo "== $($PY -V) $(command -v "$PY"), $($PY -c 'import platform; print(*platform.libc_ver())'), $(git --version)"
echo "PYTHONPATH=$PYTHONPATH"; ls -ld "$MACH"
if [ -n "$WHEELS" ]; then
  PIP_CONFIG_FILE=/dev/null $PY -m pip install --isolated -q --no-index --no-deps --no-compile --no-cache-dir \
    --target "$T/site" "$WHEELS"/*.whl || exit 1
  export PYTHONPATH=$PYTHONPATH:$T/site
fi
export PYTHONPATH=$PYTHONPATH:$R PYTHONUNBUFFERED=1
git clone -q "$JAX_GIT" "$T/jax" || exit 1
touch "$T/start"; sleep 1
cd "$T"
BENCH="python3 $R/benchmarks/real_jax/which_jax.py"
RX='lower_ms:\s*(?P<value>[0-9.]+)'
echo "== hourly scan --only jax"
start=$(date +%s)
timeout "${SCAN_S:-480}" $PY -m hourly scan --only jax --jax-repo "$T/jax" --from '2026-06-17 12:00' --to '2026-06-18 16:00' \
  --step 4h --bench-cmd "$BENCH" --metric-regex "$RX" --lower-is-better --warmup-runs 0 --no-confirm-edges \
  --workdir "$T/w" --cache-dir "$T/c" --json > "$OUT/scan.json" 2> "$T/scan.err"
echo "exit $? after $(( $(date +%s) - start )) s"; tail -3 "$T/scan.err"
$PY - "$OUT/scan.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
for p in s["points"]:
    print(" ", p["time"][:16], p["jax"][:10], p["status"], p.get("value"))
print("builds:", s.get("builds"), "of the jax package:", s.get("jax_builds"), "of jaxlib:", s.get("jaxlib_builds"))
p = s["pinned"]
print("pinned:", p["to"], "| Python", p.get("python_version"))
for n, i in (p.get("packages") or {}).items():
    print(f"  kept {n} {i['version']} from {i['location']} ({i['via']})")
print("  shadowed jax:", p.get("shadowed_jax"))
PY
echo "== where each benchmark process found jax"; cat "$T"/w/logs/jax-seen-*.txt | sort | uniq -c
echo "== what each state's benchmark printed"; grep -h '^jax:\|^device:' "$T"/w/logs/bench-*.log | sort | uniq -c
echo "== how each state was installed"; head -qn1 "$T"/w/logs/install-*.log | cut -c1-60 | sort | uniq -c
echo "== the overlay"; ls "$T"/w/overlay/lib/python3*/site-packages/
echo "== files of the machine's folder changed since the start"; find "$MACH" -newer "$T/start" 2>/dev/null | head -5; echo "(end)"
$PY -m hourly report --workdir "$T/w" --out "$T/report" > /dev/null 2>&1
sed -n '/^## Environment/,/^## Plot/p' "$T/report/report.md" | head -30; cp "$T/report/report.md" "$OUT/" 2>/dev/null
echo "== PYTHONPATH set inside the benchmark command: refused, not measured"
timeout 150 $PY -m hourly scan --only jax --jax-repo "$T/jax" --from '2026-06-17 12:00' --to '2026-06-17 12:00' \
  --bench-cmd "env PYTHONPATH=$MACH $BENCH" --metric-regex "$RX" --lower-is-better --warmup-runs 0 \
  --workdir "$T/w2" --cache-dir "$T/c" 2>&1 | tail -1; echo "exit ${PIPESTATUS[0]}"
