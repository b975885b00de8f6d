#!/usr/bin/env bash
# Writes Prometheus file_sd targets for a multi-rank job that runs with PROF_METRICS=ADDR:PORT:
# rank r listens on PORT + r, and ranks are numbered host by host (RANK = host index *
# ranks-per-host + local rank, as torchrun and mpirun number them by default).
#
#   deploy/prometheus/targets.sh --hosts node1,node2 --ranks-per-host 8 --port 9464 \
#       --out deploy/prometheus/targets/myjob.json
#
# Without --out the JSON goes to standard output. With --out it is written to a temporary file
# beside it and renamed, so Prometheus never reads half a file.
set -euo pipefail
usage() {
  echo "usage: $0 --hosts H1,H2,... --ranks-per-host N --port P [--out FILE]" >&2
  exit 2
}
hosts="" per="" port="" out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --hosts) hosts=${2-}; shift 2 || usage ;;
    --ranks-per-host) per=${2-}; shift 2 || usage ;;
    --port) port=${2-}; shift 2 || usage ;;
    --out) out=${2-}; shift 2 || usage ;;
    *) echo "targets.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
[ -n "$hosts" ] && [ -n "$per" ] && [ -n "$port" ] || usage
[[ "$per" =~ ^[1-9][0-9]*$ ]] || { echo "targets.sh: --ranks-per-host '$per' is not a whole number from 1" >&2; exit 2; }
[[ "$port" =~ ^[1-9][0-9]*$ ]] || { echo "targets.sh: --port '$port' is not a port (port 0 picks a free port per rank: list those by hand)" >&2; exit 2; }
json="["
first=1
IFS=',' read -r -a list <<<"$hosts"
ranks=$((${#list[@]} * per))
if [ $((port + ranks - 1)) -gt 65535 ]; then
  echo "targets.sh: --port $port plus the last rank, $((ranks - 1)), is past 65535" >&2
  exit 2
fi
for h in "${!list[@]}"; do
  host=${list[$h]}
  [[ "$host" =~ ^[A-Za-z0-9._:-]+$ ]] || { echo "targets.sh: '$host' is not a host name" >&2; exit 2; }
  targets=""
  # The job's rank, not the host's: each rank binds PORT plus its RANK.
  for ((r = h * per; r < (h + 1) * per; r++)); do
    targets+="${targets:+, }\"$host:$((port + r))\""
  done
  [ $first -eq 1 ] || json+=","
  first=0
  json+=$'\n'"  {\"targets\": [$targets]}"
done
json+=$'\n'"]"
if [ -z "$out" ]; then
  printf '%s\n' "$json"
else
  tmp=$(mktemp "$(dirname "$out")/.targets.XXXXXX")
  printf '%s\n' "$json" >"$tmp"
  mv -f "$tmp" "$out"
fi
