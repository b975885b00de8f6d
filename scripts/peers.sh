#!/usr/bin/env bash
# profiler-core against its peers, in one command: runs the peers bench RUNS times (default 3)
# and prints the "Against the peers" table of docs/overhead.md.
#
#   scripts/peers.sh [RUNS]
#
# Each run's divan output is kept in target/peers/run-N.txt, after a first line that says when
# it ran, at which commit and under which load (`# run N/RUNS, DATE, commit C, load L`, the
# 1-minute load average of `uptime` as the run starts); scripts/peers_table.py turns them into
# the table (the median of the runs' medians, their range, and the ratios to the raw clock pair
# and to puffin, taken within each run) and then into the per-run table of docs/overhead.md
# (each run's raw clock pair, armed, `trace` and unarmed medians, and how many runs kept the
# armed probe within 1.2x the raw pair). Extra arguments after RUNS go to the bench (divan's
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
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ $commit != unknown && -n $(git status --porcelain --untracked-files=no 2>/dev/null) ]]; then
  commit="$commit+changes"
fi
files=()
for ((i = 1; i <= runs; i++)); do
  load=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || uptime | sed 's/.*load averages*: *//; s/,.*//')
  echo "run $i/$runs (load $load)" >&2
  echo "# run $i/$runs, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $commit, load $load" >"$out/run-$i.txt"
  cargo bench -p profiler-peers --bench peers -q -- "$@" >>"$out/run-$i.txt"
  files+=("$out/run-$i.txt")
done
python3 scripts/peers_table.py "${files[@]}"
