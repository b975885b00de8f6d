#!/usr/bin/env bash
# Acceptance of continuous mode's drift verdict (change points): how often a layer made 20%
# slower from a given iteration is named `slower` from the right window, and how often a steady
# run names anything, on a quiet machine, under two switching CPU hogs, and under a `nice`d
# `cargo build` of another crate.
#
#   scripts/drift_acceptance.sh record DIR [RUNS]   # RUNS runs of each kind under each load
#   scripts/drift_acceptance.sh evaluate DIR        # the table (markdown) from DIR's files
#
# record: RUNS (default 20) rounds; each round runs, in turn, under each load, one slowed run
# (`--slow top_mlp --slow-by 20 --slow-from 3000`) and one steady run of the release `dlrm`
# example (`PROF_MODE=continuous PROF_REPEAT=10`, 6,000 iterations: 23 windows of 250
# iterations), interleaved so that a change of the machine's state over the session falls on
# every cell alike. Needs `cargo build --release --example dlrm` first. Loads:
#   quiet  nothing added (the machine may be shared: its load average is logged per run);
#   hogs   two `nice python3 -c 'while True: pass'`, on for 2.5 s, off for 2.5 s, in turn;
#   cargo  a `nice`d `cargo build --offline` of a copy of regex-syntax (from ~/.cargo/registry)
#          into a fresh target directory, over and over.
# evaluate: needs `prof` (PROF=path, default target/debug/prof) built from this tree.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DLRM=${DLRM:-$ROOT/target/release/examples/dlrm}
PROF=${PROF:-$ROOT/target/debug/prof}
SLOW_FROM=3000
ITERS=6000
REPEAT=10

load_pids=()

start_load() {
    case $1 in
    quiet) ;;
    hogs)
        (
            trap 'kill $a $b 2>/dev/null; exit 0' TERM
            while true; do
                nice python3 -c 'while True: pass' & a=$!
                nice python3 -c 'while True: pass' & b=$!
                sleep 2.5
                kill $a $b 2>/dev/null; wait $a $b 2>/dev/null || true
                sleep 2.5
            done
        ) &
        load_pids+=($!)
        ;;
    cargo)
        local src
        src=$(ls -d "$HOME"/.cargo/registry/src/*/regex-syntax-0.8.* | head -1)
        (
            work=$(mktemp -d)
            trap 'kill $c 2>/dev/null; wait $c 2>/dev/null; rm -rf "$work"; exit 0' TERM
            cp -r "$src" "$work/crate"
            n=0
            while true; do
                n=$((n + 1))
                nice cargo build --offline --quiet --manifest-path "$work/crate/Cargo.toml" \
                    --target-dir "$work/target$n" >/dev/null 2>&1 & c=$!
                wait $c || true
                rm -rf "$work/target$n"
            done
        ) &
        load_pids+=($!)
        sleep 1
        ;;
    esac
}

stop_load() {
    for p in "${load_pids[@]}"; do
        kill -TERM "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    load_pids=()
}

record() {
    local dir=$1 runs=${2:-20}
    mkdir -p "$dir"
    trap stop_load EXIT
    for ((i = 1; i <= runs; i++)); do
        for load in quiet hogs cargo; do
            for kind in slow steady; do
                local out="$dir/$kind-$load-$i.json"
                [[ -s $out ]] && continue
                local args=(--iters "$ITERS")
                [[ $kind == slow ]] && args+=(--slow top_mlp --slow-by 20 --slow-from "$SLOW_FROM")
                start_load "$load"
                local t0 t1
                t0=$(date +%s.%N)
                PROF_MODE=continuous PROF_REPEAT=$REPEAT PROF_OUT="$out" \
                    "$DLRM" "${args[@]}" >/dev/null 2>&1
                t1=$(date +%s.%N)
                stop_load
                printf '%s %s %s %.2f %s\n' "$kind" "$load" "$i" "$(echo "$t1 - $t0" | bc)" \
                    "$(cut -d' ' -f1 /proc/loadavg)" >>"$dir/runs.log"
            done
        done
    done
}

evaluate() {
    local dir=$1
    for f in "$dir"/*.json; do
        printf '%s\t' "$(basename "$f")"
        "$PROF" report --format json "$f" | python3 -c '
import json, sys
w = json.load(sys.stdin)["windows"]
def named(s):
    return s["drift"] in ("slower", "faster")
out = []
for s in [w["iteration"]] + w["events"]:
    if named(s):
        cp = s.get("change_point") or {}
        out.append("%s/%s:%s@%s:%.3f" % (s.get("layer"), s["name"], s["drift"], cp.get("index"), cp.get("ratio", 0)))
tb = [s for s in w["events"] if s["name"] == "top_backward"][0]
cp = tb.get("change_point") or {}
print(tb["drift"], cp.get("index", "-"), cp.get("first_iteration", "-"), " ".join(out) or "-")
'
    done >"$dir/verdicts.tsv"
    python3 - "$dir" "$SLOW_FROM" <<'EOF'
import collections, os, sys
dir, slow_from = sys.argv[1], int(sys.argv[2])
walls = collections.defaultdict(list)
for line in open(os.path.join(dir, "runs.log")):
    kind, load, i, wall, la = line.split()
    walls[(kind, load)].append(float(wall))
cells = collections.defaultdict(lambda: collections.Counter())
for line in open(os.path.join(dir, "verdicts.tsv")):
    name, rest = line.rstrip("\n").split("\t")
    kind, load, _ = name[:-5].split("-")
    tb, index, first, named = rest.split(" ", 3)
    c = cells[(kind, load)]
    c["runs"] += 1
    names = [] if named == "-" else named.split(" ")
    # The window holding iteration 3000: warmup 10, 250 iterations a window.
    right = (slow_from - 10) // 250
    if kind == "slow":
        if tb == "slower" and index != "-" and abs(int(index) - right) <= 1:
            c["hit"] += 1
        # Named besides top_mlp's events and the iteration (which top_backward is part of).
        others = [n for n in names if not n.startswith("top_mlp/") and not n.startswith("None/iteration")]
        c["other"] += bool(others)
    else:
        c["named"] += bool(names)
print("| load | kind | runs | top_backward `slower` from window %d±1 | another event named | a steady run names anything | wall per run (median, s) |" % right)
print("|---|---|---|---|---|---|---|")
for load in ["quiet", "hogs", "cargo"]:
    for kind in ["slow", "steady"]:
        c = cells[(kind, load)]
        if not c["runs"]:
            continue
        w = sorted(walls[(kind, load)])
        med = w[len(w) // 2] if w else float("nan")
        if kind == "slow":
            print("| %s | slowed 20%% from it. %d | %d | %d / %d | %d / %d | | %.1f |" % (load, slow_from, c["runs"], c["hit"], c["runs"], c["other"], c["runs"], med))
        else:
            print("| %s | steady | %d | | | %d / %d | %.1f |" % (load, c["runs"], c["named"], c["runs"], med))
EOF
}

case ${1:-} in
record) record "$2" "${3:-20}" ;;
evaluate) evaluate "$2" ;;
*)
    sed -n '2,20p' "$0"
    exit 2
    ;;
esac
