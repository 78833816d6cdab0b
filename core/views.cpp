// Views: new metadata over the same storage. No data moves (except reshape when it must copy).
#include <optional>

#include "core/raw.h"

namespace ember::raw {
namespace {

Tensor make_view(const Tensor& t, const Shape& shape, const Shape& strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = t.impl().storage;
  impl->shape = shape;
  impl->strides = strides;
  impl->offset = offset;
  impl->dtype = t.dtype();
  return Tensor(std::move(impl));
}

// Replaces one -1 by the size that makes numel match; checks the total.
Shape infer_shape(const Shape& requested, int64_t numel, const char* op, const Shape& from) {
  Shape shape = requested;
  int infer = -1;
  int64_t known = 1;
  for (int d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1) {
      EMBER_CHECK(infer < 0, op, ": only one dimension can be -1, got ", requested);
      infer = d;
    } else {
      EMBER_CHECK(shape[d] >= 0, op, ": invalid size ", shape[d], " in ", requested);
      known *= shape[d];
    }
  }
  if (infer >= 0) {
    EMBER_CHECK(known != 0 && numel % known == 0, op, ": shape ", requested, " is invalid for a tensor of shape ",
                from, " (", numel, " elements)");
    shape[infer] = numel / known;
  }
  EMBER_CHECK(shape.numel() == numel, op, ": shape ", requested, " is invalid for a tensor of shape ", from, " (",
              numel, " elements)");
  return shape;
}

// Strides that let `old` (shape, strides) be viewed as `shape` without copying, if any (PyTorch's
// computeStride): every run of input dims that is contiguous in memory may be re-split freely.
std::optional<Shape> view_strides(const Shape& old_shape, const Shape& old_strides, const Shape& shape) {
  if (old_shape.numel() == 0 || old_shape.empty()) return contiguous_strides(shape);
  Shape strides = Shape::filled(shape.size(), 1);
  int view_d = shape.size() - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int tensor_d = old_shape.size() - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= old_shape[tensor_d];
    if (tensor_d == 0 ||
        (old_shape[tensor_d - 1] != 1 && old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (tensor_d > 0) {
        chunk_base_stride = old_strides[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return strides;
}

}  // namespace

Tensor as_strided(const Tensor& t, const Shape& shape, const Shape& strides, int64_t offset) {
  return make_view(t, shape, strides, offset);
}

Tensor view(const Tensor& t, const Shape& requested) {
  const Shape shape = infer_shape(requested, t.numel(), "view", t.shape());
  const auto strides = view_strides(t.shape(), t.strides(), shape);
  EMBER_CHECK(strides.has_value(), "view: shape ", requested, " is incompatible with the input's shape ", t.shape(),
              " and strides ", t.strides(), " (it is not contiguous in the needed way); use reshape(), which "
              "copies when it must, or call contiguous() first");
  return make_view(t, shape, *strides, t.offset());
}

Tensor reshape(const Tensor& t, const Shape& requested) {
  const Shape shape = infer_shape(requested, t.numel(), "reshape", t.shape());
  if (const auto strides = view_strides(t.shape(), t.strides(), shape)) return make_view(t, shape, *strides, t.offset());
  const Tensor c = contiguous(t);
  return make_view(c, shape, contiguous_strides(shape), c.offset());
}

Tensor permute(const Tensor& t, const Shape& dims) {
  const int n = t.dim();
  EMBER_CHECK(dims.size() == n, "permute: got ", dims.size(), " dims ", dims, " for a tensor with ", n, " dims");
  Shape shape, strides;
  bool seen[kMaxDims] = {};
  for (int i = 0; i < n; ++i) {
    const int d = wrap_dim(dims[i], n, "permute");
    EMBER_CHECK(!seen[d], "permute: dim ", d, " appears twice in ", dims);
    seen[d] = true;
    shape.push_back(t.shape()[d]);
    strides.push_back(t.strides()[d]);
  }
  return make_view(t, shape, strides, t.offset());
}

Tensor transpose(const Tensor& t, int64_t dim0, int64_t dim1) {
  if (t.dim() == 0) return make_view(t, t.shape(), t.strides(), t.offset());
  const int a = wrap_dim(dim0, t.dim(), "transpose"), b = wrap_dim(dim1, t.dim(), "transpose");
  Shape shape = t.shape(), strides = t.strides();
  std::swap(shape[a], shape[b]);
  std::swap(strides[a], strides[b]);
  return make_view(t, shape, strides, t.offset());
}

Tensor narrow(const Tensor& t, int64_t dim, int64_t start, int64_t length) {
  EMBER_CHECK(t.dim() > 0, "narrow: cannot narrow a 0-d tensor");
  const int d = wrap_dim(dim, t.dim(), "narrow");
  const int64_t size = t.shape()[d];
  if (start < 0) start += size;
  EMBER_CHECK(start >= 0 && length >= 0 && start + length <= size, "narrow: start ", start, " and length ", length,
              " are out of range for dim ", d, " of size ", size, " (shape ", t.shape(), ")");
  Shape shape = t.shape();
  shape[d] = length;
  return make_view(t, shape, t.strides(), t.offset() + start * t.strides()[d]);
}

Tensor slice(const Tensor& t, int64_t dim, int64_t start, int64_t end, int64_t step) {
  EMBER_CHECK(t.dim() > 0, "slice: cannot slice a 0-d tensor");
  EMBER_CHECK(step > 0, "slice: step must be positive, got ", step);
  const int d = wrap_dim(dim, t.dim(), "slice");
  const int64_t size = t.shape()[d];
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  Shape shape = t.shape(), strides = t.strides();
  shape[d] = (end - start + step - 1) / step;
  strides[d] *= step;
  return make_view(t, shape, strides, t.offset() + start * t.strides()[d]);
}

Tensor select(const Tensor& t, int64_t dim, int64_t index) {
  EMBER_CHECK(t.dim() > 0, "select: cannot index a 0-d tensor");
  const int d = wrap_dim(dim, t.dim(), "select");
  const int64_t size = t.shape()[d];
  EMBER_CHECK(index >= -size && index < size, "select: index ", index, " is out of range for dim ", d, " of size ",
              size, " (shape ", t.shape(), ")");
  if (index < 0) index += size;
  Shape shape = t.shape(), strides = t.strides();
  const int64_t offset = t.offset() + index * strides[d];
  shape.erase(d);
  strides.erase(d);
  return make_view(t, shape, strides, offset);
}

Tensor expand(const Tensor& t, const Shape& requested) {
  const int n = requested.size(), old = t.dim();
  EMBER_CHECK(n >= old, "expand: the target shape ", requested, " has fewer dims than the tensor's ", t.shape());
  Shape shape = requested, strides = Shape::filled(n, 0);
  for (int d = n - 1; d >= 0; --d) {
    const int od = d - (n - old);
    if (od >= 0) {
      const int64_t have = t.shape()[od];
      if (shape[d] == -1) shape[d] = have;
      EMBER_CHECK(shape[d] >= 0, "expand: invalid size ", shape[d], " for dim ", d, " in ", requested,
                  " (only -1, to keep a size, may be negative)");
      EMBER_CHECK(have == shape[d] || have == 1, "expand: the size ", have, " of dim ", od, " (shape ", t.shape(),
                  ") must match ", shape[d], " in the target ", requested, ", or be 1");
      strides[d] = have == shape[d] ? t.strides()[od] : 0;
    } else {
      EMBER_CHECK(shape[d] >= 0, "expand: -1 is not allowed for the new leading dim ", d, " of ", requested);
    }
  }
  return make_view(t, shape, strides, t.offset());
}

Tensor squeeze(const Tensor& t) {
  Shape shape, strides;
  for (int d = 0; d < t.dim(); ++d)
    if (t.shape()[d] != 1) {
      shape.push_back(t.shape()[d]);
      strides.push_back(t.strides()[d]);
    }
  return make_view(t, shape, strides, t.offset());
}

Tensor squeeze(const Tensor& t, int64_t dim) {
  if (t.dim() == 0) return make_view(t, t.shape(), t.strides(), t.offset());
  const int d = wrap_dim(dim, t.dim(), "squeeze");
  if (t.shape()[d] != 1) return make_view(t, t.shape(), t.strides(), t.offset());  // as PyTorch: no-op
  Shape shape = t.shape(), strides = t.strides();
  shape.erase(d);
  strides.erase(d);
  return make_view(t, shape, strides, t.offset());
}

Tensor unsqueeze(const Tensor& t, int64_t dim) {
  const int d = wrap_dim(dim, t.dim() + 1, "unsqueeze");
  Shape shape = t.shape(), strides = t.strides();
  const int64_t stride = d < t.dim() ? strides[d] * shape[d] : 1;
  shape.insert(d, 1);
  strides.insert(d, stride);
  return make_view(t, shape, strides, t.offset());
}

Tensor flatten(const Tensor& t, int64_t start_dim, int64_t end_dim) {
  if (t.dim() == 0) return reshape(t, {1});
  const int s = wrap_dim(start_dim, t.dim(), "flatten"), e = wrap_dim(end_dim, t.dim(), "flatten");
  EMBER_CHECK(s <= e, "flatten: start_dim ", start_dim, " comes after end_dim ", end_dim);
  Shape shape;
  for (int d = 0; d < s; ++d) shape.push_back(t.shape()[d]);
  int64_t merged = 1;
  for (int d = s; d <= e; ++d) merged *= t.shape()[d];
  shape.push_back(merged);
  for (int d = e + 1; d < t.dim(); ++d) shape.push_back(t.shape()[d]);
  return reshape(t, shape);
}

}  // namespace ember::raw
