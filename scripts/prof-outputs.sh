#!/usr/bin/env bash
# Runs a fixed set of `prof` commands on the checked-in fixtures (and on random profiles of every
# shape, when python3 is there) and writes every output (stdout, stderr, exit status, and the
# files written, gz ones decompressed) under OUT_DIR, one file per command. Two builds of `prof`
# are compared by running this with each and diffing the folders:
#
#   scripts/prof-outputs.sh old/prof /tmp/before
#   scripts/prof-outputs.sh target/release/prof /tmp/after
#   diff -r /tmp/before /tmp/after && echo identical
#
# Paths in the outputs are the fixtures' relative paths, so the two runs compare byte for byte.
set -u
PROF=$(realpath "$1")
OUT=$(realpath -m "$2")
cd "$(dirname "$0")/.."
rm -rf "$OUT" && mkdir -p "$OUT"
D=profiler-cli/tests/data
FILES="$D/cli/batch32.json $D/cli/batch64.json $D/cli/continuous.json $D/html/before.json
       $D/trace/dlrm-sample.json $D/trace/dlrm-trace.json $D/cli/continuous-slow.json"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# run NAME ARGS...: stdout, stderr and status of `prof ARGS` into OUT/NAME.*
run() {
    local name=$1
    shift
    "$PROF" "$@" >"$OUT/$name.out" 2>"$TMP/err"
    echo "status $?" >"$OUT/$name.status"
    # The temporary output paths differ between runs: keep only their file names.
    sed "s|$TMP/||g; s|$TMP|TMP|g" "$TMP/err" >"$OUT/$name.err"
}

for f in $FILES; do
    n=$(basename "$f" .json)
    for fmt in table csv json markdown; do
        run "report-$n-$fmt" report "$f" --format "$fmt"
        run "report-$n-$fmt-grouped" report "$f" --format "$fmt" --group-by layer,phase
    done
    for sort in median total alloc peak; do
        run "report-$n-sort-$sort" report "$f" --sort "$sort" --group-by layer
    done
    run "report-$n-phase" report "$f" --group-by phase --cv-threshold 0.1
    run "trace-$n" trace "$f" -o "$TMP/$n.trace.json"
    cp "$TMP/$n.trace.json" "$OUT/trace-$n.json" 2>/dev/null
    run "trace-$n-gz" trace "$f" -o "$TMP/$n.trace.json.gz"
    gzip -dc "$TMP/$n.trace.json.gz" >"$OUT/trace-$n-gz.json" 2>/dev/null
    # Perfetto's protobuf (a build before `--format perfetto` writes JSON there).
    run "trace-$n-perfetto" trace "$f" -o "$TMP/$n.pftrace"
    cp "$TMP/$n.pftrace" "$OUT/trace-$n.pftrace" 2>/dev/null
    run "html-$n" html "$f" -o "$TMP/$n.html"
    cp "$TMP/$n.html" "$OUT/html-$n.html" 2>/dev/null
done

run html-diff html "$D/html/after.json" --diff "$D/html/before.json" -o "$TMP/diff.html"
cp "$TMP/diff.html" "$OUT/html-diff.html"
for fmt in table csv json markdown; do
    run "diff-cli-$fmt" diff "$D/cli/batch32.json" "$D/cli/batch32-rerun.json" --format "$fmt"
    run "diff-html-$fmt" diff "$D/html/before.json" "$D/html/after.json" --format "$fmt"
    run "diff-scale-$fmt" diff "$D/cli/batch32.json" "$D/cli/batch64.json" --format "$fmt" \
        --resamples 500 --seed 7
    run "scale-$fmt" scale "$D/cli/batch32.json" "$D/cli/batch64.json" --param batch=32,64 \
        --format "$fmt"
    run "merge-$fmt" merge "$D/cli/batch32.json" "$D/cli/rank1.json" --format "$fmt"
done
run diff-trace diff "$D/trace/dlrm-trace.json" "$D/trace/dlrm-trace.json"
run diff-continuous diff "$D/cli/continuous.json" "$D/cli/continuous.json" --format json
run merge-out merge "$D/cli/batch32.json" "$D/cli/rank1.json" -o "$TMP/merged.json"
cp "$TMP/merged.json" "$OUT/merged.json"
# Random valid profiles of every shape (scripts/random_profiles.py, fixed seed).
if command -v python3 >/dev/null; then
    python3 scripts/random_profiles.py "$TMP/random" 60 1
    for f in "$TMP"/random/*.json; do
        n=$(basename "$f" .json)
        run "trace-$n" trace "$f" -o "$TMP/$n.trace.json"
        cp "$TMP/$n.trace.json" "$OUT/trace-$n.json" 2>/dev/null
        run "trace-$n-perfetto" trace "$f" -o "$TMP/$n.pftrace"
        cp "$TMP/$n.pftrace" "$OUT/trace-$n.pftrace" 2>/dev/null
        run "report-$n" report "$f" --format json --group-by layer,phase
        run "report-$n-table" report "$f" --sort total
        run "report-$n-csv" report "$f" --format csv --group-by layer
        run "report-$n-md" report "$f" --format markdown
        run "html-$n" html "$f" -o "$TMP/$n.html"
        cp "$TMP/$n.html" "$OUT/html-$n.html" 2>/dev/null
    done
    run diff-random diff "$TMP/random/random001.json" "$TMP/random/random002.json" --format json
fi
# Bad input: the messages must not change either.
printf '{"schema": "profiler-core/prof/v1", "complete": tr' >"$TMP/cut.json"
: >"$TMP/empty.json"
echo 'not json' >"$TMP/not.json"
for bad in cut empty not; do
    run "bad-$bad" report "$TMP/$bad.json"
done
run bad-missing report "$TMP/missing.json"
run bad-dir report "$TMP"
# Help texts, the version and the parser's errors, through a link named `prof` (clap prints the
# name it was run by).
mkdir -p "$TMP/bin" && ln -s "$PROF" "$TMP/bin/prof"
PROF="$TMP/bin/prof"
run help-none
run help --help
run help-short -h
run help-help help
run version --version
run bad-command reprot
for cmd in report trace diff scale ab merge flame watch html trigger peak help; do
    run "help-$cmd" "$cmd" --help
    run "help-$cmd-short" "$cmd" -h
    run "help-help-$cmd" help "$cmd"
done
C=$D/cli/batch32.json
run err-report-none report
run err-report-sort report "$C" --sort size
run err-report-cv report "$C" --cv-threshold -1
run err-report-drift report "$C" --drift-threshold 200%
run err-report-peak report "$C" --peak "$TMP/missing.json"
run err-trace-no-output trace "$C"
run err-trace-iterations trace "$C" -o "$TMP/t.json" --iterations 5..2
run err-trace-format trace "$C" -o "$TMP/t.json" --format svg
run err-trace-dir trace "$C" -o "$TMP"
run err-diff-none diff
run err-diff-one diff "$C"
run err-diff-three diff "$C" "$C" "$C"
run err-diff-option-after diff "$C" -- "$C" --paired
run err-diff-paired diff --paired "$C" -- "$C" "$C"
run err-diff-alpha diff "$C" "$C" --alpha 1
run err-diff-resamples diff "$C" "$C" --resamples 5
run err-diff-threshold diff "$C" "$C" --threshold x
run err-scale-one scale "$C" --param batch=32
run err-scale-param scale "$C" "$C" --param batch
run err-scale-count scale "$C" "$C" --param batch=1,2,3
run err-scale-ideal scale "$C" "$C" --param batch=1,2 --ideal square
run err-ab-none ab
run err-ab-runs ab --before true --after true --runs 1
run err-ab-split ab --before "'unclosed" --after true --dir "$TMP/ab"
run err-merge-none merge
run err-merge-output merge "$C" -o "$TMP"
run err-flame-no-output flame "$C"
run err-flame-conflict flame "$C" -o "$TMP/f.svg" --folded --icicle
run err-flame-filter flame "$C" -o "$TMP/f.svg" --filter "layer=="
run err-flame-group flame "$C" -o "$TMP/f.svg" --group stage
run err-watch-none watch
run err-watch-interval watch "$C" --interval 0
run err-watch-missing watch --once "$D/no-such.json"
run err-html-no-output html "$C"
run err-html-diff html "$C" --diff "$TMP/missing.json" -o "$TMP/h.html"
run err-trigger-none trigger
run err-trigger-at trigger 1 --at 3
run err-trigger-both trigger 1 --control "$TMP/control"
run err-trigger-iterations trigger --control "$TMP/control" --iterations 0
run err-peak-device peak --device tpu
run err-peak-cuda peak --device cuda:x
run err-peak-threads peak --threads 0
run err-peak-seconds peak --seconds 9999
run err-peak-size peak --size 8
run err-peak-dtype peak --dtype bf16 -o "$TMP/p.json"
run err-peak-format peak --format yaml
run err-peak-output peak -o "$TMP/no/such/dir/peak.json"
run err-peak-cuda-build peak --device cuda -o "$TMP/p.json"
run err-peak-gpu-threads peak --device cuda --threads 2 -o "$TMP/p.json"
echo "wrote $(ls "$OUT" | wc -l) files to $OUT"
