#!/usr/bin/env bash
# Prepare, HERE (a machine with the package index and a clone of jax-ml/jax), what the TPU machine
# needs to run benchmarks/tpu/session.sh (benchmarks/real_history_2026.py, profile_capture.py): it reaches no package index, so everything comes
# as files in benchmarks/tpu/carry/ (git-ignored; carried with `run(carry=["benchmarks/tpu/carry"])`,
# about 40 MB of the 64 MiB a call may carry). Then, THERE: bash benchmarks/tpu/session.sh.
#
#   bash benchmarks/tpu/prepare.sh [JAX_CLONE]      # default: $HOURLY_JAX_CLONE or /work/jaxclone
#
# What it writes (../shared/docs/tpu-machine-notes.md says why each is needed):
#   carry/wheels/  hourly's own wheel and the cp311 manylinux x86_64 wheels of its dependencies,
#                  less numpy and scipy (the machine's folder has them, as it has jax, jaxlib and
#                  libtpu) and uv (20 MB; only the release level uses it);
#   carry/tools/   pip, setuptools and wheel: `--only jax` builds each state's jax package with
#                  `python3 -m pip wheel --no-build-isolation` of the machine's Python; where that
#                  Python lacks them, session.sh installs these into a folder at the end of PYTHONPATH;
#   carry/jax.git  a linear copy of JAX's first-parent history over the windows of
#                  real_history_2026.py (2026-06-04 22:00 → 06-18 00:00 UTC, ~260 commits, ~3 MB,
#                  without docs/, tests/, jaxlib/, …; benchmarks/tpu/linear_copy.py), and its
#                  map.txt from the original commit ids to the copy's;
#   carry/MANIFEST the files, their sizes, and the commit of hourly the wheel was built from.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CLONE=${1:-${HOURLY_JAX_CLONE:-/work/jaxclone}}
CARRY=$ROOT/benchmarks/tpu/carry
PY=${PYTHON:-python3}
SINCE=${SINCE:-2026-06-04 22:00}
UNTIL=${UNTIL:-2026-06-18 00:00}
# the platform tags of the machine's Python 3.11 (glibc ≥ 2.28 is enough for every wheel here);
# pip expands each manylinux tag to the older ones
PLATFORM=(--platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 --platform linux_x86_64)
# hourly's dependencies (pyproject.toml) less numpy, scipy (the machine's) and uv (not used there)
DEPS=(typer rich python-dateutil GitPython docker requests tenacity matplotlib packaging)

if ! git -C "$CLONE" rev-parse -q --verify origin/main >/dev/null 2>&1; then
    echo "prepare.sh: no clone of jax-ml/jax with origin/main at $CLONE (give it as the first argument)" >&2
    exit 1
fi
rm -rf "$CARRY"
mkdir -p "$CARRY/wheels" "$CARRY/tools"

echo "== hourly's dependencies (cp311, manylinux x86_64)"
"$PY" -m pip download -q --only-binary=:all: --python-version 3.11 --implementation cp --abi cp311 \
    "${PLATFORM[@]}" -d "$CARRY/wheels" "${DEPS[@]}"
# numpy and scipy come with matplotlib's and contourpy's requirements: the machine has its own
rm -f "$CARRY"/wheels/numpy-*.whl "$CARRY"/wheels/scipy-*.whl
"$PY" -m pip download -q --only-binary=:all: --python-version 3.11 --implementation cp --abi cp311 \
    "${PLATFORM[@]}" -d "$CARRY/tools" pip setuptools wheel

echo "== hourly's own wheel"
"$PY" -m pip wheel -q --no-deps -w "$CARRY/wheels" "$ROOT"

echo "== the linear copy of JAX's history ($SINCE → $UNTIL UTC)"
"$PY" "$ROOT/benchmarks/tpu/linear_copy.py" --source "$CLONE" --dest "$CARRY/jax.git" --since "$SINCE" --until "$UNTIL"

{
    echo "hourly $(git -C "$ROOT" rev-parse HEAD)$(git -C "$ROOT" diff --quiet HEAD || echo ' (with uncommitted changes)')"
    echo "jax history $SINCE → $UNTIL UTC from $(git -C "$CLONE" rev-parse origin/main)"
    (cd "$CARRY" && find . -type f -name '*.whl' -printf '%s %p\n' | sort -k2)
} > "$CARRY/MANIFEST"
du -sh "$CARRY" "$CARRY"/wheels "$CARRY"/tools "$CARRY"/jax.git
echo "ready: carry benchmarks/tpu/carry and run bash benchmarks/tpu/session.sh there"
