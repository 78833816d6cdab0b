// Advanced indexing as LibTorch's Tensor::index / index_put_ (ember::indexing::TensorIndex, core/tensor.h),
// and the Tensor methods of the scatter reductions and selections (autograd/functions_indexing.cpp).
//
// How: the integers, slices, Nones and Ellipsis become views (select/slice/unsqueeze, with their own
// gradients); each tensor index is recorded against the dim of that view it indexes (a bool mask as the
// columns of its nonzero()). The element offsets of the result in a contiguous copy of the view are then
// plain i64 arithmetic, and index() is one index_select of the flattened copy at those offsets, index_put one
// scatter (or index_add, accumulating) into the flattened input: their gradients are those ops' own.
#include <algorithm>
#include <cmath>
#include <span>

#include "autograd/node.h"
#include "autograd/ops.h"
#include "core/raw.h"

namespace ember {
namespace {

using indexing::TensorIndex;
using Kind = TensorIndex::Kind;

struct Indexed {
  Tensor view;              // the input after the basic indices
  std::vector<Tensor> adv;  // per dim of view: the i64 index tensor on it, undefined where none
};

Tensor index_tensor(int64_t size, Device device) { return zeros({size}, {.dtype = DType::i64, .device = device}); }

Indexed apply_indices(const Tensor& x, const std::vector<TensorIndex>& indices, const char* op) {
  int consumed = 0, ellipses = 0;
  for (const TensorIndex& i : indices) {
    switch (i.kind()) {
      case Kind::integer:
      case Kind::slice: ++consumed; break;
      case Kind::ellipsis: ++ellipses; break;
      case Kind::tensor:
        EMBER_CHECK(i.tensor().defined(), op, ": an index tensor is undefined");
        consumed += i.tensor().dtype() == DType::b8 ? i.tensor().dim() : 1;  // a 0-d bool takes none
        break;
      default: break;
    }
  }
  EMBER_CHECK(ellipses <= 1, op, ": an index can have only one Ellipsis (\"...\"), got ", ellipses);
  EMBER_CHECK(consumed <= x.dim(), op, ": too many indices for a tensor of dimension ", x.dim(), " (shape ",
              x.shape(), "): the indices take ", consumed, " dims");
  Indexed r{x, {}};
  int dim = 0;
  const auto record = [&](const Tensor& t) {
    r.adv.resize(static_cast<size_t>(dim) + 1);
    r.adv[dim] = t;
    ++dim;
  };
  const auto boolean = [&](bool b) {  // x[True] / x[False]: a new dim of size 1, indexed by [0] or by []
    r.view = r.view.unsqueeze(dim);
    record(index_tensor(b ? 1 : 0, x.device()));
  };
  for (const TensorIndex& i : indices) {
    switch (i.kind()) {
      case Kind::integer: r.view = r.view.select(dim, i.integer()); break;
      case Kind::slice: {
        const indexing::Slice& s = i.slice();
        const int64_t step = s.step.value_or(1);
        EMBER_CHECK(step > 0, op, ": slice steps must be positive, got ", step);
        r.view = r.view.slice(dim, s.start.value_or(0), s.stop.value_or(INT64_MAX), step);
        ++dim;
        break;
      }
      case Kind::none: r.view = r.view.unsqueeze(dim), ++dim; break;
      case Kind::ellipsis: dim += x.dim() - consumed; break;
      case Kind::boolean: boolean(i.integer() != 0); break;
      case Kind::tensor: {
        const Tensor& t = i.tensor();
        if (t.dtype() == DType::b8) {
          if (t.dim() == 0) {
            boolean(t.item<bool>());
            break;
          }
          for (int j = 0; j < t.dim(); ++j)
            EMBER_CHECK(t.shape()[j] == r.view.shape()[dim + j], op, ": the shape of the mask ", t.shape(), " at index ", j,
                        " does not match the shape of the indexed tensor ", r.view.shape(), " at index ", dim + j);
          const Tensor nz = raw::nonzero(t.to(x.device()));  // [count, k]: one index tensor per masked dim
          for (int j = 0; j < t.dim(); ++j) record(raw::select(nz, 1, j));
        } else {
          EMBER_CHECK(t.dtype() == DType::i64, op, ": tensors used as indices must be i64 or bool, got ",
                      dtype_name(t.dtype()));
          if (t.dim() == 0) r.view = r.view.select(dim, t.item<int64_t>());  // acts as an integer (LibTorch)
          else record(t.to(x.device()));
        }
        break;
      }
    }
  }
  r.adv.resize(static_cast<size_t>(r.view.dim()));
  return r;
}

// t viewed with `n` dims, its own right-aligned into [at, at + width) (width ≥ t.dim()), 1 elsewhere.
Tensor placed(const Tensor& t, int n, int at, int width) {
  Shape shape = Shape::filled(n, 1);
  for (int j = 0; j < t.dim(); ++j) shape[at + width - t.dim() + j] = t.shape()[j];
  return raw::reshape(t, shape);
}

// The element offsets, from `base`, of view.index(adv) in the view's storage (i64, the result's shape, which
// it writes to `result`). Negative indices wrap; an index outside the dim throws.
Tensor positions(const Indexed& ix, int64_t base, Shape& result, const char* op) {
  const Tensor& v = ix.view;
  const TensorOptions i64{.dtype = DType::i64, .device = v.device()};
  std::vector<int> advanced, others;
  Shape broadcast;
  for (int d = 0; d < v.dim(); ++d) {
    if (!ix.adv[d].defined()) {
      others.push_back(d);
      continue;
    }
    broadcast = advanced.empty() ? ix.adv[d].shape() : raw::broadcast_shapes(broadcast, ix.adv[d].shape(), op);
    advanced.push_back(d);
  }
  // B replaces the indexed dims when they are adjacent, else it comes first (PyTorch's rule).
  const bool adjacent = advanced.empty() || advanced.back() - advanced.front() + 1 == static_cast<int>(advanced.size());
  const int lead = adjacent && !advanced.empty() ? advanced.front() : 0;
  const int width = broadcast.size();
  result = Shape();
  std::vector<int> result_dim(static_cast<size_t>(v.dim()), -1);  // where each non-indexed dim of v goes
  if (adjacent) {
    for (int d = 0; d < lead; ++d) result_dim[d] = d, result.push_back(v.shape()[d]);
    for (const int64_t s : broadcast) result.push_back(s);
    for (const int d : others)
      if (d >= lead) result_dim[d] = result.size(), result.push_back(v.shape()[d]);
  } else {
    result = broadcast;
    for (const int d : others) result_dim[d] = result.size(), result.push_back(v.shape()[d]);
  }
  const int n = result.size();
  Tensor pos = full({}, static_cast<double>(v.offset() - base), i64);
  for (const int d : others) {
    const Tensor coord = raw::binary(BinaryOp::mul, arange(int64_t{0}, v.shape()[d], int64_t{1}, i64),
                                     full({}, static_cast<double>(v.strides()[d]), i64));
    pos = raw::binary(BinaryOp::add, pos, placed(coord, n, result_dim[d], 1));
  }
  for (const int d : advanced) {
    Tensor t = ix.adv[d];
    const int64_t size = v.shape()[d];
    if (t.numel() > 0) {
      const int64_t lo = raw::reduce(ReduceOp::min, t, {}, false).item<int64_t>();
      const int64_t hi = raw::reduce(ReduceOp::max, t, {}, false).item<int64_t>();
      EMBER_CHECK(lo >= -size && hi < size, op, ": index ", hi >= size ? hi : lo, " is out of bounds for dimension ",
                  d, " with size ", size);
      if (lo < 0) {
        const Tensor wrapped = raw::binary(BinaryOp::add, t, full({}, static_cast<double>(size), i64));
        t = raw::where(raw::binary(BinaryOp::lt, t, full({}, 0.0, i64)), wrapped, t);
      }
    }
    const Tensor offset = raw::binary(BinaryOp::mul, t, full({}, static_cast<double>(v.strides()[d]), i64));
    pos = raw::binary(BinaryOp::add, pos, placed(offset, n, lead, width));
  }
  return raw::contiguous(raw::expand(pos, result));
}

// values broadcast to the indexed shape (leading dims of size 1 beyond it dropped first, as PyTorch's
// setitem), flattened.
Tensor values_for(const Tensor& x, const Tensor& values, const Shape& shape, const char* op) {
  EMBER_CHECK(values.dtype() == x.dtype(), op, ": the values are ", dtype_name(values.dtype()), " but the tensor is ",
              dtype_name(x.dtype()), "; convert them with .to(", dtype_name(x.dtype()), ")");
  Tensor v = values.dim() == 0 ? values.to(x.device()) : values;
  raw::check_same_device(x, v, op);
  int drop = 0;
  while (v.dim() - drop > shape.size() && v.shape()[drop] == 1) ++drop;
  if (drop > 0) v = v.reshape(Shape(std::span<const int64_t>(v.shape().data() + drop, v.dim() - drop)));
  bool fits = v.dim() <= shape.size();
  for (int j = 0; fits && j < v.dim(); ++j) {
    const int64_t have = v.shape()[j], want = shape[shape.size() - v.dim() + j];
    fits = have == want || have == 1;
  }
  EMBER_CHECK(fits, op, ": values of shape ", values.shape(), " cannot be broadcast to the indexed shape ", shape);
  return (v.shape() == shape ? v : v.expand(shape)).reshape({shape.numel()});
}

}  // namespace

Tensor Tensor::index(const std::vector<TensorIndex>& indices) const {
  Indexed ix = apply_indices(*this, indices, "index");
  bool advanced = false;
  for (const Tensor& t : ix.adv) advanced = advanced || t.defined();
  if (!advanced) return ix.view;  // basic indexing: a view, as LibTorch
  ix.view = ix.view.contiguous();
  Shape shape;
  const Tensor pos = positions(ix, ix.view.offset(), shape, "index");
  return index_select(ix.view.reshape({-1}), 0, raw::reshape(pos, {shape.numel()})).reshape(shape);
}

Tensor index_put(const Tensor& x, const std::vector<TensorIndex>& indices, const Tensor& values, bool accumulate) {
  const Tensor xc = x.contiguous();
  Indexed ix;
  {
    NoGradGuard no_grad;  // only the views' layouts are used
    ix = apply_indices(xc, indices, "index_put");
  }
  Shape shape;
  Tensor pos = positions(ix, xc.offset(), shape, "index_put");  // sets shape
  pos = raw::reshape(pos, {shape.numel()});
  const Tensor vals = values_for(x, values, shape, "index_put");
  const Tensor flat = xc.reshape({-1});
  const Tensor out = accumulate ? index_add(flat, 0, pos, vals) : scatter(flat, 0, pos, vals);
  return out.reshape(x.shape());
}

Tensor Tensor::index_put(const std::vector<TensorIndex>& indices, const Tensor& values, bool accumulate) const {
  return ember::index_put(*this, indices, values, accumulate);
}

Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, const Tensor& values, bool accumulate) {
  for (int d = 0; d < dim(); ++d)
    EMBER_CHECK(strides()[d] != 0 || shape()[d] <= 1, "index_put_: the tensor (shape ", shape(), ", strides ",
                strides(), ") has elements sharing memory (an expand()ed view); write into a clone() of it");
  if (autograd::needs_graph(*this, values)) {
    EMBER_CHECK(!(is_leaf() && requires_grad()), "index_put_: a leaf tensor that requires grad cannot be written in "
                "place (as in PyTorch); write into a clone, use index_put (out of place), or wrap the write in "
                "NoGradGuard");
    const Tensor out = ember::index_put(*this, indices, values, accumulate);
    raw::copy_(*this, out);
    autograd::set_history(*this, out.grad_fn());  // this tensor now is the op's result
    return *this;
  }
  const Indexed ix = apply_indices(*this, indices, "index_put_");
  Shape shape;
  Tensor pos = positions(ix, 0, shape, "index_put_");  // sets shape
  pos = raw::reshape(pos, {shape.numel()});
  const Tensor vals = raw::contiguous(values_for(*this, values, shape, "index_put_"));
  raw::put_(*this, pos, vals, accumulate);
  return *this;
}

Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, double value) {
  EMBER_CHECK(dtype() != DType::i64 || (std::isfinite(value) && std::abs(value) < 9.2233720368547758e18),
              "index_put_: the value ", value, " cannot be converted to i64 without overflow");
  return index_put_(indices, full({}, value, {.dtype = dtype(), .device = device()}));
}

// --- the Tensor methods of autograd/functions_indexing.cpp's new ops ----------------------------------------
Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const {
  return ember::scatter_add(*this, dim, index, src);
}
Tensor Tensor::scatter_reduce(int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce,
                              bool include_self) const {
  return ember::scatter_reduce(*this, dim, index, src, reduce, include_self);
}
Tensor Tensor::take_along_dim(const Tensor& indices, std::optional<int64_t> dim) const {
  return ember::take_along_dim(*this, indices, dim);
}
Tensor Tensor::masked_select(const Tensor& mask) const { return ember::masked_select(*this, mask); }
Tensor Tensor::nonzero() const { return ember::nonzero(*this); }
std::vector<Tensor> Tensor::nonzero_numpy() const { return ember::nonzero_numpy(*this); }

}  // namespace ember
