#!/usr/bin/env bash
# Doubling one block's hidden channels moves that block's backward time and not the others':
# the cnn example in trace mode, the base model twice (the run-to-run spread) and each block
# doubled once, then the backward by layer of each run (scripts/layers.py).
#
#   bash scripts/wide.sh [out-dir]        # about 2 minutes on 2 free cores
#
# The runs' prof.json files go to out-dir (default: a temporary folder, removed at the end).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-}
if [ -z "$out" ]; then
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out"
CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-2} cargo build --release --example cnn
run() {
  local name=$1
  shift
  PROF_MODE=trace PROF_WARMUP=2 PROF_REPEAT=10 PROF_OUT="$out/$name.json" \
    ./target/release/examples/cnn "$@" 2>/dev/null
}
run base1
run wide1 --wide 1
run base2
run wide2 --wide 2
run wide3 --wide 3
python3 scripts/layers.py "$out"/base1.json "$out"/base2.json "$out"/wide1.json "$out"/wide2.json "$out"/wide3.json
