#!/usr/bin/env bash
# Issue 38's candle check: candle-transformers' llama (integrations/candle/examples/llama.rs: a
# tiny random-weight configuration, its `tracing` spans turned into probes by the bridge), built
# with frame pointers and run with the CPU sampler on; then `prof pprof` and
# `go tool pprof -top -tagfocus event=<id>` for the spans `attn`, `linear` and `mlp`, and a
# count of where candle's matmul and softmax functions were sampled: under which span, on which
# thread.
#
# llama's spans carry no `layer` field (candle-transformers makes them as
# `span!(Level::TRACE, "attn")`), so their samples have no `layer` label: the span is picked by
# its `event` label (the probe's id, read from prof.json), not by `-tagfocus layer=...`.
#
# usage: scripts/candle-pprof-check.sh [ITERS [HZ]]      (default 60 iterations at 1000 Hz)
# Needs `go` (Debian's golang-go) on PATH. Exit status 0 when the matmul and softmax functions
# sampled are under the spans that run them, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
iters=${1:-60}
hz=${2:-1000}
command -v go >/dev/null || { echo "go is not on PATH (apt-get install golang-go)" >&2; exit 1; }
# The candle workspace's own target directory; the frame-pointer flags make its release build
# one of their own (a later release build without them rebuilds). Debug info (`limited`): it
# names the functions inlined at an address (candle's softmax is a closure inlined into rayon's
# worker code: without it, its samples are named by the rayon function holding them), by their
# paths (line tables alone name an inlined function without its path: `{closure#0}<...>`).
CARGO_PROFILE_RELEASE_DEBUG=limited RUSTFLAGS="-C force-frame-pointers=yes" cargo build -q --release \
    --manifest-path integrations/candle/Cargo.toml --features llama --example llama
cargo build -q -p profiler-cli --bin prof
prof=target/debug/prof
llama=integrations/candle/target/release/examples/llama
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A schedule longer than the run: sampling lasts until the results are written at its end.
PROF_CPU_SAMPLE=$hz PROF_WARMUP=2 PROF_REPEAT=1000000 PROF_OUT="$work/prof.json" \
    "$llama" --iters "$iters" >"$work/stdout" 2>"$work/stderr" || {
    cat "$work/stderr"
    exit 1
}
"$prof" pprof "$work/prof.json" -o "$work/profile.pb.gz"
# The event ids of the spans, from the sampled stacks.
python3 - "$work/prof.json" >"$work/ids" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
ids = {}
for st in p["cpu_samples"]["stacks"]:
    if st.get("event") is not None and st.get("name") in ("attn", "linear", "mlp"):
        ids[st["name"]] = st["event"]
for name, id in sorted(ids.items()):
    print(name, id)
PY
while read -r name id; do
    echo "== go tool pprof -top -nodecount=12 -tagfocus event=$id   # the span \`$name\`"
    go tool pprof -top -nodecount=12 -tagfocus "event=$id" "$work/profile.pb.gz" 2>&1
    echo
done <"$work/ids"
# The same question asked of go tool pprof: the samples whose stack names softmax, and those that
# name candle's matmul, under each span (`-symbolize=none`: pprof's default display simplifies
# Rust's names, generic arguments and all, before -focus matches them).
echo "== go tool pprof -symbolize=none -focus=REGEX -tagfocus event=ID: the samples in each span"
printf '%-8s %-8s %s\n' span work "samples (pprof's total of the focused nodes)"
while read -r name id; do
    for kind in softmax 'MatMul|gemm'; do
        total=$(go tool pprof -symbolize=none -top -nodecount=100000 -focus="(?i)$kind" \
            -tagfocus "event=$id" "$work/profile.pb.gz" 2>/dev/null |
            sed -n 's/^Showing nodes accounting for \([^,]*\),.*/\1/p')
        printf '%-8s %-8s %s\n' "$name" "${kind%%|*}" "${total:-0}"
    done
done <"$work/ids"
echo
python3 - "$work/prof.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
s = p["cpu_samples"]
names = [f["name"] or f["addr"] for f in s["functions"]]
threads = s["threads"]
def kind(frames):
    """What candle work a stack is in: softmax, matmul (the MatMul op or gemm), or other."""
    text = " ".join(frames)
    if "softmax" in text.lower():
        return "softmax"
    if "MatMul" in text or "gemm" in text:
        return "matmul"
    return "other"
table = {}
total = 0
for st in s["stacks"]:
    frames = [names[i] for i in st["frames"]]
    tag = st.get("name") if st.get("event") is not None else "(no event)"
    t = threads[st["thread"]]
    thread = t.get("name") or f"tid {t['tid']}"
    key = (kind(frames), tag, thread)
    table[key] = table.get(key, 0) + st["count"]
    total += st["count"]
print(f"{total} samples at {s['hz']} Hz, {s['dropped']} dropped, {len(threads)} threads "
      f"sampled: {', '.join((t.get('name') or 'tid %d' % t['tid']) for t in threads)}")
print(f"{'work':8} {'span (innermost event)':24} {'thread':16} {'samples':>8}")
for (k, tag, thread), n in sorted(table.items(), key=lambda kv: (kv[0][0], -kv[1])):
    if k != "other":
        print(f"{k:8} {tag:24} {thread:16} {n:8}")
# Where each kind of work belongs: softmax in `attn` (candle_nn::ops::softmax_last_dim);
# matmul in `attn` (q·kᵀ, att·v) or `linear` (every projection; the MLP's too).
right = {"softmax": {"attn"}, "matmul": {"attn", "linear"}}
ok = True
for k, spans in right.items():
    n = sum(v for (kk, tag, _), v in table.items() if kk == k)
    good = sum(v for (kk, tag, _), v in table.items() if kk == k and tag in spans)
    print(f"{k}: {good} of {n} samples under {' or '.join(sorted(spans))}")
    if n == 0 or good < n:
        ok = False
sys.exit(0 if ok else 1)
PY
