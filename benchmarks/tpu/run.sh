#!/usr/bin/env bash
# Run THERE (the TPU machine, no package index), from the repository root, after
# benchmarks/tpu/prepare.sh ran here and its folder is carried:
#
#   run(command="bash benchmarks/tpu/run.sh", carry=["benchmarks/tpu/carry"], timeout_s=600)
#   run(command="WINDOW=crash RUNS=1 bash benchmarks/tpu/run.sh", carry=[...])
#
# It makes (once per warm machine, under $WORK, default /tmp/rh: /tmp survives between calls
# while the machine stays warm) two venvs from the carried wheels, no index:
#   hourly-venv  hourly and its dependencies;
#   bench-venv   what `--python` names: the states' jax packages are installed there;
# each with a .pth file listing the machine's own folder ($SITE, default $PYTHONPATH: JAX 0.10.2,
# jaxlib 0.10.2, libtpu, numpy, scipy), and PYTHONPATH unset. A .pth entry comes after
# site-packages, so the jax that hourly installs for a state shadows the machine's jax while jaxlib
# and libtpu still load from the machine's folder; with PYTHONPATH set, the machine's jax would win
# and every state would run the same code (../shared/docs/tpu-machine-notes.md).
#   NOTE: hourly's own way (the workdir's overlay of `--only jax`, docs/accelerators.md, merged
#   into main after this script was written and not tested with it) makes bench-venv and the .pth
#   needless: with a wheel of that hourly in carry/, pass `--python "$MACHINE_PY"` below instead of
#   bench-venv's, keep PYTHONPATH as the machine sets it (do not unset it), and drop venv_with_site
#   for bench-venv; hourly-venv stays (hourly and its dependencies). Check first that the machine's
#   Python can build a wheel (`pip wheel --no-build-isolation` needs setuptools and wheel there).
#
# Then it clones the carried linear copy of JAX's history and runs benchmarks/real_history_2026.py
# on it (--sha-map translates the expected commit to the copy's id), each benchmark process timed
# by tally.py (bench seconds = accelerator seconds: every process holds the chip from start to end).
# A call may run 10 minutes: the run stops itself at $DEADLINE seconds (hourly's own stop, SIGINT)
# and the next call with the same WINDOW goes on where it stopped (--resume; the tally counts on)
# as long as /tmp survived (exit 130 says: call again). Results: $OUT (the run tool's folder) or $WORK/out: the JSON of each
# call, the table, the load and the chip's state.
#
# Environment: WINDOW (change|crash|flat, default change), RUNS (default 1), DEADLINE (seconds,
# default 500), FRESH=1 (start the window's runs afresh), EXTRA (more hourly bisect flags), SITE,
# MACHINE_PY (default python3), WORK, OUT.
# Tested on CPU here with this machine's Python 3.11 and SITE = a jaxlib 0.10.2 venv's site-packages.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CARRY=$ROOT/benchmarks/tpu/carry
WINDOW=${WINDOW:-change}
RUNS=${RUNS:-1}
DEADLINE=${DEADLINE:-500}
WORK=${WORK:-/tmp/rh}
OUT=${OUT:-$WORK/out}
MACHINE_PY=${MACHINE_PY:-python3}
SITE=${SITE:-${PYTHONPATH:-}}

if [ ! -d "$CARRY/wheels" ] || [ ! -d "$CARRY/jax.git" ]; then
    echo "run.sh: no $CARRY — run benchmarks/tpu/prepare.sh here first and carry benchmarks/tpu/carry" >&2
    exit 1
fi
if [ -z "$SITE" ]; then
    echo "run.sh: no SITE and no PYTHONPATH: name the folder that holds the machine's jax, jaxlib and libtpu" >&2
    exit 1
fi
mkdir -p "$WORK" "$OUT"
unset PYTHONPATH

venv_with_site() {  # DIR: a venv whose .pth lists the machine's folder(s)
    local dir=$1
    if [ ! -x "$dir/bin/python" ]; then
        "$MACHINE_PY" -m venv "$dir" 2>/dev/null || {
            # no ensurepip: a venv without pip, then pip from its own wheel (a wheel is importable)
            "$MACHINE_PY" -m venv --without-pip "$dir"
            local pipwhl
            pipwhl=$(ls "$CARRY"/tools/pip-*.whl)
            "$dir/bin/python" "$pipwhl/pip" install -q --no-index "$pipwhl"
        }
    fi
    local sp
    sp=$("$dir/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    echo "$SITE" | tr ':' '\n' > "$sp/machine-site.pth"
}

HV=$WORK/hourly-venv
BV=$WORK/bench-venv
if [ ! -x "$HV/bin/hourly" ]; then
    echo "== hourly-venv (no index)"
    venv_with_site "$HV"
    # every carried wheel, no resolution: they are hourly's dependency closure less numpy and scipy
    # (the machine's, through the .pth) and uv (the release level's, not used here)
    "$HV/bin/python" -m pip install -q --no-index --no-deps "$CARRY"/wheels/*.whl
fi
if [ ! -f "$BV/.tools" ]; then
    echo "== bench-venv (no index)"
    venv_with_site "$BV"
    "$BV/bin/python" -m pip install -q --no-index --no-deps "$CARRY"/tools/*.whl
    touch "$BV/.tools"
fi
"$HV/bin/hourly" --help >/dev/null
"$BV/bin/python" -c 'import jax, jaxlib; print("bench-venv: jax", jax.__version__, "from", jax.__file__, "| jaxlib", jaxlib.__version__, "| backend", jax.default_backend())'

if [ ! -d "$WORK/jax/.git" ]; then
    git clone -q "$CARRY/jax.git" "$WORK/jax"
fi

RESUME=(--resume)
if [ "${FRESH:-0}" = 1 ]; then RESUME=(); fi
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
{
    echo "== $STAMP window $WINDOW, runs $RUNS, deadline $DEADLINE s, $(nproc) CPUs"
    uptime
    ls /dev/accel* /dev/vfio 2>/dev/null | head -3 || true
} | tee "$OUT/env-$WINDOW-$STAMP.txt"
set +e
# shellcheck disable=SC2086
"$HV/bin/python" "$ROOT/benchmarks/real_history_2026.py" --jax-clone "$WORK/jax" --python "$BV/bin/python" \
    --sha-map "$CARRY/jax.git/map.txt" --window "$WINDOW" --runs "$RUNS" --workroot "$WORK/$WINDOW" \
    --cache-dir "$WORK/cache" --deadline "$DEADLINE" "${RESUME[@]}" --json ${EXTRA:+-- $EXTRA} \
    > "$OUT/real_history_2026-$WINDOW-$STAMP.json"
rc=$?
set -e
uptime | tee -a "$OUT/env-$WINDOW-$STAMP.txt"
# the table of the same runs, from the JSON just written
"$HV/bin/python" - "$OUT/real_history_2026-$WINDOW-$STAMP.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"window {d['window']} {d['good']} .. {d['bad']} UTC, expected {d['expect']} ({d['expect_class']})")
for r in d["runs"]:
    for a in r["answers"]:
        print(f"run {r['run']}: probes {a['probes']}, process starts {r['process_starts']} "
              f"({r['crashed_starts']} crashed), samples {r.get('samples', '?')}, wall {r['wall_s']} s, "
              f"accelerator (bench) {r['bench_s']} s, exit {r['rc']}{', stopped' if r['stopped'] else ''}: "
              f"{a['class']} {a['text']}")
EOF
cp -r "$WORK/$WINDOW"/run-*.json "$WORK/$WINDOW"/run-*.stderr "$OUT/" 2>/dev/null || true
if [ "$rc" = 130 ]; then
    echo "stopped at the deadline: call run.sh again with WINDOW=$WINDOW to go on (while /tmp survives)"
fi
exit $rc
