#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ with clang and runs each for a short time on its committed seed
# corpus (a copy of fuzz/corpus/<name>: new inputs go to a temporary folder). Fails on a finding — a crash,
# a sanitizer report, a leak, an input that runs over 10 s or 2 GB — and keeps the input that caused it in
# BUILD_DIR/fuzz-findings/. CI runs it from scripts/test.sh; the long runs are in docs/reliability.md.
#   scripts/fuzz.sh [build-dir] [seconds per target]       defaults: build-fuzz 20
# Targets run side by side, one per core.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-fuzz}
seconds=${2:-20}
targets=(fuzz_idx fuzz_csv fuzz_safetensors fuzz_config fuzz_text fuzz_image)
cores=$(nproc)

work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT

# clang++ and libFuzzer's runtime: Debian's clang only recommends libclang-rt-14-dev, which holds it, and
# clang's OpenMP (find_package(OpenMP) with clang) is libomp-dev.
need="apt-get install clang libclang-rt-dev libomp-dev (scripts/setup.sh installs them)"
if ! command -v clang++ >/dev/null; then
  echo "fuzz: error: clang++ not found; the fuzz targets need clang and libFuzzer: $need" >&2
  exit 1
fi
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' >"$work/probe.cpp"
if ! clang++ -fsanitize=fuzzer,address,undefined "$work/probe.cpp" -o "$work/probe" 2>"$work/probe.log"; then
  echo "fuzz: error: clang++ cannot link a libFuzzer target (is libclang_rt.fuzzer missing?): $need" >&2
  sed 's/^/  /' "$work/probe.log" >&2
  exit 1
fi

CXX=clang++ cmake -S . -B "$build" -DEMBER_FUZZ=ON -DEMBER_BUILD_TESTS=OFF -DEMBER_BUILD_BENCH=OFF -DEMBER_CUDA=OFF \
  >/dev/null
cmake --build "$build" -j"$cores" --target "${targets[@]}"

# One target: a fresh folder for the inputs it finds (libFuzzer writes only to the first folder), then a
# copy of the committed seeds, so that nothing under fuzz/corpus can change.
run_target() {
  local target=$1
  mkdir -p "$work/$target/new" "$work/$target/artifacts"
  cp -r "fuzz/corpus/${target#fuzz_}" "$work/$target/seeds"
  chmod -R a-w "$work/$target/seeds"
  local rc=0
  # UBSan reports go on by default (the targets are built without -fno-sanitize-recover): make them findings.
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 EMBER_NUM_THREADS=1 OMP_NUM_THREADS=1 "$build/fuzz/$target" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/$target/artifacts/" \
    "$work/$target/new" "$work/$target/seeds" >"$work/$target/log" 2>&1 || rc=$?
  echo "$rc" >"$work/$target/rc"
}

for target in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= cores)); do sleep 0.2; done
  run_target "$target" &
done
wait

failed=0
for target in "${targets[@]}"; do
  rc=$(cat "$work/$target/rc")
  log="$work/$target/log"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  time=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
  seeds=$(find "fuzz/corpus/${target#fuzz_}" -type f | wc -l)
  found=$(find "$work/$target/new" -type f | wc -l)
  if ((rc == 0)); then
    echo "fuzz: $target: ${execs:-?} execs in ${time:-$seconds} s, $seeds seeds + $found new inputs, no finding"
  else
    failed=1
    mkdir -p "$build/fuzz-findings/$target"
    cp -r "$work/$target/artifacts/." "$build/fuzz-findings/$target/" 2>/dev/null || true
    cp "$log" "$build/fuzz-findings/$target/log.txt"
    echo "fuzz: $target: FINDING (exit $rc); the input and the log are in $build/fuzz-findings/$target/" >&2
    echo "  reproduce: $build/fuzz/$target $build/fuzz-findings/$target/<crash-, leak-, timeout- or oom- file>" >&2
    # The report (from its first line: a sanitizer's, UBSan's or libFuzzer's own) and where the input went.
    sed -n '/ERROR: \|runtime error:/,/^SUMMARY/p' "$log" | head -40 | sed 's/^/  | /' >&2
    grep 'Test unit written to' "$log" | sed 's/^/  | /' >&2 || true
  fi
done
exit $failed
