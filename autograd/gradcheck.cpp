// gradcheck: the analytic Jacobian (one backward per output element) against central differences.
#include "autograd/gradcheck.h"

#include <cmath>
#include <sstream>

#include "autograd/grad_mode.h"
#include "core/raw.h"

namespace ember::autograd {
namespace {

// Element `k` (row-major) of `t` as a 0-d view, whatever t's strides.
Tensor element_view(const Tensor& t, int64_t k) {
  int64_t offset = t.offset();
  for (int d = t.dim() - 1; d >= 0; --d) {
    offset += (k % t.shape()[d]) * t.strides()[d];
    k /= t.shape()[d];
  }
  return raw::as_strided(t, {}, {}, offset);
}

std::string multi_index(const Shape& shape, int64_t k) {
  Shape idx = Shape::filled(shape.size(), 0);
  for (int d = shape.size() - 1; d >= 0; --d) {
    idx[d] = k % shape[d];
    k /= shape[d];
  }
  return idx.str();
}

}  // namespace

GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs, double eps, double atol,
                          double rtol) {
  // The differentiated inputs become leaves sharing the callers' data, so that perturbing them in place
  // is seen by fn and backward fills their grad().
  std::vector<Tensor> args = inputs;
  std::vector<int> checked;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined() || !inputs[i].requires_grad()) continue;
    const Tensor& t = inputs[i];
    EMBER_CHECK(t.dtype() == DType::f64, "gradcheck: input ", i, " is ", dtype_name(t.dtype()), "; gradcheck "
                "needs f64 inputs (central differences in f32 are too imprecise): pass t.to(DType::f64)");
    for (int d = 0; d < t.dim(); ++d)
      EMBER_CHECK(t.shape()[d] <= 1 || t.strides()[d] != 0, "gradcheck: input ", i, " (shape ", t.shape(),
                  ", strides ", t.strides(), ") has overlapping memory (an expand()ed view), so its elements "
                  "cannot be perturbed one at a time; pass the unexpanded tensor and expand inside fn");
    args[i] = t.detach().requires_grad_(true);
    checked.push_back(static_cast<int>(i));
  }

  // Analytic: row j of the Jacobian is the gradient of output element j.
  const Tensor out = fn(args);
  EMBER_CHECK(out.defined() && is_floating(out.dtype()), "gradcheck: fn must return a floating tensor");
  const int64_t n_out = out.numel();
  // analytic[c][k * n_out + j] = d out[j] / d input[checked[c]][k]
  std::vector<std::vector<double>> analytic(checked.size());
  for (size_t c = 0; c < checked.size(); ++c)
    analytic[c].assign(static_cast<size_t>(args[checked[c]].numel() * n_out), 0.0);
  if (out.requires_grad()) {
    for (int64_t j = 0; j < n_out; ++j) {
      for (int i : checked) args[i].set_grad(Tensor());
      Tensor onehot = zeros(out.shape(), {.dtype = out.dtype(), .device = out.device()});
      raw::fill_(element_view(onehot, j), 1.0);
      out.backward(onehot, /*retain_graph=*/true);
      for (size_t c = 0; c < checked.size(); ++c) {
        const Tensor g = args[checked[c]].grad();
        if (!g.defined()) continue;  // this input does not reach the output: zero
        const std::vector<double> values = g.to_vector<double>();
        for (size_t k = 0; k < values.size(); ++k) analytic[c][k * n_out + j] = values[k];
      }
    }
    for (int i : checked) args[i].set_grad(Tensor());
  }

  // Numeric: column k of the Jacobian from two forwards around element k of each input.
  GradcheckResult result;
  double worst_ratio = -1;
  NoGradGuard no_grad;
  for (size_t c = 0; c < checked.size(); ++c) {
    const Tensor& x = args[checked[c]];
    for (int64_t k = 0; k < x.numel(); ++k) {
      const Tensor e = element_view(x, k);
      const double original = e.item<double>();
      raw::fill_(e, original + eps);
      const std::vector<double> plus = fn(args).to_vector<double>();
      raw::fill_(e, original - eps);
      const std::vector<double> minus = fn(args).to_vector<double>();
      raw::fill_(e, original);
      for (int64_t j = 0; j < n_out; ++j) {
        const double numeric = (plus[j] - minus[j]) / (2 * eps);
        const double a = analytic[c][k * n_out + j];
        const double ratio = std::abs(a - numeric) / (atol + rtol * std::abs(numeric));
        if (!(ratio <= worst_ratio)) {  // NaN counts as worst
          worst_ratio = ratio;
          result = {.ok = ratio <= 1, .input = checked[c], .element = k, .output_element = j, .analytic = a,
                    .numeric = numeric, .message = {}};
          if (std::isnan(ratio)) break;
        }
      }
    }
  }
  std::ostringstream msg;
  if (result.input < 0) {
    msg << "gradcheck: nothing to check (no input requires grad, or the output is empty)";
  } else {
    const Tensor& x = args[result.input];
    msg << "gradcheck " << (result.ok ? "passed" : "FAILED") << ": worst at input " << result.input << " (shape "
        << x.shape() << ") element " << multi_index(x.shape(), result.element) << ", output element "
        << multi_index(out.shape(), result.output_element) << ": analytic " << result.analytic << " vs numeric "
        << result.numeric << " (|difference| " << std::abs(result.analytic - result.numeric) << ", tolerance "
        << atol + rtol * std::abs(result.numeric) << " = atol " << atol << " + rtol " << rtol << " * |numeric|)";
  }
  result.message = msg.str();
  return result;
}

}  // namespace ember::autograd
