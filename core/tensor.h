#pragma once
// Tensor: a cheap handle (shared ownership) to a strided view of a Storage, plus autograd fields.
// Copying a Tensor shares data; use clone() for a deep copy.
//
// Layering (DESIGN.md): this header is core/. The methods below that compute or make views are
// user-facing ops: they are *defined* in autograd/ (autograd/ops.cpp), because they record the graph.
// Code inside core/ must not call them — it uses the forward-only ember::raw:: functions (core/raw.h).
#include <concepts>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "backends/backend.h"
#include "core/generator.h"
#include "core/shape.h"
#include "core/storage.h"

namespace ember {

namespace autograd {
class Node;
struct GradHooks;
}
namespace indexing {
class TensorIndex;  // x.index({...}) (defined below the Tensor class)
}

struct TensorOptions {
  DType dtype = DType::f32;
  Device device = kCPU;
  bool requires_grad = false;
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape shape;
  Shape strides;       // in elements
  int64_t offset = 0;  // in elements, from storage->data()
  DType dtype = DType::f32;

  // autograd
  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;
  std::shared_ptr<autograd::Node> grad_fn;
  uint32_t output_nr = 0;  // which output of grad_fn this tensor is
  // Leaves only: what runs once a backward has accumulated all of this leaf's gradient (autograd/hooks.h).
  std::shared_ptr<autograd::GradHooks> grad_hooks;
};

class Tensor {
 public:
  Tensor() = default;  // an undefined tensor (no storage); most calls on it throw
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // --- metadata ---------------------------------------------------------------------------------
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl().shape; }
  const Shape& strides() const { return impl().strides; }
  int dim() const { return impl().shape.size(); }
  int64_t size(int64_t dim) const;    // negative dims count from the end
  int64_t stride(int64_t dim) const;
  int64_t numel() const { return impl().shape.numel(); }
  int64_t offset() const { return impl().offset; }
  DType dtype() const { return impl().dtype; }
  Device device() const { return impl().storage->device(); }
  size_t element_size() const { return dtype_size(dtype()); }
  bool is_contiguous() const;
  // True when both handles view the same storage (whatever the view).
  bool shares_storage(const Tensor& other) const { return impl().storage == other.impl().storage; }

  // --- data access --------------------------------------------------------------------------------
  // Pointer to element 0. data<T>() checks that T matches the dtype and that the tensor is on the CPU.
  void* data_ptr() const;
  template <typename T> T* data() const;
  // The value of a one-element tensor, converted to T (copies from the GPU if needed).
  template <typename T> T item() const;
  // All elements in row-major order, converted to T (copies from the GPU if needed).
  template <typename T> std::vector<T> to_vector() const;
  std::string str() const;  // values, shape, dtype and device, as operator<< prints them
  // The descriptor the Backend works on.
  TensorArg arg() const;

  // --- conversion -------------------------------------------------------------------------------
  Tensor contiguous() const;   // this tensor if already contiguous, else a contiguous copy
  Tensor clone() const;        // always a contiguous copy
  Tensor to(Device device) const;  // this tensor if already there
  Tensor to(DType dtype) const;    // this tensor if already that dtype
  // A copy in page-locked host memory (CPU tensors; needs CUDA): its .to(cuda) does not wait for the GPU.
  Tensor pin_memory() const;
  bool is_pinned() const;

  // --- views (share storage) ------------------------------------------------------------------------
  // reshape: a view when the strides allow it, else a copy. view: always a view, throws otherwise.
  // One size may be -1 (inferred).
  Tensor reshape(const Shape& shape) const;
  Tensor view(const Shape& shape) const;
  Tensor permute(const Shape& dims) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const;  // 2-D transpose
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  // Python's t[start:end:step] along `dim`; start/end are clamped and may be negative.
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;  // removes `dim`
  Tensor expand(const Shape& shape) const;          // -1 keeps a size; new leading dims allowed
  Tensor expand_as(const Tensor& other) const { return expand(other.shape()); }
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;

  // --- masking, indexing, repeating (each is the free function of the same name in autograd/ops.h) ---------
  Tensor masked_fill(const Tensor& mask, double value) const;
  Tensor masked_fill(const Tensor& mask, const Tensor& value) const;
  Tensor tril(int64_t diagonal = 0) const;
  Tensor triu(int64_t diagonal = 0) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor scatter(int64_t dim, const Tensor& index, double value) const;
  Tensor index_add(int64_t dim, const Tensor& index, const Tensor& source, double alpha = 1) const;
  Tensor repeat(const Shape& sizes) const;
  Tensor flip(const Shape& dims) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Tensor> split(const std::vector<int64_t>& split_sizes, int64_t dim = 0) const;
  std::vector<Tensor> unbind(int64_t dim = 0) const;
  // scatter reductions, gathers along a dim, selections by mask, advanced indexing (PyTorch 1.13; each is the
  // free function of the same name in autograd/ops.h; index/index_put_ are LibTorch's Tensor::index/index_put_).
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor scatter_reduce(int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce,
                        bool include_self = true) const;
  Tensor take_along_dim(const Tensor& indices, std::optional<int64_t> dim = std::nullopt) const;
  Tensor masked_select(const Tensor& mask) const;
  Tensor nonzero() const;
  std::vector<Tensor> nonzero_numpy() const;  // nonzero(as_tuple=True): one i64 tensor per dim
  // x.index({idx}), x.index({mask}), x.index({Slice(), idx, None, Ellipsis, 0}): see ember::indexing below.
  Tensor index(const std::vector<indexing::TensorIndex>& indices) const;
  Tensor index_put(const std::vector<indexing::TensorIndex>& indices, const Tensor& values,
                   bool accumulate = false) const;
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& values, bool accumulate = false);
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, double value);

  // --- math (each is the free function of the same name in autograd/ops.h) -----------------------
  // The element-wise ops of backends/elementwise_ops.h: x.exp(), x.add(y), x.eq(y), ...
#define EMBER_X(name, ...) Tensor name() const;
  EMBER_UNARY_OPS_PUBLIC(EMBER_X)
#undef EMBER_X
#define EMBER_X(name, ...) Tensor name(const Tensor& other) const;
  EMBER_BINARY_OPS(EMBER_X)
#undef EMBER_X
  Tensor gelu(std::string_view approximate = "none") const;
  Tensor pow(double exponent) const;
  Tensor clamp(double min, double max) const;
  Tensor sum() const;
  Tensor sum(const Shape& dims, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(const Shape& dims, bool keepdim = false) const;
  Tensor max() const;
  Tensor min() const;
  Tensor argmax(int64_t dim, bool keepdim = false) const;
  Tensor argmin(int64_t dim, bool keepdim = false) const;
  // reductions, round 2 (the free functions of autograd/ops.h; a single int dim is a dim, never keepdim)
  template <DimIndex I> Tensor sum(I dim, bool keepdim = false) const {
    return sum(Shape{static_cast<int64_t>(dim)}, keepdim);
  }
  template <DimIndex I> Tensor mean(I dim, bool keepdim = false) const {
    return mean(Shape{static_cast<int64_t>(dim)}, keepdim);
  }
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;  // (values, indices)
  std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  Tensor amax(const Shape& dims, bool keepdim = false) const;
  template <DimIndex I> Tensor amax(I dim, bool keepdim = false) const {
    return amax(Shape{static_cast<int64_t>(dim)}, keepdim);
  }
  Tensor amin(const Shape& dims, bool keepdim = false) const;
  template <DimIndex I> Tensor amin(I dim, bool keepdim = false) const {
    return amin(Shape{static_cast<int64_t>(dim)}, keepdim);
  }
  Tensor argmax() const;  // index into the flattened tensor
  Tensor argmin() const;
  Tensor var() const;
  template <std::same_as<bool> B> Tensor var(B unbiased) const { return var(Shape{}, unbiased ? 1 : 0); }
  Tensor var(const Shape& dims, int64_t correction = 1, bool keepdim = false) const;
  template <DimIndex I> Tensor var(I dim, int64_t correction = 1, bool keepdim = false) const {
    return var(Shape{static_cast<int64_t>(dim)}, correction, keepdim);
  }
  Tensor logsumexp(const Shape& dims, bool keepdim = false) const;
  template <DimIndex I> Tensor logsumexp(I dim, bool keepdim = false) const {
    return logsumexp(Shape{static_cast<int64_t>(dim)}, keepdim);
  }
  Tensor cumsum(int64_t dim) const;
  std::tuple<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false, bool stable = false) const;
  Tensor argsort(int64_t dim = -1, bool descending = false, bool stable = false) const;
  std::tuple<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true) const;
  Tensor softmax(int64_t dim) const;
  Tensor log_softmax(int64_t dim) const;
  Tensor std() const;
  template <std::same_as<bool> B> Tensor std(B unbiased) const { return std(Shape{}, unbiased ? 1 : 0); }
  Tensor std(const Shape& dims, int64_t correction = 1, bool keepdim = false) const;
  template <DimIndex I> Tensor std(I dim, int64_t correction = 1, bool keepdim = false) const {
    return std(Shape{static_cast<int64_t>(dim)}, correction, keepdim);
  }
  Tensor matmul(const Tensor& other) const;

  // --- in-place (bump the version counter) ----------------------------------------------------------
  Tensor& fill_(double value);
  Tensor& zero_() { return fill_(0.0); }
  Tensor& copy_(const Tensor& src);  // broadcasts src to this shape, converts dtype, crosses devices
  Tensor& add_(const Tensor& other);
  Tensor& mul_(double value);

  // --- autograd -----------------------------------------------------------------------------------
  bool requires_grad() const { return impl().requires_grad; }
  Tensor& requires_grad_(bool on = true);
  // The accumulated gradient of a leaf (undefined until a backward reaches it).
  Tensor grad() const { return Tensor(impl().grad); }
  void set_grad(const Tensor& g) { impl().grad = g.impl_; }
  const std::shared_ptr<autograd::Node>& grad_fn() const { return impl().grad_fn; }
  bool is_leaf() const { return impl().grad_fn == nullptr; }
  // Computes the gradient of this tensor with respect to every leaf that requires grad and adds it to
  // the leaf's grad() (accumulating across calls until the grads are reset). `gradient` is dL/d(this),
  // of this tensor's shape; it may be omitted only for a one-element tensor (a loss), where it is 1.
  // The graph's saved tensors are freed afterwards unless retain_graph. Defined in autograd/engine.cpp.
  // Throws ember::Error when this tensor does not require grad, when `gradient` is omitted for a
  // tensor of more than one element or mismatches its shape, and when a tensor the backward needs was
  // modified in place after the forward.
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false) const;
  // A new tensor sharing this one's data, outside any graph (no grad_fn, requires no grad).
  Tensor detach() const;

  TensorImpl& impl() const;  // throws on an undefined tensor
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& out, const Tensor& t);

// --- indices for Tensor::index / index_put_ (LibTorch's torch::indexing) ----------------------------------
// Each entry of the list is one of:
//   an integer     selects along the next dim (removes it; negative counts from the end), as x[2]
//   Slice(a, b, s) Python's a:b:s along the next dim (each part optional: Slice() is `:`; s > 0)
//   None           inserts a dim of size 1, as x[None]
//   Ellipsis       ("..."): as many `:` as the dims the other entries leave
//   true / false   inserts a dim of size 1 (false: of size 0), as x[True]
//   a Tensor       an advanced index: i64 (any shape; negative indices wrap; out of range throws) indexes the
//                  next dim; bool (a mask) indexes as many dims as it has, whose sizes it must match, by its
//                  true positions (row-major). A 0-d i64 tensor acts as an integer.
// Advanced indices broadcast together to a shape B; the result has B in place of the dims they index when
// those dims are adjacent (after the integers are applied), else B first and the other dims after, as
// PyTorch. Without advanced indices the result is a view, else a copy.
namespace indexing {
struct Slice {
  Slice(std::optional<int64_t> start = std::nullopt, std::optional<int64_t> stop = std::nullopt,
        std::optional<int64_t> step = std::nullopt)
      : start(start), stop(stop), step(step) {}
  std::optional<int64_t> start, stop, step;
};
struct EllipsisIndexType {};
inline constexpr EllipsisIndexType Ellipsis{};
inline constexpr std::nullopt_t None = std::nullopt;

class TensorIndex {
 public:
  enum class Kind : uint8_t { none, ellipsis, integer, boolean, slice, tensor };
  TensorIndex(std::nullopt_t) : kind_(Kind::none) {}
  TensorIndex(EllipsisIndexType) : kind_(Kind::ellipsis) {}
  TensorIndex(const char* text);  // "..." only
  TensorIndex(int64_t i) : kind_(Kind::integer), integer_(i) {}
  TensorIndex(int i) : kind_(Kind::integer), integer_(i) {}
  template <std::same_as<bool> B>
  TensorIndex(B b) : kind_(Kind::boolean), integer_(b ? 1 : 0) {}
  TensorIndex(Slice s) : kind_(Kind::slice), slice_(s) {}
  TensorIndex(Tensor t) : kind_(Kind::tensor), tensor_(std::move(t)) {}

  Kind kind() const { return kind_; }
  int64_t integer() const { return integer_; }  // the integer, or 1/0 for true/false
  const Slice& slice() const { return slice_; }
  const Tensor& tensor() const { return tensor_; }

 private:
  Kind kind_;
  int64_t integer_ = 0;
  Slice slice_;
  Tensor tensor_;
};
}  // namespace indexing

// --- factories (core/factories.cpp) ---------------------------------------------------------------
Tensor empty(const Shape& shape, TensorOptions options = {});
Tensor zeros(const Shape& shape, TensorOptions options = {});
Tensor ones(const Shape& shape, TensorOptions options = {});
Tensor full(const Shape& shape, double value, TensorOptions options = {});
// A 0-d tensor holding `value`.
Tensor scalar_tensor(double value, TensorOptions options = {});
// [0, end) and [start, end) by `step` (ceil((end - start) / step) elements; values start + i·step computed in
// f64), in options.dtype. As LibTorch's torch::arange: integer arguments give i64 (their default options are
// {.dtype = DType::i64}), any floating one f32; options passed replace the defaults whole, so give .dtype with
// .device. An integer dtype truncates start, end and step to integers first (PyTorch). Throws for a zero
// step, a step whose sign points away from end, non-finite bounds and bool.
Tensor arange(double end, TensorOptions options = {});
Tensor arange(double start, double end, double step, TensorOptions options = {});
Tensor arange(double start, double end, TensorOptions options = {});
template <typename I>
concept ArangeInteger = std::is_integral_v<I> && !std::is_same_v<I, bool>;
template <ArangeInteger I>
Tensor arange(I end, TensorOptions options = {.dtype = DType::i64}) {
  return arange(0.0, static_cast<double>(end), 1.0, options);
}
template <ArangeInteger A, ArangeInteger B>
Tensor arange(A start, B end, TensorOptions options = {.dtype = DType::i64}) {
  return arange(static_cast<double>(start), static_cast<double>(end), 1.0, options);
}
template <ArangeInteger A, ArangeInteger B, ArangeInteger C>
Tensor arange(A start, B end, C step, TensorOptions options = {.dtype = DType::i64}) {
  return arange(static_cast<double>(start), static_cast<double>(end), static_cast<double>(step), options);
}
// Uniform in [0, 1), and standard normal. `gen` defaults to default_generator().
Tensor rand(const Shape& shape, TensorOptions options = {}, Generator* gen = nullptr);
Tensor randn(const Shape& shape, TensorOptions options = {}, Generator* gen = nullptr);
// --- integer sampling (core/indexing.cpp): Philox draws, the same numbers on every device and thread count ---
// Uniform integers in [low, high) (high alone: [0, high)). i64 unless options say otherwise (the default
// options are {.dtype = DType::i64}, as torch.randint); f32/f64/bool need the range to be exact in them.
// Throws when low >= high or high - low > 2^53.
Tensor randint(int64_t low, int64_t high, const Shape& shape, TensorOptions options = {.dtype = DType::i64},
               Generator* gen = nullptr);
Tensor randint(int64_t high, const Shape& shape, TensorOptions options = {.dtype = DType::i64},
               Generator* gen = nullptr);
// A random permutation of 0 .. n-1 (Fisher–Yates), i64 unless options say otherwise.
Tensor randperm(int64_t n, TensorOptions options = {.dtype = DType::i64}, Generator* gen = nullptr);
// Copies `values` (row-major) into a new tensor of `shape` (default: 1-D). The dtype is T's unless
// options.dtype differs, in which case values are converted.
template <typename T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape, TensorOptions options);
template <typename T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape) {
  return from_vector(values, shape, TensorOptions{.dtype = dtype_v<T>});
}
template <typename T>
Tensor from_vector(const std::vector<T>& values) {
  return from_vector(values, Shape{static_cast<int64_t>(values.size())});
}
// Copies `shape.numel()` elements from a C array.
template <typename T>
Tensor from_data(const T* data, const Shape& shape, TensorOptions options = {.dtype = dtype_v<T>});

// The *_like factories take shape, dtype and device from `t` (never requires_grad).
Tensor empty_like(const Tensor& t);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor full_like(const Tensor& t, double value);
Tensor rand_like(const Tensor& t, Generator* gen = nullptr);
Tensor randn_like(const Tensor& t, Generator* gen = nullptr);

}  // namespace ember
