#!/usr/bin/env bash
# A CUDA 13.0 toolkit for *building* the candle example with `cuda` (candle-mlp) on a machine with
# no CUDA toolkit and no GPU, from NVIDIA's pip wheels:
#
#   eval "$(scripts/cuda-toolkit-from-pip.sh DIR)"   # DIR outside the repository, e.g. /work/cuda-pip
#   scripts/gpu-check.sh --build-only OUT           # then copies candle-mlp into OUT too
#
# What it does, once (a second run reuses DIR and only prints the environment):
# - `pip install --target DIR` of the wheels candle's build and link need (nvcc with its cicc, ptxas,
#   crt and cccl headers; cudart, cuBLAS, cuBLASLt, cuRAND, NVRTC), pinned to CUDA 13.0: cudarc
#   takes its bindings from `nvcc --version` (it knows 13.0 to 13.4, not newer), candle's kernels are
#   PTX that the GPU's driver compiles, and a driver of CUDA 13.0 (the 580 series) refuses PTX of a
#   newer nvcc. Another version: CUDA_PIP_NVCC=13.x.y (and the other pins below) at your own risk.
# - `lib64` -> `lib` (the path nvcc's users expect) and the unversioned `libX.so` links the linker
#   needs (`-lcublas` and so on; the wheels hold only `libcublas.so.13` etc.).
# - `lib/stubs/libcuda.so`: a stub of the driver library (not on PyPI) with soname `libcuda.so.1`,
#   exporting every `cu*` function of cudarc's bindings and of `cuda.h`, each returning
#   CUDA_ERROR_NO_DEVICE. The binary records `libcuda.so.1` as NEEDED and resolves it, at run time,
#   from the real driver; the stub is for the link only (or, on LD_LIBRARY_PATH, to see the binary
#   start and fail cleanly on a machine with no driver).
#
# It prints the `export` lines to build with (stdout; progress goes to stderr): CUDA_HOME, PATH
# (nvcc), CUDA_COMPUTE_CAP (90, an H100/H200, unless already set: no nvidia-smi to ask here) and
# CUDA_PIP_LIB (the libraries, for LD_LIBRARY_PATH when running here).
#
# At run time the binary needs, on the GPU machine: the driver's libcuda.so.1 (on the loader path)
# and libcudart.so.13, libcublas.so.13 (with libcublasLt.so.13), libcurand.so.10 (a CUDA 13 toolkit,
# or the same wheels, e.g. a PyTorch cu130 environment's site-packages/nvidia/cu13/lib) on
# LD_LIBRARY_PATH; `readelf -d` lists them (NEEDED).
#
# Exit status: 0 done; 2 a usage error or the environment (no python3 or pip, a download failed, no
# C compiler for the stub).
set -euo pipefail

if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: scripts/cuda-toolkit-from-pip.sh DIR  (where the toolkit goes; outside the repository)" >&2
  exit 2
fi
dir=$1
nvcc_v=${CUDA_PIP_NVCC:-13.0.88}
pins=(
  "nvidia-cuda-nvcc==$nvcc_v"
  "nvidia-cuda-crt==${CUDA_PIP_CRT:-$nvcc_v}"
  "nvidia-nvvm==${CUDA_PIP_NVVM:-$nvcc_v}"
  "nvidia-cuda-cccl==${CUDA_PIP_CCCL:-13.0.85}"
  "nvidia-cuda-runtime==${CUDA_PIP_RUNTIME:-13.0.96}"
  "nvidia-cublas==${CUDA_PIP_CUBLAS:-13.1.0.3}"
  "nvidia-curand==${CUDA_PIP_CURAND:-10.4.0.35}"
  "nvidia-cuda-nvrtc==${CUDA_PIP_NVRTC:-$nvcc_v}"
)
fail() {
  echo "cuda-toolkit-from-pip: $*" >&2
  exit 2
}
command -v python3 >/dev/null 2>&1 || fail "python3 is not on PATH (pip installs the wheels)"
cc=${CC:-cc}
command -v "$cc" >/dev/null 2>&1 || fail "no C compiler ($cc) for the libcuda stub: install gcc or set CC"

mkdir -p "$dir" || fail "cannot create $dir"
dir=$(cd "$dir" && pwd)
root=$dir/nvidia/cu13
want="release ${nvcc_v%.*}, V$nvcc_v"
if ! "$root/bin/nvcc" --version 2>/dev/null | grep -q "$want"; then
  echo "cuda-toolkit-from-pip: installing ${pins[*]} into $dir" >&2
  python3 -m pip install --quiet --disable-pip-version-check --target "$dir" --upgrade "${pins[@]}" >&2 ||
    fail "pip install into $dir failed (network? the pins: ${pins[*]})"
  "$root/bin/nvcc" --version | grep -q "$want" || fail "$root/bin/nvcc is not nvcc $nvcc_v after the install"
fi

# lib64 (cudaforge, candle's kernel builder, looks there) and the linker's unversioned names.
[ -e "$root/lib64" ] || ln -s lib "$root/lib64"
for lib in "$root"/lib/lib*.so.[0-9]*; do
  base=$(basename "$lib")
  case $base in *builtins* | *.alt.*) continue ;; esac
  ln -sfn "$base" "$root/lib/${base%%.so.*}.so"
done

# The driver stub: every cu* name cudarc's bindings may call, and every one cuda.h declares or
# renames to (cuCtxCreate -> cuCtxCreate_v4 and so on), as a function returning
# CUDA_ERROR_NO_DEVICE (100).
stub=$root/lib/stubs/libcuda.so
if [ ! -e "$stub" ]; then
  mkdir -p "$root/lib/stubs"
  src=$(mktemp -d)
  trap 'rm -rf "$src"' EXIT
  {
    grep -ohE '\bCUDAAPI +cu[A-Za-z0-9_]+ *\(' "$root/include/cuda.h" | grep -oE 'cu[A-Za-z0-9_]+'
    grep -ohE '^#define +cu[A-Za-z0-9_]+ +cu[A-Za-z0-9_]+ *$' "$root/include/cuda.h" | awk '{print $3}'
    cargo_home=${CARGO_HOME:-$HOME/.cargo}
    for bindings in "$cargo_home"/registry/src/*/cudarc-0.*/src/driver/sys/mod.rs; do
      [ -f "$bindings" ] && grep -ohE '\bfn +cu[A-Za-z0-9_]+ *\(' "$bindings" | grep -oE 'cu[A-Za-z0-9_]+'
    done
  } | sort -u | awk '{ printf "int %s(void) { return 100; }\n", $1 }' >"$src/libcuda_stub.c"
  [ -s "$src/libcuda_stub.c" ] || fail "found no cu* function names in $root/include/cuda.h"
  "$cc" -shared -fPIC -O1 -Wl,-soname,libcuda.so.1 -o "$stub" "$src/libcuda_stub.c" ||
    fail "the libcuda stub did not compile"
  ln -sfn libcuda.so "$root/lib/stubs/libcuda.so.1"
  echo "cuda-toolkit-from-pip: libcuda stub with $(wc -l <"$src/libcuda_stub.c") functions: $stub" >&2
fi

cat <<EOF
export CUDA_HOME='$root'
export PATH='$root/bin':"\$PATH"
export CUDA_COMPUTE_CAP='${CUDA_COMPUTE_CAP:-90}'
export CUDA_PIP_LIB='$root/lib'
EOF
