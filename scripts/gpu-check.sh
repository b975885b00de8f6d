#!/usr/bin/env bash
# The first run of profiler-core's `cuda` feature on a machine with an NVIDIA GPU, in one command:
#
#   scripts/gpu-check.sh
#
# It builds with `cuda`, runs the hardware tests (profiler-core/tests/cuda_hw.rs), the CUDA example
# (examples/cuda_mlp.rs, two streams) and the candle example (model on GPU 0, probes on candle's
# stream) with PROF_KERNELS=1 and PROF_NVTX=1, and `prof peak --device cuda` (the GPU's peak by
# cuBLAS and a device copy), and checks what they wrote (scripts/gpu_check.py):
# every event on a stream has GPU times, all positive and within the run's wall clock, no lost
# samples, kernels attributed to it on its own stream in (nearly) every sample, device memory in use
# at every step and around every sample, within the GPU's memory; `prof trace` draws
# each of those events on its GPU's track for its stream; and, where Nsight Systems (`nsys`) is
# installed, the probes' NVTX ranges are in its capture. It prints each thing it verified, each
# it could not (and why), and a summary. Results go to target/gpu-check/ (GPU_CHECK_OUT).
#
# Exit status:
#   0  every check that could run passed (some may be listed as not verifiable)
#   1  a mismatch: something ran and was wrong
#   2  the environment: a tool is missing (cargo, python3) or a build or a program failed to run
#   3  no NVIDIA GPU here (no nvidia-smi, no GPU listed, or no driver library): nothing was run
#
# The candle example needs nvcc to build (candle compiles its kernels): on PATH, or CUDA_HOME/bin;
# and, to link, the CUDA libraries and a libcuda (a toolkit's lib64/stubs will do). A machine with
# no CUDA toolkit gets both from NVIDIA's pip wheels (CUDA 13.0, which a 580 driver runs):
#
#   eval "$(scripts/cuda-toolkit-from-pip.sh /somewhere/cuda-pip)"  # CUDA_HOME, PATH, CUDA_COMPUTE_CAP=90
#
# To run, candle-mlp needs the driver's libcuda.so.1 and libcudart.so.13, libcublas.so.13 (with
# libcublasLt.so.13), libcurand.so.10 on the loader's path (LD_LIBRARY_PATH: a CUDA 13 toolkit's
# lib64, or a PyTorch cu130 environment's site-packages/nvidia/cu13/lib); when one is missing the
# candle example is listed as not verifiable, with the names.
#
# A GPU machine without a Rust toolchain (or without the crates' registry): build on a machine
# that has them, carry the folder, and check there with what it holds:
#
#   scripts/gpu-check.sh --build-only DIR    # here: builds, copies the binaries into DIR
#   GPU_CHECK_BIN=DIR scripts/gpu-check.sh   # there: runs DIR's binaries, builds nothing
#
# DIR holds cuda_mlp, prof (with `cuda`), cuda_hw (the hardware tests) and, when nvcc was there
# (PATH or CUDA_HOME/bin, e.g. from scripts/cuda-toolkit-from-pip.sh), candle-mlp. Without a GPU
# to ask, --build-only needs CUDA_COMPUTE_CAP for candle's kernels (90: H100, H200).
set -uo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--build-only" ]; then
  dir=${2:?usage: scripts/gpu-check.sh --build-only DIR}
  mkdir -p "$dir" || exit 2
  cargo build --release --features cuda --example cuda_mlp || exit 2
  cargo build --release -p profiler-cli --features cuda || exit 2
  hw=$(cargo test --release -p profiler-core --features cuda --test cuda_hw --no-run \
    --message-format=json | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "cuda_hw" and m.get("executable"):
        print(m["executable"])') || exit 2
  target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
  cp "$target/release/examples/cuda_mlp" "$target/release/prof" "$dir/" || exit 2
  cp "$hw" "$dir/cuda_hw" || exit 2
  # The candle example, when there is an nvcc: never a stale one from an earlier build.
  rm -f "$dir/candle-mlp"
  if [ -n "${CUDA_HOME:-}" ] && [ -x "$CUDA_HOME/bin/nvcc" ]; then
    PATH="$CUDA_HOME/bin:$PATH"
  fi
  if command -v nvcc >/dev/null 2>&1; then
    cap=${CUDA_COMPUTE_CAP:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '.')}
    if [ -z "$cap" ]; then
      echo "gpu-check: no GPU here to ask for its compute capability: set CUDA_COMPUTE_CAP (90 for an H100 or H200)" >&2
      exit 2
    fi
    CUDA_COMPUTE_CAP=$cap cargo build --release --manifest-path integrations/candle/Cargo.toml --features cuda || exit 2
    ctarget=$(cargo metadata --format-version 1 --no-deps --manifest-path integrations/candle/Cargo.toml |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])') || exit 2
    cp "$ctarget/release/candle-mlp" "$dir/" || exit 2
  else
    echo "gpu-check: no nvcc (PATH or CUDA_HOME/bin): candle-mlp is not built; without a CUDA toolkit," >&2
    echo "           eval \"\$(scripts/cuda-toolkit-from-pip.sh DIR)\" first (NVIDIA's pip wheels)" >&2
  fi
  dirty=
  git diff --quiet HEAD 2>/dev/null || dirty=" with uncommitted changes"
  echo "gpu-check: binaries of $(git rev-parse --short HEAD)$dirty in $dir: $(ls "$dir" | tr '\n' ' ')"
  exit 0
fi
bin=${GPU_CHECK_BIN:-}

out=${GPU_CHECK_OUT:-target/gpu-check}
verified=0
mismatches=0
unverifiable=()

say() { printf '\n== %s\n' "$*"; }
cannot() {
  echo "  could not verify: $*"
  unverifiable+=("$*")
}
# Runs a checker; counts its ok and MISMATCH lines.
check() {
  local report
  report=$(python3 scripts/gpu_check.py "$@")
  echo "$report"
  verified=$((verified + $(grep -c '^  ok:' <<<"$report")))
  mismatches=$((mismatches + $(grep -c '^  MISMATCH:' <<<"$report")))
}
mismatch() {
  echo "  MISMATCH: $*"
  mismatches=$((mismatches + 1))
}
ok() {
  echo "  ok: $*"
  verified=$((verified + 1))
}
environment() {
  echo "gpu-check: $*" >&2
  exit 2
}
now_ns() { date +%s%N; }

# --- Is there a GPU? ---------------------------------------------------------------------------
no_gpu() {
  echo "gpu-check: no NVIDIA GPU on this machine ($*); nothing was built or run."
  echo "gpu-check: what runs without one is in CI: the simulated device's tests, the header test"
  echo "           and the candle example's check (see docs/guide.md's GPU section)."
  exit 3
}
command -v nvidia-smi >/dev/null 2>&1 || no_gpu "nvidia-smi is not installed"
gpus=$(nvidia-smi -L 2>&1) || no_gpu "nvidia-smi -L failed: ${gpus%%$'\n'*}"
grep -q '^GPU ' <<<"$gpus" || no_gpu "nvidia-smi lists no GPU"
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
  no_gpu "the driver library libcuda.so.1 is not in the loader's cache"
fi
echo "gpu-check: $(head -1 <<<"$gpus")"
# Each GPU's memory in MiB, GPU 0 first: the bound of the device memory figures.
totals=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits 2>/dev/null | tr -d ' ' | paste -sd, -)

[ -n "$bin" ] || command -v cargo >/dev/null 2>&1 || environment "cargo is not on PATH"
command -v python3 >/dev/null 2>&1 || environment "python3 is not on PATH (the checks use it)"
mkdir -p "$out" || environment "cannot create $out"

# --- Build -------------------------------------------------------------------------------------
if [ -n "$bin" ]; then
  say "prebuilt binaries in $bin (GPU_CHECK_BIN): nothing is built"
  for b in cuda_mlp prof cuda_hw; do
    [ -x "$bin/$b" ] || environment "$bin/$b is missing (scripts/gpu-check.sh --build-only $bin makes it)"
  done
  prof=$bin/prof
  candle=
  if [ -x "$bin/candle-mlp" ]; then
    candle=$bin/candle-mlp
  else
    cannot "the candle example on the GPU ($bin has no candle-mlp: --build-only builds it where nvcc is, e.g. after scripts/cuda-toolkit-from-pip.sh)"
  fi
else
  say "build with cuda (release)"
  cargo build --release --features cuda --example cuda_mlp ||
    environment "the CUDA example did not build"
  # prof with its own `cuda` feature: `prof peak --device cuda` (everything else is the same).
  cargo build --release -p profiler-cli --features cuda || environment "prof did not build"
  prof=target/release/prof
  candle=
  if [ -n "${CUDA_HOME:-}" ] && [ -x "$CUDA_HOME/bin/nvcc" ]; then
    PATH="$CUDA_HOME/bin:$PATH"
  fi
  if command -v nvcc >/dev/null 2>&1; then
    cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '.')
    if CUDA_COMPUTE_CAP=${CUDA_COMPUTE_CAP:-$cap} cargo build --release --manifest-path integrations/candle/Cargo.toml --features cuda; then
      candle=$(cargo metadata --format-version 1 --no-deps --manifest-path integrations/candle/Cargo.toml |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release/candle-mlp
    else
      environment "the candle example did not build with --features cuda"
    fi
  else
    cannot "the candle example on the GPU (nvcc is not on PATH; candle compiles its kernels with it: scripts/cuda-toolkit-from-pip.sh gives one)"
  fi
fi

# candle-mlp links the CUDA libraries (cudarc's dynamic-linking): one the loader cannot find makes
# the example unverifiable here, not a mismatch.
if [ -n "$candle" ]; then
  missing=$(ldd "$candle" 2>/dev/null | awk '/not found/ { print $1 }' | paste -sd' ' -)
  if [ -n "$missing" ]; then
    cannot "the candle example on the GPU (the loader finds no $missing for $candle: put their folder on LD_LIBRARY_PATH, a CUDA 13 toolkit's lib64 or a PyTorch cu130 environment's site-packages/nvidia/cu13/lib)"
    candle=
  fi
fi

# --- Hardware tests ----------------------------------------------------------------------------
say "hardware tests (profiler-core/tests/cuda_hw.rs)"
if [ -n "$bin" ]; then
  hw=$("$bin/cuda_hw" --nocapture --test-threads=1 2>&1)
else
  hw=$(cargo test --release -p profiler-core --features cuda --test cuda_hw -- --nocapture --test-threads=1 2>&1)
fi
status=$?
echo "$hw" | grep -E '^test |SKIPPED|panicked|test result|^memory_used:'
if grep -q SKIPPED <<<"$hw"; then
  mismatch "hardware tests were skipped on a machine with a GPU: $(grep -m1 SKIPPED <<<"$hw")"
elif [ $status -ne 0 ]; then
  mismatch "hardware tests failed (status $status)"
else
  ok "hardware tests: $(grep -m1 'test result' <<<"$hw")"
fi

# --- A program on the GPU, then its profile and its trace ---------------------------------------
# run NAME MIN_STREAMS COMMAND...: runs the program with kernels and NVTX, times it, checks.
run() {
  local name=$1 min_streams=$2
  shift 2
  say "$name on the GPU (PROF_KERNELS=1 PROF_NVTX=1)"
  local json="$out/$name.json" start end
  rm -f "$json"
  start=$(now_ns)
  if ! PROF_OUT="$json" PROF_KERNELS=1 PROF_NVTX=1 "$@" >"$out/$name.log" 2>&1; then
    tail -5 "$out/$name.log"
    mismatch "$name exited with an error (log: $out/$name.log)"
    return
  fi
  end=$(now_ns)
  if grep -q 'timing on the CPU clock' "$out/$name.log"; then
    mismatch "$name: $(grep -m1 'timing on the CPU clock' "$out/$name.log")"
  fi
  # CUPTI and NVTX are optional libraries: not found, they are a gap in what was verified (the
  # warning says which), not a mismatch.
  local kernels=kernels
  if grep -q 'PROF_KERNELS is set but' "$out/$name.log"; then
    cannot "$name's kernels: $(grep -m1 'PROF_KERNELS is set but' "$out/$name.log")"
    kernels=nokernels
  fi
  if grep -q 'PROF_NVTX is set but' "$out/$name.log"; then
    cannot "$name's NVTX ranges: $(grep -m1 'PROF_NVTX is set but' "$out/$name.log")"
  fi
  [ -f "$json" ] || { mismatch "$name wrote no $json"; return; }
  check profile "$json" $((end - start)) "$min_streams" "$kernels"
  check memory "$json" "$totals"
  say "prof trace of $name: events on stream tracks"
  if "$prof" trace "$json" -o "$out/$name.trace.json"; then
    check trace "$json" "$out/$name.trace.json"
  else
    mismatch "prof trace failed on $json"
  fi
}

run cuda_mlp 2 "${bin:-target/release/examples}/cuda_mlp"
if [ -n "$candle" ]; then
  run candle 1 "$candle" --iters 400
fi

# --- The GPU's peak: prof peak --device cuda ------------------------------------------------------
# cuBLAS's GEMM (bf16, then f32) and a device copy, each product checked by prof itself; here,
# that it ran, wrote a peak.json, and that its figures are positive and below what any GPU does.
say "prof peak --device cuda (cuBLAS GEMM and device copy)"
for dtype in bf16 f32; do
  peak="$out/peak-$dtype.json"
  rm -f "$peak"
  if "$prof" peak --device cuda --dtype "$dtype" --seconds 2 -o "$peak" >"$out/peak-$dtype.log" 2>&1; then
    cat "$out/peak-$dtype.log"
    if python3 - "$peak" "$dtype" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
flops, bytes_ = p.get("flops") or 0, p.get("bytes") or 0
# Bounds no GPU of 2026 reaches: 10 PFLOP/s dense, 20 TB/s of memory bandwidth.
ok = p.get("source") == "measured" and 0 < flops < 1e16 and 0 < bytes_ < 2e13
print(f"  peak {sys.argv[2]}: {flops / 1e12:.1f} TFLOP/s, {bytes_ / 1e9:.0f} GB/s")
sys.exit(0 if ok else 1)
PY
    then
      ok "prof peak --device cuda --dtype $dtype: a measured peak.json with plausible figures"
    else
      mismatch "prof peak --device cuda --dtype $dtype: implausible figures in $peak"
    fi
  elif grep -q 'cuBLAS could not be loaded' "$out/peak-$dtype.log"; then
    cannot "prof peak --device cuda ($(cat "$out/peak-$dtype.log"))"
    break
  else
    cat "$out/peak-$dtype.log"
    mismatch "prof peak --device cuda --dtype $dtype failed (log: $out/peak-$dtype.log)"
  fi
done

# --- NVTX ranges, seen by Nsight Systems ------------------------------------------------------------
say "NVTX ranges in an Nsight Systems capture of cuda_mlp"
if command -v nsys >/dev/null 2>&1; then
  rep="$out/cuda_mlp-nsys"
  if PROF_OUT="$out/cuda_mlp-nsys.json" PROF_NVTX=1 \
    nsys profile --force-overwrite true -t cuda,nvtx -o "$rep" "${bin:-target/release/examples}/cuda_mlp" \
    >"$out/nsys.log" 2>&1; then
    # The report's name changed across nsys versions.
    if nsys stats --report nvtx_sum --format csv --output - "$rep.nsys-rep" >"$out/nvtx.csv" 2>/dev/null ||
      nsys stats --report nvtxsum --format csv --output - "$rep.nsys-rep" >"$out/nvtx.csv" 2>/dev/null; then
      check nvtx "$out/nvtx.csv" "$out/cuda_mlp-nsys.json"
    else
      mismatch "nsys stats gave no NVTX summary for $rep.nsys-rep"
    fi
  else
    mismatch "nsys profile failed (log: $out/nsys.log)"
  fi
else
  cannot "NVTX ranges (nsys is not installed: install Nsight Systems and run again)"
fi

# --- Summary -----------------------------------------------------------------------------------
say "summary"
echo "verified: $verified checks"
for what in "${unverifiable[@]}"; do
  echo "could not verify: $what"
done
if [ "$mismatches" -gt 0 ]; then
  echo "MISMATCHES: $mismatches (see above); results in $out"
  exit 1
fi
echo "no mismatch; results in $out"
exit 0
