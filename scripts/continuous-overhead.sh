#!/usr/bin/env bash
# The slowdown of the dlrm example with PROF_MODE=continuous against PROF_MODE=off.
#
# Runs PAIRS pairs of runs, interleaved (off, continuous, off, continuous, ...; the order within
# a pair alternates so that neither mode always runs second), each training ITERS iterations,
# and prints the median of the per-pair ratios of the example's own training wall time, with
# the quartiles. Usage: scripts/continuous-overhead.sh [PAIRS] [ITERS]
# DLRM=path/to/dlrm measures that binary (another build, to compare two versions) instead of
# building the example. PROF_* variables other than PROF_MODE and PROF_FILTER pass through.
set -euo pipefail
pairs=${1:-21}
iters=${2:-5000}
cd "$(dirname "$0")/.."
if [[ -n "${DLRM:-}" ]]; then
  exe=$(realpath "$DLRM")
else
  cargo build --release --example dlrm -q
  exe=$PWD/target/release/examples/dlrm
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

wall() { # mode -> seconds of training
  (cd "$work" && env -u PROF_FILTER PROF_MODE="$1" "$exe" --iters "$iters" 2>/dev/null) |
    sed -n 's/.*wall time \([0-9.]*\) s.*/\1/p'
}

ratios=()
for ((i = 0; i < pairs; i++)); do
  if ((i % 2 == 0)); then
    off=$(wall off); on=$(wall continuous)
  else
    on=$(wall continuous); off=$(wall off)
  fi
  ratios+=("$(awk -v a="$on" -v b="$off" 'BEGIN { printf "%.5f", a / b }')")
  echo "pair $((i + 1))/$pairs: off ${off} s, continuous ${on} s, ratio ${ratios[-1]}"
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '
  { r[NR] = $1 }
  END {
    n = NR; med = (n % 2) ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2
    printf "median ratio continuous/off: %.4f (%+.2f%%), quartiles %.4f .. %.4f, %d pairs\n",
      med, (med - 1) * 100, r[int((n + 3) / 4)], r[int((3 * n + 1) / 4)], n
  }'
