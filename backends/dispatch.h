#pragma once
// Host-side dispatch, shared by both backends: a runtime enum (an op) or an (op, dtype) pair turned into
// template arguments, so that each loop body is compiled once per op and type. The element-wise pairs a
// backend runs, and the error for a pair the op tables do not allow, are decided here once.
#include <type_traits>

#include "backends/backend.h"
#include "backends/elementwise_ops.h"
#include "base/dtype.h"
#include "base/error.h"

namespace ember::kernels {

template <auto V> using constant = std::integral_constant<decltype(V), V>;

// The values of the backend enums without an op table of their own (backends/backend.h), in enum order.
#define EMBER_REDUCE_OPS(X) X(sum) X(mean) X(max) X(min)
#define EMBER_OPTIMIZER_OPS(X) X(sgd) X(adam) X(rmsprop)
#define EMBER_RANDOM_OPS(X) X(uniform) X(normal) X(bernoulli)
#define EMBER_INDEX_OPS(X) X(gather) X(scatter_add) X(scatter)

// dispatch_<kind>_op(op, fn) calls fn(constant<op>{}): the runtime enum as a template argument. One switch
// per enum, its cases generated from the enum's list; a list that misses a value leaves a switch that
// -Wswitch reports.
#define EMBER_DISPATCH_CASE(name, ...) \
  case E::name:                        \
    return fn(constant<E::name>{});
#define EMBER_DEFINE_DISPATCH(function, Enum, LIST) \
  template <typename Fn>                            \
  void function(Enum op, Fn&& fn) {                 \
    using E = Enum;                                 \
    switch (op) { LIST(EMBER_DISPATCH_CASE) }       \
  }
EMBER_DEFINE_DISPATCH(dispatch_unary_op, UnaryOp, EMBER_UNARY_OPS)
EMBER_DEFINE_DISPATCH(dispatch_binary_op, BinaryOp, EMBER_BINARY_OPS)
EMBER_DEFINE_DISPATCH(dispatch_reduce_op, ReduceOp, EMBER_REDUCE_OPS)
EMBER_DEFINE_DISPATCH(dispatch_optimizer_op, OptimizerOp, EMBER_OPTIMIZER_OPS)
EMBER_DEFINE_DISPATCH(dispatch_random_op, RandomOp, EMBER_RANDOM_OPS)
EMBER_DEFINE_DISPATCH(dispatch_index_op, IndexOp, EMBER_INDEX_OPS)
#undef EMBER_DEFINE_DISPATCH
#undef EMBER_DISPATCH_CASE

template <typename T>
inline constexpr bool is_float_v = std::is_floating_point_v<T>;

// fn(op_c, T{}) for the (op, dtype) pair when allowed(op_c, T{}) is a true std::bool_constant, else the error
// naming the op (and `advice`); `fn` is instantiated only for allowed pairs.
template <typename Op, typename Allowed, typename Fn>
void dispatch_allowed(Op op, DType dtype, const char* advice, Allowed allowed, Fn&& fn) {
  const auto by_op = [&](auto op_c) {
    constexpr Op kOp = decltype(op_c)::value;
    dispatch_dtype(dtype, op_name(kOp), [&](auto tag) {
      if constexpr (decltype(allowed(constant<kOp>{}, tag))::value) fn(op_c, tag);
      else detail::throw_error(op_name(kOp), ": not defined for dtype ", dtype_name(dtype), advice);
    });
  };
  if constexpr (std::is_same_v<Op, UnaryOp>) dispatch_unary_op(op, by_op);
  else dispatch_binary_op(op, by_op);
}

// The (op, dtype) pairs each backend runs, checked once for both, from the tables: unary forward on any
// dtype but bool, floats only where the table says float_only; unary backward on f32/f64; binary: comparisons
// on any dtype, the rest not on bool, floats only where float_only.
template <typename Fn>
void dispatch_unary(UnaryOp op, DType dtype, Fn&& fn) {
  dispatch_allowed(op, dtype, "; convert with .to(DType::f32)", [](auto op_c, auto tag) {
    using T = decltype(tag);
    return std::bool_constant<!std::is_same_v<T, bool> && (!unary_needs_float(decltype(op_c)::value) || is_float_v<T>)>{};
  }, fn);
}

template <typename Fn>
void dispatch_unary_backward(UnaryOp op, DType dtype, Fn&& fn) {
  dispatch_unary_op(op, [&](auto op_c) {
    dispatch_floating(dtype, op_name(decltype(op_c)::value), [&](auto tag) { fn(op_c, tag); });
  });
}

template <typename Fn>
void dispatch_binary(BinaryOp op, DType dtype, Fn&& fn) {
  dispatch_allowed(op, dtype, "", [](auto op_c, auto tag) {
    using T = decltype(tag);
    constexpr BinaryOp kOp = decltype(op_c)::value;
    return std::bool_constant<(!std::is_same_v<T, bool> || is_comparison(kOp)) && (!binary_needs_float(kOp) || is_float_v<T>)>{};
  }, fn);
}

}  // namespace ember::kernels
