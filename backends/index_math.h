#pragma once
// scatter_reduce's math, shared by the backends (the CPU loop and the CUDA kernel combine with the same
// functions; their operand check is checks::check_scatter_reduce, backends/checks.h):
// - combine<op>(acc, v): one step of the reduction, PyTorch's: sum, prod, and amax/amin with NaN winning
//   (a NaN in either operand gives NaN, as torch.scatter_reduce on the CPU).
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

}  // namespace ember::index_math
