// scatter, index_add, scatter_add/scatter_reduce, nonzero, put_ (index_put_'s write), flip, the triangle
// masks of tril/triu, and the sampling ops: multinomial, randint, randperm (PyTorch 1.13 semantics; the
// numbers come from Ember's Philox generator, not PyTorch's).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/philox.h"
#include "core/raw.h"

namespace ember {
namespace raw {
namespace {

// The index seen with `shape`: stride 0 everywhere but along d, where it steps through the 1-D index.
Tensor index_along(const Tensor& index, const Shape& shape, int d) {
  Shape strides = Shape::filled(shape.size(), 0);
  strides[d] = index.dim() == 1 ? index.strides()[0] : 0;
  return as_strided(index, shape, strides, index.offset());
}

// The checks scatter, scatter_add and scatter_reduce share (PyTorch's scatter_gather_dtype/shape checks).
int check_scatter_operands(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src, const char* op) {
  check_same_device(t, index, op);
  check_same_device(t, src, op);
  EMBER_CHECK(index.dtype() == DType::i64, op, ": the index must be i64, got ", dtype_name(index.dtype()));
  EMBER_CHECK(src.dtype() == t.dtype(), op, ": the source is ", dtype_name(src.dtype()), " but the input is ",
              dtype_name(t.dtype()), "; convert the source with .to(", dtype_name(t.dtype()), ")");
  const int d = wrap_dim(dim, t.dim(), op);
  EMBER_CHECK(index.dim() == t.dim() && src.dim() == t.dim(), op, ": the index (shape ", index.shape(),
              ") and the source (shape ", src.shape(), ") must have as many dims as the input (shape ", t.shape(), ")");
  for (int k = 0; k < t.dim(); ++k)
    EMBER_CHECK(index.shape()[k] <= src.shape()[k] && (k == d || index.shape()[k] <= t.shape()[k]), op,
                ": the index shape ", index.shape(), " must be no larger than the source shape ", src.shape(),
                " in every dim, and than the input shape ", t.shape(), " in every dim but ", d);
  return d;
}

// The index-shaped corner of src, and the three operands as 1-D when t is 0-d.
struct ScatterArgs {
  TensorArg src, index, out;
  int dim;
};
ScatterArgs scatter_args(const Tensor& out, int d, const Tensor& index, const Tensor& src) {
  const Tensor part = as_strided(src, index.shape(), src.strides(), src.offset());
  if (out.dim() == 0) return {unsqueeze(part, 0).arg(), unsqueeze(index, 0).arg(), unsqueeze(out, 0).arg(), 0};
  return {part.arg(), index.arg(), out.arg(), d};
}

}  // namespace

Tensor scatter(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src) {
  const int d = check_scatter_operands(t, dim, index, src, "scatter");
  Tensor out = clone(t);
  if (index.numel() == 0) return out;
  const ScatterArgs a = scatter_args(out, d, index, src);  // only the index-shaped corner of src is read
  backend(t.device()).index(IndexOp::scatter, a.src, a.index, a.out, a.dim);
  return out;
}

Tensor index_add(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& source, double alpha) {
  check_same_device(t, index, "index_add");
  check_same_device(t, source, "index_add");
  EMBER_CHECK(index.dtype() == DType::i64, "index_add: the index must be i64, got ", dtype_name(index.dtype()));
  EMBER_CHECK(index.dim() <= 1, "index_add: the index must be 0-d or 1-D, got shape ", index.shape());
  EMBER_CHECK(source.dtype() == t.dtype(), "index_add: the source is ", dtype_name(source.dtype()),
              " but the input is ", dtype_name(t.dtype()), "; convert the source with .to(", dtype_name(t.dtype()),
              ")");
  EMBER_CHECK(t.dtype() != DType::b8, "index_add: not defined for bool tensors");
  const int d = wrap_dim(dim, t.dim(), "index_add");
  // A 0-d input or source acts as 1-D of one element.
  const Tensor x = t.dim() == 0 ? reshape(t, {1}) : t;
  Tensor s = source.dim() == 0 ? reshape(source, {1}) : source;
  const int64_t n = index.numel();
  bool ok = s.dim() == x.dim();
  for (int k = 0; ok && k < x.dim(); ++k) ok = k == d ? s.shape()[k] == n : s.shape()[k] == x.shape()[k];
  EMBER_CHECK(ok, "index_add: the source shape ", source.shape(), " must equal the input shape ", t.shape(),
              " except in dim ", d, ", where its size must be the index's length ", n);
  if (index.device().is_cpu()) {  // named here (the backend would say scatter_add); a GPU kernel reports its own
    const Tensor idx = contiguous(index);
    const int64_t* p = static_cast<const int64_t*>(idx.data_ptr());
    for (int64_t i = 0; i < n; ++i)
      EMBER_CHECK(p[i] >= 0 && p[i] < x.shape()[d], "index_add: index ", p[i], " is out of range for dim ", d,
                  " of size ", x.shape()[d]);
  }
  Tensor out = clone(x);
  if (s.numel() > 0) {
    if (alpha != 1) {
      const bool integral = !is_floating(t.dtype());
      s = binary(BinaryOp::mul, s, scalar_like(s, integral ? std::trunc(alpha) : alpha, integral));
    }
    backend(t.device()).index(IndexOp::scatter_add, s.arg(), index_along(index, s.shape(), d).arg(), out.arg(), d);
  }
  return t.dim() == 0 ? reshape(out, t.shape()) : out;
}

Tensor scatter_add(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src) {
  const int d = check_scatter_operands(t, dim, index, src, "scatter_add");
  Tensor out = clone(t);
  if (index.numel() == 0) return out;
  const ScatterArgs a = scatter_args(out, d, index, src);
  backend(t.device()).index(IndexOp::scatter_add, a.src, a.index, a.out, a.dim);
  return out;
}

Tensor scatter_reduce(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce,
                      bool include_self) {
  const bool mean = reduce == "mean";
  ScatterReduceOp op = ScatterReduceOp::sum;
  if (reduce == "prod") op = ScatterReduceOp::prod;
  else if (reduce == "amax") op = ScatterReduceOp::amax;
  else if (reduce == "amin") op = ScatterReduceOp::amin;
  else EMBER_CHECK(mean || reduce == "sum", "scatter_reduce: reduce must be \"sum\", \"prod\", \"mean\", \"amax\" or "
                   "\"amin\", got \"", reduce, "\"");
  const int d = check_scatter_operands(t, dim, index, src, "scatter_reduce");
  EMBER_CHECK(t.dtype() != DType::b8, "scatter_reduce: not defined for bool tensors; convert with .to(DType::i64)");
  Tensor out = clone(t);
  if (index.numel() == 0) return out;
  const ScatterArgs a = scatter_args(out, d, index, src);
  if (!include_self) {  // the named positions start from the reduction's identity (PyTorch's exclude-self init)
    const bool floating = is_floating(t.dtype());
    double identity = 0;
    if (op == ScatterReduceOp::prod) identity = 1;
    if (op == ScatterReduceOp::amax) identity = floating ? -INFINITY : -9223372036854775808.0;
    if (op == ScatterReduceOp::amin) identity = floating ? INFINITY : 9223372036854775807.0;
    Tensor init = empty(index.shape(), t.dtype(), t.device());
    if (floating || op != ScatterReduceOp::amin) {
      fill_(init, identity);
    } else {  // INT64_MAX is not a double: fill with the exact integer
      fill_(init, 0);
      binary_(BinaryOp::sub, init, full({}, 1.0, {.dtype = DType::i64, .device = t.device()}));
      binary_(BinaryOp::sub, init, full({}, -9223372036854775808.0, {.dtype = DType::i64, .device = t.device()}));
    }
    const ScatterArgs ia = scatter_args(out, d, index, init);
    backend(t.device()).index(IndexOp::scatter, ia.src, ia.index, ia.out, ia.dim);
  }
  backend(t.device()).scatter_reduce(op, a.src, a.index, a.out, a.dim);
  if (!mean) return out;
  // mean: the sum divided by the number of values at each position (self included or not), 1 where none.
  Tensor count = include_self ? ones_like(out) : zeros_like(out);
  const Tensor one = expand(full({}, 1.0, {.dtype = t.dtype(), .device = t.device()}), index.shape());
  const ScatterArgs ca = scatter_args(count, d, index, one);
  backend(t.device()).index(IndexOp::scatter_add, ca.src, ca.index, ca.out, ca.dim);
  count = where(binary(BinaryOp::eq, count, scalar_like(count, 0, true)), scalar_like(count, 1, true), count);
  if (is_floating(t.dtype())) return binary(BinaryOp::div, out, count);
  // floor division of integers, through f64 (exact while |sum| < 2^53)
  const Tensor q = binary(BinaryOp::div, to(out, DType::f64), to(count, DType::f64));
  const Tensor truncated = to(q, DType::i64);  // toward zero: one less where q is negative and not whole
  return binary(BinaryOp::sub, truncated, to(binary(BinaryOp::lt, q, to(truncated, DType::f64)), DType::i64));
}

Tensor nonzero(const Tensor& t) {
  const int n = t.dim();
  const Tensor mask = t.dtype() == DType::b8 ? contiguous(t) : binary(BinaryOp::ne, t, scalar_like(t, 0, true));
  const int64_t count = t.numel() == 0 ? 0 : reduce(ReduceOp::sum, mask, {}, false).item<int64_t>();
  const TensorOptions i64{.dtype = DType::i64, .device = t.device()};
  // Rows [count + 1, n]: each true element's coordinates go to row (its rank among the true ones); the false
  // ones all go to the extra last row, which is dropped.
  Tensor out = empty({count + 1, n}, DType::i64, t.device());
  if (count == 0 || n == 0) {
    if (n == 0 && count > 0) return zeros({count, 0}, i64);
    return narrow(out, 0, 0, count);
  }
  const Tensor flat = reshape(mask, {t.numel()});
  const Tensor rank = binary(BinaryOp::sub, cumsum(flat, 0), full({}, 1.0, i64));
  const Tensor row = reshape(where(flat, rank, full({}, static_cast<double>(count), i64)), t.shape());
  for (int d = 0; d < n; ++d) {
    // The coordinate along d of every element: arange(size) seen with t's shape (stride 0 in the other dims).
    const Tensor coord = arange(int64_t{0}, t.shape()[d], int64_t{1}, i64);
    Shape strides = Shape::filled(n, 0);
    strides[d] = 1;
    const Tensor coords = as_strided(coord, t.shape(), strides, coord.offset());
    // Column d of out addressed by the row index: [count + 1] elements n apart; stride 0 in t's other dims.
    TensorArg column = out.arg();
    column.data = static_cast<int64_t*>(column.data) + d;
    column.ndim = n;
    for (int k = 0; k < n; ++k) column.shape[k] = k == 0 ? count + 1 : 1, column.strides[k] = k == 0 ? n : 0;
    backend(t.device()).index(IndexOp::scatter, coords.arg(), row.arg(), column, 0);
  }
  return narrow(out, 0, 0, count);
}

void put_(const Tensor& target, const Tensor& pos, const Tensor& vals, bool accumulate) {
  check_same_device(target, pos, "index_put_");
  check_same_device(target, vals, "index_put_");
  EMBER_CHECK(pos.dim() == 1 && vals.shape() == pos.shape() && pos.dtype() == DType::i64 &&
                  vals.dtype() == target.dtype(),
              "index_put_: internal error: positions ", pos.shape(), " and values ", vals.shape(), " do not match");
  if (pos.numel() == 0) return;
  const int64_t extent = static_cast<int64_t>(target.impl().storage->nbytes() / target.element_size());
  const Tensor storage = as_strided(target, {extent}, {1}, 0);
  backend(target.device()).index(accumulate ? IndexOp::scatter_add : IndexOp::scatter, vals.arg(), pos.arg(),
                                 storage.arg(), 0);
  target.impl().storage->bump_version();
}

Tensor flip(const Tensor& t, const Shape& dims) {
  std::vector<bool> flipped(static_cast<size_t>(std::max(t.dim(), 1)), false);
  for (const int64_t dim : dims) {
    const int d = wrap_dim(dim, t.dim(), "flip");
    EMBER_CHECK(!flipped[d], "flip: dim ", d, " appears more than once in dims ", dims);
    flipped[d] = true;
  }
  Tensor out = empty(t.shape(), t.dtype(), t.device());
  if (t.numel() == 0) return out;
  // The input read backwards along the flipped dims: start at their last element, negate their strides.
  TensorArg src = t.arg();
  for (int d = 0; d < t.dim(); ++d) {
    if (!flipped[d]) continue;
    src.data = static_cast<char*>(src.data) +
               (src.shape[d] - 1) * src.strides[d] * static_cast<int64_t>(dtype_size(src.dtype));
    src.strides[d] = -src.strides[d];
  }
  backend(t.device()).copy(src, out.arg());
  return out;
}

Tensor triangle_mask(int64_t rows, int64_t cols, int64_t diagonal, bool lower, Device device) {
  const TensorOptions options{.dtype = DType::i64, .device = device};
  const Tensor r = reshape(arange(int64_t{0}, rows, int64_t{1}, options), {rows, 1});
  const Tensor c = arange(int64_t{0}, cols, int64_t{1}, options);
  const Tensor offset = binary(BinaryOp::sub, c, r);  // col - row: 0 on the main diagonal
  const Tensor diag = full({}, static_cast<double>(diagonal), options);
  return binary(lower ? BinaryOp::le : BinaryOp::ge, offset, diag);
}

Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement, Generator* gen) {
  EMBER_CHECK(is_floating(probs.dtype()), "multinomial: the probabilities must be floating (f32 or f64), got ",
              dtype_name(probs.dtype()));
  EMBER_CHECK(probs.dim() == 1 || probs.dim() == 2, "multinomial: the probabilities must be 1-D or 2-D (one "
              "distribution per row), got shape ", probs.shape());
  EMBER_CHECK(num_samples > 0, "multinomial: cannot draw ", num_samples, " samples; num_samples must be positive");
  const int64_t categories = probs.shape()[probs.dim() - 1];
  const int64_t rows = probs.dim() == 2 ? probs.shape()[0] : 1;
  EMBER_CHECK(replacement || num_samples <= categories, "multinomial: cannot draw ", num_samples,
              " samples without replacement from ", categories, " categories; draw at most ", categories,
              " or pass replacement = true");
  // On the host, in f64 (from a GPU this waits for the probabilities, as PyTorch's checks do).
  const std::vector<double> p = probs.to_vector<double>();
  for (int64_t r = 0; r < rows; ++r) {
    double total = 0;
    for (int64_t k = 0; k < categories; ++k) {
      const double v = p[r * categories + k];
      EMBER_CHECK(std::isfinite(v) && v >= 0, "multinomial: the probabilities must be finite and non-negative, got ",
                  v, " in row ", r, ", category ", k);
      total += v;
    }
    EMBER_CHECK(total > 0, "multinomial: row ", r, " of the probabilities sums to 0; every distribution needs a "
                "positive entry");
  }
  Generator& g = gen != nullptr ? *gen : default_generator();
  const uint64_t per_row = static_cast<uint64_t>(replacement ? num_samples : categories);
  const uint64_t offset = g.advance(static_cast<uint64_t>(rows) * per_row), seed = g.seed();
  std::vector<int64_t> out(static_cast<size_t>(rows * num_samples));
  std::vector<double> cdf(static_cast<size_t>(categories)), key(static_cast<size_t>(categories));
  std::vector<int64_t> order(static_cast<size_t>(categories));
  for (int64_t r = 0; r < rows; ++r) {
    const double* pr = p.data() + r * categories;
    int64_t* o = out.data() + r * num_samples;
    const uint64_t base = offset + static_cast<uint64_t>(r) * per_row;
    if (replacement) {
      // Inverse CDF: the first category whose cumulative sum exceeds u · total. A zero-probability category
      // repeats its predecessor's sum, so it is never the first to exceed anything.
      double acc = 0;
      int64_t last_positive = 0;
      for (int64_t k = 0; k < categories; ++k) {
        acc += pr[k];
        cdf[k] = acc;
        if (pr[k] > 0) last_positive = k;
      }
      for (int64_t s = 0; s < num_samples; ++s) {
        const double u = uniform01<double>(philox4x32_10(seed, base + s));
        const int64_t k = std::upper_bound(cdf.begin(), cdf.end(), u * acc) - cdf.begin();
        o[s] = std::min(k, last_positive);  // u · total rounded up to total: the last positive category
      }
    } else {
      // The exponential race (PyTorch's algorithm): key_k = p_k / E_k with E_k ~ Exp(1); the largest keys,
      // in order, are a draw without replacement. Zero-probability categories come after every positive one
      // (in index order), as in PyTorch, which draws them once the positive ones are used up.
      for (int64_t k = 0; k < categories; ++k) {
        const double u = uniform01<double>(philox4x32_10(seed, base + k));
        key[k] = pr[k] > 0 ? pr[k] / -std::log1p(-u) : -1.0;  // -log(1 - u) ~ Exp(1); u < 1
      }
      std::iota(order.begin(), order.end(), int64_t{0});
      std::partial_sort(order.begin(), order.begin() + num_samples, order.end(),
                        // cppcheck-suppress arrayIndexThenCheck ; `a < b` breaks ties, it checks no bound
                        [&](int64_t a, int64_t b) { return key[a] > key[b] || (key[a] == key[b] && a < b); });
      std::copy(order.begin(), order.begin() + num_samples, o);
    }
  }
  const Shape shape = probs.dim() == 2 ? Shape{rows, num_samples} : Shape{num_samples};
  return to(from_vector(out, shape), probs.device());
}

}  // namespace raw

namespace indexing {
TensorIndex::TensorIndex(const char* text) : kind_(Kind::ellipsis) {
  EMBER_CHECK(text != nullptr && std::string_view(text) == "...", "TensorIndex: the only text index is \"...\" "
              "(Ellipsis), got \"", text == nullptr ? "" : text, "\"");
}
}  // namespace indexing

namespace {

Tensor finish_factory(Tensor t, const TensorOptions& options) {
  if (options.requires_grad) t.requires_grad_(true);
  return t;
}

// The largest integer magnitude up to which every integer is exact in `dtype` (bool: 1).
double exact_integer_limit(DType dtype) {
  switch (dtype) {
    case DType::b8: return 1;
    case DType::f32: return 16777216.0;  // 2^24
    default: return 9007199254740992.0;  // 2^53 (f64; i64 draws are limited by the f64 draw below)
  }
}

}  // namespace

Tensor randint(int64_t low, int64_t high, const Shape& shape, TensorOptions options, Generator* gen) {
  EMBER_CHECK(low < high, "randint: low must be less than high, got low = ", low, ", high = ", high);
  const double limit = exact_integer_limit(options.dtype);
  EMBER_CHECK(static_cast<double>(low) >= (options.dtype == DType::b8 ? 0.0 : -limit) &&
                  static_cast<double>(high - 1) <= limit,
              "randint: the range [", low, ", ", high, ") does not fit ", dtype_name(options.dtype),
              " (integers exact up to ", limit, ")");
  const double range = static_cast<double>(static_cast<uint64_t>(high) - static_cast<uint64_t>(low));
  EMBER_CHECK(range <= 9007199254740992.0, "randint: high - low must be at most 2^53, got [", low, ", ", high, ")");
  // floor(u · range) for u uniform in [0, 1) with 53 random bits (Philox, element i from counter i): the same
  // integers on every device and thread count. The minimum guards u · range rounding up to range.
  Tensor u = raw::empty(shape, DType::f64, options.device);
  raw::random_(u, RandomOp::uniform, 0.0, range, gen);
  const TensorOptions i64{.dtype = DType::i64, .device = options.device};
  Tensor k = raw::binary(BinaryOp::minimum, raw::to(u, DType::i64), full({}, range - 1, i64));
  k = raw::binary(BinaryOp::add, k, full({}, static_cast<double>(low), i64));
  return finish_factory(raw::to(k, options.dtype), options);
}

Tensor randint(int64_t high, const Shape& shape, TensorOptions options, Generator* gen) {
  return randint(0, high, shape, options, gen);
}

Tensor randperm(int64_t n, TensorOptions options, Generator* gen) {
  EMBER_CHECK(n >= 0, "randperm: n must be non-negative, got ", n);
  EMBER_CHECK(options.dtype != DType::b8, "randperm: not defined for bool; use i64 (the default)");
  EMBER_CHECK(static_cast<double>(n - 1) <= exact_integer_limit(options.dtype), "randperm: n = ", n,
              " is too large for ", dtype_name(options.dtype), " (integers exact up to ",
              exact_integer_limit(options.dtype), ")");
  Generator& g = gen != nullptr ? *gen : default_generator();
  const uint64_t offset = g.advance(static_cast<uint64_t>(n)), seed = g.seed();
  // Fisher–Yates on the host: position i swaps with j uniform in [0, i], from Philox counter offset + i
  // (64 random bits scaled to [0, i + 1) by a 128-bit multiply).
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), int64_t{0});
  for (int64_t i = n - 1; i > 0; --i) {
    const Philox4 r = philox4x32_10(seed, offset + static_cast<uint64_t>(i));
    const uint64_t bits = (static_cast<uint64_t>(r.v[0]) << 32) | r.v[1];
    const auto j = static_cast<int64_t>((static_cast<unsigned __int128>(bits) * static_cast<uint64_t>(i + 1)) >> 64);
    std::swap(perm[i], perm[j]);
  }
  return finish_factory(raw::to(raw::to(from_vector(perm, {n}), options.dtype), options.device), options);
}

}  // namespace ember
