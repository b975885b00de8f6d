#!/usr/bin/env bash
# The decorator's cost from outside: the cnn example built with profiling (`Profiled<NdArray>`
# under autodiff, sample mode, the default) and without (`--no-default-features`: plain
# `Autodiff<NdArray>`, the decorator not in the build), run in interleaved pairs for a fixed
# number of iterations; each run's wall time, then the ratio of each pair (profiled / plain) with
# its median and spread.
#
#   bash scripts/overhead.sh [pairs] [iterations]      # default 8 pairs of 20 iterations
#
# The summary of the profiled runs goes to a temporary folder (PROF_OUT), removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-8}
iters=${2:-20}
jobs=${CARGO_BUILD_JOBS:-2}
cargo build -q -j "$jobs" --release --example cnn
cargo build -q -j "$jobs" --release --example cnn --no-default-features --target-dir target/plain
profiled=./target/release/examples/cnn
plain=./target/plain/release/examples/cnn
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
wall() { # wall seconds of one run
  local start end
  start=$(date +%s.%N)
  "$@" >/dev/null 2>&1
  end=$(date +%s.%N)
  echo "$end - $start" | bc -l
}
ratios=()
echo "pair  plain_s  profiled_s  ratio   (load average at the start of the pair)"
for i in $(seq 1 "$pairs"); do
  load=$(cut -d' ' -f1 /proc/loadavg)
  # Alternate which goes first, so that a trend in the machine's load favours neither.
  if [ $((i % 2)) -eq 1 ]; then
    a=$(wall "$plain" --iters "$iters")
    b=$(PROF_OUT="$out/prof-$i.json" wall "$profiled" --iters "$iters")
  else
    b=$(PROF_OUT="$out/prof-$i.json" wall "$profiled" --iters "$iters")
    a=$(wall "$plain" --iters "$iters")
  fi
  r=$(echo "$b / $a" | bc -l)
  ratios+=("$r")
  printf '%4d  %7.2f  %10.2f  %6.3f   (%s)\n' "$i" "$a" "$b" "$r" "$load"
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '
  { r[NR] = $1 }
  END {
    n = NR
    med = (n % 2) ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2
    printf "ratio profiled/plain: median %.3f, min %.3f, max %.3f over %d pairs\n", med, r[1], r[n], n
  }'
