#!/usr/bin/env bash
# The GPU check, in one command on a machine with an NVIDIA GPU, from the bundle scripts/gpu_bundle.sh made
# (carried in .gpu/). Runs, logging everything to $OUT (or out/gpu):
#   1. ember-devices;
#   2. the whole test suite but the `long` label, the CPU-vs-CUDA parity suite included (label cuda);
#   3. ember-train on both shipped configs with --device cuda;
#   4. ember-bench --device both on both configs (speed-up, loss difference), --find-max-batch on the MLP;
#   5. NCCL as one rank: collectives on CUDA tensors and DistributedDataParallel on the GPU
#      (test_distributed's Nccl case; under mpirun too where the machine has Open MPI).
# Exit status: the number of stages that failed.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-out/gpu}"
mkdir -p "$out"
src=$(cat .gpu/source_dir)
# The tests have the build machine's paths compiled in: make them valid here.
if [ "$src" != "$PWD" ] && [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; fi
mkdir -p build-gpu && xz -dc .gpu/build.tar.xz | tar -C build-gpu -xf -
cudnn=$(dirname "$(find / -name 'libcudnn.so.9' -not -path '/proc/*' 2>/dev/null | head -1)")
cublas=$(dirname "$(find / -name 'libcublas.so.13' -not -path '/proc/*' 2>/dev/null | head -1)")
export LD_LIBRARY_PATH="$PWD/build-gpu/lib:$cudnn:$cublas:${LD_LIBRARY_PATH:-}"
export OMP_WAIT_POLICY=passive
data="data.dir=$PWD/.gpu/data"
failed=0
log="$out/gpu_check.log"  # the device tool brings back 8 files at most: one log, two metrics files
runs=/tmp/ember_gpu_runs
rm -rf "$runs"
stage() {  # stage NAME COMMAND...: runs it, appends its output to the log, counts a failure
  local name=$1; shift
  echo "=== $name: $*" | tee -a "$log"
  local t0=$SECONDS
  "$@" >>"$log" 2>&1
  local rc=$?
  echo "=== $name: exit $rc after $((SECONDS - t0)) s" | tee -a "$log"
  [ $rc -eq 0 ] || failed=$((failed + 1))
}
stage devices build-gpu/apps/ember-devices
skip='long'
command -v mpirun >/dev/null || skip='long|mpi'  # the mpi label needs Open MPI's mpirun on this machine
stage tests ctest --test-dir build-gpu -LE "$skip" -j8 --timeout 300 --output-on-failure
stage train_mlp build-gpu/apps/ember-train --config configs/fashion_mlp.yaml --device cuda --set "$data" --out "$runs/mlp"
stage train_cnn build-gpu/apps/ember-train --config configs/fashion_cnn.yaml --device cuda --set "$data" --out "$runs/cnn"
stage bench_mlp build-gpu/apps/ember-bench --config configs/fashion_mlp.yaml --device both --steps 200 --warmup 20 --json
stage bench_cnn build-gpu/apps/ember-bench --config configs/fashion_cnn.yaml --device both --steps 100 --warmup 10 --json
stage nccl_one_rank build-gpu/tests/test_distributed --gtest_filter='Nccl.*'
if command -v mpirun >/dev/null; then
  stage nccl_mpirun_one_rank mpirun -np 1 --allow-run-as-root build-gpu/tests/test_distributed --gtest_filter='Nccl.*'
fi
stage max_batch build-gpu/apps/ember-bench --config configs/fashion_mlp.yaml --device cuda --find-max-batch --max-batch 4194304
cp "$runs/mlp/metrics.jsonl" "$out/mlp_metrics.jsonl" 2>/dev/null
cp "$runs/cnn/metrics.jsonl" "$out/cnn_metrics.jsonl" 2>/dev/null
grep -E "Failed|Passed|tests passed|SKIPPED|\*\*\*" "$log" | tail -n 40
echo "gpu_check: $failed stage(s) failed"
exit "$failed"
