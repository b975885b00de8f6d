#!/usr/bin/env bash
# Times `prof` on large trace-mode profiles made by a real profiled program
# (examples/bigtrace.rs): wall time, CPU time and peak memory (/usr/bin/time) of `prof trace`
# (JSON and Perfetto's protobuf), `report`, `html` and `diff`, RUNS times each, interleaved. The "Large profiles" table of docs/overhead.md
# comes from it.
#
#   scripts/large-profiles.sh [PROF] [DIR] [RUNS]
#
# PROF defaults to target/release/prof (build it first), DIR to target/large-profiles (it gets
# the profiles, about 700 MB, made once; each trace is removed after it is timed, and the 10M
# one takes 4.7 GB while it exists). Set OUT_DIR to write the traces elsewhere (/dev/shm: no
# disk). A line per run: command, wall s, CPU s (user+sys, then user alone: the figure least
# moved by other work on the machine), peak MiB, the load average (1 min) before it, and for a
# trace its size and bytes per sample.
set -eu
cd "$(dirname "$0")/.."
PROF=$(realpath "${1:-target/release/prof}")
DIR=${2:-target/large-profiles}
RUNS=${3:-3}
# ONLY=trace: only the traces of 1m and 10m (JSON and Perfetto), not report, html and diff.
ONLY=${ONLY:-}
OUT=${OUT_DIR:-$DIR}
mkdir -p "$DIR" "$OUT"

# make NAME CALLS: a profile of CALLS events x 1000 iterations, by the profiled program.
make() {
    [ -s "$DIR/$1.json" ] && return
    cargo build --release --example bigtrace -q
    PROF_MODE=trace PROF_WARMUP=2 PROF_REPEAT=1000 PROF_MAX_EVENTS=$2 PROF_OUT="$DIR/$1.json" \
        target/release/examples/bigtrace --calls "$2" >/dev/null 2>&1
}
make 1m 1000
make 10m 10000
if [ "$ONLY" != trace ]; then
    make 1m-b 1000
    make 100mb-a 2500
    make 100mb-b 2500
fi

# timed LABEL ARGS...: one line of numbers for `prof ARGS`.
timed() {
    local label=$1
    shift
    local load
    load=$(cut -d' ' -f1 /proc/loadavg)
    /usr/bin/time -o "$OUT/time.txt" -f "%e %U %S %M" "$PROF" "$@" >/dev/null 2>&1
    tail -1 "$OUT/time.txt" | awk -v l="$label" -v load="$load" \
        '{printf "%-22s wall %6.2f s  cpu %6.2f s  user %6.2f s  peak %6.0f MiB  (load %s)", l, $1, $2+$3, $2, $4/1024, load}'
}

# timed_trace LABEL OUTPUT SAMPLES ARGS...: `timed`, then the size of the trace written (and
# per sample), which is removed.
timed_trace() {
    local label=$1 output=$2 samples=$3
    shift 3
    timed "$label" trace "$@" -o "$output"
    local size
    size=$(stat -c %s "$output")
    printf "  %8.1f MB  %5.1f B/sample\n" "$((size / 100000))e-1" "$((size * 10 / samples))e-1"
    rm -f "$output"
}

for run in $(seq "$RUNS"); do
    echo "-- run $run"
    for n in 1m 10m; do
        samples=$([ $n = 1m ] && echo 1000000 || echo 10000000)
        timed_trace "trace $n" "$OUT/$n.trace.json" "$samples" "$DIR/$n.json"
        timed_trace "trace $n perfetto" "$OUT/$n.pftrace" "$samples" "$DIR/$n.json"
        [ "$ONLY" = trace ] && continue
        timed "report $n" report "$DIR/$n.json"
        echo
        timed "html $n" html "$DIR/$n.json" -o "$OUT/$n.html"
        echo
        rm -f "$OUT/$n.html"
    done
    [ "$ONLY" = trace ] && continue
    timed_trace "trace 1m .gz" "$OUT/1m.trace.json.gz" 1000000 "$DIR/1m.json"
    timed "diff 1m" diff "$DIR/1m.json" "$DIR/1m-b.json"
    echo
    timed "diff 100mb" diff "$DIR/100mb-a.json" "$DIR/100mb-b.json"
    echo
done
