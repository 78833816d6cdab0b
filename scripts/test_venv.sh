#!/usr/bin/env bash
# Creates (or refreshes) the test-only Python environment .venv-test/ with the PyPI checkers listed in
# tools/test-requirements.txt: TensorBoard's event reader and onnxruntime. The tests that use them find it at
# .venv-test/bin/python (or $EMBER_TEST_PYTHON); scripts/test.sh runs this first and sets
# EMBER_REQUIRE_PYTHON_CHECKS=1 so that such a test fails, rather than skips, when the environment is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv-test
req=tools/test-requirements.txt
stamp="$venv/.requirements"
if [[ -x $venv/bin/python ]] && cmp -s "$req" "$stamp"; then
  echo "test venv: up to date ($venv)"
  exit 0
fi
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$req"
cp "$req" "$stamp"
echo "test venv: installed $(grep -cv '^#' "$req") packages into $venv"
