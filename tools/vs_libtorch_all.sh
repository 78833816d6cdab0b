#!/usr/bin/env bash
# Everything in docs/benchmarks.md's "Training against LibTorch" section, in one command: builds the native
# and the AVX2-emulation trees, runs tools/vs_libtorch.py quiet and with --load 1 in both modes, then
# tools/gemm_table.py natively and limited to AVX2. Logs and raw JSON go to $OUT (default runs/vs_libtorch).
#   tools/vs_libtorch_all.sh [extra vs_libtorch.py options, e.g. --pairs 3]
# About an hour on 2 busy cores (much less on a quiet machine); needs libtorch-dev and dataset-fashion-mnist.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-runs/vs_libtorch}
mkdir -p "$out"
export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
cmake -S . -B build-vs -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=OFF -DEMBER_BUILD_TESTS=OFF -DEMBER_BENCH_LIBTORCH=ON >/dev/null
cmake --build build-vs -j2 --target vs_ember_train vs_torch_train bench_gemm
cmake -S . -B build-vs-avx2 -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=OFF -DEMBER_BUILD_TESTS=OFF -DEMBER_ARCH=haswell \
  -DEMBER_BENCH_LIBTORCH=ON >/dev/null
cmake --build build-vs-avx2 -j2 --target vs_ember_train vs_torch_train
run() {  # name, then the command; its output to the terminal and to $out/name.txt
  local name=$1
  shift
  echo "=== $name: $*"
  "$@" 2>&1 | tee "$out/$name.txt"
}
run native_load0 /usr/bin/python3 tools/vs_libtorch.py --build build-vs --json "$out/native_load0.json" "$@"
run native_load1 /usr/bin/python3 tools/vs_libtorch.py --build build-vs --load 1 --json "$out/native_load1.json" "$@"
run avx2_load0 /usr/bin/python3 tools/vs_libtorch.py --build build-vs-avx2 --mode avx2 --json "$out/avx2_load0.json" "$@"
run avx2_load1 /usr/bin/python3 tools/vs_libtorch.py --build build-vs-avx2 --mode avx2 --load 1 \
  --json "$out/avx2_load1.json" "$@"
run gemm_native /usr/bin/python3 tools/gemm_table.py build-vs/bench/bench_gemm --json "$out/gemm_native.json"
run gemm_avx2 /usr/bin/python3 tools/gemm_table.py build-vs/bench/bench_gemm --isa avx2 --threads 1 \
  --json "$out/gemm_avx2.json"
echo "all results: $out"
