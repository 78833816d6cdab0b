#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, runs the test suite, runs it again under
# AddressSanitizer + UndefinedBehaviorSanitizer, runs the threaded parts (data loader, autograd,
# checkpoints) under ThreadSanitizer, runs each libFuzzer target for 20 s (clang), then installs Ember and
# builds the consumer example against the installed package. Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
# ccache hits across clones in other folders (CI builds a fresh clone elsewhere): paths relative to here.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}" CCACHE_NOHASHDIR=1
# Each section's start, in seconds since this script started: where the CI budget (25 min) goes.
trap 'echo "test.sh: $SECONDS s in all"' EXIT
section() { echo "== $* (at ${SECONDS} s) =="; }

scripts/setup.sh
scripts/test_venv.sh  # the PyPI-only checkers (TensorBoard's reader, onnxruntime) in .venv-test/
export EMBER_REQUIRE_PYTHON_CHECKS=1  # a test that needs them fails rather than skips
SKIP_TIDY=1 scripts/lint.sh  # cppcheck (seconds); clang-tidy runs with scripts/lint.sh

section "build (Release; with the CUDA backend where the toolkit and cuDNN are found, for sm_90 only)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
start=$SECONDS
cmake --build build -j"$jobs"
echo "build: $((SECONDS - start)) s"
section "tests (including the long accuracy runs of the shipped configs; the CUDA parity suite skips without a GPU)"
ctest --test-dir build --output-on-failure -j"$jobs"

section "adding an element-wise op takes the 3 edits docs/architecture.md states (a throw-away op, built CPU-only)"
scripts/check_add_op.sh

section "tests under ASan + UBSan"
# (ONNX export off here: its converters and test would add compile time the CI budget has not got)
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=Debug -DEMBER_SANITIZE=ON -DEMBER_BUILD_BENCH=OFF -DEMBER_CUDA=OFF -DEMBER_ONNX=OFF >/dev/null
cmake --build build-sanitize -j"$jobs"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-sanitize --output-on-failure -j"$jobs" -LE 'long|cuda|mpi'  # mpi: Open MPI's own allocations read as leaks

section "thread pool, data loader, autograd and checkpoint tests under ThreadSanitizer"
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMBER_TSAN=ON -DEMBER_BUILD_BENCH=OFF -DEMBER_CUDA=OFF >/dev/null
cmake --build build-tsan -j"$jobs" --target test_thread_pool test_data test_data_io test_data_loader test_autograd \
  test_checkpoint
# Ember's own pool is std::thread + atomics, which TSan sees: its tests (loops, GEMMs and convolutions split
# across it) on 2 threads.
EMBER_NUM_THREADS=2 build-tsan/tests/test_thread_pool
# The rest on one Ember thread: oneDNN's OpenMP (libgomp) is not instrumented; TSan watches the loader's threads.
EMBER_NUM_THREADS=1 ctest --test-dir build-tsan --output-on-failure -j"$jobs" -L 'data|autograd|optim'

section "fuzz targets (clang + libFuzzer): each for 20 s on a copy of its seed corpus"
scripts/fuzz.sh build-fuzz 20  # a finding fails CI; its input is kept in build-fuzz/fuzz-findings/

section "install + consumer project (find_package(ember))"
rm -rf build/install build/consumer
cmake --install build --prefix build/install >/dev/null
cmake -S examples/consumer -B build/consumer -DCMAKE_PREFIX_PATH="$PWD/build/install" >/dev/null
cmake --build build/consumer -j"$jobs"
EMBER_SENTENCEPIECE_MODULE="$PWD/build/install/lib/ember/libember_sentencepiece.so" ./build/consumer/consumer  # the installed module
if [[ -x build/consumer/consumer_onnx ]]; then ./build/consumer/consumer_onnx; fi  # where Ember has ONNX export
