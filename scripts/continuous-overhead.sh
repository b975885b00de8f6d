#!/usr/bin/env bash
# The cost of the dlrm example with PROF_MODE=continuous against PROF_MODE=off, from outside.
#
# Runs PAIRS pairs of runs, interleaved (off, continuous, off, continuous, ...; the order within
# a pair alternates so that neither mode always runs second), each training ITERS iterations,
# and prints, over the per-pair ratios continuous/off, the median and the quartiles of two
# measures: the example's own training wall time, and the CPU time (user + system, all threads,
# the writer's included) of the whole process. Usage: scripts/continuous-overhead.sh [PAIRS] [ITERS]
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

run() { # mode -> "wall-seconds cpu-seconds"
  local wall cpu
  wall=$(cd "$work" && env -u PROF_FILTER PROF_MODE="$1" /usr/bin/time -f '%U %S' -o "$work/time" \
    "$exe" --iters "$iters" 2>/dev/null | sed -n 's/.*wall time \([0-9.]*\) s.*/\1/p')
  cpu=$(awk '{ printf "%.3f", $1 + $2 }' "$work/time")
  echo "$wall $cpu"
}

walls=() cpus=()
for ((i = 0; i < pairs; i++)); do
  if ((i % 2 == 0)); then
    off=$(run off); on=$(run continuous)
  else
    on=$(run continuous); off=$(run off)
  fi
  read -r off_wall off_cpu <<<"$off"
  read -r on_wall on_cpu <<<"$on"
  walls+=("$(awk -v a="$on_wall" -v b="$off_wall" 'BEGIN { printf "%.5f", a / b }')")
  cpus+=("$(awk -v a="$on_cpu" -v b="$off_cpu" 'BEGIN { printf "%.5f", a / b }')")
  echo "pair $((i + 1))/$pairs: off ${off_wall} s (cpu ${off_cpu} s), continuous ${on_wall} s" \
    "(cpu ${on_cpu} s), ratios ${walls[-1]} wall, ${cpus[-1]} cpu"
done
summary() { # name, ratios...
  local name=$1
  shift
  printf '%s\n' "$@" | sort -n | awk -v name="$name" '
    { r[NR] = $1 }
    END {
      n = NR; med = (n % 2) ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2
      printf "median ratio continuous/off, %s: %.4f (%+.2f%%), quartiles %.4f .. %.4f, %d pairs\n",
        name, med, (med - 1) * 100, r[int((n + 3) / 4)], r[int((3 * n + 1) / 4)], n
    }'
}
summary "training wall time" "${walls[@]}"
summary "process CPU time" "${cpus[@]}"
