#!/usr/bin/env bash
# profiler-core against its peers, in one command: runs the peers bench RUNS times (default 3)
# and prints the "Against the peers" table of docs/overhead.md.
#
#   scripts/peers.sh [RUNS]
#
# Each run's divan output is kept in target/peers/run-N.txt; scripts/peers_table.py turns them
# into the table (the median of the runs' medians, their range, and the ratios to the raw clock
# pair and to puffin, taken within each run). Extra arguments after RUNS go to the bench (divan's
# options, e.g. --sample-count 500).
set -euo pipefail
runs=${1:-3}
if ! [[ $runs =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: scripts/peers.sh [RUNS] [divan options]: RUNS must be a positive number, not '$runs'" >&2
  exit 2
fi
shift || true
cd "$(dirname "$0")/.."
out=target/peers
mkdir -p "$out"
rm -f "$out"/run-*.txt
cargo bench -p profiler-peers --bench peers --no-run -q
files=()
for ((i = 1; i <= runs; i++)); do
  echo "run $i/$runs" >&2
  cargo bench -p profiler-peers --bench peers -q -- "$@" >"$out/run-$i.txt"
  files+=("$out/run-$i.txt")
done
python3 scripts/peers_table.py "${files[@]}"
