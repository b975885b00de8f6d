#!/usr/bin/env bash
# The cost of PROF_METRICS from outside: the dlrm example in continuous mode with the endpoint
# (scraped every second by a curl loop, as a Prometheus with scrape_interval 1s would) against
# the same without it.
#
# Runs PAIRS pairs of runs, interleaved (the order within a pair alternates so that neither
# always runs second), each training ITERS iterations, and prints over the per-pair ratios
# with/without the median and the quartiles of the example's own training wall time and of the
# process's CPU time (user + system, every thread: the writer's rendering and the server's
# included). Usage: scripts/metrics-overhead.sh [PAIRS] [ITERS]. DLRM=path/to/dlrm measures
# that binary (built with profiler-core's `metrics` feature) instead of building the example.
set -euo pipefail
pairs=${1:-8}
iters=${2:-3000}
cd "$(dirname "$0")/.."
if [[ -n "${DLRM:-}" ]]; then
  exe=$(realpath "$DLRM")
else
  cargo build --release --features metrics --example dlrm -q
  exe=$PWD/target/release/examples/dlrm
fi
work=$(mktemp -d)
scraper=
trap '[[ -n "$scraper" ]] && kill "$scraper" 2>/dev/null; rm -rf "$work"' EXIT

run() { # with|without -> "wall-seconds cpu-seconds scrapes"
  local metrics=() pid port="" scrapes=0
  [[ $1 == with ]] && metrics=(PROF_METRICS=127.0.0.1:0)
  rm -f "$work/err" "$work/out" "$work/scrapes"
  (cd "$work" && env PROF_MODE=continuous "${metrics[@]}" /usr/bin/time -f '%U %S' \
    -o "$work/time" "$exe" --iters "$iters" >"$work/out" 2>"$work/err") &
  pid=$!
  if [[ $1 == with ]]; then
    for _ in $(seq 600); do
      port=$(sed -n 's|.*metrics on http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$work/err" 2>/dev/null || true)
      [[ -n "$port" ]] && break
      sleep 0.05
    done
    [[ -n "$port" ]] || { echo "no metrics address in the run's stderr" >&2; exit 1; }
    (while true; do
      curl -s -o /dev/null "http://127.0.0.1:$port/metrics" && echo >>"$work/scrapes"
      sleep 1
    done) &
    scraper=$!
  fi
  wait "$pid"
  if [[ -n "$scraper" ]]; then
    kill "$scraper" 2>/dev/null || true
    wait "$scraper" 2>/dev/null || true
    scraper=
    scrapes=$(wc -l <"$work/scrapes" 2>/dev/null || echo 0)
  fi
  local wall cpu
  wall=$(sed -n 's/.*wall time \([0-9.]*\) s.*/\1/p' "$work/out")
  cpu=$(awk '{ printf "%.3f", $1 + $2 }' "$work/time")
  echo "$wall $cpu $scrapes"
}

walls=() cpus=()
for ((i = 0; i < pairs; i++)); do
  if ((i % 2 == 0)); then
    off=$(run without); on=$(run with)
  else
    on=$(run with); off=$(run without)
  fi
  read -r off_wall off_cpu _ <<<"$off"
  read -r on_wall on_cpu scrapes <<<"$on"
  walls+=("$(awk -v a="$on_wall" -v b="$off_wall" 'BEGIN { printf "%.5f", a / b }')")
  cpus+=("$(awk -v a="$on_cpu" -v b="$off_cpu" 'BEGIN { printf "%.5f", a / b }')")
  echo "pair $((i + 1))/$pairs: without ${off_wall} s (cpu ${off_cpu} s), with ${on_wall} s" \
    "(cpu ${on_cpu} s, ${scrapes} scrapes), ratios ${walls[-1]} wall, ${cpus[-1]} cpu"
done
summary() { # name, ratios...
  local name=$1
  shift
  printf '%s\n' "$@" | sort -n | awk -v name="$name" '
    { r[NR] = $1 }
    END {
      n = NR; med = (n % 2) ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2
      printf "median ratio with/without PROF_METRICS, %s: %.4f (%+.2f%%), quartiles %.4f .. %.4f, %d pairs\n",
        name, med, (med - 1) * 100, r[int((n + 3) / 4)], r[int((3 * n + 1) / 4)], n
    }'
}
summary "training wall time" "${walls[@]}"
summary "process CPU time" "${cpus[@]}"
