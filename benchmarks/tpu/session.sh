#!/usr/bin/env bash
# The one device call: run THERE (the TPU machine: no package index, JAX, jaxlib, libtpu, numpy and
# scipy in the folder PYTHONPATH names), from the repository root, after benchmarks/tpu/prepare.sh
# ran here and its folder is carried:
#
#   run(command="bash benchmarks/tpu/session.sh", carry=["benchmarks/tpu/carry"], timeout_s=600)
#
# In order, under one overall deadline ($DEADLINE seconds from its start, default 560):
#   1. setup, once per warm machine, under $WORK (default /tmp/rh; /tmp survives between calls while
#      the machine stays warm): hourly-venv, hourly and its dependencies from the carried wheels, no
#      index (numpy and scipy: the machine's, through PYTHONPATH, left as the machine sets it); when
#      the machine's Python cannot `import pip, setuptools` (hourly's `--only jax` builds each state
#      with `python3 -m pip wheel --no-build-isolation` and installs it with `python3 -m pip`), the
#      carried pip, setuptools and wheel go into $WORK/tools-site, added at the END of PYTHONPATH
#      (the machine's folder stays first); the clone of the carried linear copy of JAX's history;
#   2. benchmarks/tpu/profile_capture.py under `timeout $PROFILE_TIMEOUT` (300) (the XSpace reader on the real device;
#      expected: "8 passed, 0 failed"), once per warm machine;
#   3. benchmarks/real_history_2026.py --window $WINDOW (default tpu: 3 states, expected culprit
#      03652b8bba) with hourly's own way: `--only jax`'s overlay over `--python` = the machine's
#      python3, no venv of ours for the benchmark; --deadline = what is left, less $MARGIN s for
#      the summary. Stopped there (exit 130), the next call goes on where it stopped (--resume) as
#      long as /tmp survived.
# Everything lands under $OUT (the run tool's folder; default $WORK/out): the environment and uptime,
# the profile check's output and files, the JSON and hourly's stderr, `hourly report` of each run, the
# answer's `pinned` fingerprint, what the state environments held (pip list --path). The last
# lines printed are a compact summary (the run tool returns only the last 12,000 characters).
#
# Environment: WINDOW (a window of real_history_2026.py, or auto: see PROBE; default tpu),
# PROBE ("BEFORE AFTER" jax commits: benchmarks/tpu/dispatch_probe.sh first, ROUNDS, SAMPLES), RUNS (default 1), DEADLINE (s, default
# 560), SEED_STORE (see the bisection step), MARGIN (s, default 40: hourly gets SIGINT at the deadline less MARGIN, SIGKILL 30 s later), WORK, OUT, MACHINE_PY (default python3), SKIP_PROFILE=1, REPROFILE=1 (run the profile check
# again), PROFILE_TIMEOUT (s, default 300), PROFILE_ARGS (default --processes 2), SWEEP, SWEEP_BENCH (2c), FRESH=1
# (start the window's runs afresh), EXTRA (more hourly bisect flags). benchmarks/tpu/run.sh is this
# without the profile check. Tested on CPU here (docs/real-history.md, "On the TPU machine").
set -uo pipefail
{  # read whole before it runs: an edit of this file during a call cannot change that call

T0=$(date +%s)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CARRY=$ROOT/benchmarks/tpu/carry
WINDOW=${WINDOW:-tpu}
RUNS=${RUNS:-1}
DEADLINE=${DEADLINE:-560}
MARGIN=${MARGIN:-40}
WORK=${WORK:-/tmp/rh}
OUT=${OUT:-$WORK/out}
MACHINE_PY=$(command -v "${MACHINE_PY:-python3}") || { echo "session.sh: no ${MACHINE_PY:-python3} on PATH" >&2; exit 1; }
HV=$WORK/hourly-venv
TOOLS=$WORK/tools-site
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$WORK" "$OUT"
LOG=$OUT/session-$STAMP.txt
elapsed() { echo $(( $(date +%s) - T0 )); }
say() { echo "[$(elapsed) s] $*" | tee -a "$LOG"; }
fail() { say "FAILED: $*"; exit 1; }

[ -d "$CARRY/wheels" ] && [ -d "$CARRY/jax.git" ] && [ -d "$CARRY/tools" ] \
    || fail "no $CARRY: run benchmarks/tpu/prepare.sh here first and carry benchmarks/tpu/carry"

{
    echo "== session $STAMP: window $WINDOW, deadline $DEADLINE s, $(nproc) CPUs"
    uptime
    echo "machine python: $MACHINE_PY ($("$MACHINE_PY" -V 2>&1))"
    echo "PYTHONPATH=${PYTHONPATH:-}"
    ls /dev/accel* /dev/vfio 2>/dev/null | head -3
    head -2 "$CARRY/MANIFEST" 2>/dev/null
} 2>&1 | tee -a "$LOG"

# 1. setup -----------------------------------------------------------------------------------
# a step that fails is said and the call goes on with what does not need it: the profile check needs
# the machine's Python alone; the bisection needs everything
BROKEN=""
broken() { say "SETUP FAILED: $* (see $LOG)"; BROKEN="${BROKEN:+$BROKEN; }$*"; }
PIPWHL=$(ls "$CARRY"/tools/pip-*.whl | head -1)
if [ ! -x "$HV/bin/hourly" ]; then
    say "setup: hourly-venv from the carried wheels (no index)"
    rm -rf "$HV"
    if ! "$MACHINE_PY" -m venv "$HV" >>"$LOG" 2>&1; then
        # no ensurepip: a venv without pip, then pip from its own wheel (a wheel is importable)
        rm -rf "$HV"
        "$MACHINE_PY" -m venv --without-pip "$HV" >>"$LOG" 2>&1 \
            && "$HV/bin/python" "$PIPWHL/pip" install -q --no-index "$PIPWHL" >>"$LOG" 2>&1 \
            || broken "hourly-venv: python3 -m venv"
    fi
    # every carried wheel, no resolution: hourly's dependency closure less numpy and scipy
    [ -x "$HV/bin/python" ] && { "$HV/bin/python" -m pip install -q --no-index --no-deps --disable-pip-version-check \
        "$CARRY"/wheels/*.whl >>"$LOG" 2>&1 || broken "installing the carried wheels into $HV"; }
fi
if [ -x "$HV/bin/hourly" ]; then
    "$HV/bin/hourly" --help >/dev/null 2>>"$LOG" || broken "$HV/bin/hourly --help"
else
    broken "no $HV/bin/hourly"
fi

# what --only jax needs of the machine's Python: pip (install into the overlay) and setuptools
# (pip wheel --no-build-isolation of each state's jax); pip runs from its carried wheel here
for m in pip setuptools; do  # each said apart in the log: which one the machine lacks
    "$MACHINE_PY" -c "import $m; print('machine python has $m', $m.__version__, 'at', $m.__file__)" >>"$LOG" 2>&1 \
        || echo "machine python: no $m (above: why)" >>"$LOG"
done
if ! "$MACHINE_PY" -c 'import pip, setuptools' >/dev/null 2>&1; then
    # The carried setuptools' distutils hack failed there (AssertionError: distutils/core.py of the
    # stdlib, 2026-12-05: its .pth is not read from a PYTHONPATH folder): Python 3.11 still has
    # distutils, and setuptools builds jax's pure-Python wheel on it (checked here with -S)
    export SETUPTOOLS_USE_DISTUTILS=stdlib
    if [ ! -f "$TOOLS/.done" ]; then
        say "setup: the machine's Python lacks pip or setuptools: carried pip, setuptools, wheel into $TOOLS"
        rm -rf "$TOOLS"
        "$MACHINE_PY" "$PIPWHL/pip" install -q --no-index --no-deps --disable-pip-version-check --target "$TOOLS" \
            "$CARRY"/tools/*.whl >>"$LOG" 2>&1 && touch "$TOOLS/.done" || broken "pip install --target $TOOLS"
    fi
    export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$TOOLS
    "$MACHINE_PY" -c 'import pip, setuptools' 2>>"$LOG" || broken "the machine's Python still lacks pip or setuptools"
fi
# opens the device once (6-11 s on the TPU): which backend the states will run on
"$MACHINE_PY" -c 'import jax, jaxlib, pip, setuptools; print("machine python:", "jax", jax.__version__, "jaxlib", jaxlib.__version__, "pip", pip.__version__, "setuptools", setuptools.__version__, "| backend", jax.default_backend(), jax.devices()[0].device_kind)' \
    2>&1 | tail -3 | tee -a "$LOG"
if [ ! -d "$WORK/jax/.git" ]; then
    git clone -q "$CARRY/jax.git" "$WORK/jax" >>"$LOG" 2>&1 || broken "git clone of the carried copy"
fi
# can the machine's Python build a state's jax wheel as hourly will (pip wheel --no-build-isolation)?
if [ -d "$WORK/jax/.git" ] && [ ! -f "$WORK/wheelcheck.done" ]; then
    if "$MACHINE_PY" -m pip wheel -q --no-build-isolation --no-deps --disable-pip-version-check \
            -w "$WORK/wheelcheck" "$WORK/jax" >>"$LOG" 2>&1; then
        say "setup: the machine's Python builds jax's wheel: $(ls "$WORK/wheelcheck")"; touch "$WORK/wheelcheck.done"
    else
        broken "the machine's Python cannot build jax's wheel (pip wheel --no-build-isolation; log above)"
    fi
fi
say "setup done${BROKEN:+ with failures: $BROKEN}"

# 2. the profile check ---------------------------------------------------------------------------
# 2 front-end processes a state (≈22 s each there: 4 a state ran past 150 s on 2026-12-05)
PROFILE_TIMEOUT=${PROFILE_TIMEOUT:-300}
[ "${REPROFILE:-0}" = 1 ] && rm -f "$WORK/profile.done"
if [ "${SKIP_PROFILE:-0}" != 1 ] && [ ! -f "$WORK/profile.done" ]; then
    say "profile_capture.py (timeout $PROFILE_TIMEOUT s)"
    # shellcheck disable=SC2086
    PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH} timeout -k 10 "$PROFILE_TIMEOUT" "$MACHINE_PY" "$ROOT/benchmarks/tpu/profile_capture.py" \
        --out "$WORK/tpu-profile" --keep "$OUT/tpu-profile" ${PROFILE_ARGS:---processes 2} > "$OUT/profile-capture.txt" 2>&1
    prc=$?
    echo "$prc" > "$WORK/profile.done"
    say "profile_capture.py exit $prc: $(grep -E '[0-9]+ passed, [0-9]+ failed' "$OUT/profile-capture.txt" | tail -1)"
else
    say "profile_capture.py: skipped (done in an earlier call: exit $(cat "$WORK/profile.done" 2>/dev/null))"
fi

# 2b. PROBE="BEFORE AFTER" (jax commit ids): does the change show on this machine, per benchmark
# variant (benchmarks/tpu/dispatch_probe.sh)? With WINDOW=auto the bisection takes tpu-pipe (the op
# queued on the chip) where that variant reads the change at 4 % or more, tpu-host (the op on the
# host's CPU device) otherwise
if [ -n "${PROBE:-}" ] && [ -d "$WORK/jax/.git" ]; then
    say "dispatch_probe.sh $PROBE (rounds ${ROUNDS:-2}, samples ${SAMPLES:-10})"
    # shellcheck disable=SC2086
    MACHINE_PY=$MACHINE_PY bash "$ROOT/benchmarks/tpu/dispatch_probe.sh" "$WORK/jax" "$CARRY/jax.git/map.txt" $PROBE \
        > "$OUT/dispatch-probe.txt" 2>&1
    grep '^variant' "$OUT/dispatch-probe.txt" | tee -a "$LOG"
fi
if [ "$WINDOW" = auto ] && [ -z "${PROBE:-}" ] && [ -f "$WORK/window.chosen" ]; then
    WINDOW=$(cat "$WORK/window.chosen")  # a later call goes on with the window the probe chose
    say "WINDOW=auto: $WINDOW (chosen by an earlier call's probe)"
elif [ "$WINDOW" = auto ]; then
    PIPE=$(grep '^variant \[--pipelined\]' "$OUT/dispatch-probe.txt" 2>/dev/null | grep -oE '[-+][0-9.]+ %$' | tr -d '+ %')
    WINDOW=tpu-host
    [ -n "$PIPE" ] && awk -v p="$PIPE" 'BEGIN {exit !(p >= 4 || p <= -4)}' && WINDOW=tpu-pipe
    say "WINDOW=auto: $WINDOW (the pipelined variant read ${PIPE:-nothing} %)"
    echo "$WINDOW" > "$WORK/window.chosen"
fi

# 2c. SWEEP="ARGS" (benchmarks/real_jax/sweep_history.py's commit arguments, in the copy's commit ids:
# --commits … or --from … --to … --points N, and --procs N): the host's idle cores measure the front
# end (SWEEP_BENCH, default frontend_step.py) of each commit by hand, beside the bisection, on the
# host's CPU backend (JAX_PLATFORMS=cpu: the chip stays the bisection's), stopped at the deadline
SWEEP_PID=""
if [ -n "${SWEEP:-}" ] && [ -d "$WORK/jax/.git" ]; then
    SLEFT=$(( DEADLINE - $(elapsed) - MARGIN ))
    say "sweep_history.py $SWEEP (CPU backend, beside the bisection, timeout $SLEFT s)"
    # shellcheck disable=SC2086
    JAX_PLATFORMS=cpu timeout -k 5 "$SLEFT" "$MACHINE_PY" "$ROOT/benchmarks/real_jax/sweep_history.py" \
        --jax-clone "$WORK/jax" --python "$MACHINE_PY" --trees "$WORK/trees" --spread --out "$OUT/sweep-$STAMP.csv" \
        $SWEEP -- python3 ${SWEEP_BENCH:-$ROOT/benchmarks/real_jax/frontend_step.py --repeats 7} \
        > "$OUT/sweep-$STAMP.txt" 2>&1 &
    SWEEP_PID=$!
fi

# 3. the bisection ---------------------------------------------------------------------------------
LEFT=$(( DEADLINE - $(elapsed) - MARGIN ))
# SEED_STORE (a store under the carry, e.g. seed/tpu-frontend-run-f.sqlite): a search stopped on an
# earlier machine goes on here (--resume) — copied into run 1's workdir when that has no store yet
if [ -n "${SEED_STORE:-}" ] && [ ! -e "$WORK/$WINDOW/run-1/hourly.sqlite" ]; then
    mkdir -p "$WORK/$WINDOW/run-1" && cp "$CARRY/$SEED_STORE" "$WORK/$WINDOW/run-1/hourly.sqlite" \
        && say "seeded run 1's store from $SEED_STORE"
fi
RESUME=(--resume)
[ "${FRESH:-0}" = 1 ] && RESUME=()
JSON=$OUT/real_history_2026-$WINDOW-$STAMP.json
if [ -n "$BROKEN" ]; then
    say "bisection not run: the setup failed ($BROKEN)"; rc=1
elif [ "$LEFT" -lt 30 ]; then
    say "no time left for the bisection ($LEFT s)"; rc=130
else
    say "bisection: window $WINDOW, --deadline $LEFT, --python $MACHINE_PY"
    uptime >> "$LOG"
    # shellcheck disable=SC2086
    "$HV/bin/python" "$ROOT/benchmarks/real_history_2026.py" --jax-clone "$WORK/jax" --python "$MACHINE_PY" \
        --sha-map "$CARRY/jax.git/map.txt" --window "$WINDOW" --runs "$RUNS" --workroot "$WORK/$WINDOW" \
        --cache-dir "$WORK/cache" --deadline "$LEFT" "${RESUME[@]}" --json ${EXTRA:+-- $EXTRA} > "$JSON" 2>>"$LOG"
    rc=$?
    uptime >> "$LOG"
fi
if [ -n "$SWEEP_PID" ]; then
    wait "$SWEEP_PID"; say "sweep exit $?: $(grep -c '^round' "$OUT/sweep-$STAMP.txt") processes"
    grep -v '^round' "$OUT/sweep-$STAMP.txt" | tail -40 | tee -a "$LOG"
fi
for f in "$WORK/$WINDOW"/run-*.json; do  # hourly's answer (--json) and its progress lines, per run
    [ -f "$f" ] || continue
    i=$(basename "$f" .json); i=${i#run-}
    cp "$f" "$OUT/hourly-answer-$WINDOW-$i.json"
    cp "$WORK/$WINDOW/run-$i.stderr" "$OUT/hourly-progress-$WINDOW-$i.txt" 2>/dev/null
done
# hourly's own report of each run (the answer in words, the verdicts, the kept packages)
for d in "$WORK/$WINDOW"/run-*/; do
    [ -f "$d/hourly.sqlite" ] || continue
    i=$(basename "$d"); i=${i#run-}
    timeout 60 "$HV/bin/hourly" report --workdir "$d" --out "$OUT/report-$WINDOW-$i" >>"$LOG" 2>&1
done
# what hourly measured (every table of each run's store, as rows): the verdicts behind an answer or a stop
for d in "$WORK/$WINDOW"/run-*/; do
    [ -f "$d/hourly.sqlite" ] || continue
    i=$(basename "$d"); i=${i#run-}
    "$HV/bin/python" - "$d/hourly.sqlite" > "$OUT/store-$WINDOW-$i.txt" 2>&1 <<'SQL'
import sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
for (table,) in db.execute("select name from sqlite_master where type='table' order by name"):
    cur = db.execute(f'select * from "{table}" limit 400')
    print(f"== {table}: " + ", ".join(c[0] for c in cur.description))
    for row in cur:
        print(repr(row)[:600])
SQL
done
# where each benchmark process's time before its first sample went (frontend_step.py's setup_s: lines)
grep -h '^setup_s:' "$WORK/$WINDOW"/run-*/logs/bench-*.log > "$OUT/setup-lines-$WINDOW.txt" 2>/dev/null
[ -s "$OUT/setup-lines-$WINDOW.txt" ] && awk '{n++; i+=$3; o+=$6; p+=$8; w+=$10} END {printf "setup (mean of %d processes): import %.2f s, open %.2f s, inputs %.2f s, warm-up %.2f s\n", n, i/n, o/n, p/n, w/n}' \
    "$OUT/setup-lines-$WINDOW.txt" | tee -a "$LOG"
# what each state's environment held (its own site-packages), and the machine's folders
{
    for site in "$WORK/$WINDOW"/run-*/overlay/lib/python3*/site-packages "$WORK/$WINDOW"/run-*/states/*/lib/python3*/site-packages; do
        [ -d "$site" ] || continue
        echo "== $site"; "$HV/bin/python" -m pip list --disable-pip-version-check --path "$site" 2>&1
    done
    IFS=: read -ra entries <<< "${PYTHONPATH:-}"
    for site in "${entries[@]}"; do
        [ -d "$site" ] || continue
        echo "== $site (PYTHONPATH)"; "$HV/bin/python" -m pip list --disable-pip-version-check --path "$site" 2>&1
    done
} > "$OUT/pip-list-$WINDOW.txt"

# the summary ----------------------------------------------------------------------------------------
"$HV/bin/python" - "$JSON" "$OUT/profile-capture.txt" "$WORK/$WINDOW"/run-*.json <<'EOF' 2>&1 | tee "$OUT/summary-$WINDOW.txt"
import json, sys
from pathlib import Path
summary, profile, *answer_paths = (Path(a) for a in sys.argv[1:])
if profile.is_file():
    lines = profile.read_text().splitlines()
    checks = [ln for ln in lines if ln.startswith(("PASS", "FAIL", "SKIP"))]
    print("profile check:", *(checks or lines[-5:]), sep="\n  ")
try:
    d = json.loads(summary.read_text())
except (OSError, ValueError) as e:
    print(f"no summary JSON ({e}): see the session log")
    d = None
if d:
    print(f"window {d['window']} {d['good']} .. {d['bad']} UTC, expected {d['expect']} ({d['expect_class']}), "
          f"jaxlib {d['jaxlib']}, bench {d['bench']}")
    for r in d["runs"]:
        for a in r["answers"]:
            print(f"run {r['run']}: probes {a['probes']}, process starts {r['process_starts']} "
                  f"({r['crashed_starts']} crashed), samples {r.get('samples', '?')}, wall {r['wall_s']} s, "
                  f"accelerator (bench) {r['bench_s']} s, exit {r['rc']}{', STOPPED' if r['stopped'] else ''}")
            print(f"ANSWER: {a['class']}: {a['text']}")
for answer_path in answer_paths:
    try:
        ans = json.loads(answer_path.read_text())
    except (OSError, ValueError):
        continue
    print(f"== {answer_path.name}")
    for reg in ans.get("regressions") or []:
        for key in ("measured", "confidence", "change", "drift", "end_samples", "states", "runs", "builds"):
            if reg.get(key) is not None:
                print(f"{key}: {json.dumps(reg[key])[:400]}")
        for p in reg.get("probes") or []:
            print("probe:", json.dumps(p)[:300])
    pinned = ans.get("pinned") or next((r.get("pinned") for r in ans.get("regressions") or [] if r.get("pinned")), None)
    print("pinned:", json.dumps(pinned)[:1500] if pinned else "(none in the answer)")
EOF
say "session end: bisection exit $rc; files under $OUT"
ls "$OUT" | sed 's/^/  /'
if [ "$rc" = 130 ]; then
    echo "STOPPED at the deadline: call again (same command) to go on while /tmp survives"
fi
exit "$rc"
}
