#!/usr/bin/env bash
# How stable `prof peak` is on this machine: runs it K times (release build, one after the
# other) and prints, for each figure of peak.json (flops, bytes) and for each kernel's peak and
# best (the GEMM, STREAM copy, STREAM triad, read back from the table), the median, min, max and
# the spread across runs, (max - min) / median in %, with the load average (1 min) before each
# run and the time (UTC) the runs began and ended. The "prof peak" section of docs/overhead.md
# comes from it; the machine's load belongs beside every figure written from it.
#
#   scripts/peak_stability.sh [K] [-- PROF_PEAK_FLAGS...]
#
# K defaults to 10. Flags after `--` go to every `prof peak` (`--threads 1`, `--dtype f64`).
# PROF defaults to target/release/prof, built here when missing.
set -eu
cd "$(dirname "$0")/.."
K=${1:-10}
shift || true
[ "${1:-}" = "--" ] && shift
PROF=${PROF:-target/release/prof}
if [ ! -x "$PROF" ]; then
    nice -n 10 cargo build --release -p profiler-cli >&2
fi
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
echo "prof peak, $K runs: $PROF peak $*" >&2
date -u +%FT%TZ >"$DIR/began"
for i in $(seq 1 "$K"); do
    load=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo '?')
    "$PROF" peak -o "$DIR/peak-$i.json" "$@" >"$DIR/table-$i.txt" 2>/dev/null
    echo "$load" >"$DIR/load-$i.txt"
    echo "run $i (load $load): $(awk '/^GEMM/ {printf "GEMM %s GFLOP/s; ", $4} /^STREAM/ {printf "%s %s GB/s; ", $2, $3}' "$DIR/table-$i.txt")" >&2
done
date -u +%FT%TZ >"$DIR/ended"

python3 - "$DIR" "$K" <<'PY'
import json, statistics, sys
d, k = sys.argv[1], int(sys.argv[2])
rows = {"flops (GFLOP/s)": [], "bytes (GB/s)": [], "GEMM peak": [], "GEMM best": [],
        "STREAM copy peak": [], "STREAM copy best": [], "STREAM triad peak": [],
        "STREAM triad best": []}
loads = []
for i in range(1, k + 1):
    p = json.load(open(f"{d}/peak-{i}.json"))
    rows["flops (GFLOP/s)"].append(p["flops"] / 1e9)
    rows["bytes (GB/s)"].append(p["bytes"] / 1e9)
    for line in open(f"{d}/table-{i}.txt"):
        words = line.split()
        # Columns: figure (1 to 3 words), peak, best, median, worst, spread, reps, unit.
        if line.startswith("GEMM"):
            rows["GEMM peak"].append(float(words[3]))
            rows["GEMM best"].append(float(words[4]))
        elif line.startswith("STREAM copy"):
            rows["STREAM copy peak"].append(float(words[2]))
            rows["STREAM copy best"].append(float(words[3]))
        elif line.startswith("STREAM triad"):
            rows["STREAM triad peak"].append(float(words[2]))
            rows["STREAM triad best"].append(float(words[3]))
    loads.append(open(f"{d}/load-{i}.txt").read().strip())
print(f"{'figure':<18} {'median':>8} {'min':>8} {'max':>8} {'spread':>7}")
rows = {name: v for name, v in rows.items() if v}
for name, v in rows.items():
    m = statistics.median(v)
    print(f"{name:<18} {m:>8.1f} {min(v):>8.1f} {max(v):>8.1f} {100 * (max(v) - min(v)) / m:>6.1f}%")
print(f"load average (1 min) before each run: {' '.join(loads)}")
print(f"from {open(f'{d}/began').read().strip()} to {open(f'{d}/ended').read().strip()}")
print(f"host: {json.load(open(f'{d}/peak-1.json'))['host']}")
PY
