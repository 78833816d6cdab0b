#pragma once
// The element-wise op tables: the one list of every element-wise op. The enums, their names, the float-only
// rule, what autograd saves, the backends' dispatch, the public functions (ember::exp, Tensor::exp) and the
// gradcheck coverage list are all generated from these lines; the math of each op is its functor in
// backends/elementwise_math.h (`kernels::<name>_fn`, forward and derivative).
//
// Adding an element-wise op of one input (docs/architecture.md, "Add an element-wise op"):
//   1. a line here,
//   2. its functor `struct <name>_fn` in backends/elementwise_math.h (forward + backward),
//   3. a line in the test table tests/op_table.h (the coverage test fails until it is there).
// Everything else (CPU and CUDA dispatch, ember::<name>, Tensor::<name>, autograd) follows from the line.
#include <array>
#include <cstdint>
#include <string_view>

namespace ember {

// --- ops of one input -------------------------------------------------------------------------------------
// X(name, label, float_only, saves)
//   label:      the name in messages (and PyTorch's name for the op)
//   float_only: integer inputs are converted to the default float dtype first (exp of an i64 is f32)
//   saves:      what the backward reads: input (x), output (y) or none
//
// EMBER_UNARY_OPS_PUBLIC: ops with no parameters. Each gets `Tensor ember::<name>(const Tensor&)` and
// `Tensor Tensor::<name>() const`, generated.
#define EMBER_UNARY_OPS_PUBLIC(X)            \
  X(neg, "neg", false, none)                 \
  X(abs, "abs", false, input)                \
  X(sign, "sign", false, none)               \
  X(square, "square", false, input)          \
  X(relu, "relu", false, output)             \
  X(exp, "exp", true, output)                \
  X(expm1, "expm1", true, output)            \
  X(log, "log", true, input)                 \
  X(log1p, "log1p", true, input)             \
  X(sqrt, "sqrt", true, output)              \
  X(rsqrt, "rsqrt", true, output)            \
  X(reciprocal, "reciprocal", true, output)  \
  X(sin, "sin", true, input)                 \
  X(cos, "cos", true, input)                 \
  X(tanh, "tanh", true, output)              \
  X(sigmoid, "sigmoid", true, output)        \
  X(silu, "silu", true, input)

// EMBER_UNARY_OPS_PARAM: ops whose public function takes parameters (alpha, beta in the kernels) or an
// option; their ember:: functions and Tensor methods are written by hand in autograd/functions_elementwise.cpp.
//   pow_scalar  x^alpha                                 clamp       min(max(x, alpha), beta)
//   gelu        exact (erf) GELU                        gelu_tanh   GELU's tanh approximation
//   leaky_relu  x > 0 ? x : alpha·x                     elu         x > 0 ? x : alpha·(e^x - 1)
//   softplus    log(1 + e^(alpha·x)) / alpha, x where alpha·x > beta (the threshold)
//   hardtanh    clamp to [alpha, beta], no gradient at or beyond the bounds
#define EMBER_UNARY_OPS_PARAM(X)             \
  X(pow_scalar, "pow", true, input)          \
  X(clamp, "clamp", false, input)            \
  X(gelu, "gelu", true, input)               \
  X(gelu_tanh, "gelu", true, input)          \
  X(leaky_relu, "leaky_relu", true, input)   \
  X(elu, "elu", true, input)                 \
  X(softplus, "softplus", true, input)       \
  X(hardtanh, "hardtanh", true, input)

#define EMBER_UNARY_OPS(X) EMBER_UNARY_OPS_PUBLIC(X) EMBER_UNARY_OPS_PARAM(X)

// --- ops of two inputs --------------------------------------------------------------------------------------
// X(name, label, kind, float_only)
//   kind: arithmetic (output in the inputs' dtype, differentiable: autograd/functions_elementwise.cpp),
//         comparison (bool output, no gradient).
// Every op gets `Tensor ember::<name>(a, b)` and the scalar forms `<name>(a, 2.0)`, `<name>(2.0, a)`.
#define EMBER_BINARY_OPS(X)                        \
  X(add, "add", arithmetic, false)                 \
  X(sub, "sub", arithmetic, false)                 \
  X(mul, "mul", arithmetic, false)                 \
  X(div, "div", arithmetic, true)                  \
  X(pow, "pow", arithmetic, true)                  \
  X(maximum, "maximum", arithmetic, false)         \
  X(minimum, "minimum", arithmetic, false)         \
  X(eq, "eq", comparison, false)                   \
  X(ne, "ne", comparison, false)                   \
  X(lt, "lt", comparison, false)                   \
  X(le, "le", comparison, false)                   \
  X(gt, "gt", comparison, false)                   \
  X(ge, "ge", comparison, false)                   \
  X(logical_and, "logical_and", comparison, false) \
  X(logical_or, "logical_or", comparison, false)

// --- what the tables generate here --------------------------------------------------------------------------
enum class UnaryOp : uint8_t {
#define EMBER_X(name, ...) name,
  EMBER_UNARY_OPS(EMBER_X)
#undef EMBER_X
};

enum class BinaryOp : uint8_t {
#define EMBER_X(name, ...) name,
  EMBER_BINARY_OPS(EMBER_X)
#undef EMBER_X
};

enum class UnarySaves : uint8_t { none, input, output };
enum class BinaryKind : uint8_t { arithmetic, comparison };

struct UnaryOpInfo {
  UnaryOp op;
  std::string_view name;   // the enum's name (the test table's line name)
  std::string_view label;  // for messages
  bool float_only;
  UnarySaves saves;
  bool is_public;  // has a generated ember::<name>(const Tensor&)
};

struct BinaryOpInfo {
  BinaryOp op;
  std::string_view name;
  std::string_view label;
  BinaryKind kind;
  bool float_only;
};

inline constexpr UnaryOpInfo kUnaryOps[] = {
#define EMBER_X_PUBLIC(name, label, float_only, saves) \
  {UnaryOp::name, #name, label, float_only, UnarySaves::saves, true},
#define EMBER_X_PARAM(name, label, float_only, saves) \
  {UnaryOp::name, #name, label, float_only, UnarySaves::saves, false},
    EMBER_UNARY_OPS_PUBLIC(EMBER_X_PUBLIC) EMBER_UNARY_OPS_PARAM(EMBER_X_PARAM)
#undef EMBER_X_PUBLIC
#undef EMBER_X_PARAM
};

inline constexpr BinaryOpInfo kBinaryOps[] = {
#define EMBER_X(name, label, kind, float_only) {BinaryOp::name, #name, label, BinaryKind::kind, float_only},
    EMBER_BINARY_OPS(EMBER_X)
#undef EMBER_X
};

// The rows are in enum order by construction; this says so where the compiler can check it.
constexpr bool tables_in_enum_order() {
  for (size_t i = 0; i < std::size(kUnaryOps); ++i)
    if (static_cast<size_t>(kUnaryOps[i].op) != i) return false;
  for (size_t i = 0; i < std::size(kBinaryOps); ++i)
    if (static_cast<size_t>(kBinaryOps[i].op) != i) return false;
  return true;
}
static_assert(tables_in_enum_order(), "kUnaryOps/kBinaryOps must list the ops in enum order");

constexpr const UnaryOpInfo& op_info(UnaryOp op) { return kUnaryOps[static_cast<size_t>(op)]; }
constexpr const BinaryOpInfo& op_info(BinaryOp op) { return kBinaryOps[static_cast<size_t>(op)]; }
constexpr std::string_view op_name(UnaryOp op) { return op_info(op).label; }
constexpr std::string_view op_name(BinaryOp op) { return op_info(op).label; }
constexpr bool is_comparison(BinaryOp op) { return op_info(op).kind == BinaryKind::comparison; }
constexpr bool unary_needs_float(UnaryOp op) { return op_info(op).float_only; }
constexpr bool binary_needs_float(BinaryOp op) { return op_info(op).float_only; }

}  // namespace ember
