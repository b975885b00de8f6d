#!/usr/bin/env bash
# The CPU sampler's acceptance (issue 38): examples/cpu_layers.rs, built with frame pointers, run
# at HZ samples a second for SECONDS; checks that at least 99% of the samples taken inside an
# annotated event carry the right one, and that each function's share of its layer's samples is
# within 3 points of the truth (h all of b; k all of helper; f and g in layer a at 3:1 of work,
# whose shares of time the example measures itself with its thread's CPU clock around each call
# and prints as `truth: f F g G`: 3:1 of work is 3:1 of time only if a round costs both the
# same). It also prints the sampling's expected error: with the perf_event task clock
# (`cpu_samples.clock` perf_task_clock, the default where the kernel allows it) each period is
# a signal of its own, so the independent samples are about CPU seconds x HZ; with POSIX
# timers (posix_timer: PROF_CPU_SAMPLE_CLOCK=posix, or the fallback) the kernel checks them at
# its tick (CONFIG_HZ), so above that rate a signal stands for several periods (its weight)
# and they are about CPU seconds x min(HZ, CONFIG_HZ); one standard error of a share p from n
# of them is sqrt(p (1 - p) / n). PROF_CPU_SAMPLE_CLOCK is passed on to the example. With
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
# CPU_LAYERS_EXE and PROF_EXE: binaries built elsewhere (a machine without cargo); nothing is
# built then.
if [ -n "${CPU_LAYERS_EXE:-}" ]; then
    exe=$CPU_LAYERS_EXE
    prof=${PROF_EXE:?PROF_EXE must name a prof binary with CPU_LAYERS_EXE}
else
    RUSTFLAGS="-C force-frame-pointers=yes" cargo build -q --release --example cpu_layers -p profiler-suite
    cargo build -q -p profiler-cli --bin prof
    exe=$CARGO_TARGET_DIR/release/examples/cpu_layers
    prof=target/debug/prof
    [ -x "$prof" ] || prof=$CARGO_TARGET_DIR/debug/prof
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The CPU time the run used (user + system), to compare with the samples taken.
PROF_CPU_SAMPLE=$hz PROF_WARMUP=2 PROF_REPEAT=1000000 PROF_OUT="$work/prof.json" \
    /usr/bin/time -f '%U %S' -o "$work/cpu" \
    "$exe" "$seconds" 2>"$work/stderr" || {
    cat "$work/stderr"
    exit 1
}
status=0
# The kernel's tick rate, at which CPU timers are checked (250 when unknown).
config_hz=$( { cat "/boot/config-$(uname -r)" 2>/dev/null || zcat /proc/config.gz 2>/dev/null; } |
    sed -n 's/^CONFIG_HZ=\([0-9]*\)$/\1/p' | head -1 || true)
python3 - "$work/prof.json" "$work/cpu" "$work/stderr" "${config_hz:-250}" <<'PY' || status=$?
import json, math, re, sys
p = json.load(open(sys.argv[1]))
cpu = sum(float(x) for x in open(sys.argv[2]).read().split())
config_hz = int(sys.argv[4])
m = re.search(r"truth: f ([0-9.]+) g ([0-9.]+)", open(sys.argv[3]).read())
if not m:
    sys.exit("the example printed no `truth:` line")
truth_f, truth_g = 100 * float(m.group(1)), 100 * float(m.group(2))
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
truth = {"a": {"f": truth_f, "g": truth_g}, "b": {"h": 100.0}, "helper": {"k": 100.0}}
# Independent samples: a task-clock event signals every period; a POSIX timer's sample stands
# for `weight` periods of 1/hz s, the kernel looking at most once a tick.
clock = s.get("clock") or "posix_timer"
per_second = s["hz"] if clock == "perf_task_clock" else min(s["hz"], config_hz)
print(f"truth of layer a, measured (CPU time in f and g): f {truth_f:.2f}%, g {truth_g:.2f}% "
      f"(3:1 of work would be 75/25); sampled by {clock}"
      + ("" if clock == "perf_task_clock" else f", timers checked at CONFIG_HZ={config_hz}"))
for layer, want in truth.items():
    got = leaf_in_layer.get(layer, {})
    n = sum(got.values())
    independent = n / s["hz"] * per_second
    for fn, pct in want.items():
        have = 100.0 * got.get(fn, 0) / n if n else 0.0
        good = abs(have - pct) <= 3.0
        ok &= good
        q = pct / 100
        sigma = 100 * math.sqrt(q * (1 - q) / independent) if independent else float("inf")
        print(f"layer {layer}: {fn} {have:.2f}% of {n} samples (truth {pct:.2f}%, off by "
              f"{have - pct:+.2f} points; one standard error {sigma:.2f} points from about "
              f"{independent:.0f} independent samples) "
              f"{'ok' if good else 'OFF BY MORE THAN 3 POINTS'}")
sys.exit(0 if ok else 1)
PY
"$prof" pprof "$work/prof.json" -o "$work/profile.pb.gz"
if command -v go >/dev/null; then
    go tool pprof -top -tagfocus layer=a "$work/profile.pb.gz" 2>/dev/null | head -8
fi
# A stripped binary: addresses, no names, no crash.
cp "$exe" "$work/stripped"
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
