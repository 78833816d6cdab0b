#pragma once
// gradcheck: checks an op's backward against central finite differences, for users writing their own
// differentiable ops (and for Ember's own op table, tests/test_gradcheck.cpp).
//
//   auto r = ember::autograd::gradcheck(
//       [](const std::vector<Tensor>& in) { return my_op(in[0], in[1]); },
//       {randn({3, 4}, {.dtype = DType::f64}).requires_grad_(), randn({4}, {.dtype = DType::f64})});
//   EXPECT_TRUE(r.ok) << r.message;
#include <functional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace ember::autograd {

struct GradcheckResult {
  bool ok = true;
  // The worst element found: the largest |analytic − numeric| relative to its tolerance
  // atol + rtol·|numeric|. input = -1 when no input requires grad or the output is empty.
  int input = -1;               // index into `inputs`
  int64_t element = -1;         // row-major element of that input
  int64_t output_element = -1;  // row-major element of fn's output
  double analytic = 0, numeric = 0;
  std::string message;          // says which element and both values, passed or not
  explicit operator bool() const { return ok; }
};

using GradcheckFn = std::function<Tensor(const std::vector<Tensor>&)>;

// Compares, for every input that requires grad and every element of fn's output, the gradient that
// backward computes (analytic) with (fn(x + eps) − fn(x − eps)) / 2·eps (numeric), element by element.
// Inputs that require grad must be f64 tensors without overlapping memory (no expand()ed inputs:
// expand inside fn instead); they may be non-contiguous, and non-leaf ones are checked as leaves.
// Other inputs (indices, masks) are passed through unchanged. fn must return a floating tensor and be
// deterministic. Throws ember::Error for an input it cannot check; returns ok = false (with a message
// naming the worst element) when the gradients disagree. Costs one backward per output element and two
// forwards per input element: meant for small shapes.
GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs, double eps = 1e-6,
                          double atol = 1e-5, double rtol = 1e-3);

}  // namespace ember::autograd
