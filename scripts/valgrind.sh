#!/usr/bin/env bash
# valgrind memcheck over a short training run (4 steps, a checkpoint, a test-set evaluation). valgrind 3.19
# cannot execute AVX-512, so this builds without -march=native and keeps OpenBLAS and oneDNN on AVX2.
# Takes ~7 minutes on 2 cores. Exit code 3 on any memcheck error or definite leak.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-valgrind -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMBER_NATIVE=OFF -DEMBER_BUILD_TESTS=OFF \
  -DEMBER_BUILD_BENCH=OFF -DEMBER_CUDA=OFF >/dev/null
cmake --build build-valgrind -j"$(nproc)" --target ember-train
out=$(mktemp -d)
OPENBLAS_CORETYPE=Haswell DNNL_MAX_CPU_ISA=AVX2 valgrind --error-exitcode=3 --leak-check=full \
  --errors-for-leak-kinds=definite --show-leak-kinds=definite \
  build-valgrind/apps/ember-train --config configs/fashion_mlp.yaml --set epochs=1 --set data.limit=512 \
  --set data.workers=1 --set output.dir="$out" --device cpu
rm -rf "$out"
