#!/bin/bash
# The wall time of `prof ab -n 10` (an example against itself) against the 20 runs alone, one
# after the other; three times each, interleaved. Build first: cargo build --release -p profiler-cli
# and cargo build --release --example dlrm --example waits. docs/overhead.md, "Several runs a side".
cd "$(dirname "$0")/.."
P=target/release/prof; E=target/release/examples
for rep in 1 2 3; do
 for prog in dlrm waits; do
  env_extra=""; [ $prog = waits ] && env_extra="PROF_REPEAT=30"
  d=$(mktemp -d)
  s=$(date +%s.%N)
  env $env_extra $P ab -n 10 --dir $d/ab --before "$E/$prog" --after "$E/$prog" >/dev/null 2>&1
  m=$(date +%s.%N)
  for i in $(seq 10); do env $env_extra PROF_OUT=$d/b$i.json $E/$prog >/dev/null 2>&1; env $env_extra PROF_OUT=$d/a$i.json $E/$prog >/dev/null 2>&1; done
  e=$(date +%s.%N)
  echo "$prog rep $rep: prof ab $(echo "$m-$s"|bc) s, 20 runs alone $(echo "$e-$m"|bc) s, load $(cut -d' ' -f1 /proc/loadavg)"
  rm -rf $d
 done
done
