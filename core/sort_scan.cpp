// Scans and sorts along one dim: new contiguous outputs of the input's shape, computed by the backend row
// by row. A 0-d tensor is a row of one element (dim 0 or -1, as PyTorch).
#include "core/raw.h"

namespace ember::raw {

Tensor cumsum(const Tensor& t, int64_t dim, bool reverse) {
  const int d = wrap_dim(dim, t.dim(), "cumsum");
  if (t.dim() == 0) return view(cumsum(reshape(t, {1}), 0, reverse), {});
  const DType dtype = is_floating(t.dtype()) ? t.dtype() : DType::i64;  // bool and i64 count in i64
  const Tensor in = to(t, dtype);
  Tensor out = empty(t.shape(), dtype, t.device());
  if (t.numel() > 0) backend(t.device()).cumsum(in.arg(), out.arg(), d, reverse);
  return out;
}

std::tuple<Tensor, Tensor> sort(const Tensor& t, int64_t dim, bool descending) {
  const int d = wrap_dim(dim, t.dim(), "sort");
  if (t.dim() == 0) {
    auto [values, indices] = sort(reshape(t, {1}), 0, descending);
    return {view(values, {}), view(indices, {})};
  }
  Tensor values = empty(t.shape(), t.dtype(), t.device());
  Tensor indices = empty(t.shape(), DType::i64, t.device());
  if (t.numel() > 0) backend(t.device()).sort(t.arg(), values.arg(), indices.arg(), d, descending);
  return {values, indices};
}

}  // namespace ember::raw
