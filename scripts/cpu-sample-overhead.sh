#!/usr/bin/env bash
# The cost of PROF_CPU_SAMPLE from outside (issue 38: at most 2% of the iteration at 1 kHz):
# examples/cpu_layers.rs (release, frame pointers, as the acceptance's check builds it) run for
# ITERS iterations with sampling off and at HZ samples a second, the same binary and the same
# session otherwise (sample mode, PROF_WARMUP=2).
#
# Runs PAIRS pairs of runs, interleaved (the order within a pair alternates so that neither
# always runs second), and prints over the per-pair ratios with/without the median and the
# quartiles of: the iteration's wall time and the main thread's CPU time per iteration (both
# from the example's `loop:` line, the loop alone: the handler runs on the interrupted thread,
# so its cost is in the latter), and the process's CPU time (user + system, every thread: the
# reader thread and the scans included; the helper thread works as long as the loop runs, so
# this one follows the wall time too).
#
# usage: scripts/cpu-sample-overhead.sh [PAIRS [ITERS [HZ]]]      (default 8 pairs, 1500, 1000)
set -euo pipefail
pairs=${1:-8}
iters=${2:-1500}
hz=${3:-1000}
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target/frame-pointers}
# CPU_LAYERS_EXE: the example built elsewhere (a machine without cargo); nothing is built then.
if [ -n "${CPU_LAYERS_EXE:-}" ]; then
    exe=$CPU_LAYERS_EXE
else
    RUSTFLAGS="-C force-frame-pointers=yes" cargo build -q --release --example cpu_layers -p profiler-suite
    exe=$PWD/$CARGO_TARGET_DIR/release/examples/cpu_layers
    [[ $CARGO_TARGET_DIR == /* ]] && exe=$CARGO_TARGET_DIR/release/examples/cpu_layers
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

run() { # with|without -> "wall-per-iter cpu-per-iter process-cpu"
  local sampling=()
  [[ $1 == with ]] && sampling=(PROF_CPU_SAMPLE="$hz")
  rm -f "$work/err" "$work/prof.json"
  env "${sampling[@]}" PROF_WARMUP=2 PROF_REPEAT=1000000 PROF_OUT="$work/prof.json" \
    /usr/bin/time -f '%U %S' -o "$work/time" "$exe" --iters "$iters" 2>"$work/err" || {
    cat "$work/err" >&2
    exit 1
  }
  if [[ $1 == with ]] && ! grep -q '"cpu_samples"' "$work/prof.json"; then
    echo "the run with PROF_CPU_SAMPLE=$hz wrote no samples:" >&2
    cat "$work/err" >&2
    exit 1
  fi
  awk -v iters="$iters" -v time="$(awk '{ print $1 + $2 }' "$work/time")" '
    /^loop: / { printf "%.9f %.9f %.3f\n", $4 / iters, $7 / iters, time; found = 1 }
    END { if (!found) exit 1 }' "$work/err"
}

walls=() cpus=() procs=()
for ((i = 0; i < pairs; i++)); do
  if ((i % 2 == 0)); then
    off=$(run without); on=$(run with)
  else
    on=$(run with); off=$(run without)
  fi
  read -r off_wall off_cpu off_proc <<<"$off"
  read -r on_wall on_cpu on_proc <<<"$on"
  walls+=("$(awk -v a="$on_wall" -v b="$off_wall" 'BEGIN { printf "%.5f", a / b }')")
  cpus+=("$(awk -v a="$on_cpu" -v b="$off_cpu" 'BEGIN { printf "%.5f", a / b }')")
  procs+=("$(awk -v a="$on_proc" -v b="$off_proc" 'BEGIN { printf "%.5f", a / b }')")
  awk -v i="$((i + 1))" -v n="$pairs" -v ow="$off_wall" -v oc="$off_cpu" -v nw="$on_wall" \
    -v nc="$on_cpu" -v op="$off_proc" -v np="$on_proc" -v rw="${walls[-1]}" -v rc="${cpus[-1]}" \
    'BEGIN { printf "pair %d/%d: without %.3f ms/iter (cpu %.3f ms, process %.2f s), with %.3f ms/iter (cpu %.3f ms, process %.2f s); ratios %s wall, %s cpu\n",
      i, n, ow * 1e3, oc * 1e3, op, nw * 1e3, nc * 1e3, np, rw, rc }'
done
summary() { # name, ratios...
  local name=$1
  shift
  printf '%s\n' "$@" | sort -n | awk -v name="$name" -v hz="$hz" '
    { r[NR] = $1 }
    END {
      n = NR; med = (n % 2) ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2
      printf "median ratio with/without PROF_CPU_SAMPLE=%s, %s: %.4f (%+.2f%%), quartiles %.4f .. %.4f, %d pairs\n",
        hz, name, med, (med - 1) * 100, r[int((n + 3) / 4)], r[int((3 * n + 1) / 4)], n
    }'
}
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
summary "iteration wall time" "${walls[@]}"
summary "main thread's CPU time per iteration" "${cpus[@]}"
summary "process CPU time" "${procs[@]}"
