#!/bin/bash
# A linear, path-filtered copy of jax-ml/jax's first-parent history over a window, as a bare
# repository: for a machine that cannot clone the mirror (the `device` TPU machine: docs/accelerators.md).
#
#   benchmarks/real_jax/linear_jax_copy.sh MIRROR OUT SINCE UNTIL
#   benchmarks/real_jax/linear_jax_copy.sh /work/.mirror/jax-ml+jax/repo /tmp/jax.git 2026-06-14T00:00:00Z 2026-06-18T18:00:00Z
#
# Each first-parent commit of MIRROR's HEAD committed in [SINCE, UNTIL] becomes one commit of OUT,
# with its tree less the top-level docs/ tests/ jaxlib/ examples/ benchmarks/ .github/
# cloud_tpu_colabs/, its author, committer, dates and message (plus a line naming the original
# commit). 78 commits of 2026-06-14 → 06-18 take 4.4 MB. Clone OUT where it is used: origin/main.
set -euo pipefail
M=$1; OUT=$2; SINCE=$3; UNTIL=$4
EXCL='^(docs|tests|jaxlib|examples|benchmarks|\.github|cloud_tpu_colabs)$'
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
git init -q --bare "$WORK/linear.git"
echo "$(git -C "$M" rev-parse --path-format=absolute --git-common-dir)/objects" > "$WORK/linear.git/objects/info/alternates"
prev=""
for sha in $(git -C "$M" log --first-parent --reverse --format=%H --since="$SINCE" --until="$UNTIL" HEAD); do
  tree=$(git -C "$M" ls-tree "$sha" | awk -F'\t' -v ex="$EXCL" '$2 !~ ex' | git -C "$WORK/linear.git" mktree)
  export GIT_AUTHOR_NAME="$(git -C "$M" log -1 --format=%an "$sha")" GIT_AUTHOR_EMAIL="$(git -C "$M" log -1 --format=%ae "$sha")"
  export GIT_AUTHOR_DATE="$(git -C "$M" log -1 --format=%ad --date=raw "$sha")"
  export GIT_COMMITTER_NAME="$(git -C "$M" log -1 --format=%cn "$sha")" GIT_COMMITTER_EMAIL="$(git -C "$M" log -1 --format=%ce "$sha")"
  export GIT_COMMITTER_DATE="$(git -C "$M" log -1 --format=%cd --date=raw "$sha")"
  msg="$(git -C "$M" log -1 --format=%B "$sha")

(jax-ml/jax $sha)"
  prev=$(printf '%s' "$msg" | git -C "$WORK/linear.git" commit-tree "$tree" ${prev:+-p "$prev"})
done
[ -n "$prev" ] || { echo "no first-parent commit of $M in $SINCE .. $UNTIL" >&2; exit 1; }
git -C "$WORK/linear.git" update-ref refs/heads/main "$prev"
git -C "$WORK/linear.git" symbolic-ref HEAD refs/heads/main
rm -rf "$OUT"
git clone -q --bare --no-local "$WORK/linear.git" "$OUT"  # only what the copy reaches: no alternates
echo "$OUT: $(git -C "$OUT" rev-list --count HEAD) commits, $(du -sh "$OUT" | cut -f1)"
