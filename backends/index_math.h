#pragma once
// scatter_reduce's math, shared by the backends (the CPU loop and the CUDA kernel combine with the same
// functions, and check their operands with the same function, so a CPU test covers both):
// - combine<op>(acc, v): one step of the reduction, PyTorch's: sum, prod, and amax/amin with NaN winning
//   (a NaN in either operand gives NaN, as torch.scatter_reduce on the CPU).
// - check_scatter_reduce(): the host-side operand check both backends run before the loop.
#include <cstdint>
#include <type_traits>

#include "backends/backend.h"
#include "backends/strided.h"
#include "base/error.h"
#include "base/host_device.h"

namespace ember::index_math {

template <typename T> EMBER_HOST_DEVICE bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return v != v;
  else return false;
}

template <ScatterReduceOp kOp, typename T> EMBER_HOST_DEVICE T combine(T acc, T v) {
  if constexpr (kOp == ScatterReduceOp::sum) {
    return static_cast<T>(acc + v);
  } else if constexpr (kOp == ScatterReduceOp::prod) {
    return static_cast<T>(acc * v);
  } else if constexpr (kOp == ScatterReduceOp::amax) {
    return is_nan(acc) || is_nan(v) ? (is_nan(acc) ? acc : v) : (v > acc ? v : acc);
  } else {
    return is_nan(acc) || is_nan(v) ? (is_nan(acc) ? acc : v) : (v < acc ? v : acc);
  }
}

inline const char* scatter_reduce_name(ScatterReduceOp op) {
  switch (op) {
    case ScatterReduceOp::sum: return "sum";
    case ScatterReduceOp::prod: return "prod";
    case ScatterReduceOp::amax: return "amax";
    case ScatterReduceOp::amin: return "amin";
  }
  return "?";
}

// src (iterated, the index's shape) is reduced into out along dim; index i64 of src's shape. Bool is
// refused (core refuses it first, naming the op the user called). Returns the IndexPlan of the loop.
inline IndexPlan check_scatter_reduce(ScatterReduceOp op, const TensorArg& src, const TensorArg& index,
                                      const TensorArg& out, int dim) {
  EMBER_CHECK(index.dtype == DType::i64, "scatter_reduce: the index must be i64, got ", dtype_name(index.dtype));
  EMBER_CHECK(src.dtype == out.dtype, "scatter_reduce: the source is ", dtype_name(src.dtype), " but the output is ",
              dtype_name(out.dtype));
  EMBER_CHECK(src.dtype != DType::b8, "scatter_reduce (", scatter_reduce_name(op), "): not defined for bool tensors");
  EMBER_CHECK(src.ndim == index.ndim && src.ndim == out.ndim && dim >= 0 && dim < out.ndim,
              "scatter_reduce: the source, index and output need one number of dims and dim in range, got ",
              src.ndim, ", ", index.ndim, ", ", out.ndim, " dims and dim ", dim);
  for (int d = 0; d < src.ndim; ++d)
    EMBER_CHECK(src.shape[d] == index.shape[d] && (d == dim || src.shape[d] <= out.shape[d]),
                "scatter_reduce: the index must have the source's shape and fit the output in every dim but ", dim);
  return IndexPlan(src, out, dim);
}

}  // namespace ember::index_math
