#pragma once
// Helpers shared by the nn::functional sources (not installed; not part of the API).
#include <cstdint>

#include "core/tensor.h"

namespace ember::nn::functional::detail {

// ‖x‖_p along dim, as torch.linalg.vector_norm: p = 2, 1, ±INFINITY (max/min of |x|), 0 (the count of
// non-zeros, no gradient) or any other p > 0. The gradient is 0 where the norm is 0 (PyTorch's masking),
// never NaN.
Tensor vector_norm(const Tensor& x, double p, int64_t dim, bool keepdim);

// t's values clamped to at least `min`, with t's gradient passing unchanged (PyTorch's clamp_ under
// no_grad on a tensor that requires grad: cosine_similarity's norms, gaussian_nll_loss's var).
Tensor clamp_value_min(const Tensor& t, double min);

}  // namespace ember::nn::functional::detail
