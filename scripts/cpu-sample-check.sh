#!/usr/bin/env bash
# The CPU sampler's acceptance (issue 38): examples/cpu_layers.rs, built with frame pointers, run
# at HZ samples a second for SECONDS; checks that at least 99% of the samples taken inside an
# annotated event carry the right one, and that each function's share of its layer's samples is
# within 3 points of the truth (f 75%, g 25% of layer a; h all of b; k all of helper). With
# `go` on PATH, also reads the pprof profile back with `go tool pprof`; then runs a stripped copy
# (addresses instead of names, and no crash).
#
# usage: scripts/cpu-sample-check.sh [SECONDS [HZ]]      (default 10 s at 1000 Hz)
# Exit status 0 when every check holds, 1 when one does not.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
hz=${2:-1000}
# A target directory of its own: the flags below would otherwise rebuild everything in target/.
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target/frame-pointers}
RUSTFLAGS="-C force-frame-pointers=yes" cargo build -q --release --example cpu_layers -p profiler-suite
cargo build -q -p profiler-cli --bin prof
prof=target/debug/prof
[ -x "$prof" ] || prof=$CARGO_TARGET_DIR/debug/prof
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The CPU time the run used (user + system), to compare with the samples taken.
PROF_CPU_SAMPLE=$hz PROF_WARMUP=2 PROF_REPEAT=1000000 PROF_OUT="$work/prof.json" \
    /usr/bin/time -f '%U %S' -o "$work/cpu" \
    "$CARGO_TARGET_DIR/release/examples/cpu_layers" "$seconds" 2>"$work/stderr" || {
    cat "$work/stderr"
    exit 1
}
status=0
python3 - "$work/prof.json" "$work/cpu" <<'PY' || status=$?
import json, sys
p = json.load(open(sys.argv[1]))
cpu = sum(float(x) for x in open(sys.argv[2]).read().split())
s = p["cpu_samples"]
names = [f["name"] or f["addr"] for f in s["functions"]]
layer_of = {"f": "a", "g": "a", "h": "b", "k": "helper", "outside": None,
            "layer_a": "a", "layer_b": "b", "helper_layer": "helper"}
def short(name):
    return name.rsplit("::", 1)[-1]
inside = right = 0
leaf_in_layer = {}
total = sum(st["count"] for st in s["stacks"])
for st in s["stacks"]:
    frames = [short(names[i]) for i in st["frames"]]
    # The innermost of our functions on the stack says where the sample was taken.
    ours = next((f for f in frames if f in layer_of), None)
    if ours is None or layer_of[ours] is None:
        continue
    inside += st["count"]
    if st.get("layer") == layer_of[ours]:
        right += st["count"]
    leaf = frames[0] if frames else "?"
    layer = st.get("layer")
    leaf_in_layer.setdefault(layer, {}).setdefault(leaf, 0)
    leaf_in_layer[layer][leaf] += st["count"]
print(f"samples: {total} taken ({s['taken']} with overruns), {s['dropped']} dropped, "
      f"{len(s['threads'])} threads, at {s['hz']} Hz; the process used {cpu:.2f} s of CPU "
      f"({cpu * s['hz']:.0f} periods)")
ok = True
share = right / inside if inside else 0
print(f"inside an annotated event: {inside} samples, tagged right: {right} ({100*share:.2f}%)")
ok &= share >= 0.99
truth = {"a": {"f": 75.0, "g": 25.0}, "b": {"h": 100.0}, "helper": {"k": 100.0}}
for layer, want in truth.items():
    got = leaf_in_layer.get(layer, {})
    n = sum(got.values())
    for fn, pct in want.items():
        have = 100.0 * got.get(fn, 0) / n if n else 0.0
        good = abs(have - pct) <= 3.0
        ok &= good
        print(f"layer {layer}: {fn} {have:.1f}% of {n} samples (truth {pct:.0f}%) "
              f"{'ok' if good else 'OFF BY MORE THAN 3 POINTS'}")
sys.exit(0 if ok else 1)
PY
"$prof" pprof "$work/prof.json" -o "$work/profile.pb.gz"
if command -v go >/dev/null; then
    go tool pprof -top -tagfocus layer=a "$work/profile.pb.gz" 2>/dev/null | head -8
fi
# A stripped binary: addresses, no names, no crash.
cp "$CARGO_TARGET_DIR/release/examples/cpu_layers" "$work/stripped"
strip "$work/stripped"
PROF_CPU_SAMPLE=$hz PROF_WARMUP=2 PROF_REPEAT=1000000 PROF_OUT="$work/stripped.json" \
    "$work/stripped" 1 2>/dev/null || status=1
python3 - "$work/stripped.json" <<'PY' || status=1
import json, sys
s = json.load(open(sys.argv[1]))["cpu_samples"]
ours = [f for f in s["functions"] if f["name"] and "cpu_layers" in f["name"]]
unnamed = sum(1 for f in s["functions"] if f["name"] is None)
print(f"stripped: {s['taken']} samples, {unnamed} of {len(s['functions'])} functions by "
      f"address only, {len(ours)} of ours named")
sys.exit(0 if s["taken"] > 0 and not ours else 1)
PY
exit $status
