#!/usr/bin/env bash
# Shows that adding an element-wise op takes the three edits docs/architecture.md promises, and nothing
# else: in a copy of the tree it adds a throw-away op `cube` (x³, float-only) by
#   1. one line in the op table      backends/elementwise_ops.h
#   2. one functor                   backends/elementwise_math.h  (forward + derivative)
#   3. one line in the test table    tests/op_table.h
# then builds (CPU-only) and checks that the op is dispatched (ember::cube and Tensor::cube give x³), named
# in errors ("cube: not defined for dtype i64"), passes gradcheck in every layout, and has its cases in the
# CPU-vs-CUDA parity suite. Usage: scripts/check_add_op.sh [work dir]   (default: a temporary one)
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
work=${1:-$(mktemp -d)}
mkdir -p "$work"
tree="$work/tree"
rm -rf "$tree" "$work/orig"
mkdir -p "$tree"
git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$tree"
cp -r "$tree" "$work/orig"

# --- the three edits a contributor makes ------------------------------------------------------------------
cd "$tree"
python3 - <<'EOF'
import pathlib
def edit(path, anchor, text, after=True):
    p = pathlib.Path(path); s = p.read_text()
    assert s.count(anchor) == 1, f"{path}: anchor not found once: {anchor!r}"
    p.write_text(s.replace(anchor, anchor + text if after else text + anchor))
edit("backends/elementwise_ops.h", '  X(silu, "silu", true, input)', ' \\\n  X(cube, "cube", true, input)')
edit("backends/elementwise_math.h", "struct pow_scalar_fn {",
     "struct cube_fn { EMBER_FORWARD(x * x * x) EMBER_BACKWARD(g * T(3) * s * s) };\n", after=False)
edit("tests/op_table.h", '    {"pow_scalar", {P({2, 3})}',
     '    {"cube", {N({2, 3})}, [](V x) { return cube(x[0]); }, [](H h) { return map1(h[0], [](double a) { return a * a * a; }); }},\n',
     after=False)
EOF
cd "$work"
changed=$(diff -rq orig tree | wc -l || true)
added=$(diff -r orig tree | grep -c '^>' || true)
echo "check_add_op: the edits touch $changed files, $added added lines (docs/architecture.md: 3 files, 4 lines)"
[[ $changed -eq 3 && $added -eq 4 ]] || { echo "check_add_op: expected 3 files and 4 lines"; exit 1; }

# --- the script's own checks (not part of adding an op): dispatch and the error message ---------------------
cat >> "$tree/tests/test_ops.cpp" <<'EOF'

TEST(ThrowAwayOp, DispatchedAndNamed) {
  const Tensor x = from_vector<double>({-2, 0.5, 3}, {3});
  EXPECT_EQ(cube(x).to_vector<double>(), (std::vector<double>{-8, 0.125, 27}));
  EXPECT_EQ(x.to(DType::f32).cube().to_vector<float>(), (std::vector<float>{-8, 0.125f, 27}));
  EXPECT_EQ(cube(from_vector<int64_t>({2}, {1})).dtype(), DType::f32);  // float-only: integers converted
  const Tensor i = from_vector<int64_t>({1, 2}, {2}), o = empty({2}, {.dtype = DType::i64});
  EXPECT_TRUE(test::throws_error([&] { backend(kCPU).unary(UnaryOp::cube, i.arg(), o.arg(), 0, 0); },
                                 {"cube: not defined for dtype i64"}));
}
EOF

# --- build and run --------------------------------------------------------------------------------------------
export CCACHE_BASEDIR="$tree" CCACHE_NOHASHDIR=1
cmake -S "$tree" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=OFF -DEMBER_BUILD_BENCH=OFF >/dev/null
cmake --build "$work/build" -j"$(nproc)" --target test_ops test_gradcheck test_cuda_parity >/dev/null
"$work/build/tests/test_ops" --gtest_filter='ThrowAwayOp.*' --gtest_brief=1
"$work/build/tests/test_gradcheck" --gtest_filter='*cube*:GradcheckTable.*' --gtest_brief=1
ran=$("$work/build/tests/test_gradcheck" --gtest_list_tests --gtest_filter='*cube*' | grep -c cube || true)
parity=$("$work/build/tests/test_cuda_parity" --gtest_list_tests --gtest_filter='*cube*' | grep -c cube || true)
echo "check_add_op: cube has $ran gradcheck cases and $parity CPU-vs-CUDA parity cases"
[[ $ran -ge 4 && $parity -ge 8 ]] || { echo "check_add_op: cube is missing from gradcheck or the parity suite"; exit 1; }
[[ -z ${1:-} ]] && rm -rf "$work"
echo "check_add_op: ok"
