#!/usr/bin/env bash
# Static analysis over the library and app sources: cppcheck (warning, performance, portability) and
# clang-tidy with the check set in .clang-tidy (bugs and needless copies, not style). Both must be clean.
# Needs a configured build directory for clang-tidy's compile commands (default: build).
#   scripts/lint.sh [build-dir]        # clang-tidy takes ~5 min on 2 cores; SKIP_TIDY=1 for cppcheck only
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
sources=(backends core autograd nn optim data distributed onnx apps)

echo "== cppcheck =="
cppcheck --std=c++20 --enable=warning,performance,portability --inline-suppr --quiet --error-exitcode=1 \
  -I . -I include --suppress=missingIncludeSystem --suppress=unknownMacro "${sources[@]}"

if [[ "${SKIP_TIDY:-0}" != 1 ]]; then
  echo "== clang-tidy ($(grep -c ',' .clang-tidy) checks, .clang-tidy) =="
  [[ -f "$build/compile_commands.json" ]] || cmake -S . -B "$build" >/dev/null
  git ls-files "${sources[@]/%//*.cpp}" | grep -v '/cuda/' | xargs -P"$(nproc)" -n4 clang-tidy -p "$build" --quiet
fi
echo "lint: clean"
