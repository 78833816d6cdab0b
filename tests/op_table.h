#pragma once
// The op table shared by the gradcheck test (tests/test_gradcheck.cpp), the CPU-vs-CUDA parity test
// (tests/test_cuda_parity.cpp) and the guard test (tests/test_op_guards.cpp): every differentiable op and
// every fused nn op, one line each: its input shapes, the op, and its forward reference, which is an
// independent one (plain loops over doubles below, no Ember op involved), a PyTorch golden (a case of a
// tests/data/ safetensors file: its inputs, output and input gradients), or both. From its line each op
// gets: the forward against its references, gradcheck in f64 (central differences) in four layouts
// (contiguous, transposed, strided-slice and expanded leaves), CPU-vs-CUDA parity of the output, the
// gradients and any state the op updates (batch norm's running statistics), and a run on guarded buffers
// (tests/guarded_backend.h). Adding an op is one line here; every test picks it up.
//
// A line opts out of a check only with a reason: `no_gradcheck` (a random op without a fixed seed, a
// gradient that is a rule rather than a derivative, or a large variant whose formula a smaller line
// checks) and `contiguous_only` (variants of a fused op whose inputs core makes contiguous before the
// backend sees them: one line per op runs the four layouts).
//
// Constant tensors the ops use (indices, masks, class weights) live on the CPU; the op lambdas move them to
// the device (and floating dtype) of their first input, so the same line runs on any device and dtype.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <ember/ember.h>

#include "test_helpers.h"  // golden(): the PyTorch references in tests/data

namespace ember::optable {

// --- reference: n-d arrays of doubles with plain loops ------------------------------------------------
struct Host {
  Shape shape;
  std::vector<double> v;
};

template <typename F>
void for_each_index(const Shape& shape, F&& f) {
  Shape idx = Shape::filled(shape.size(), 0);
  for (int64_t k = 0; k < shape.numel(); ++k) {
    f(idx);
    for (int d = shape.size() - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

template <typename F>
Host generate(const Shape& shape, F&& f) {
  Host h{shape, {}};
  for_each_index(shape, [&](const Shape& idx) { h.v.push_back(f(idx)); });
  return h;
}

// Row-major position of `idx` in h, where idx may have extra leading dims and h's size-1 dims broadcast.
inline size_t flat_index(const Host& h, const Shape& idx) {
  const int lead = idx.size() - h.shape.size();
  int64_t flat = 0;
  for (int d = 0; d < h.shape.size(); ++d) flat = flat * h.shape[d] + (h.shape[d] == 1 ? 0 : idx[lead + d]);
  return static_cast<size_t>(flat);
}
inline double at(const Host& h, const Shape& idx) { return h.v[flat_index(h, idx)]; }

inline Shape broadcast(const Shape& a, const Shape& b) {
  const int n = std::max(a.size(), b.size());
  Shape out = Shape::filled(n, 1);
  for (int i = 0; i < n; ++i) {
    const int ia = i - (n - a.size()), ib = i - (n - b.size());
    out[i] = std::max(ia >= 0 ? a[ia] : 1, ib >= 0 ? b[ib] : 1);
  }
  return out;
}

template <typename F>
Host map1(const Host& a, F f) {
  return generate(a.shape, [&](const Shape& i) { return f(at(a, i)); });
}
template <typename F>
Host map2(const Host& a, const Host& b, F f) {
  return generate(broadcast(a.shape, b.shape), [&](const Shape& i) { return f(at(a, i), at(b, i)); });
}
inline Host with_shape(Host h, const Shape& shape) { return {shape, std::move(h.v)}; }

// Reduces `dims` (all when empty) with f from `init`; mean divides by the count.
template <typename F>
Host reduce(const Host& x, std::vector<int> dims, bool keepdim, double init, F f, bool mean = false) {
  if (dims.empty())
    for (int d = 0; d < x.shape.size(); ++d) dims.push_back(d);
  for (int& d : dims) d = d < 0 ? d + x.shape.size() : d;
  Shape kept = x.shape, out;
  for (int d : dims) kept[d] = 1;
  for (int d = 0; d < x.shape.size(); ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) out.push_back(x.shape[d]);
  Host acc{kept, std::vector<double>(kept.numel(), init)};
  for_each_index(x.shape, [&](const Shape& idx) {
    double& a = acc.v[flat_index(acc, idx)];
    a = f(a, at(x, idx));
  });
  if (mean)
    for (double& a : acc.v) a /= static_cast<double>(x.shape.numel() / kept.numel());
  return keepdim ? acc : with_shape(acc, out);
}

inline Host rsum(const Host& x, std::vector<int> dims = {}, bool keep = false) {
  return reduce(x, dims, keep, 0.0, std::plus<>());
}
inline Host rmax(const Host& x, std::vector<int> dims = {}, bool keep = false) {
  return reduce(x, dims, keep, -INFINITY, [](double a, double b) { return std::max(a, b); });
}
inline Host rmin(const Host& x, std::vector<int> dims = {}, bool keep = false) {
  return reduce(x, dims, keep, INFINITY, [](double a, double b) { return std::min(a, b); });
}

inline Host softmax_ref(const Host& x, int dim, bool log) {
  if (dim < 0) dim += x.shape.size();
  // x seen as [outer, n, inner] around dim: each (outer, inner) is one row of n elements, inner apart.
  int64_t outer = 1, inner = 1;
  const int64_t n = x.shape[dim];
  for (int d = 0; d < dim; ++d) outer *= x.shape[d];
  for (int d = dim + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
  Host out = x;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const double* row = x.v.data() + o * n * inner + i;
      double m = -INFINITY, s = 0;
      for (int64_t j = 0; j < n; ++j) m = std::max(m, row[j * inner]);
      for (int64_t j = 0; j < n; ++j) s += std::exp(row[j * inner] - m);
      for (int64_t j = 0; j < n; ++j)
        out.v[o * n * inner + i + j * inner] = log ? row[j * inner] - m - std::log(s) : std::exp(row[j * inner] - m) / s;
    }
  return out;
}

inline Host matmul_ref(Host a, Host b) {
  const bool a_vec = a.shape.size() == 1, b_vec = b.shape.size() == 1;
  if (a_vec) a.shape = {1, a.shape[0]};
  if (b_vec) b.shape = {b.shape[0], 1};
  const int na = a.shape.size(), nb = b.shape.size();
  const int64_t M = a.shape[na - 2], K = a.shape[na - 1], N = b.shape[nb - 1];
  Shape out = broadcast(Shape(std::vector<int64_t>(a.shape.begin(), a.shape.end() - 2)),
                        Shape(std::vector<int64_t>(b.shape.begin(), b.shape.end() - 2)));
  Shape final_shape = out;
  out.push_back(M), out.push_back(N);
  if (!a_vec) final_shape.push_back(M);
  if (!b_vec) final_shape.push_back(N);
  const int n = out.size();
  Host r = generate(out, [&](const Shape& idx) {
    Shape ia = idx, ib = idx;
    double s = 0;
    for (int64_t k = 0; k < K; ++k) {
      ia[n - 1] = k, ib[n - 2] = k;
      s += at(a, ia) * at(b, ib);
    }
    return s;
  });
  return with_shape(r, final_shape);
}

inline Host permute_ref(const Host& x, const std::vector<int>& dims) {
  Shape shape;
  for (int d : dims) shape.push_back(x.shape[d]);
  return generate(shape, [&](const Shape& idx) {
    Shape src = x.shape;
    for (size_t i = 0; i < dims.size(); ++i) src[dims[i]] = idx[i];
    return at(x, src);
  });
}

// x[..., start + i·step, ...] along dim, `count` elements.
inline Host slice_ref(const Host& x, int dim, int64_t start, int64_t count, int64_t step) {
  Shape shape = x.shape;
  shape[dim] = count;
  return generate(shape, [&](const Shape& idx) {
    Shape src = idx;
    src[dim] = start + idx[dim] * step;
    return at(x, src);
  });
}

// Concatenation along dim (stack = cat of inputs with a size-1 dim inserted).
inline Host cat_ref(const std::vector<Host>& xs, int dim) {
  Shape shape = xs[0].shape;
  shape[dim] = 0;
  for (const Host& x : xs) shape[dim] += x.shape[dim];
  return generate(shape, [&](const Shape& idx) {
    Shape src = idx;
    for (const Host& x : xs) {
      if (src[dim] < x.shape[dim]) return at(x, src);
      src[dim] -= x.shape[dim];
    }
    return double(NAN);
  });
}

// --- reductions, round 2: var/std, logsumexp, cumsum, sort/topk ---------------------------------------------
// Σ(x - mean)² / max(0, N - correction) over dims (all when empty), and its square root.
inline Host var_ref(const Host& x, std::vector<int> dims, int correction, bool keep, bool sqrt_of = false) {
  const Host mean = reduce(x, dims, true, 0.0, std::plus<>(), true);
  const Host sq = generate(x.shape, [&](const Shape& i) { return (at(x, i) - at(mean, i)) * (at(x, i) - at(mean, i)); });
  Host out = reduce(sq, dims, keep, 0.0, std::plus<>());
  const double n = static_cast<double>(x.shape.numel() / mean.shape.numel());
  for (double& v : out.v) v = sqrt_of ? std::sqrt(v / std::max(0.0, n - correction)) : v / std::max(0.0, n - correction);
  return out;
}
inline Host logsumexp_ref(const Host& x, std::vector<int> dims, bool keep) {
  const Host m = reduce(x, dims, true, -INFINITY, [](double a, double b) { return std::max(a, b); });
  Host out = reduce(generate(x.shape, [&](const Shape& i) { return std::exp(at(x, i) - at(m, i)); }), dims, keep, 0.0,
                    std::plus<>());
  for (size_t i = 0; i < out.v.size(); ++i) out.v[i] = std::log(out.v[i]) + m.v[i];
  return out;
}
inline Host cumsum_ref(const Host& x, int dim) {
  if (dim < 0) dim += x.shape.size();
  return generate(x.shape, [&](const Shape& idx) {
    Shape j = idx;
    double s = 0;
    for (j[dim] = 0; j[dim] <= idx[dim]; ++j[dim]) s += at(x, j);
    return s;
  });
}
// The first k of each row along dim, sorted (distinct values: the inputs are random).
inline Host sorted_ref(const Host& x, int dim, bool descending, int64_t k = -1) {
  if (dim < 0) dim += x.shape.size();
  Shape shape = x.shape;
  if (k >= 0) shape[dim] = k;
  return generate(shape, [&](const Shape& idx) {
    std::vector<double> row;
    Shape j = idx;
    for (j[dim] = 0; j[dim] < x.shape[dim]; ++j[dim]) row.push_back(at(x, j));
    std::sort(row.begin(), row.end());
    if (descending) std::reverse(row.begin(), row.end());
    return row[idx[dim]];
  });
}

// --- the table --------------------------------------------------------------------------------------------
enum class Domain { normal, positive, unit };
struct In {
  Shape shape;
  Domain domain = Domain::normal;
};
inline In N(Shape s) { return {s, Domain::normal}; }
inline In P(Shape s) { return {s, Domain::positive}; }  // in [0.5, 2): for log, sqrt, pow bases, divisors
inline In U(Shape s) { return {s, Domain::unit}; }      // in [0.1, 0.9): probabilities (binary_cross_entropy)

using V = const std::vector<Tensor>&;
using H = const std::vector<Host>&;

// How a result is computed, for the CPU-vs-CUDA tolerance (tests/cuda_parity.h says what each allows):
// exact (selections, copies), elementwise (one op per element), reduce (sums, in a device-dependent order),
// conv (cuDNN's algorithms).
enum class Kind { exact, elementwise, reduce, conv };

// A PyTorch reference for a line: case `name` of tests/data/`file` holds NAME.<input> for each of `inputs`
// (the line's inputs, in order), NAME.y (the output), NAME.r (an upstream gradient) and NAME.g<input> (the
// gradient of sum(y · r) with respect to each input). The op reads the case's constants itself (golden_const).
struct Golden {
  std::string file;
  std::string name;
  std::vector<std::string> inputs;
  double tol = 1e-10;  // relative and absolute, forward and gradients (PyTorch's f64 CPU kernels sum in another order)
};

// The optional parts of a line (designated initialisers: {.out = Kind::conv, .no_gradcheck = "..."}).
struct Options {
  double forward_tol = 1e-12;  // relative and absolute, against the independent reference
  double eps = 1e-6, atol = 1e-5, rtol = 1e-3;  // gradcheck
  Kind out = Kind::elementwise;  // the CPU-vs-CUDA tolerance of the output
  Kind grad = Kind::reduce;      // ... of the input gradients (the backward sums over broadcast dims and batch)
  const char* no_gradcheck = nullptr;  // why gradcheck cannot run on this line (its other checks still do)
  const char* contiguous_only = nullptr;  // why the other three layouts add nothing here
  // Ops that update state: the output, then the state tensors after the call (running statistics), which
  // the parity test compares too (reduce tolerance). `op` must return the same output (test_gradcheck checks).
  std::function<std::vector<Tensor>(const std::vector<Tensor>&)> state{};
  std::optional<Golden> golden{};
};

struct OpCase {
  std::string name;
  std::vector<In> inputs;
  std::function<Tensor(V)> op;
  std::function<Host(H)> ref;  // the independent reference; empty where only a golden (or nothing, said why) is
  Options o{};
};

inline const Tensor kGatherIndex = from_vector<int64_t>({0, 3, 1, 1, 2, 0}, {3, 2});
inline const Tensor kSelectIndex = from_vector<int64_t>({2, 0, 2}, {3});
inline const Tensor kMask = from_vector<bool>({true, false, false, true, true, false}, {2, 3});
inline const Host kMaskHost{{2, 3}, {1, 0, 0, 1, 1, 0}};
// masking and indexing (scatter, index_add): the index constants and their reference helpers
inline const std::vector<int64_t> kScatterIndexValues = {4, 0, 1, 3, 2, 0};  // [3, 2], dim 1 of [3, 5]; no repeats
inline const Tensor kScatterIndex = from_vector<int64_t>(kScatterIndexValues, {3, 2});
inline const std::vector<int64_t> kIndexAddValues = {0, 2, 0, 4};           // along dim 0 of [5, 3]
inline const Tensor kIndexAddIndex = from_vector<int64_t>(kIndexAddValues);
// x with x[i][index[i][j]] = src(i, j) along dim 1 of a 2-D x.
template <typename F>
Host scatter_ref(const Host& x, F src) {
  Host out = x;
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 2; ++j) out.v[flat_index(out, {i, kScatterIndexValues[i * 2 + j]})] = src(i, j);
  return out;
}
// scatter_reduce, index_put, embedding_bag: indices with repeats (the reductions and accumulations meet)
inline const std::vector<int64_t> kReduceIndexValues = {0, 2, 0, 3, 1, 1, 1, 1, 3, 0};  // [2, 5], dim 1 of [2, 4]
inline const Tensor kReduceIndex = from_vector<int64_t>(kReduceIndexValues, {2, 5});
inline const Tensor kPutRows = from_vector<int64_t>({2, 0, -1});  // index_put rows of [3, 4]; -1 wraps to 2: a repeat
inline const Tensor kBagInput = from_vector<int64_t>({1, 3, 3, 0, 2, 1, 4});
inline const Tensor kBagOffsets = from_vector<int64_t>({0, 2, 2, 5});  // bags of 2, 0, 3 and 2 entries
// self [2, 4] with src [2, 5] reduced in at kReduceIndex along dim 1; a position no index names keeps self's value.
inline Host scatter_reduce_ref(const Host& self, const Host& src, const std::string& reduce, bool include_self) {
  Host out = self;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t k = 0; k < 4; ++k) {
      std::vector<double> v;
      for (int64_t j = 0; j < 5; ++j)
        if (kReduceIndexValues[i * 5 + j] == k) v.push_back(at(src, {i, j}));
      if (v.empty()) continue;
      if (include_self) v.push_back(at(self, {i, k}));
      double r = reduce == "prod" ? 1 : reduce == "amax" ? -INFINITY : reduce == "amin" ? INFINITY : 0;
      for (const double e : v)
        r = reduce == "prod" ? r * e : reduce == "amax" ? std::max(r, e) : reduce == "amin" ? std::min(r, e) : r + e;
      if (reduce == "mean") r /= static_cast<double>(v.size());
      out.v[flat_index(out, {i, k})] = r;
    }
  return out;
}
// The elements of h [2, 3] where kMask is set, in order.
inline Host masked_ref(const Host& h) {
  Host out{{3}, {}};
  for (size_t i = 0; i < 6; ++i)
    if (kMaskHost.v[i] != 0) out.v.push_back(h.v[i]);
  return out;
}
// The mean of each bag (kBagInput, kBagOffsets) of rows of weight [V, 3]; the empty bag gives zeros.
inline Host embedding_bag_mean_ref(const Host& weight) {
  Host out{{4, 3}, std::vector<double>(12, 0.0)};
  const int64_t in[] = {1, 3, 3, 0, 2, 1, 4}, start[] = {0, 2, 2, 5, 7};
  for (int64_t b = 0; b < 4; ++b)
    for (int64_t e = start[b]; e < start[b + 1]; ++e)
      for (int64_t d = 0; d < 3; ++d) out.v[b * 3 + d] += at(weight, {in[e], d}) / static_cast<double>(start[b + 1] - start[b]);
  return out;
}

// --- scaled dot-product attention ---
// softmax(q·kᵀ·scale + mask)·v over the leading dims of q [.., L, E], k [.., S, E], v [.., S, Ev]; mask: an
// additive [L, S] (or none); causal: key j > query i masked.
inline Host attention_ref(const Host& q, const Host& k, const Host& v, const Host* mask, bool causal, double scale) {
  const int n = q.shape.size();
  const int64_t L = q.shape[n - 2], E = q.shape[n - 1], S = k.shape[n - 2], Ev = v.shape[n - 1];
  const int64_t B = L * E == 0 ? 0 : q.shape.numel() / (L * E);
  Shape os = q.shape;
  os[n - 1] = Ev;
  Host out{os, std::vector<double>(static_cast<size_t>(B * L * Ev))};
  std::vector<double> s(static_cast<size_t>(S));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < L; ++i) {
      double m = -INFINITY, total = 0;
      for (int64_t j = 0; j < S; ++j) {
        double dot = 0;
        for (int64_t e = 0; e < E; ++e) dot += q.v[(b * L + i) * E + e] * k.v[(b * S + j) * E + e];
        s[j] = causal && j > i ? -INFINITY : dot * scale + (mask != nullptr ? mask->v[i * S + j] : 0.0);
        m = std::max(m, s[j]);
      }
      for (int64_t j = 0; j < S; ++j) total += std::exp(s[j] - m);
      for (int64_t d = 0; d < Ev; ++d) {
        double acc = 0;
        for (int64_t j = 0; j < S; ++j) acc += std::exp(s[j] - m) / total * v.v[(b * S + j) * Ev + d];
        out.v[(b * L + i) * Ev + d] = acc;
      }
    }
  return out;
}
// Grouped-query attention's reference: t [.., Hkv, S, E] with each head repeated `group` times along dim -3
// (torch.repeat_interleave), the copies the fused op does without.
inline Host repeat_heads_ref(const Host& t, int64_t group) {
  Shape os = t.shape;
  os[os.size() - 3] *= group;
  return generate(os, [&](const Shape& i) {
    Shape src = i;
    src[src.size() - 3] /= group;
    return at(t, src);
  });
}
inline Host gqa_ref(const Host& q, const Host& k, const Host& v, const Host* mask, bool causal, double scale) {
  const int64_t group = q.shape[q.shape.size() - 3] / k.shape[k.shape.size() - 3];
  return attention_ref(q, repeat_heads_ref(k, group), repeat_heads_ref(v, group), mask, causal, scale);
}
// Rotary position embedding over the last two dims [L, E] of x: pair i of the first R dims, elements (i, i + R/2)
// or (2i, 2i + 1) interleaved, turned by (offset + l)·theta^(-2i/R).
inline Host rotary_ref(const Host& x, bool interleaved, int64_t offset, int64_t R, double theta = 10000) {
  const int n = x.shape.size();
  return generate(x.shape, [&](const Shape& idx) {
    const int64_t l = idx[n - 2], e = idx[n - 1];
    if (e >= R) return at(x, idx);
    const int64_t i = interleaved ? e / 2 : e % (R / 2);
    const bool first = interleaved ? e % 2 == 0 : e < R / 2;
    Shape other = idx;
    other[n - 1] = interleaved ? (first ? e + 1 : e - 1) : (first ? e + R / 2 : e - R / 2);
    const double angle =
        static_cast<double>(offset + l) * std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(R));
    return at(x, idx) * std::cos(angle) + (first ? -1.0 : 1.0) * at(x, other) * std::sin(angle);
  });
}
inline const Tensor kAttnMask = from_vector<bool>({true, false, true, true, false, false, true, false, false, true, true, true, true, false, false}, {3, 5});
inline const Host kAttnMaskHost{{3, 5}, {0, -INFINITY, 0, 0, -INFINITY, -INFINITY, 0, -INFINITY, -INFINITY, 0, 0, 0, 0, -INFINITY, -INFINITY}};
inline const Tensor kAttnBias = from_vector<double>({0.5, -1, 0.25, 2, -0.5, 1, 0, -2, 0.75, 1.5, -0.25, 0.5, -1.5, 1, 0.125}, {3, 5});
inline const Host kAttnBiasHost{{3, 5}, {0.5, -1, 0.25, 2, -0.5, 1, 0, -2, 0.75, 1.5, -0.25, 0.5, -1.5, 1, 0.125}};

// --- recurrent cells (PyTorch's gate order: LSTM i, f, g, o; GRU r, z, n) ---
inline double sigmoid_ref(double x) { return 1 / (1 + std::exp(-x)); }
// gates [B, 4H], c [B, H] → [B, 2H]: h' then c' of each row (what the table line concatenates).
inline Host lstm_pointwise_ref(const Host& gates, const Host& c) {
  const int64_t B = c.shape[0], H = c.shape[1];
  Host out{{B, 2 * H}, std::vector<double>(static_cast<size_t>(B * 2 * H))};
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < H; ++j) {
      const double* a = gates.v.data() + b * 4 * H;
      const double c1 = sigmoid_ref(a[H + j]) * c.v[b * H + j] + sigmoid_ref(a[j]) * std::tanh(a[2 * H + j]);
      out.v[b * 2 * H + j] = sigmoid_ref(a[3 * H + j]) * std::tanh(c1);
      out.v[b * 2 * H + H + j] = c1;
    }
  return out;
}
// input gates xg, hidden gates hg [B, 3H], h [B, H] → h' [B, H].
inline Host gru_pointwise_ref(const Host& xg, const Host& hg, const Host& h) {
  const int64_t B = h.shape[0], H = h.shape[1];
  Host out{{B, H}, std::vector<double>(static_cast<size_t>(B * H))};
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < H; ++j) {
      const double* x = xg.v.data() + b * 3 * H;
      const double* g = hg.v.data() + b * 3 * H;
      const double r = sigmoid_ref(x[j] + g[j]), z = sigmoid_ref(x[H + j] + g[H + j]);
      const double n = std::tanh(x[2 * H + j] + r * g[2 * H + j]);
      out.v[b * H + j] = (1 - z) * n + z * h.v[b * H + j];
    }
  return out;
}
// x [B, I]·w [G, I]ᵀ + bias [G] → [B, G].
inline Host affine_ref(const Host& x, const Host& w, const Host& bias) {
  const int64_t B = x.shape[0], I = x.shape[1], G = w.shape[0];
  Host out{{B, G}, std::vector<double>(static_cast<size_t>(B * G))};
  for (int64_t b = 0; b < B; ++b)
    for (int64_t g = 0; g < G; ++g) {
      double acc = bias.v[g];
      for (int64_t i = 0; i < I; ++i) acc += x.v[b * I + i] * w.v[g * I + i];
      out.v[b * G + g] = acc;
    }
  return out;
}
inline Host lstm_cell_ref(H h) {  // x, h, c, w_ih, w_hh, b_ih, b_hh
  return lstm_pointwise_ref(map2(affine_ref(h[0], h[3], h[5]), affine_ref(h[1], h[4], h[6]), std::plus<>()), h[2]);
}
inline Host gru_cell_ref(H h) {  // x, h, w_ih, w_hh, b_ih, b_hh
  return gru_pointwise_ref(affine_ref(h[0], h[2], h[4]), affine_ref(h[1], h[3], h[5]), h[1]);
}

// One direction of a layer over a sequence: xp [T, B, G·H], w_hh [G·H, H], h0 (c0) [B, H] (b_hh [G·H], GRU)
// → [T + 2, B, H]: the outputs, then h_n, then c_n (LSTM) or h_n again (GRU), as the table lines stack them.
inline Host sequence_ref(bool lstm, const Host& xp, const Host& w_hh, const Host* b_hh, const Host& h0,
                         const Host* c0, bool reverse) {
  const int64_t T = xp.shape[0], B = xp.shape[1], G = xp.shape[2], H = h0.shape[1];
  Host h = h0, c = lstm ? *c0 : Host{}, zero{{G}, std::vector<double>(static_cast<size_t>(G), 0.0)};
  Host out{{T + 2, B, H}, std::vector<double>(static_cast<size_t>((T + 2) * B * H))};
  for (int64_t p = 0; p < T; ++p) {
    const int64_t t = reverse ? T - 1 - p : p;
    const Host x_t{{B, G}, std::vector<double>(xp.v.begin() + t * B * G, xp.v.begin() + (t + 1) * B * G)};
    const Host hg = affine_ref(h, w_hh, b_hh != nullptr ? *b_hh : zero);
    if (lstm) {
      const Host hc = lstm_pointwise_ref(map2(x_t, hg, std::plus<>()), c);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t j = 0; j < H; ++j) {
          h.v[b * H + j] = hc.v[b * 2 * H + j];
          c.v[b * H + j] = hc.v[b * 2 * H + H + j];
        }
    } else {
      h = gru_pointwise_ref(x_t, hg, h);
    }
    std::copy(h.v.begin(), h.v.end(), out.v.begin() + t * B * H);
  }
  std::copy(h.v.begin(), h.v.end(), out.v.begin() + T * B * H);
  const Host& last = lstm ? c : h;
  std::copy(last.v.begin(), last.v.end(), out.v.begin() + (T + 1) * B * H);
  return out;
}
inline Tensor stack_sequence(const nn::functional::RecurrentSequence& s) {
  return cat({s.output, s.h_n.unsqueeze(0), (s.c_n.defined() ? s.c_n : s.h_n).unsqueeze(0)}, 0);
}

inline double gelu_ref(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
inline double gelu_tanh_ref(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

// Values drawn on the CPU in f64 (so a seed gives the same numbers whatever the dtype and device asked
// for), then converted to `dtype` and moved to `device`.
inline Tensor random_values(const Shape& shape, Domain domain, Generator& gen, DType dtype = DType::f64,
                            Device device = kCPU) {
  const Tensor u = rand(shape, {.dtype = DType::f64}, &gen);
  NoGradGuard no_grad;
  const Tensor v = domain == Domain::positive ? u * 1.5 + 0.5 : domain == Domain::unit ? u * 0.8 + 0.1 : (u - 0.5) * 4.0;
  return v.to(dtype).to(device);
}

// --- the fused nn ops (nn::functional): constants, references --------------------------------------------
namespace F = nn::functional;
using Outs = std::vector<Tensor>;

// A constant (no grad) drawn on the CPU from a seed, in the inputs' dtype and on their device: the same values
// on every device; *_host: the same values in f64, for the references.
inline Tensor constant(V x, const Shape& shape, Domain domain, uint64_t seed) {
  Generator gen(seed);
  return random_values(shape, domain, gen, x[0].dtype(), x[0].device());
}
inline Host constant_host(const Shape& shape, Domain domain, uint64_t seed) {
  Generator gen(seed);
  return {shape, random_values(shape, domain, gen).to_vector<double>()};
}
inline Tensor uniform_constant(V x, const Shape& shape, uint64_t seed) {  // in [0, 1): binary targets
  Generator gen(seed);
  return rand(shape, {.dtype = x[0].dtype()}, &gen).to(x[0].device());
}
inline Host uniform_host(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  return {shape, rand(shape, {.dtype = DType::f64}, &gen).to_vector<double>()};
}
inline Tensor labels(V x, const std::vector<int64_t>& values, const Shape& shape) {
  return from_vector<int64_t>(values, shape).to(x[0].device());
}
inline Tensor labels(V x, const std::vector<int64_t>& values) {
  return labels(x, values, {static_cast<int64_t>(values.size())});
}

// The PyTorch goldens of nn::functional (tools/make_nn_golden.py); a case's constant (targets, class weights,
// running statistics) in the inputs' floating dtype (integers as they are) on their device.
inline constexpr const char* kNnGolden = "nn_golden.safetensors";
inline Golden nn_golden(std::string name, std::vector<std::string> inputs) {
  return {.file = kNnGolden, .name = std::move(name), .inputs = std::move(inputs)};
}
// The losses' and norms' goldens (tools/make_loss_golden.py) have the same layout; `file` names them.
inline constexpr const char* kLossGolden = "loss_golden.safetensors";
inline constexpr const char* kNormGolden = "norm_golden.safetensors";
inline constexpr const char* kConvGolden = "conv_golden.safetensors";  // tools/make_conv_golden.py
inline Golden loss_golden(std::string name, std::vector<std::string> inputs) {
  return {.file = kLossGolden, .name = std::move(name), .inputs = std::move(inputs)};
}
inline Golden norm_golden(std::string name, std::vector<std::string> inputs) {
  return {.file = kNormGolden, .name = std::move(name), .inputs = std::move(inputs)};
}
// Loads every golden file the lines read. The guard harnesses call it before guarding: a golden loaded under a
// guard would be allocated through it and its buffers walked by each of the guard's checks.
inline void load_goldens() {
  for (const char* file : {kNnGolden, kLossGolden, kNormGolden, kConvGolden}) test::golden_file(file);
}
inline Tensor golden_const(V x, const std::string& key, const char* file = kNnGolden) {
  const Tensor t = test::golden(file, key);
  return (is_floating(t.dtype()) ? t.to(x[0].dtype()) : t).to(x[0].device());
}
inline Host golden_host(const std::string& key, const char* file = kNnGolden) {
  const Tensor t = test::golden(file, key);
  return {t.shape(), t.to_vector<double>()};
}
inline std::vector<int64_t> golden_labels(const std::string& key, const char* file = kNnGolden) {
  return test::golden(file, key).to_vector<int64_t>();
}

inline F::Conv2dOptions conv(int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw, int64_t groups) {
  return F::Conv2dOptions().stride({sh, sw}).padding({ph, pw}).dilation({dh, dw}).groups(groups);
}
inline F::Pool2dOptions pool(int64_t kernel, int64_t stride, int64_t padding, bool count_include_pad = true,
                             bool ceil_mode = false) {
  return F::Pool2dOptions(kernel).stride(stride).padding(padding).count_include_pad(count_include_pad).ceil_mode(
      ceil_mode);
}

// Convolution by its definition: x [N, C, H, W], w [O, C/groups, KH, KW], bias [O] (or none), zero padding.
struct ConvRef {
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, groups = 1;
};
inline Host conv2d_ref(const Host& x, const Host& w, const Host* bias, ConvRef p) {
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t O = w.shape[0], CG = w.shape[1], KH = w.shape[2], KW = w.shape[3];
  const int64_t OH = (H + 2 * p.ph - p.dh * (KH - 1) - 1) / p.sh + 1, OW = (W + 2 * p.pw - p.dw * (KW - 1) - 1) / p.sw + 1;
  Host out{{N, O, OH, OW}, std::vector<double>(static_cast<size_t>(N * O * OH * OW))};
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t g = o / (O / p.groups);
          double acc = bias != nullptr ? bias->v[o] : 0.0;
          for (int64_t c = 0; c < CG; ++c)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t h = oh * p.sh - p.ph + kh * p.dh, ww = ow * p.sw - p.pw + kw * p.dw;
                if (h < 0 || h >= H || ww < 0 || ww >= W) continue;
                acc += x.v[((n * C + g * CG + c) * H + h) * W + ww] * w.v[((o * CG + c) * KH + kh) * KW + kw];
              }
          out.v[((n * O + o) * OH + oh) * OW + ow] = acc;
        }
  return out;
}
// conv1d as conv2d of unit height: x [N, C, L], w [O, C/groups, K].
inline Host conv1d_ref(const Host& x, const Host& w, const Host* bias, int64_t stride, int64_t padding,
                       int64_t dilation, int64_t groups) {
  const Host r = conv2d_ref(with_shape(x, {x.shape[0], x.shape[1], 1, x.shape[2]}),
                            with_shape(w, {w.shape[0], w.shape[1], 1, w.shape[2]}), bias,
                            {.sw = stride, .pw = padding, .dw = dilation, .groups = groups});
  return with_shape(r, {r.shape[0], r.shape[1], r.shape[3]});
}

// max/avg pooling over x [N, C, H, W] as PyTorch defines it: OH = ⌊(H + 2p - k) / s⌋ + 1 (⌈⌉ in ceil mode,
// less the last window where it would start in the right padding); windows clipped at the padding (avg
// divisor with count_include_pad) and at the input (max, and the divisor without it).
inline Host pool2d_ref(bool max, const Host& x, int64_t k, int64_t s, int64_t p, bool include_pad = true,
                       bool ceil_mode = false) {
  const auto out_size = [&](int64_t n) {
    int64_t o = (n + 2 * p - k + (ceil_mode ? s - 1 : 0)) / s + 1;
    if (ceil_mode && (o - 1) * s >= n + p) --o;
    return o;
  };
  const int64_t H = x.shape[2], W = x.shape[3];
  return generate({x.shape[0], x.shape[1], out_size(H), out_size(W)}, [&](const Shape& i) {
    int64_t h0 = i[2] * s - p, w0 = i[3] * s - p;
    int64_t h1 = std::min(h0 + k, H + p), w1 = std::min(w0 + k, W + p);
    const double padded = static_cast<double>((h1 - h0) * (w1 - w0));
    h0 = std::max<int64_t>(h0, 0), w0 = std::max<int64_t>(w0, 0), h1 = std::min(h1, H), w1 = std::min(w1, W);
    double acc = max ? -INFINITY : 0.0;
    for (int64_t h = h0; h < h1; ++h)
      for (int64_t w = w0; w < w1; ++w) acc = max ? std::max(acc, at(x, {i[0], i[1], h, w})) : acc + at(x, {i[0], i[1], h, w});
    return max ? acc : acc / (include_pad ? padded : static_cast<double>((h1 - h0) * (w1 - w0)));
  });
}
// Adaptive pooling: output i pools [⌊i·n/o⌋, ⌈(i+1)·n/o⌉) of each spatial dim.
inline Host adaptive_pool2d_ref(bool max, const Host& x, int64_t oh, int64_t ow) {
  const int64_t H = x.shape[2], W = x.shape[3];
  return generate({x.shape[0], x.shape[1], oh, ow}, [&](const Shape& i) {
    const int64_t h0 = i[2] * H / oh, h1 = ((i[2] + 1) * H + oh - 1) / oh;
    const int64_t w0 = i[3] * W / ow, w1 = ((i[3] + 1) * W + ow - 1) / ow;
    double acc = max ? -INFINITY : 0.0;
    for (int64_t h = h0; h < h1; ++h)
      for (int64_t w = w0; w < w1; ++w) acc = max ? std::max(acc, at(x, {i[0], i[1], h, w})) : acc + at(x, {i[0], i[1], h, w});
    return max ? acc : acc / static_cast<double>((h1 - h0) * (w1 - w0));
  });
}

// Batch norm over x [N, C, *]: the batch's mean and biased variance per channel (training), or the given
// statistics (eval); then weight and bias per channel (either may be absent).
inline Host batch_norm_ref(const Host& x, const Host* weight, const Host* bias, const Host* mean, const Host* var,
                           double eps = 1e-5) {
  const int64_t N = x.shape[0], C = x.shape[1], S = static_cast<int64_t>(x.v.size()) / (N * C);
  Host out = x;
  for (int64_t c = 0; c < C; ++c) {
    double m = 0, v = 0;
    if (mean != nullptr) {
      m = mean->v[c], v = var->v[c];
    } else {
      for (int64_t n = 0; n < N; ++n)
        for (int64_t s = 0; s < S; ++s) m += x.v[(n * C + c) * S + s] / static_cast<double>(N * S);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t s = 0; s < S; ++s) {
          const double d = x.v[(n * C + c) * S + s] - m;
          v += d * d / static_cast<double>(N * S);
        }
    }
    for (int64_t n = 0; n < N; ++n)
      for (int64_t s = 0; s < S; ++s) {
        double& y = out.v[(n * C + c) * S + s];
        y = (y - m) / std::sqrt(v + eps) * (weight != nullptr ? weight->v[c] : 1.0) + (bias != nullptr ? bias->v[c] : 0.0);
      }
  }
  return out;
}
// Layer norm over the last `d` elements of x (mean, biased variance), then weight and bias of those d.
inline Host layer_norm_ref(const Host& x, int64_t d, const Host* weight, const Host* bias, double eps = 1e-5) {
  Host out = x;
  for (size_t row = 0; row < x.v.size() / d; ++row) {
    double m = 0, var = 0;
    for (int64_t j = 0; j < d; ++j) m += x.v[row * d + j] / static_cast<double>(d);
    for (int64_t j = 0; j < d; ++j) var += (x.v[row * d + j] - m) * (x.v[row * d + j] - m) / static_cast<double>(d);
    for (int64_t j = 0; j < d; ++j)
      out.v[row * d + j] = (x.v[row * d + j] - m) / std::sqrt(var + eps) * (weight != nullptr ? weight->v[j] : 1.0) +
                           (bias != nullptr ? bias->v[j] : 0.0);
  }
  return out;
}
// RMS norm over the last `d` elements of x (mean square, no centring), then weight of those d.
inline Host rms_norm_ref(const Host& x, int64_t d, const Host* weight, double eps) {
  Host out = x;
  for (size_t row = 0; row < x.v.size() / d; ++row) {
    double ms = 0;
    for (int64_t j = 0; j < d; ++j) ms += x.v[row * d + j] * x.v[row * d + j] / static_cast<double>(d);
    for (int64_t j = 0; j < d; ++j)
      out.v[row * d + j] = x.v[row * d + j] / std::sqrt(ms + eps) * (weight != nullptr ? weight->v[j] : 1.0);
  }
  return out;
}
// Rows of weight [V, D] at `indices` (of shape `shape`) → [*shape, D].
inline Host embedding_ref(const Host& weight, const std::vector<int64_t>& indices, Shape shape) {
  const int64_t D = weight.shape[1];
  shape.push_back(D);
  return generate(shape, [&](const Shape& i) {
    int64_t flat = 0;
    for (int d = 0; d + 1 < shape.size(); ++d) flat = flat * shape[d] + i[d];
    return weight.v[indices[flat] * D + i[shape.size() - 1]];
  });
}

enum class Red { none, mean, sum };
inline Host reduced(const Host& loss, Red r, double divisor) {
  if (r == Red::none) return loss;
  double s = 0;
  for (double v : loss.v) s += v;
  return {{}, {r == Red::mean ? s / divisor : s}};
}
// Cross entropy with class indices, no class weights: logits [N, C, *] (or [C]), target [N, *]; label
// smoothing ε spreads ε/C over the classes; ignored targets give 0 and do not count in the mean.
inline Host cross_entropy_ref(const Host& logits, const std::vector<int64_t>& target, Red r, int64_t ignore = -100,
                              double smoothing = 0) {
  const bool batched = logits.shape.size() > 1;
  const int64_t N = batched ? logits.shape[0] : 1, C = logits.shape[batched ? 1 : 0];
  const int64_t S = static_cast<int64_t>(logits.v.size()) / (N * C);
  Shape tshape;
  for (int d = 0; d < logits.shape.size(); ++d)
    if (d != 1 || !batched) tshape.push_back(logits.shape[d]);
  if (!batched) tshape = {};
  Host loss{tshape, std::vector<double>(static_cast<size_t>(N * S))};
  double count = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t s = 0; s < S; ++s) {
      const int64_t t = target[n * S + s];
      if (t == ignore) continue;
      double m = -INFINITY, sum = 0, all = 0;
      for (int64_t c = 0; c < C; ++c) m = std::max(m, logits.v[(n * C + c) * S + s]);
      for (int64_t c = 0; c < C; ++c) sum += std::exp(logits.v[(n * C + c) * S + s] - m);
      const double lse = m + std::log(sum);
      for (int64_t c = 0; c < C; ++c) all += lse - logits.v[(n * C + c) * S + s];
      loss.v[n * S + s] = (1 - smoothing) * (lse - logits.v[(n * C + t) * S + s]) + smoothing / C * all;
      count += 1;
    }
  return reduced(loss, r, count);
}
inline Host mse_ref(const Host& x, const Host& t, Red r) {
  return reduced(map2(x, t, [](double a, double b) { return (a - b) * (a - b); }), r, static_cast<double>(x.v.size()));
}
inline Host l1_ref(const Host& x, const Host& t, Red r) {
  return reduced(map2(x, t, [](double a, double b) { return std::abs(a - b); }), r, static_cast<double>(x.v.size()));
}
// PyTorch's formula: w · ((1 - y)·x + l·(log(1 + e^-|x|) + max(-x, 0))), l = 1 + (p - 1)·y; weight w
// broadcast to x, pos_weight p along the last dim (either may be absent).
inline Host bce_with_logits_ref(const Host& x, const Host& t, Red r, const Host* weight = nullptr,
                                const Host* pos_weight = nullptr) {
  const Host loss = generate(x.shape, [&](const Shape& i) {
    const double a = at(x, i), y = at(t, i), p = pos_weight != nullptr ? at(*pos_weight, i) : 1.0;
    const double l = 1 + (p - 1) * y;
    return (weight != nullptr ? at(*weight, i) : 1.0) * ((1 - y) * a + l * (std::log1p(std::exp(-std::abs(a))) + std::max(-a, 0.0)));
  });
  return reduced(loss, r, static_cast<double>(x.v.size()));
}

// --- losses and norms, round 3 (PyTorch 1.13's formulas; tests/test_losses.cpp, test_norms.cpp) ---
inline Host smooth_l1_ref(const Host& x, const Host& t, double beta, Red r) {
  return reduced(map2(x, t, [=](double a, double b) { const double z = std::abs(a - b); return z < beta ? 0.5 * z * z / beta : z - 0.5 * beta; }), r, static_cast<double>(x.v.size()));
}
inline Host huber_ref(const Host& x, const Host& t, double delta, Red r) {
  return reduced(map2(x, t, [=](double a, double b) { const double z = std::abs(a - b); return z < delta ? 0.5 * z * z : delta * (z - 0.5 * delta); }), r, static_cast<double>(x.v.size()));
}
// input log-probabilities, target probabilities (log-probabilities with log_target); divisor: N (batchmean), all (mean)
inline Host kl_div_ref(const Host& x, const Host& t, bool log_target, Red r, double divisor) {
  return reduced(map2(x, t, [=](double a, double b) { return log_target ? std::exp(b) * (b - a) : b > 0 ? b * (std::log(b) - a) : 0.0; }), r, divisor);
}
// Σ_dim a·b / √(max(‖a‖², eps²)·max(‖b‖², eps²)) over 2-D a and b (broadcast).
inline Host cosine_similarity_ref(const Host& a, const Host& b, int dim, double eps) {
  const Shape full = broadcast(a.shape, b.shape);
  return generate({full[1 - dim]}, [&](const Shape& o) {
    double ab = 0, aa = 0, bb = 0;
    for (int64_t k = 0; k < full[dim]; ++k) {
      const Shape i = dim == 0 ? Shape{k, o[0]} : Shape{o[0], k};
      ab += at(a, i) * at(b, i), aa += at(a, i) * at(a, i), bb += at(b, i) * at(b, i);
    }
    return ab / std::sqrt(std::max(aa, eps * eps) * std::max(bb, eps * eps));
  });
}
// ‖a_i - b_i + eps‖_p of each row of [N, D] → [N].
inline Host pairwise_distance_ref(const Host& a, const Host& b, double p, double eps) {
  const int64_t D = a.shape[1];
  return generate({a.shape[0]}, [&](const Shape& i) {
    double s = 0;
    for (int64_t d = 0; d < D; ++d) s += std::pow(std::abs(at(a, {i[0], d}) - at(b, {i[0], d}) + eps), p);
    return std::pow(s, 1 / p);
  });
}
inline Host cosine_embedding_ref(const Host& a, const Host& b, const Host& t, double margin) {
  const int64_t N = a.shape[0], D = a.shape[1];
  Host loss{{N}, {}};
  for (int64_t n = 0; n < N; ++n) {
    double ab = 0, aa = 1e-12, bb = 1e-12;
    for (int64_t d = 0; d < D; ++d) ab += a.v[n * D + d] * b.v[n * D + d], aa += a.v[n * D + d] * a.v[n * D + d], bb += b.v[n * D + d] * b.v[n * D + d];
    const double cos = ab / std::sqrt(aa * bb);
    loss.v.push_back(t.v[n] == 1 ? 1 - cos : std::max(0.0, cos - margin));
  }
  return reduced(loss, Red::mean, static_cast<double>(N));
}
inline Host triplet_ref(const Host& a, const Host& p, const Host& n, double margin, double norm_p, bool swap, Red r) {
  const Host ap = pairwise_distance_ref(a, p, norm_p, 1e-6), an = pairwise_distance_ref(a, n, norm_p, 1e-6);
  const Host pn = pairwise_distance_ref(p, n, norm_p, 1e-6);
  Host loss{ap.shape, {}};
  for (size_t i = 0; i < ap.v.size(); ++i) loss.v.push_back(std::max(0.0, margin + ap.v[i] - (swap ? std::min(an.v[i], pn.v[i]) : an.v[i])));
  return reduced(loss, r, static_cast<double>(loss.v.size()));
}
// log_input: e^x - t·x; else x - t·log(x + 1e-8), and full adds Stirling's term where t > 1.
inline Host poisson_nll_ref(const Host& x, const Host& t, bool log_input, bool full, Red r) {
  return reduced(map2(x, t, [=](double a, double b) {
    const double stirling = full && b > 1 ? b * std::log(b) - b + 0.5 * std::log(2 * M_PI * b) : 0.0;
    return (log_input ? std::exp(a) - b * a : a - b * std::log(a + 1e-8)) + stirling;
  }), r, static_cast<double>(x.v.size()));
}
// ½·(log v + (x - t)²/v) (+ ½·log 2π with full), v clamped at 1e-6; v [N] (one per row) or of x's shape.
inline Host gaussian_nll_ref(const Host& x, const Host& t, const Host& v, bool full, Red r) {
  const Host loss = generate(x.shape, [&](const Shape& i) {
    const double var = std::max(v.shape.size() == 1 ? v.v[i[0]] : at(v, i), 1e-6), d = at(x, i) - at(t, i);
    return 0.5 * (std::log(var) + d * d / var) + (full ? 0.5 * std::log(2 * M_PI) : 0.0);
  });
  return reduced(loss, r, static_cast<double>(x.v.size()));
}
// -w·(t·log x + (1 - t)·log(1 - x)), each log clamped at -100; w along the last dim (or none).
inline Host bce_ref(const Host& x, const Host& t, const Host* w, Red r) {
  const Host loss = generate(x.shape, [&](const Shape& i) {
    const double a = at(x, i), y = at(t, i);
    return -(w != nullptr ? at(*w, i) : 1.0) * (y * std::max(std::log(a), -100.0) + (1 - y) * std::max(std::log(1 - a), -100.0));
  });
  return reduced(loss, r, static_cast<double>(x.v.size()));
}
// -(t·logσ(x) + (1 - t)·logσ(-x))·w averaged over the C of each row of [N, C], then reduced over N.
inline Host multilabel_soft_margin_ref(const Host& x, const Host& t, const Host* w, Red r) {
  const int64_t N = x.shape[0], C = x.shape[1];
  const auto log_sigmoid = [](double a) { return -std::log1p(std::exp(-a)); };
  Host loss{{N}, std::vector<double>(static_cast<size_t>(N), 0.0)};
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      const double a = x.v[n * C + c], y = t.v[n * C + c];
      loss.v[n] -= (y * log_sigmoid(a) + (1 - y) * log_sigmoid(-a)) * (w != nullptr ? w->v[c] : 1.0) / static_cast<double>(C);
    }
  return reduced(loss, r, static_cast<double>(N));
}
// x [N, C, *]: each run of `group` consecutive (channel, *) elements normalised with its own mean and biased
// variance (group_norm: C/G channels; instance_norm: one), or with mean/var [C] (instance_norm eval); then
// weight and bias per channel.
inline Host group_norm_ref(const Host& x, int64_t groups, const Host* weight, const Host* bias, double eps = 1e-5,
                           const Host* mean = nullptr, const Host* var = nullptr) {
  const int64_t N = x.shape[0], C = x.shape[1], S = static_cast<int64_t>(x.v.size()) / (N * C), n = C / groups * S;
  Host out = x;
  for (int64_t row = 0; row < N * groups; ++row) {
    double m = 0, v = 0;
    for (int64_t j = 0; j < n; ++j) m += x.v[row * n + j] / static_cast<double>(n);
    for (int64_t j = 0; j < n; ++j) v += (x.v[row * n + j] - m) * (x.v[row * n + j] - m) / static_cast<double>(n);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t c = (row * n + j) / S % C;
      const double mc = mean != nullptr ? mean->v[c] : m, vc = var != nullptr ? var->v[c] : v;
      out.v[row * n + j] = (x.v[row * n + j] - mc) / std::sqrt(vc + eps) * (weight != nullptr ? weight->v[c] : 1.0) +
                           (bias != nullptr ? bias->v[c] : 0.0);
    }
  }
  return out;
}
// x / (k + alpha/size · Σ x²)^beta over channels c - size/2 .. c + (size-1)/2 of x [N, C, *].
inline Host local_response_norm_ref(const Host& x, int64_t size, double alpha, double beta, double k) {
  const int64_t N = x.shape[0], C = x.shape[1], S = static_cast<int64_t>(x.v.size()) / (N * C);
  Host out = x;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < S; ++s) {
        double sq = 0;
        for (int64_t j = std::max<int64_t>(0, c - size / 2); j <= std::min(C - 1, c + (size - 1) / 2); ++j) sq += x.v[(n * C + j) * S + s] * x.v[(n * C + j) * S + s];
        out.v[(n * C + c) * S + s] /= std::pow(k + alpha / static_cast<double>(size) * sq, beta);
      }
  return out;
}
// x / max(‖x‖_p, 1e-12) along dim of a 2-D x.
inline Host normalize_ref(const Host& x, double p, int dim) {
  const Host norm = reduce(map1(x, [=](double a) { return std::pow(std::abs(a), p); }), {dim}, true, 0.0, std::plus<>());
  return map2(x, map1(norm, [=](double s) { return std::max(std::pow(s, 1 / p), 1e-12); }), std::divides<>());
}
// Instance norm in training mode from seeded running statistics: y, then the updated statistics (Options::state).
inline Outs instance_norm_train(V x) {
  const Tensor rm = constant(x, {3}, Domain::normal, 11), rv = constant(x, {3}, Domain::positive, 12);
  return {F::instance_norm(x[0], rm, rv, {}, {}, true, 0.2, 1e-3), rm, rv};
}

// Batch norm in training mode from seeded running statistics: y, then the updated statistics (Options::state).
inline Outs batch_norm_train(V x, const Tensor& weight, const Tensor& bias) {
  const Shape c{x[0].size(1)};
  const Tensor mean = constant(x, c, Domain::normal, 11), var = constant(x, c, Domain::positive, 12);
  const Tensor y = F::batch_norm(x[0], mean, var, weight, bias, /*training=*/true, 0.1, 1e-5);
  return {y, mean, var};
}
inline Tensor batch_norm_eval(V x, const Tensor& weight, const Tensor& bias) {
  const Shape c{x[0].size(1)};
  return F::batch_norm(x[0], constant(x, c, Domain::normal, 11), constant(x, c, Domain::positive, 12), weight, bias,
                       /*training=*/false);
}
inline F::CrossEntropyOptions xent(int64_t ignore_index, double smoothing, F::Reduction reduction = F::Reduction::mean) {
  return {.ignore_index = ignore_index, .label_smoothing = smoothing, .reduction = reduction};
}
inline const std::vector<int64_t> kTargets = {0, 4, 2, 1, 3, 2};  // for logits [6, 5]
inline const std::vector<int64_t> kWideTargets = {0, 999, 500, 1, 250, 750, 3, 998};
inline const std::vector<int64_t> kEmbeddingIndices = {1, 3, 3, 0, 9, 1};  // [2, 3] into a vocabulary of 10
inline Host affine_transform(const Host& h, double scale, double shift) {
  return map1(h, [=](double a) { return a * scale + shift; });
}

// Why a line skips a check (Options::no_gradcheck, contiguous_only).
inline constexpr const char* kLarge = "large (the GPU's tiled and blocked paths): the smaller lines of this op gradcheck its formula";
inline constexpr const char* kVariant = "core hands the fused op contiguous operands: the op's first line runs the four layouts";

// --- conv/pool round 3 references ---
// PyTorch's goldens of issue 30 (tools/make_conv_golden.py; the cases of tests/test_conv_pool2.cpp), and a
// case's integer constant (max_unpool's indices) on the inputs' device.
inline Golden conv_golden(std::string name, std::vector<std::string> inputs) {
  return {.file = kConvGolden, .name = std::move(name), .inputs = std::move(inputs)};
}
inline Tensor conv_golden_indices(V x, const std::string& key) { return test::golden(kConvGolden, key).to(x[0].device()); }
// Max pooling by its definition over x [N, C, H, W], with dilation and ceil mode: OH = ⌊(H + 2p - d·(k - 1) - 1
// (+ s - 1 in ceil mode)) / s⌋ + 1, less the last window where it would start in the right padding; the taps
// h = oh·s - p + kh·d that fall in the input; the first maximum in the window's row-major order and its
// index h·W + w in the plane. → [y.flatten(), indices.flatten()], as the lines concatenate them.
struct MaxPoolRef {
  int64_t kh, kw, sh, sw, ph = 0, pw = 0, dh = 1, dw = 1;
  bool ceil_mode = false;
};
inline Host max_pool_indices_ref(const Host& x, MaxPoolRef p, bool with_indices = true) {
  const auto out_size = [&](int64_t n, int64_t k, int64_t s, int64_t pad, int64_t d) {
    int64_t o = (n + 2 * pad - d * (k - 1) - 1 + (p.ceil_mode ? s - 1 : 0)) / s + 1;
    if (p.ceil_mode && (o - 1) * s >= n + pad) --o;
    return o;
  };
  const int64_t H = x.shape[2], W = x.shape[3];
  const Shape os{x.shape[0], x.shape[1], out_size(H, p.kh, p.sh, p.ph, p.dh), out_size(W, p.kw, p.sw, p.pw, p.dw)};
  Host y{os, {}}, idx{os, {}};
  for_each_index(os, [&](const Shape& i) {
    double best = -INFINITY, where = -1;
    for (int64_t a = 0; a < p.kh; ++a)
      for (int64_t b = 0; b < p.kw; ++b) {
        const int64_t h = i[2] * p.sh - p.ph + a * p.dh, w = i[3] * p.sw - p.pw + b * p.dw;
        if (h < 0 || h >= H || w < 0 || w >= W) continue;
        const double v = at(x, {i[0], i[1], h, w});
        if (v > best) best = v, where = static_cast<double>(h * W + w);
      }
    y.v.push_back(best), idx.v.push_back(where);
  });
  if (!with_indices) return y;
  y.v.insert(y.v.end(), idx.v.begin(), idx.v.end());
  return with_shape(y, {static_cast<int64_t>(y.v.size())});
}
// F::pad by its definition: pads (left, right) pairs from the last dim back; output o of a padded dim reads
// input o - left: out of range, `value` (constant), the nearest edge (replicate), the mirror without the
// edge (reflect) or the other side (circular). Negative pads crop.
enum class PadRef { constant, reflect, replicate, circular };
inline Host pad_ref(const Host& x, const std::vector<int64_t>& pads, PadRef mode, double value = 0) {
  const int n = x.shape.size();
  Shape os = x.shape;
  for (size_t k = 0; k < pads.size() / 2; ++k) os[n - 1 - k] += pads[2 * k] + pads[2 * k + 1];
  return generate(os, [&](const Shape& o) {
    Shape src = o;
    for (size_t k = 0; k < pads.size() / 2; ++k) {
      const int d = n - 1 - static_cast<int>(k);
      const int64_t len = x.shape[d];
      int64_t i = o[d] - pads[2 * k];
      if (i < 0 || i >= len) {
        if (mode == PadRef::constant) return value;
        if (mode == PadRef::replicate) i = std::clamp<int64_t>(i, 0, len - 1);
        if (mode == PadRef::reflect) i = i < 0 ? -i : 2 * (len - 1) - i;
        if (mode == PadRef::circular) i = ((i % len) + len) % len;
      }
      src[d] = i;
    }
    return at(x, src);
  });
}
// pixel_shuffle [N, C·r², H, W] → [N, C, H·r, W·r]: out[n, c, h·r + i, w·r + j] = x[n, c·r² + i·r + j, h, w];
// pixel_unshuffle the inverse.
inline Host pixel_shuffle_ref(const Host& x, int64_t r) {
  return generate({x.shape[0], x.shape[1] / (r * r), x.shape[2] * r, x.shape[3] * r}, [&](const Shape& o) {
    return at(x, {o[0], o[1] * r * r + (o[2] % r) * r + o[3] % r, o[2] / r, o[3] / r});
  });
}
inline Host pixel_unshuffle_ref(const Host& x, int64_t r) {
  return generate({x.shape[0], x.shape[1] * r * r, x.shape[2] / r, x.shape[3] / r}, [&](const Shape& o) {
    const int64_t c = o[1] / (r * r), i = o[1] / r % r, j = o[1] % r;
    return at(x, {o[0], c, o[2] * r + i, o[3] * r + j});
  });
}
inline Tensor values_and_indices(const std::tuple<Tensor, Tensor>& r) {
  const auto& [y, idx] = r;
  return cat({y.flatten(), idx.to(y.dtype()).flatten()}, 0);
}

// NOLINTBEGIN(readability-function-size): one line per op
inline const std::vector<OpCase>& op_table() {
  static const std::vector<OpCase> table = {
    // element-wise, two inputs (broadcasting, scalars)
    {"add", {N({2, 3}), N({2, 3})}, [](V x) { return x[0] + x[1]; }, [](H h) { return map2(h[0], h[1], std::plus<>()); }},
    {"add_broadcast", {N({2, 3}), N({3})}, [](V x) { return add(x[0], x[1]); }, [](H h) { return map2(h[0], h[1], std::plus<>()); }},
    {"sub", {N({2, 1, 3}), N({4, 1})}, [](V x) { return x[0] - x[1]; }, [](H h) { return map2(h[0], h[1], std::minus<>()); }},
    {"sub_scalar_left", {N({3, 2})}, [](V x) { return 2.0 - x[0]; }, [](H h) { return map1(h[0], [](double a) { return 2 - a; }); }},
    {"mul", {N({3, 4}), N({3, 4})}, [](V x) { return x[0] * x[1]; }, [](H h) { return map2(h[0], h[1], std::multiplies<>()); }},
    {"mul_broadcast", {N({2, 3}), N({2, 1})}, [](V x) { return mul(x[0], x[1]); }, [](H h) { return map2(h[0], h[1], std::multiplies<>()); }},
    {"mul_scalar", {N({2, 3})}, [](V x) { return x[0] * 2.5; }, [](H h) { return map1(h[0], [](double a) { return a * 2.5; }); }},
    {"mul_0d", {N({2, 3}), N({})}, [](V x) { return x[0] * x[1]; }, [](H h) { return map2(h[0], h[1], std::multiplies<>()); }},
    {"div", {N({2, 3}), P({2, 3})}, [](V x) { return x[0] / x[1]; }, [](H h) { return map2(h[0], h[1], std::divides<>()); }},
    {"div_scalar_left", {P({3, 2})}, [](V x) { return 1.5 / x[0]; }, [](H h) { return map1(h[0], [](double a) { return 1.5 / a; }); }},
    {"pow", {P({2, 3}), N({2, 3})}, [](V x) { return pow(x[0], x[1]); }, [](H h) { return map2(h[0], h[1], [](double a, double b) { return std::pow(a, b); }); }},
    {"maximum", {N({3, 4}), N({3, 4})}, [](V x) { return maximum(x[0], x[1]); }, [](H h) { return map2(h[0], h[1], [](double a, double b) { return std::max(a, b); }); }},
    {"minimum", {N({3, 4}), N({4})}, [](V x) { return minimum(x[0], x[1]); }, [](H h) { return map2(h[0], h[1], [](double a, double b) { return std::min(a, b); }); }},
    {"where", {N({2, 3}), N({3})}, [](V x) { return where(kMask.to(x[0].device()), x[0], x[1]); }, [](H h) { return generate({2, 3}, [&](const Shape& i) { return at(kMaskHost, i) != 0 ? at(h[0], i) : at(h[1], i); }); }},
    // element-wise, one input
    {"neg", {N({2, 3})}, [](V x) { return -x[0]; }, [](H h) { return map1(h[0], [](double a) { return -a; }); }},
    {"abs", {N({2, 3})}, [](V x) { return abs(x[0]); }, [](H h) { return map1(h[0], [](double a) { return std::abs(a); }); }},
    {"sign", {N({2, 3})}, [](V x) { return sign(x[0]) * x[0]; }, [](H h) { return map1(h[0], [](double a) { return std::abs(a); }); }},
    {"exp", {N({2, 3})}, [](V x) { return exp(x[0]); }, [](H h) { return map1(h[0], [](double a) { return std::exp(a); }); }},
    {"log", {P({2, 3})}, [](V x) { return log(x[0]); }, [](H h) { return map1(h[0], [](double a) { return std::log(a); }); }},
    {"sqrt", {P({2, 3})}, [](V x) { return sqrt(x[0]); }, [](H h) { return map1(h[0], [](double a) { return std::sqrt(a); }); }},
    {"rsqrt", {P({2, 3})}, [](V x) { return rsqrt(x[0]); }, [](H h) { return map1(h[0], [](double a) { return 1 / std::sqrt(a); }); }},
    {"square", {N({2, 3})}, [](V x) { return square(x[0]); }, [](H h) { return map1(h[0], [](double a) { return a * a; }); }},
    {"tanh", {N({2, 3})}, [](V x) { return tanh(x[0]); }, [](H h) { return map1(h[0], [](double a) { return std::tanh(a); }); }},
    {"sigmoid", {N({2, 3})}, [](V x) { return sigmoid(x[0]); }, [](H h) { return map1(h[0], [](double a) { return 1 / (1 + std::exp(-a)); }); }},
    {"relu", {N({3, 4})}, [](V x) { return relu(x[0]); }, [](H h) { return map1(h[0], [](double a) { return a > 0 ? a : 0; }); }},
    {"gelu", {N({3, 4})}, [](V x) { return gelu(x[0]); }, [](H h) { return map1(h[0], gelu_ref); }},
    {"expm1", {N({2, 3})}, [](V x) { return expm1(x[0]); }, [](H h) { return map1(h[0], [](double a) { return std::expm1(a); }); }},
    {"log1p", {P({2, 3})}, [](V x) { return log1p(x[0] - 0.4); }, [](H h) { return map1(h[0], [](double a) { return std::log1p(a - 0.4); }); }},
    {"reciprocal", {P({2, 3})}, [](V x) { return reciprocal(x[0]); }, [](H h) { return map1(h[0], [](double a) { return 1 / a; }); }},
    {"sin", {N({2, 3})}, [](V x) { return sin(x[0]); }, [](H h) { return map1(h[0], [](double a) { return std::sin(a); }); }},
    {"cos", {N({2, 3})}, [](V x) { return x[0].cos(); }, [](H h) { return map1(h[0], [](double a) { return std::cos(a); }); }},
    {"silu", {N({3, 4})}, [](V x) { return silu(x[0]); }, [](H h) { return map1(h[0], [](double a) { return a / (1 + std::exp(-a)); }); }},
    {"gelu_tanh", {N({3, 4})}, [](V x) { return gelu(x[0], "tanh"); }, [](H h) { return map1(h[0], gelu_tanh_ref); }},
    {"leaky_relu", {N({3, 4})}, [](V x) { return leaky_relu(x[0], 0.2); }, [](H h) { return map1(h[0], [](double a) { return a > 0 ? a : 0.2 * a; }); }},
    {"elu", {N({3, 4})}, [](V x) { return elu(x[0], 1.5); }, [](H h) { return map1(h[0], [](double a) { return a > 0 ? a : 1.5 * std::expm1(a); }); }},
    {"softplus", {N({3, 4})}, [](V x) { return softplus(x[0], 2.0, 1.5); }, [](H h) { return map1(h[0], [](double a) { return 2 * a > 1.5 ? a : std::log1p(std::exp(2 * a)) / 2; }); }},
    {"hardtanh", {N({3, 4})}, [](V x) { return hardtanh(x[0], -0.8, 0.6); }, [](H h) { return map1(h[0], [](double a) { return std::clamp(a, -0.8, 0.6); }); }},
    {"pow_scalar", {P({2, 3})}, [](V x) { return pow(x[0], 2.5); }, [](H h) { return map1(h[0], [](double a) { return std::pow(a, 2.5); }); }},
    {"pow_scalar_int", {N({2, 3})}, [](V x) { return x[0].pow(3); }, [](H h) { return map1(h[0], [](double a) { return a * a * a; }); }},
    {"clamp", {N({3, 4})}, [](V x) { return clamp(x[0], -0.5, 0.7); }, [](H h) { return map1(h[0], [](double a) { return std::clamp(a, -0.5, 0.7); }); }},
    // reductions
    {"sum", {N({3, 4})}, [](V x) { return sum(x[0]); }, [](H h) { return rsum(h[0]); }, {.out = Kind::reduce}},
    {"sum_dim", {N({3, 4})}, [](V x) { return x[0].sum({1}); }, [](H h) { return rsum(h[0], {1}); }, {.out = Kind::reduce}},
    {"sum_dims_keepdim", {N({2, 3, 4})}, [](V x) { return sum(x[0], {0, -1}, true); }, [](H h) { return rsum(h[0], {0, 2}, true); }, {.out = Kind::reduce}},
    {"mean", {N({3, 4})}, [](V x) { return mean(x[0]); }, [](H h) { return reduce(h[0], {}, false, 0.0, std::plus<>(), true); }, {.out = Kind::reduce}},
    {"mean_dim_keepdim", {N({3, 4})}, [](V x) { return mean(x[0], {-1}, true); }, [](H h) { return reduce(h[0], {1}, true, 0.0, std::plus<>(), true); }, {.out = Kind::reduce}},
    {"max", {N({3, 4})}, [](V x) { return max(x[0]); }, [](H h) { return rmax(h[0]); }},
    {"min", {N({3, 4})}, [](V x) { return x[0].min(); }, [](H h) { return rmin(h[0]); }},
    {"amax", {N({2, 3, 4})}, [](V x) { return amax(x[0], {1}); }, [](H h) { return rmax(h[0], {1}); }},
    {"amin", {N({2, 3, 4})}, [](V x) { return amin(x[0], {0, 2}, true); }, [](H h) { return rmin(h[0], {0, 2}, true); }},
    {"max_dim", {N({3, 4})}, [](V x) { return std::get<0>(max(x[0], 1)); }, [](H h) { return rmax(h[0], {1}); }},
    {"min_dim", {N({3, 4})}, [](V x) { return std::get<0>(min(x[0], 0, true)); }, [](H h) { return rmin(h[0], {0}, true); }},
    {"softmax", {N({3, 5})}, [](V x) { return softmax(x[0], -1); }, [](H h) { return softmax_ref(h[0], -1, false); }, {.out = Kind::reduce}},
    {"softmax_dim0", {N({3, 5})}, [](V x) { return softmax(x[0], 0); }, [](H h) { return softmax_ref(h[0], 0, false); }, {.out = Kind::reduce}},
    {"log_softmax", {N({3, 5})}, [](V x) { return log_softmax(x[0], 1); }, [](H h) { return softmax_ref(h[0], 1, true); }, {.out = Kind::reduce}},
    {"log_softmax_dim0", {N({3, 5})}, [](V x) { return log_softmax(x[0], 0); }, [](H h) { return softmax_ref(h[0], 0, true); }, {.out = Kind::reduce}},
    // reductions, round 2
    {"var", {N({3, 4})}, [](V x) { return var(x[0]); }, [](H h) { return var_ref(h[0], {}, 1, false); }},
    {"var_dims_keepdim", {N({2, 3, 4})}, [](V x) { return x[0].var({0, 2}, 0, true); }, [](H h) { return var_ref(h[0], {0, 2}, 0, true); }},
    {"std", {N({3, 4})}, [](V x) { return ember::std(x[0], 1); }, [](H h) { return var_ref(h[0], {1}, 1, false, true); }},
    {"std_unbiased_false", {N({2, 3, 4})}, [](V x) { return x[0].std(false); }, [](H h) { return var_ref(h[0], {}, 0, false, true); }},
    {"logsumexp", {N({3, 5})}, [](V x) { return logsumexp(x[0], 1); }, [](H h) { return logsumexp_ref(h[0], {1}, false); }},
    {"logsumexp_dims_keepdim", {N({2, 3, 4})}, [](V x) { return x[0].logsumexp({0, -1}, true); }, [](H h) { return logsumexp_ref(h[0], {0, 2}, true); }},
    {"cumsum", {N({3, 4})}, [](V x) { return cumsum(x[0], 1); }, [](H h) { return cumsum_ref(h[0], 1); }},
    {"cumsum_dim0", {N({2, 3, 4})}, [](V x) { return x[0].cumsum(0); }, [](H h) { return cumsum_ref(h[0], 0); }},
    {"sort", {N({3, 5})}, [](V x) { return std::get<0>(sort(x[0])); }, [](H h) { return sorted_ref(h[0], 1, false); }},
    {"sort_descending_dim0", {N({4, 3})}, [](V x) { return std::get<0>(x[0].sort(0, true)); }, [](H h) { return sorted_ref(h[0], 0, true); }},
    {"topk", {N({3, 5})}, [](V x) { return std::get<0>(topk(x[0], 2)); }, [](H h) { return sorted_ref(h[0], 1, true, 2); }},
    {"topk_smallest_dim0", {N({4, 3})}, [](V x) { return std::get<0>(x[0].topk(3, 0, false)); }, [](H h) { return sorted_ref(h[0], 0, false, 3); }},
    // matmul
    {"matmul", {N({3, 4}), N({4, 5})}, [](V x) { return matmul(x[0], x[1]); }, [](H h) { return matmul_ref(h[0], h[1]); }, {.out = Kind::reduce}},
    {"matmul_batched", {N({2, 3, 4}), N({2, 4, 5})}, [](V x) { return matmul(x[0], x[1]); }, [](H h) { return matmul_ref(h[0], h[1]); }, {.out = Kind::reduce}},
    {"matmul_broadcast_batch", {N({2, 1, 3, 4}), N({3, 4, 2})}, [](V x) { return matmul(x[0], x[1]); }, [](H h) { return matmul_ref(h[0], h[1]); }, {.out = Kind::reduce}},
    {"matmul_batched_by_matrix", {N({2, 3, 4}), N({4, 5})}, [](V x) { return x[0].matmul(x[1]); }, [](H h) { return matmul_ref(h[0], h[1]); }, {.out = Kind::reduce}},
    {"matmul_vector_matrix", {N({4}), N({4, 3})}, [](V x) { return matmul(x[0], x[1]); }, [](H h) { return matmul_ref(h[0], h[1]); }, {.out = Kind::reduce}},
    {"matmul_matrix_vector", {N({3, 4}), N({4})}, [](V x) { return matmul(x[0], x[1]); }, [](H h) { return matmul_ref(h[0], h[1]); }, {.out = Kind::reduce}},
    {"matmul_vector_vector", {N({4}), N({4})}, [](V x) { return matmul(x[0], x[1]); }, [](H h) { return matmul_ref(h[0], h[1]); }, {.out = Kind::reduce}},
    {"matmul_vector_batched", {N({4}), N({2, 4, 3})}, [](V x) { return matmul(x[0], x[1]); }, [](H h) { return matmul_ref(h[0], h[1]); }, {.out = Kind::reduce}},
    // views and copies
    {"reshape", {N({2, 6})}, [](V x) { return x[0].reshape({3, -1}); }, [](H h) { return with_shape(h[0], {3, 4}); }},
    {"view", {N({2, 6})}, [](V x) { return x[0].contiguous().view({4, 3}); }, [](H h) { return with_shape(h[0], {4, 3}); }},
    {"flatten", {N({2, 3, 4})}, [](V x) { return x[0].flatten(1); }, [](H h) { return with_shape(h[0], {2, 12}); }},
    {"squeeze", {N({3, 1, 4})}, [](V x) { return x[0].squeeze(); }, [](H h) { return with_shape(h[0], {3, 4}); }},
    {"squeeze_dim", {N({3, 1, 4})}, [](V x) { return x[0].squeeze(1); }, [](H h) { return with_shape(h[0], {3, 4}); }},
    {"unsqueeze", {N({3, 4})}, [](V x) { return x[0].unsqueeze(-1); }, [](H h) { return with_shape(h[0], {3, 4, 1}); }},
    {"permute", {N({2, 3, 4})}, [](V x) { return x[0].permute({2, 0, 1}); }, [](H h) { return permute_ref(h[0], {2, 0, 1}); }},
    {"transpose", {N({2, 3, 4})}, [](V x) { return x[0].transpose(0, -1); }, [](H h) { return permute_ref(h[0], {2, 1, 0}); }},
    {"t", {N({3, 4})}, [](V x) { return x[0].t(); }, [](H h) { return permute_ref(h[0], {1, 0}); }},
    {"narrow", {N({4, 5})}, [](V x) { return x[0].narrow(1, 1, 3); }, [](H h) { return slice_ref(h[0], 1, 1, 3, 1); }},
    {"slice", {N({5, 4})}, [](V x) { return x[0].slice(0, -4, 5, 2); }, [](H h) { return slice_ref(h[0], 0, 1, 2, 2); }},
    {"select", {N({3, 4})}, [](V x) { return x[0].select(1, -1); }, [](H h) { return with_shape(slice_ref(h[0], 1, 3, 1, 1), {3}); }},
    {"expand", {N({3, 1})}, [](V x) { return x[0].expand({2, 3, 4}); }, [](H h) { return generate({2, 3, 4}, [&](const Shape& i) { return at(h[0], i); }); }},
    {"contiguous", {N({3, 4})}, [](V x) { return x[0].contiguous() * 1.0; }, [](H h) { return h[0]; }},
    {"clone", {N({3, 4})}, [](V x) { return x[0].clone(); }, [](H h) { return h[0]; }},
    {"to_dtype", {N({3, 4})}, [](V x) { return x[0].to(DType::f32) * 2.0; }, [](H h) { return map1(h[0], [](double a) { return 2 * a; }); }, {.forward_tol = 1e-6, .eps = 1e-3, .atol = 1e-3, .rtol = 1e-2}},
    // joining and indexing
    {"cat", {N({2, 3}), N({4, 3})}, [](V x) { return cat({x[0], x[1]}, 0); }, [](H h) { return cat_ref(h, 0); }},
    {"cat_dim1", {N({2, 3}), N({2, 2}), N({2, 1})}, [](V x) { return cat({x[0], x[1], x[2]}, -1); }, [](H h) { return cat_ref(h, 1); }},
    {"stack", {N({2, 3}), N({2, 3})}, [](V x) { return stack({x[0], x[1]}, 1); }, [](H h) { return cat_ref({with_shape(h[0], {2, 1, 3}), with_shape(h[1], {2, 1, 3})}, 1); }},
    {"index_select", {N({4, 3})}, [](V x) { return index_select(x[0], 0, kSelectIndex.to(x[0].device())); }, [](H h) { return generate({3, 3}, [&](const Shape& i) { return at(h[0], {std::vector<int64_t>{2, 0, 2}[i[0]], i[1]}); }); }},
    {"gather", {N({3, 4})}, [](V x) { return gather(x[0], 1, kGatherIndex.to(x[0].device())); }, [](H h) { return generate({3, 2}, [&](const Shape& i) { return at(h[0], {i[0], std::vector<int64_t>{0, 3, 1, 1, 2, 0}[i[0] * 2 + i[1]]}); }); }},
    // scaled dot-product attention (nn::functional, one fused op): plain, causal (L < S), bool and float masks
    // with a custom scale, two leading dims with Ev != E
    {"scaled_dot_product_attention", {N({2, 3, 4}), N({2, 5, 4}), N({2, 5, 4})}, [](V x) { return nn::functional::scaled_dot_product_attention(x[0], x[1], x[2]); }, [](H h) { return attention_ref(h[0], h[1], h[2], nullptr, false, 0.5); }},
    {"scaled_dot_product_attention_causal", {N({2, 3, 4}), N({2, 5, 4}), N({2, 5, 4})}, [](V x) { return nn::functional::scaled_dot_product_attention(x[0], x[1], x[2], {.is_causal = true}); }, [](H h) { return attention_ref(h[0], h[1], h[2], nullptr, true, 0.5); }},
    {"scaled_dot_product_attention_bool_mask", {N({2, 3, 4}), N({2, 5, 4}), N({2, 5, 4})}, [](V x) { return nn::functional::scaled_dot_product_attention(x[0], x[1], x[2], {.attn_mask = kAttnMask.to(x[0].device())}); }, [](H h) { return attention_ref(h[0], h[1], h[2], &kAttnMaskHost, false, 0.5); }},
    {"scaled_dot_product_attention_float_mask_scale", {N({2, 3, 4}), N({2, 5, 4}), N({2, 5, 4})}, [](V x) { return nn::functional::scaled_dot_product_attention(x[0], x[1], x[2], {.attn_mask = kAttnBias.to(x[0].dtype()).to(x[0].device()), .scale = 0.3}); }, [](H h) { return attention_ref(h[0], h[1], h[2], &kAttnBiasHost, false, 0.3); }},
    {"scaled_dot_product_attention_heads_ev", {N({2, 2, 3, 4}), N({2, 2, 5, 4}), N({2, 2, 5, 3})}, [](V x) { return nn::functional::scaled_dot_product_attention(x[0], x[1], x[2]); }, [](H h) { return attention_ref(h[0], h[1], h[2], nullptr, false, 0.5); }},
    // grouped-query (4 query heads, 2 kv heads) and multi-query (1 kv head) attention, enable_gqa
    {"scaled_dot_product_attention_gqa", {N({2, 4, 3, 4}), N({2, 2, 5, 4}), N({2, 2, 5, 3})}, [](V x) { return nn::functional::scaled_dot_product_attention(x[0], x[1], x[2], {.enable_gqa = true}); }, [](H h) { return gqa_ref(h[0], h[1], h[2], nullptr, false, 0.5); }},
    {"scaled_dot_product_attention_gqa_causal", {N({2, 4, 3, 4}), N({2, 2, 5, 4}), N({2, 2, 5, 4})}, [](V x) { return nn::functional::scaled_dot_product_attention(x[0], x[1], x[2], {.is_causal = true, .enable_gqa = true}); }, [](H h) { return gqa_ref(h[0], h[1], h[2], nullptr, true, 0.5); }, {.contiguous_only = kVariant}},
    {"scaled_dot_product_attention_gqa_float_mask", {N({2, 4, 3, 4}), N({2, 2, 5, 4}), N({2, 2, 5, 4})}, [](V x) { return nn::functional::scaled_dot_product_attention(x[0], x[1], x[2], {.attn_mask = kAttnBias.to(x[0].dtype()).to(x[0].device()), .scale = 0.3, .enable_gqa = true}); }, [](H h) { return gqa_ref(h[0], h[1], h[2], &kAttnBiasHost, false, 0.3); }, {.contiguous_only = kVariant}},
    {"scaled_dot_product_attention_mqa", {N({2, 4, 3, 4}), N({2, 1, 5, 4}), N({2, 1, 5, 3})}, [](V x) { return nn::functional::scaled_dot_product_attention(x[0], x[1], x[2], {.enable_gqa = true}); }, [](H h) { return gqa_ref(h[0], h[1], h[2], nullptr, false, 0.5); }},
    {"scaled_dot_product_attention_mqa_bool_mask_unbatched", {N({3, 3, 4}), N({1, 5, 4}), N({1, 5, 4})}, [](V x) { return nn::functional::scaled_dot_product_attention(x[0], x[1], x[2], {.attn_mask = kAttnMask.to(x[0].device()), .enable_gqa = true}); }, [](H h) { return gqa_ref(h[0], h[1], h[2], &kAttnMaskHost, false, 0.5); }, {.contiguous_only = kVariant}},
    {"scaled_dot_product_attention_mqa_causal", {N({2, 3, 3, 4}), N({2, 1, 5, 4}), N({2, 1, 5, 4})}, [](V x) { return nn::functional::scaled_dot_product_attention(x[0], x[1], x[2], {.is_causal = true, .enable_gqa = true}); }, [](H h) { return gqa_ref(h[0], h[1], h[2], nullptr, true, 0.5); }, {.contiguous_only = kVariant}},
    // rotary position embedding (nn::functional, one fused op): rotate_half and interleaved pairs, a position
    // offset, partial rotary (the last dims pass), 3-D and 5-D x
    {"apply_rotary", {N({2, 3, 5, 6})}, [](V x) { return nn::functional::apply_rotary(x[0], {.theta = 100}); }, [](H h) { return rotary_ref(h[0], false, 0, 6, 100); }},
    {"apply_rotary_interleaved_offset", {N({2, 3, 4, 8})}, [](V x) { return nn::functional::apply_rotary(x[0], {.interleaved = true, .position_offset = 7}); }, [](H h) { return rotary_ref(h[0], true, 7, 8); }},
    {"apply_rotary_partial", {N({3, 5, 6})}, [](V x) { return nn::functional::apply_rotary(x[0], {.position_offset = 2, .rotary_dim = 4}); }, [](H h) { return rotary_ref(h[0], false, 2, 4); }},
    {"apply_rotary_partial_interleaved_5d", {N({2, 2, 2, 3, 6})}, [](V x) { return nn::functional::apply_rotary(x[0], {.theta = 50, .interleaved = true, .rotary_dim = 4}); }, [](H h) { return rotary_ref(h[0], true, 0, 4, 50); }},
    // recurrent cells (nn::functional, one fused op each way): the pointwise parts, then the full steps
    {"lstm_cell_pointwise", {N({3, 8}), N({3, 2})}, [](V x) { auto [h, c] = nn::functional::lstm_cell_pointwise(x[0], x[1]); return cat({h, c}, 1); }, [](H h) { return lstm_pointwise_ref(h[0], h[1]); }},
    {"gru_cell_pointwise", {N({3, 6}), N({3, 6}), N({3, 2})}, [](V x) { return nn::functional::gru_cell_pointwise(x[0], x[1], x[2]); }, [](H h) { return gru_pointwise_ref(h[0], h[1], h[2]); }},
    {"lstm_cell", {N({3, 3}), N({3, 2}), N({3, 2}), N({8, 3}), N({8, 2}), N({8}), N({8})}, [](V x) { auto [h, c] = nn::functional::lstm_cell(x[0], x[1], x[2], x[3], x[4], x[5], x[6]); return cat({h, c}, 1); }, [](H h) { return lstm_cell_ref(h); }},
    {"gru_cell", {N({3, 3}), N({3, 2}), N({6, 3}), N({6, 2}), N({6}), N({6})}, [](V x) { return nn::functional::gru_cell(x[0], x[1], x[2], x[3], x[4], x[5]); }, [](H h) { return gru_cell_ref(h); }},
    {"lstm_sequence", {N({3, 2, 8}), N({8, 2}), N({2, 2}), N({2, 2})}, [](V x) { return stack_sequence(nn::functional::lstm_sequence(x[0], x[1], x[2], x[3])); }, [](H h) { return sequence_ref(true, h[0], h[1], nullptr, h[2], &h[3], false); }},
    {"lstm_sequence_reverse", {N({3, 2, 8}), N({8, 2}), N({2, 2}), N({2, 2})}, [](V x) { return stack_sequence(nn::functional::lstm_sequence(x[0], x[1], x[2], x[3], true)); }, [](H h) { return sequence_ref(true, h[0], h[1], nullptr, h[2], &h[3], true); }},
    {"gru_sequence", {N({3, 2, 6}), N({6, 2}), N({6}), N({2, 2})}, [](V x) { return stack_sequence(nn::functional::gru_sequence(x[0], x[1], x[2], x[3])); }, [](H h) { return sequence_ref(false, h[0], h[1], &h[2], h[3], nullptr, false); }},
    {"gru_sequence_reverse", {N({3, 2, 6}), N({6, 2}), N({6}), N({2, 2})}, [](V x) { return stack_sequence(nn::functional::gru_sequence(x[0], x[1], x[2], x[3], true)); }, [](H h) { return sequence_ref(false, h[0], h[1], &h[2], h[3], nullptr, true); }},
    // masking, indexing, repeating (autograd/functions_indexing.cpp)
    {"masked_fill", {N({2, 3})}, [](V x) { return x[0].masked_fill(kMask.to(x[0].device()), -1.5); }, [](H h) { return generate({2, 3}, [&](const Shape& i) { return at(kMaskHost, i) != 0 ? -1.5 : at(h[0], i); }); }},
    {"masked_fill_tensor", {N({2, 3}), N({})}, [](V x) { return masked_fill(x[0], kMask.to(x[0].device()), x[1]); }, [](H h) { return generate({2, 3}, [&](const Shape& i) { return at(kMaskHost, i) != 0 ? h[1].v[0] : at(h[0], i); }); }},
    {"tril", {N({2, 3, 4})}, [](V x) { return tril(x[0], 1); }, [](H h) { return generate({2, 3, 4}, [&](const Shape& i) { return i[2] - i[1] <= 1 ? at(h[0], i) : 0.0; }); }},
    {"triu", {N({4, 3})}, [](V x) { return x[0].triu(-1); }, [](H h) { return generate({4, 3}, [&](const Shape& i) { return i[1] - i[0] >= -1 ? at(h[0], i) : 0.0; }); }},
    {"scatter", {N({3, 5}), N({3, 2})}, [](V x) { return scatter(x[0], 1, kScatterIndex.to(x[0].device()), x[1]); }, [](H h) { return scatter_ref(h[0], [&](int64_t i, int64_t j) { return at(h[1], {i, j}); }); }},
    {"scatter_value", {N({3, 5})}, [](V x) { return x[0].scatter(-1, kScatterIndex.to(x[0].device()), 2.5); }, [](H h) { return scatter_ref(h[0], [](int64_t, int64_t) { return 2.5; }); }},
    {"index_add", {N({5, 3}), N({4, 3})}, [](V x) { return index_add(x[0], 0, kIndexAddIndex.to(x[0].device()), x[1], -0.5); }, [](H h) { Host out = h[0]; for (int64_t i = 0; i < 4; ++i) for (int64_t j = 0; j < 3; ++j) out.v[flat_index(out, {kIndexAddValues[i], j})] += -0.5 * at(h[1], {i, j}); return out; }},
    {"repeat", {N({2, 3})}, [](V x) { return x[0].repeat({2, 1, 3}); }, [](H h) { return generate({2, 2, 9}, [&](const Shape& i) { return at(h[0], {i[1], i[2] % 3}); }); }},
    {"flip", {N({2, 3, 4})}, [](V x) { return flip(x[0], {0, -1}); }, [](H h) { return generate({2, 3, 4}, [&](const Shape& i) { return at(h[0], {1 - i[0], i[1], 3 - i[2]}); }); }},
    {"chunk", {N({5, 4})}, [](V x) { return x[0].chunk(3, 0)[1]; }, [](H h) { return slice_ref(h[0], 0, 2, 2, 1); }},
    {"split", {N({4, 5})}, [](V x) { return split(x[0], {1, 3, 1}, -1)[1]; }, [](H h) { return slice_ref(h[0], 1, 1, 3, 1); }},
    {"unbind", {N({3, 4})}, [](V x) { return x[0].unbind(1)[2]; }, [](H h) { return with_shape(slice_ref(h[0], 1, 2, 1, 1), {3}); }},
    // scatter_add, scatter_reduce (each reduction, with and without self), take_along_dim, masked_select,
    // advanced indexing (integer and boolean tensors) and index_put with accumulate (autograd/functions_advanced_indexing.cpp)
    {"scatter_add", {N({3, 5}), N({3, 2})}, [](V x) { return scatter_add(x[0], 1, kScatterIndex.to(x[0].device()), x[1]); }, [](H h) { Host out = h[0]; for (int64_t i = 0; i < 3; ++i) for (int64_t j = 0; j < 2; ++j) out.v[flat_index(out, {i, kScatterIndexValues[i * 2 + j]})] += at(h[1], {i, j}); return out; }},
#define EMBER_REDUCE_ROW(how, with_self, suffix)                                                                 \
  {"scatter_reduce_" how suffix, {N({2, 4}), N({2, 5})},                                                         \
   [](V x) { return x[0].scatter_reduce(1, kReduceIndex.to(x[0].device()), x[1], how, with_self); },            \
   [](H h) { return scatter_reduce_ref(h[0], h[1], how, with_self); }, {.out = Kind::reduce}}
    EMBER_REDUCE_ROW("sum", true, ""), EMBER_REDUCE_ROW("sum", false, "_noself"),
    EMBER_REDUCE_ROW("prod", true, ""), EMBER_REDUCE_ROW("prod", false, "_noself"),
    EMBER_REDUCE_ROW("mean", true, ""), EMBER_REDUCE_ROW("mean", false, "_noself"),
    EMBER_REDUCE_ROW("amax", true, ""), EMBER_REDUCE_ROW("amax", false, "_noself"),
    EMBER_REDUCE_ROW("amin", true, ""), EMBER_REDUCE_ROW("amin", false, "_noself"),
#undef EMBER_REDUCE_ROW
    {"take_along_dim", {N({3, 4})}, [](V x) { return x[0].take_along_dim(kGatherIndex.to(x[0].device()), 1); }, [](H h) { return generate({3, 2}, [&](const Shape& i) { return at(h[0], {i[0], std::vector<int64_t>{0, 3, 1, 1, 2, 0}[i[0] * 2 + i[1]]}); }); }, {.out = Kind::exact}},
    {"masked_select", {N({2, 3})}, [](V x) { return masked_select(x[0], kMask.to(x[0].device())); }, [](H h) { return masked_ref(h[0]); }, {.out = Kind::exact}},
    {"index", {N({3, 4})}, [](V x) { return x[0].index({kSelectIndex.to(x[0].device()), indexing::Slice(1)}); }, [](H h) { return generate({3, 3}, [&](const Shape& i) { return at(h[0], {std::vector<int64_t>{2, 0, 2}[i[0]], i[1] + 1}); }); }, {.out = Kind::exact}},
    {"index_mask", {N({2, 3})}, [](V x) { return x[0].index({kMask.to(x[0].device())}); }, [](H h) { return masked_ref(h[0]); }, {.out = Kind::exact}},
    {"index_put", {N({3, 4}), N({3, 4})}, [](V x) { return x[0].index_put({kPutRows.to(x[0].device())}, x[1], true); }, [](H h) { Host out = h[0]; const int64_t rows[] = {2, 0, 2}; for (int64_t r = 0; r < 3; ++r) for (int64_t j = 0; j < 4; ++j) out.v[flat_index(out, {rows[r], j})] += at(h[1], {r, j}); return out; }, {.out = Kind::reduce}},
    // --- fused nn ops (nn::functional) ---
    // conv2d (cuDNN on the GPU: conv tolerances); conv1d is conv2d of unit height
    {"conv2d", {N({2, 2, 5, 5}), N({3, 2, 3, 3})}, [](V x) { return F::conv2d(x[0], x[1]); }, [](H h) { return conv2d_ref(h[0], h[1], nullptr, {}); }, {.out = Kind::conv, .grad = Kind::conv}},
    {"conv2d_bias", {N({2, 2, 6, 6}), N({3, 2, 3, 3}), N({3})}, [](V x) { return F::conv2d(x[0], x[1], x[2]); }, [](H h) { return conv2d_ref(h[0], h[1], &h[2], {}); }, {.out = Kind::conv, .grad = Kind::conv, .contiguous_only = kVariant}},
    {"conv2d_stride2", {N({2, 2, 7, 7}), N({3, 2, 3, 3}), N({3})}, [](V x) { return F::conv2d(x[0], x[1], x[2], conv(2, 2, 0, 0, 1, 1, 1)); }, [](H h) { return conv2d_ref(h[0], h[1], &h[2], {.sh = 2, .sw = 2}); }, {.out = Kind::conv, .grad = Kind::conv, .contiguous_only = kVariant}},
    {"conv2d_padding", {N({2, 3, 5, 6}), N({4, 3, 3, 3}), N({4})}, [](V x) { return F::conv2d(x[0], x[1], x[2], conv(1, 1, 1, 1, 1, 1, 1)); }, [](H h) { return conv2d_ref(h[0], h[1], &h[2], {.ph = 1, .pw = 1}); }, {.out = Kind::conv, .grad = Kind::conv, .contiguous_only = kVariant, .golden = nn_golden("conv_plain", {"x", "w", "b"})}},
    {"conv2d_stride_padding_dilation", {N({2, 2, 7, 6}), N({3, 2, 3, 2}), N({3})}, [](V x) { return F::conv2d(x[0], x[1], x[2], conv(2, 1, 1, 2, 1, 2, 1)); }, [](H h) { return conv2d_ref(h[0], h[1], &h[2], {.sh = 2, .ph = 1, .pw = 2, .dw = 2}); }, {.out = Kind::conv, .grad = Kind::conv, .contiguous_only = kVariant, .golden = nn_golden("conv_strided", {"x", "w", "b"})}},
    {"conv2d_dilation", {N({2, 2, 7, 7}), N({3, 2, 3, 3})}, [](V x) { return F::conv2d(x[0], x[1], {}, conv(1, 1, 2, 2, 2, 2, 1)); }, [](H h) { return conv2d_ref(h[0], h[1], nullptr, {.ph = 2, .pw = 2, .dh = 2, .dw = 2}); }, {.out = Kind::conv, .grad = Kind::conv, .contiguous_only = kVariant}},
    {"conv2d_groups", {N({2, 4, 6, 6}), N({6, 2, 3, 3})}, [](V x) { return F::conv2d(x[0], x[1], {}, conv(2, 2, 1, 1, 1, 1, 2)); }, [](H h) { return conv2d_ref(h[0], h[1], nullptr, {.sh = 2, .sw = 2, .ph = 1, .pw = 1, .groups = 2}); }, {.out = Kind::conv, .grad = Kind::conv, .contiguous_only = kVariant, .golden = nn_golden("conv_grouped", {"x", "w"})}},
    {"conv2d_groups_bias", {N({2, 4, 5, 5}), N({4, 2, 3, 3}), N({4})}, [](V x) { return F::conv2d(x[0], x[1], x[2], conv(1, 1, 1, 1, 1, 1, 2)); }, [](H h) { return conv2d_ref(h[0], h[1], &h[2], {.ph = 1, .pw = 1, .groups = 2}); }, {.out = Kind::conv, .grad = Kind::conv, .contiguous_only = kVariant}},
    {"conv2d_depthwise", {N({2, 3, 5, 5}), N({3, 1, 3, 3})}, [](V x) { return F::conv2d(x[0], x[1], {}, conv(1, 1, 1, 1, 1, 1, 3)); }, [](H h) { return conv2d_ref(h[0], h[1], nullptr, {.ph = 1, .pw = 1, .groups = 3}); }, {.out = Kind::conv, .grad = Kind::conv, .contiguous_only = kVariant}},
    {"conv2d_everything", {N({2, 4, 7, 5}), N({4, 2, 3, 2}), N({4})}, [](V x) { return F::conv2d(x[0], x[1], x[2], conv(2, 1, 1, 0, 2, 1, 2)); }, [](H h) { return conv2d_ref(h[0], h[1], &h[2], {.sh = 2, .ph = 1, .dh = 2, .groups = 2}); }, {.out = Kind::conv, .grad = Kind::conv, .contiguous_only = kVariant}},
    {"conv2d_1x1", {N({2, 5, 4, 4}), N({3, 5, 1, 1}), N({3})}, [](V x) { return F::conv2d(x[0], x[1], x[2]); }, [](H h) { return conv2d_ref(h[0], h[1], &h[2], {}); }, {.out = Kind::conv, .grad = Kind::conv, .contiguous_only = kVariant}},
    {"conv2d_larger", {N({4, 16, 12, 12}), N({32, 16, 3, 3}), N({32})}, [](V x) { return F::conv2d(x[0], x[1], x[2], conv(1, 1, 1, 1, 1, 1, 1)); }, [](H h) { return conv2d_ref(h[0], h[1], &h[2], {.ph = 1, .pw = 1}); }, {.forward_tol = 1e-11, .out = Kind::conv, .grad = Kind::conv, .no_gradcheck = kLarge, .contiguous_only = kVariant}},
    {"conv1d", {N({2, 3, 9}), N({4, 3, 3}), N({4})}, [](V x) { return F::conv1d(x[0], x[1], x[2], F::Conv1dOptions().padding(1)); }, [](H h) { return conv1d_ref(h[0], h[1], &h[2], 1, 1, 1, 1); }, {.out = Kind::conv, .grad = Kind::conv, .golden = nn_golden("conv1d_plain", {"x", "w", "b"})}},
    {"conv1d_strided", {N({2, 2, 11}), N({3, 2, 3}), N({3})}, [](V x) { return F::conv1d(x[0], x[1], x[2], {.stride = 2, .padding = 2, .dilation = 2}); }, [](H h) { return conv1d_ref(h[0], h[1], &h[2], 2, 2, 2, 1); }, {.out = Kind::conv, .grad = Kind::conv, .contiguous_only = kVariant, .golden = nn_golden("conv1d_strided", {"x", "w", "b"})}},
    {"conv1d_grouped", {N({2, 4, 10}), N({6, 2, 4})}, [](V x) { return F::conv1d(x[0], x[1], {}, F::Conv1dOptions().stride(3).padding(1).groups(2)); }, [](H h) { return conv1d_ref(h[0], h[1], nullptr, 3, 1, 1, 2); }, {.out = Kind::conv, .grad = Kind::conv, .contiguous_only = kVariant, .golden = nn_golden("conv1d_grouped", {"x", "w"})}},
    // pooling: max selects (exact forward), its backward adds where windows overlap
    {"max_pool2d", {N({2, 3, 6, 6})}, [](V x) { return F::max_pool2d(x[0], pool(2, 2, 0)); }, [](H h) { return pool2d_ref(true, h[0], 2, 2, 0); }, {.out = Kind::exact}},
    {"max_pool2d_overlapping", {N({2, 3, 7, 7})}, [](V x) { return F::max_pool2d(x[0], pool(3, 2, 0)); }, [](H h) { return pool2d_ref(true, h[0], 3, 2, 0); }, {.out = Kind::exact, .contiguous_only = kVariant}},
    {"max_pool2d_padding", {N({2, 3, 7, 8})}, [](V x) { return F::max_pool2d(x[0], pool(3, 2, 1)); }, [](H h) { return pool2d_ref(true, h[0], 3, 2, 1); }, {.out = Kind::exact, .contiguous_only = kVariant, .golden = nn_golden("maxpool", {"x"})}},
    {"max_pool2d_stride1_padding", {N({2, 3, 6, 6})}, [](V x) { return F::max_pool2d(x[0], pool(3, 1, 1)); }, [](H h) { return pool2d_ref(true, h[0], 3, 1, 1); }, {.out = Kind::exact, .contiguous_only = kVariant}},
    {"avg_pool2d", {N({2, 3, 6, 6})}, [](V x) { return F::avg_pool2d(x[0], pool(2, 2, 0)); }, [](H h) { return pool2d_ref(false, h[0], 2, 2, 0); }, {.out = Kind::reduce}},
    {"avg_pool2d_overlapping", {N({2, 3, 7, 7})}, [](V x) { return F::avg_pool2d(x[0], pool(3, 2, 0)); }, [](H h) { return pool2d_ref(false, h[0], 3, 2, 0); }, {.out = Kind::reduce, .contiguous_only = kVariant}},
    {"avg_pool2d_padding", {N({2, 3, 7, 8})}, [](V x) { return F::avg_pool2d(x[0], pool(3, 2, 1)); }, [](H h) { return pool2d_ref(false, h[0], 3, 2, 1); }, {.out = Kind::reduce, .contiguous_only = kVariant, .golden = nn_golden("avgpool", {"x"})}},
    {"avg_pool2d_padding_not_counted", {N({2, 3, 7, 8})}, [](V x) { return F::avg_pool2d(x[0], pool(3, 2, 1, false)); }, [](H h) { return pool2d_ref(false, h[0], 3, 2, 1, false); }, {.out = Kind::reduce, .contiguous_only = kVariant, .golden = nn_golden("avgpool_nopad", {"x"})}},
    // ceil_mode: last windows clipped at the padding (8 → 5 rows), or dropped where they would start in it
    {"max_pool2d_ceil", {N({2, 3, 8, 9})}, [](V x) { return F::max_pool2d(x[0], pool(3, 2, 1, true, true)); }, [](H h) { return pool2d_ref(true, h[0], 3, 2, 1, true, true); }, {.out = Kind::exact, .contiguous_only = kVariant, .golden = nn_golden("maxpool_ceil", {"x"})}},
    {"max_pool2d_2x2_ceil", {N({2, 3, 5, 7})}, [](V x) { return F::max_pool2d(x[0], pool(2, 2, 0, true, true)); }, [](H h) { return pool2d_ref(true, h[0], 2, 2, 0, true, true); }, {.out = Kind::exact, .contiguous_only = kVariant, .golden = nn_golden("maxpool2x2_ceil", {"x"})}},
    {"max_pool2d_ceil_rule", {N({1, 2, 3, 5})}, [](V x) { return F::max_pool2d(x[0], pool(2, 2, 1, true, true)); }, [](H h) { return pool2d_ref(true, h[0], 2, 2, 1, true, true); }, {.out = Kind::exact, .contiguous_only = kVariant, .golden = nn_golden("maxpool_ceil_rule", {"x"})}},
    {"avg_pool2d_ceil", {N({2, 3, 8, 9})}, [](V x) { return F::avg_pool2d(x[0], pool(3, 2, 1, true, true)); }, [](H h) { return pool2d_ref(false, h[0], 3, 2, 1, true, true); }, {.out = Kind::reduce, .contiguous_only = kVariant, .golden = nn_golden("avgpool_ceil", {"x"})}},
    {"avg_pool2d_ceil_not_counted", {N({2, 3, 8, 9})}, [](V x) { return F::avg_pool2d(x[0], pool(3, 2, 1, false, true)); }, [](H h) { return pool2d_ref(false, h[0], 3, 2, 1, false, true); }, {.out = Kind::reduce, .contiguous_only = kVariant, .golden = nn_golden("avgpool_ceil_nopad", {"x"})}},
    {"avg_pool2d_ceil_unpadded", {N({2, 3, 8, 7})}, [](V x) { return F::avg_pool2d(x[0], pool(3, 2, 0, true, true)); }, [](H h) { return pool2d_ref(false, h[0], 3, 2, 0, true, true); }, {.out = Kind::reduce, .contiguous_only = kVariant, .golden = nn_golden("avgpool_ceil_unpadded", {"x"})}},
    {"avg_pool2d_ceil_rule", {N({1, 2, 3, 5})}, [](V x) { return F::avg_pool2d(x[0], pool(2, 2, 1, true, true)); }, [](H h) { return pool2d_ref(false, h[0], 2, 2, 1, true, true); }, {.out = Kind::reduce, .contiguous_only = kVariant, .golden = nn_golden("avgpool_ceil_rule", {"x"})}},
    // adaptive pooling, also to sizes that do not divide the input (overlapping windows of different sizes:
    // nn_math::adaptive_start/end) and to an output larger than the input
    {"adaptive_avg_pool2d", {N({2, 2, 5, 4})}, [](V x) { return F::adaptive_avg_pool2d(x[0], 3); }, [](H h) { return adaptive_pool2d_ref(false, h[0], 3, 3); }, {.out = Kind::reduce}},
    {"adaptive_avg_pool2d_7", {N({2, 3, 10, 9})}, [](V x) { return F::adaptive_avg_pool2d(x[0], 7); }, [](H h) { return adaptive_pool2d_ref(false, h[0], 7, 7); }, {.out = Kind::reduce, .no_gradcheck = kLarge, .contiguous_only = kVariant, .golden = nn_golden("adaptive_avg_7", {"x"})}},
    {"adaptive_avg_pool2d_divides", {N({2, 3, 6, 6})}, [](V x) { return F::adaptive_avg_pool2d(x[0], 2, 3); }, [](H h) { return adaptive_pool2d_ref(false, h[0], 2, 3); }, {.out = Kind::reduce, .contiguous_only = kVariant}},
    {"adaptive_avg_pool2d_global", {N({2, 3, 4, 5})}, [](V x) { return F::adaptive_avg_pool2d(x[0], 1); }, [](H h) { return adaptive_pool2d_ref(false, h[0], 1, 1); }, {.out = Kind::reduce, .contiguous_only = kVariant, .golden = nn_golden("adaptive", {"x"})}},
    {"adaptive_avg_pool2d_3x4", {N({2, 3, 5, 7})}, [](V x) { return F::adaptive_avg_pool2d(x[0], 3, 4); }, [](H h) { return adaptive_pool2d_ref(false, h[0], 3, 4); }, {.out = Kind::reduce, .contiguous_only = kVariant, .golden = nn_golden("adaptive_avg_3x4", {"x"})}},
    {"adaptive_avg_pool2d_up", {N({1, 2, 3, 3})}, [](V x) { return F::adaptive_avg_pool2d(x[0], 4, 5); }, [](H h) { return adaptive_pool2d_ref(false, h[0], 4, 5); }, {.out = Kind::reduce, .contiguous_only = kVariant, .golden = nn_golden("adaptive_avg_up", {"x"})}},
    {"adaptive_max_pool2d", {N({2, 2, 5, 4})}, [](V x) { return F::adaptive_max_pool2d(x[0], 3); }, [](H h) { return adaptive_pool2d_ref(true, h[0], 3, 3); }, {.out = Kind::exact}},
    {"adaptive_max_pool2d_7", {N({2, 3, 10, 9})}, [](V x) { return F::adaptive_max_pool2d(x[0], 7); }, [](H h) { return adaptive_pool2d_ref(true, h[0], 7, 7); }, {.out = Kind::exact, .no_gradcheck = kLarge, .contiguous_only = kVariant, .golden = nn_golden("adaptive_max_7", {"x"})}},
    {"adaptive_max_pool2d_3x4", {N({2, 3, 5, 7})}, [](V x) { return F::adaptive_max_pool2d(x[0], 3, 4); }, [](H h) { return adaptive_pool2d_ref(true, h[0], 3, 4); }, {.out = Kind::exact, .contiguous_only = kVariant, .golden = nn_golden("adaptive_max_3x4", {"x"})}},
    {"adaptive_max_pool2d_up", {N({1, 2, 3, 3})}, [](V x) { return F::adaptive_max_pool2d(x[0], 4, 5); }, [](H h) { return adaptive_pool2d_ref(true, h[0], 4, 5); }, {.out = Kind::exact, .contiguous_only = kVariant, .golden = nn_golden("adaptive_max_up", {"x"})}},
    // normalisation; training mode also compares the running statistics it updates (Options::state)
    {"batch_norm_train", {N({3, 2, 3, 4}), N({2}), N({2})}, [](V x) { return batch_norm_train(x, x[1], x[2])[0]; }, [](H h) { return batch_norm_ref(h[0], &h[1], &h[2], nullptr, nullptr); }, {.out = Kind::reduce, .state = [](V x) { return batch_norm_train(x, x[1], x[2]); }}},
    {"batch_norm_train_1d", {N({8, 5}), N({5}), N({5})}, [](V x) { return batch_norm_train(x, x[1], x[2])[0]; }, [](H h) { return batch_norm_ref(h[0], &h[1], &h[2], nullptr, nullptr); }, {.out = Kind::reduce, .contiguous_only = kVariant, .state = [](V x) { return batch_norm_train(x, x[1], x[2]); }}},
    {"batch_norm_train_no_affine", {N({3, 2, 3, 4})}, [](V x) { return batch_norm_train(x, {}, {})[0]; }, [](H h) { return batch_norm_ref(h[0], nullptr, nullptr, nullptr, nullptr); }, {.out = Kind::reduce, .contiguous_only = kVariant, .state = [](V x) { return batch_norm_train(x, {}, {}); }}},
    {"batch_norm_train_no_stats", {N({5, 4})}, [](V x) { return F::batch_norm(x[0], {}, {}, {}, {}, true); }, [](H h) { return batch_norm_ref(h[0], nullptr, nullptr, nullptr, nullptr); }, {.out = Kind::reduce, .contiguous_only = kVariant, .golden = nn_golden("bn1d", {"x"})}},
    {"batch_norm_train_larger", {N({32, 16, 8, 8}), N({16}), N({16})}, [](V x) { return batch_norm_train(x, x[1], x[2])[0]; }, [](H h) { return batch_norm_ref(h[0], &h[1], &h[2], nullptr, nullptr); }, {.forward_tol = 1e-11, .out = Kind::reduce, .no_gradcheck = kLarge, .contiguous_only = kVariant, .state = [](V x) { return batch_norm_train(x, x[1], x[2]); }}},
    {"batch_norm_eval", {N({3, 2, 3, 4}), N({2}), N({2})}, [](V x) { return batch_norm_eval(x, x[1], x[2]); }, [](H h) { const Host m = constant_host({2}, Domain::normal, 11), v = constant_host({2}, Domain::positive, 12); return batch_norm_ref(h[0], &h[1], &h[2], &m, &v); }, {.out = Kind::reduce}},
    {"batch_norm_eval_golden", {N({4, 3, 2, 3}), N({3}), N({3})}, [](V x) { return F::batch_norm(x[0], golden_const(x, "bn_eval.rm"), golden_const(x, "bn_eval.rv"), x[1], x[2], false); }, [](H h) { const Host m = golden_host("bn_eval.rm"), v = golden_host("bn_eval.rv"); return batch_norm_ref(h[0], &h[1], &h[2], &m, &v); }, {.out = Kind::reduce, .contiguous_only = kVariant, .golden = nn_golden("bn_eval", {"x", "w", "b"})}},
    {"batch_norm_eval_1d", {N({8, 5}), N({5}), N({5})}, [](V x) { return batch_norm_eval(x, x[1], x[2]); }, [](H h) { const Host m = constant_host({5}, Domain::normal, 11), v = constant_host({5}, Domain::positive, 12); return batch_norm_ref(h[0], &h[1], &h[2], &m, &v); }, {.out = Kind::reduce, .contiguous_only = kVariant}},
    {"layer_norm", {N({4, 6, 5}), N({5}), N({5})}, [](V x) { return F::layer_norm(x[0], {5}, x[1], x[2]); }, [](H h) { return layer_norm_ref(h[0], 5, &h[1], &h[2]); }, {.out = Kind::reduce}},
    {"layer_norm_2d", {N({2, 3, 4}), N({3, 4}), N({3, 4})}, [](V x) { return F::layer_norm(x[0], {3, 4}, x[1], x[2]); }, [](H h) { return layer_norm_ref(h[0], 12, &h[1], &h[2]); }, {.out = Kind::reduce, .contiguous_only = kVariant, .golden = nn_golden("layernorm", {"x", "w", "b"})}},
    {"layer_norm_no_affine", {N({3, 7})}, [](V x) { return F::layer_norm(x[0], {7}); }, [](H h) { return layer_norm_ref(h[0], 7, nullptr, nullptr); }, {.out = Kind::reduce, .contiguous_only = kVariant}},
    {"layer_norm_wide", {N({4, 1000}), N({1000}), N({1000})}, [](V x) { return F::layer_norm(x[0], {1000}, x[1], x[2]); }, [](H h) { return layer_norm_ref(h[0], 1000, &h[1], &h[2]); }, {.forward_tol = 1e-11, .out = Kind::reduce, .no_gradcheck = kLarge, .contiguous_only = kVariant}},
    {"rms_norm", {N({4, 6, 5}), N({5})}, [](V x) { return F::rms_norm(x[0], {5}, x[1]); }, [](H h) { return rms_norm_ref(h[0], 5, &h[1], std::numeric_limits<double>::epsilon()); }, {.out = Kind::reduce}},
    {"rms_norm_2d", {N({2, 3, 4}), N({3, 4})}, [](V x) { return F::rms_norm(x[0], {3, 4}, x[1], 1e-5); }, [](H h) { return rms_norm_ref(h[0], 12, &h[1], 1e-5); }, {.out = Kind::reduce, .contiguous_only = kVariant, .golden = nn_golden("rmsnorm", {"x", "w"})}},
    {"rms_norm_default_eps", {N({3, 5}), N({5})}, [](V x) { return F::rms_norm(x[0], {5}, x[1]); }, [](H h) { return rms_norm_ref(h[0], 5, &h[1], std::numeric_limits<double>::epsilon()); }, {.out = Kind::reduce, .contiguous_only = kVariant, .golden = nn_golden("rmsnorm_default_eps", {"x", "w"})}},
    {"rms_norm_no_affine", {N({3, 7})}, [](V x) { return F::rms_norm(x[0], {7}, {}, 1e-3); }, [](H h) { return rms_norm_ref(h[0], 7, nullptr, 1e-3); }, {.out = Kind::reduce, .contiguous_only = kVariant}},
    {"rms_norm_wide", {N({4, 1000}), N({1000})}, [](V x) { return F::rms_norm(x[0], {1000}, x[1], 1e-6); }, [](H h) { return rms_norm_ref(h[0], 1000, &h[1], 1e-6); }, {.forward_tol = 1e-11, .out = Kind::reduce, .no_gradcheck = kLarge, .contiguous_only = kVariant}},
    // norms, round 3 (PyTorch's goldens: tools/make_loss_golden.py); instance norm in training mode also
    // compares the running statistics it updates
    {"group_norm", {N({2, 6, 3, 2}), N({6}), N({6})}, [](V x) { return F::group_norm(x[0], 3, x[1], x[2]); }, [](H h) { return group_norm_ref(h[0], 3, &h[1], &h[2]); }, {.out = Kind::reduce, .golden = norm_golden("gn", {"x", "w", "b"})}},
    {"group_norm_one_group", {N({3, 4, 5})}, [](V x) { return F::group_norm(x[0], 1, {}, {}, 1e-3); }, [](H h) { return group_norm_ref(h[0], 1, nullptr, nullptr, 1e-3); }, {.out = Kind::reduce, .contiguous_only = kVariant, .golden = norm_golden("gn_one_group", {"x"})}},
    {"instance_norm", {N({2, 3, 5}), N({3}), N({3})}, [](V x) { return F::instance_norm(x[0], {}, {}, x[1], x[2]); }, [](H h) { return group_norm_ref(h[0], 3, &h[1], &h[2]); }, {.out = Kind::reduce, .golden = norm_golden("in1d", {"x", "w", "b"})}},
    {"instance_norm_running", {N({4, 3, 3, 2})}, [](V x) { return instance_norm_train(x)[0]; }, [](H h) { return group_norm_ref(h[0], 3, nullptr, nullptr, 1e-3); }, {.out = Kind::reduce, .contiguous_only = kVariant, .state = instance_norm_train, .golden = norm_golden("in2d_running", {"x"})}},
    {"instance_norm_eval", {N({2, 3, 4}), N({3}), N({3})}, [](V x) { return F::instance_norm(x[0], golden_const(x, "in_eval.rm", kNormGolden), golden_const(x, "in_eval.rv", kNormGolden), x[1], x[2], false); }, [](H h) { const Host m = golden_host("in_eval.rm", kNormGolden), v = golden_host("in_eval.rv", kNormGolden); return group_norm_ref(h[0], 3, &h[1], &h[2], 1e-5, &m, &v); }, {.contiguous_only = kVariant, .golden = norm_golden("in_eval", {"x", "w", "b"})}},
    {"local_response_norm", {N({2, 7, 3})}, [](V x) { return F::local_response_norm(x[0], 3); }, [](H h) { return local_response_norm_ref(h[0], 3, 1e-4, 0.75, 1.0); }, {.out = Kind::reduce, .golden = norm_golden("lrn", {"x"})}},
    {"local_response_norm_4d", {N({2, 6, 3, 2})}, [](V x) { return F::local_response_norm(x[0], 4, 0.1, 0.6, 2.0); }, [](H h) { return local_response_norm_ref(h[0], 4, 0.1, 0.6, 2.0); }, {.out = Kind::reduce, .golden = norm_golden("lrn_4d", {"x"})}},
    {"normalize", {N({3, 4})}, [](V x) { return F::normalize(x[0]); }, [](H h) { return normalize_ref(h[0], 2, 1); }, {.out = Kind::reduce, .golden = norm_golden("normalize", {"x"})}},
    {"normalize_p1_dim0", {N({3, 4})}, [](V x) { return F::normalize(x[0], 1.0, 0); }, [](H h) { return normalize_ref(h[0], 1, 0); }, {.out = Kind::reduce, .golden = norm_golden("normalize_p1_dim0", {"x"})}},
    // softmax over wide rows (D = 1000), and at logits near ±1e3 (spread 3) and nearly tied at 1e3 (spread
    // 1e-3: a few f32 spacings): the row sums accumulate in double on both devices and the formulas are one
    // copy (backends/nn_math.h), so these take the elementwise tolerance: a device that shifted exp by a
    // log-sum-exp rounded to f32 (rows summing to 1 ± 2e-5) where the other does not fails it.
    // tests/test_nn_functional.cpp pins the CPU's values at such logits to PyTorch's.
    {"softmax_wide", {N({4, 1000})}, [](V x) { return softmax(x[0], -1); }, [](H h) { return softmax_ref(h[0], -1, false); }, {.out = Kind::reduce, .no_gradcheck = kLarge, .contiguous_only = kVariant}},
    {"log_softmax_wide", {N({4, 1000})}, [](V x) { return log_softmax(x[0], 1); }, [](H h) { return softmax_ref(h[0], 1, true); }, {.out = Kind::reduce, .no_gradcheck = kLarge, .contiguous_only = kVariant}},
    {"softmax_wide_dim0", {N({1000, 3})}, [](V x) { return softmax(x[0], 0); }, [](H h) { return softmax_ref(h[0], 0, false); }, {.out = Kind::reduce, .no_gradcheck = kLarge, .contiguous_only = kVariant}},
    {"softmax_large_logits", {N({8, 300})}, [](V x) { return softmax(x[0] * 3.0 + 1000.0, -1); }, [](H h) { return softmax_ref(affine_transform(h[0], 3, 1000), -1, false); }, {.forward_tol = 1e-11, .grad = Kind::elementwise, .no_gradcheck = kLarge, .contiguous_only = kVariant}},
    {"softmax_nearly_tied", {N({8, 300})}, [](V x) { return softmax(x[0] * 1e-3 + 1000.0, -1); }, [](H h) { return softmax_ref(affine_transform(h[0], 1e-3, 1000), -1, false); }, {.forward_tol = 1e-11, .grad = Kind::elementwise, .no_gradcheck = kLarge, .contiguous_only = kVariant}},
    {"softmax_negative_large_logits", {N({8, 300})}, [](V x) { return softmax(x[0] * 3.0 - 1000.0, -1); }, [](H h) { return softmax_ref(affine_transform(h[0], 3, -1000), -1, false); }, {.forward_tol = 1e-11, .grad = Kind::elementwise, .no_gradcheck = kLarge, .contiguous_only = kVariant}},
    {"log_softmax_large_logits", {N({8, 300})}, [](V x) { return log_softmax(x[0] * 3.0 + 1000.0, -1); }, [](H h) { return softmax_ref(affine_transform(h[0], 3, 1000), -1, true); }, {.forward_tol = 1e-11, .grad = Kind::elementwise, .no_gradcheck = kLarge, .contiguous_only = kVariant}},
    {"log_softmax_nearly_tied", {N({8, 300})}, [](V x) { return log_softmax(x[0] * 1e-3 - 1000.0, -1); }, [](H h) { return softmax_ref(affine_transform(h[0], 1e-3, -1000), -1, true); }, {.forward_tol = 1e-11, .grad = Kind::elementwise, .no_gradcheck = kLarge, .contiguous_only = kVariant}},
    // losses
    {"cross_entropy", {N({6, 5})}, [](V x) { return F::cross_entropy(x[0], golden_const(x, "ce.t")); }, [](H h) { return cross_entropy_ref(h[0], golden_labels("ce.t"), Red::mean); }, {.out = Kind::reduce, .golden = nn_golden("ce_mean", {"x"})}},
    {"cross_entropy_ignore_index", {N({6, 5})}, [](V x) { return F::cross_entropy(x[0], labels(x, {0, 2, 4, 2, 1, 3}), xent(2, 0)); }, [](H h) { return cross_entropy_ref(h[0], {0, 2, 4, 2, 1, 3}, Red::mean, 2); }, {.out = Kind::reduce, .contiguous_only = kVariant}},
    {"cross_entropy_ignore_default", {N({6, 5})}, [](V x) { return F::cross_entropy(x[0], labels(x, {0, -100, 4, 2, -100, 3})); }, [](H h) { return cross_entropy_ref(h[0], {0, -100, 4, 2, -100, 3}, Red::mean); }, {.out = Kind::reduce, .contiguous_only = kVariant}},
    {"cross_entropy_label_smoothing", {N({6, 5})}, [](V x) { return F::cross_entropy(x[0], labels(x, kTargets), xent(-100, 0.1)); }, [](H h) { return cross_entropy_ref(h[0], kTargets, Red::mean, -100, 0.1); }, {.out = Kind::reduce, .contiguous_only = kVariant}},
    {"cross_entropy_smoothing_ignore", {N({6, 5})}, [](V x) { return F::cross_entropy(x[0], labels(x, {1, -100, 4, 2, -100, 3}), xent(-100, 0.2)); }, [](H h) { return cross_entropy_ref(h[0], {1, -100, 4, 2, -100, 3}, Red::mean, -100, 0.2); }, {.out = Kind::reduce, .contiguous_only = kVariant, .golden = nn_golden("ce_smooth_ignore", {"x"})}},
    {"cross_entropy_smoothing_ignore_none", {N({6, 5})}, [](V x) { return F::cross_entropy(x[0], labels(x, {0, 3, 4, 3, 1, 2}), xent(3, 0.2, F::Reduction::none)); }, [](H h) { return cross_entropy_ref(h[0], {0, 3, 4, 3, 1, 2}, Red::none, 3, 0.2); }, {.out = Kind::reduce, .contiguous_only = kVariant}},
    {"cross_entropy_sum", {N({6, 5})}, [](V x) { return F::cross_entropy(x[0], golden_const(x, "ce.t"), xent(-100, 0, F::Reduction::sum)); }, [](H h) { return cross_entropy_ref(h[0], golden_labels("ce.t"), Red::sum); }, {.out = Kind::reduce, .contiguous_only = kVariant, .golden = nn_golden("ce_sum", {"x"})}},
    {"cross_entropy_none_ignore", {N({6, 5})}, [](V x) { return F::cross_entropy(x[0], golden_const(x, "ce.t"), xent(4, 0, F::Reduction::none)); }, [](H h) { return cross_entropy_ref(h[0], golden_labels("ce.t"), Red::none, 4); }, {.out = Kind::reduce, .contiguous_only = kVariant, .golden = nn_golden("ce_none", {"x"})}},
    {"cross_entropy_wide", {N({8, 1000})}, [](V x) { return F::cross_entropy(x[0], labels(x, kWideTargets)); }, [](H h) { return cross_entropy_ref(h[0], kWideTargets, Red::mean); }, {.out = Kind::reduce, .no_gradcheck = kLarge, .contiguous_only = kVariant}},
    {"cross_entropy_large_logits", {N({6, 5})}, [](V x) { return F::cross_entropy(x[0] * 3.0 + 1000.0, labels(x, kTargets)); }, [](H h) { return cross_entropy_ref(affine_transform(h[0], 3, 1000), kTargets, Red::mean); }, {.forward_tol = 1e-11, .grad = Kind::elementwise, .contiguous_only = kVariant}},
    {"cross_entropy_nearly_tied", {N({6, 5})}, [](V x) { return F::cross_entropy(x[0] * 1e-3 + 1000.0, labels(x, kTargets), xent(-100, 0, F::Reduction::none)); }, [](H h) { return cross_entropy_ref(affine_transform(h[0], 1e-3, 1000), kTargets, Red::none); }, {.forward_tol = 1e-11, .grad = Kind::elementwise, .contiguous_only = kVariant}},
    {"cross_entropy_large_smoothing", {N({6, 5})}, [](V x) { return F::cross_entropy(x[0] * 3.0 - 1000.0, labels(x, kTargets), xent(-100, 0.1)); }, [](H h) { return cross_entropy_ref(affine_transform(h[0], 3, -1000), kTargets, Red::mean, -100, 0.1); }, {.forward_tol = 1e-11, .grad = Kind::elementwise, .contiguous_only = kVariant}},
    {"cross_entropy_large_ignore_index", {N({6, 5})}, [](V x) { return F::cross_entropy(x[0] * 3.0 + 1000.0, labels(x, {0, 2, 4, 2, 1, 3}), xent(2, 0.2, F::Reduction::sum)); }, [](H h) { return cross_entropy_ref(affine_transform(h[0], 3, 1000), {0, 2, 4, 2, 1, 3}, Red::sum, 2, 0.2); }, {.forward_tol = 1e-11, .grad = Kind::elementwise, .contiguous_only = kVariant}},
    {"cross_entropy_large_wide", {N({8, 1000})}, [](V x) { return F::cross_entropy(x[0] * 3.0 + 1000.0, labels(x, kWideTargets)); }, [](H h) { return cross_entropy_ref(affine_transform(h[0], 3, 1000), kWideTargets, Red::mean); }, {.forward_tol = 1e-11, .grad = Kind::elementwise, .no_gradcheck = kLarge, .contiguous_only = kVariant}},
    // losses with options: class weights, probability targets, K-dim inputs, pos_weight (PyTorch's goldens)
    {"cross_entropy_weight", {N({6, 5})}, [](V x) { return F::cross_entropy(x[0], golden_const(x, "ce_w.t"), {.weight = golden_const(x, "ce_w.w")}); }, nullptr, {.out = Kind::reduce, .contiguous_only = kVariant, .golden = nn_golden("ce_w", {"x"})}},
    {"cross_entropy_weight_smoothing_sum", {N({6, 5})}, [](V x) { return F::cross_entropy(x[0], golden_const(x, "ce_w_sum.t"), {.ignore_index = 2, .label_smoothing = 0.1, .reduction = F::Reduction::sum, .weight = golden_const(x, "ce_w_sum.w")}); }, nullptr, {.out = Kind::reduce, .contiguous_only = kVariant, .golden = nn_golden("ce_w_sum", {"x"})}},
    {"cross_entropy_weight_smoothing_ignore", {N({6, 5})}, [](V x) { return F::cross_entropy(x[0], golden_const(x, "ce_w_smooth_ignore.t"), {.label_smoothing = 0.2, .weight = golden_const(x, "ce_w_smooth_ignore.w")}); }, nullptr, {.out = Kind::reduce, .contiguous_only = kVariant, .golden = nn_golden("ce_w_smooth_ignore", {"x"})}},
    {"cross_entropy_probs", {N({6, 5}), N({6, 5})}, [](V x) { return F::cross_entropy(x[0], x[1]); }, nullptr, {.out = Kind::reduce, .contiguous_only = kVariant, .golden = nn_golden("ce_prob", {"x", "t"})}},
    {"cross_entropy_probs_smoothing_weight", {N({6, 5}), N({6, 5})}, [](V x) { return F::cross_entropy(x[0], x[1], {.label_smoothing = 0.2, .reduction = F::Reduction::none, .weight = golden_const(x, "ce_prob_smooth_w.w")}); }, nullptr, {.out = Kind::reduce, .contiguous_only = kVariant, .golden = nn_golden("ce_prob_smooth_w", {"x", "t"})}},
    {"cross_entropy_kdim", {N({2, 4, 3, 2})}, [](V x) { return F::cross_entropy(x[0], golden_const(x, "ce_kdim_mean.t"), {.label_smoothing = 0.2}); }, [](H h) { return cross_entropy_ref(h[0], golden_labels("ce_kdim_mean.t"), Red::mean, -100, 0.2); }, {.out = Kind::reduce, .contiguous_only = kVariant, .golden = nn_golden("ce_kdim_mean", {"x"})}},
    {"cross_entropy_kdim_weight", {N({2, 4, 3, 2})}, [](V x) { return F::cross_entropy(x[0], golden_const(x, "ce_kdim_w.t"), {.weight = golden_const(x, "ce_kdim_w.w")}); }, nullptr, {.out = Kind::reduce, .contiguous_only = kVariant, .golden = nn_golden("ce_kdim_w", {"x"})}},
    {"nll_loss", {N({6, 5})}, [](V x) { return F::nll_loss(log_softmax(x[0], 1), golden_const(x, "ce.t")); }, [](H h) { return cross_entropy_ref(h[0], golden_labels("ce.t"), Red::mean); }, {.out = Kind::reduce, .golden = nn_golden("nll", {"x"})}},
    {"nll_loss_weight_kdim_none", {N({2, 4, 3, 2})}, [](V x) { return F::nll_loss(log_softmax(x[0], 1), golden_const(x, "nll_kdim_w_none.t"), {.reduction = F::Reduction::none, .weight = golden_const(x, "nll_kdim_w_none.w")}); }, nullptr, {.out = Kind::reduce, .contiguous_only = kVariant, .golden = nn_golden("nll_kdim_w_none", {"x"})}},
    {"mse_loss", {N({3, 4}), N({3, 4})}, [](V x) { return F::mse_loss(x[0], x[1]); }, [](H h) { return mse_ref(h[0], h[1], Red::mean); }, {.out = Kind::reduce, .golden = nn_golden("mse", {"x", "t"})}},
    {"l1_loss", {N({3, 4}), N({3, 4})}, [](V x) { return F::l1_loss(x[0], x[1], {.reduction = F::Reduction::sum}); }, [](H h) { return l1_ref(h[0], h[1], Red::sum); }, {.out = Kind::reduce, .golden = nn_golden("l1", {"x", "t"})}},
    {"bce_with_logits", {N({3, 4}), N({3, 4})}, [](V x) { return F::binary_cross_entropy_with_logits(x[0], x[1]); }, [](H h) { return bce_with_logits_ref(h[0], h[1], Red::mean); }, {.out = Kind::reduce, .golden = nn_golden("bce", {"x", "t"})}},
    {"bce_with_logits_none", {N({3, 4})}, [](V x) { return F::binary_cross_entropy_with_logits(x[0], uniform_constant(x, {3, 4}, 13), {.reduction = F::Reduction::none}); }, [](H h) { return bce_with_logits_ref(h[0], uniform_host({3, 4}, 13), Red::none); }, {.out = Kind::reduce, .contiguous_only = kVariant}},
    {"bce_with_logits_weight_pos_weight", {N({3, 4}), N({3, 4})}, [](V x) { return F::binary_cross_entropy_with_logits(x[0], x[1], {.weight = golden_const(x, "bce_w_pos.w"), .pos_weight = golden_const(x, "bce_w_pos.p")}); }, [](H h) { const Host w = golden_host("bce_w_pos.w"), p = golden_host("bce_w_pos.p"); return bce_with_logits_ref(h[0], h[1], Red::mean, &w, &p); }, {.out = Kind::reduce, .contiguous_only = kVariant, .golden = nn_golden("bce_w_pos", {"x", "t"})}},
    {"bce_with_logits_large_weight_pos_weight", {N({3, 4})}, [](V x) { return F::binary_cross_entropy_with_logits(x[0] * 10.0, uniform_constant(x, {3, 4}, 13), {.weight = constant(x, {3, 1}, Domain::positive, 24), .pos_weight = constant(x, {4}, Domain::positive, 25)}); }, [](H h) { const Host w = constant_host({3, 1}, Domain::positive, 24), p = constant_host({4}, Domain::positive, 25); return bce_with_logits_ref(affine_transform(h[0], 10, 0), uniform_host({3, 4}, 13), Red::mean, &w, &p); }, {.out = Kind::reduce, .contiguous_only = kVariant}},
    // losses, round 3: the reference, and PyTorch's golden on its case's inputs (tools/make_loss_golden.py)
    {"smooth_l1_loss", {N({4, 5}), N({4, 5})}, [](V x) { return F::smooth_l1_loss(x[0], x[1]); }, [](H h) { return smooth_l1_ref(h[0], h[1], 1.0, Red::mean); }, {.out = Kind::reduce, .golden = loss_golden("smooth_l1", {"x", "t"})}},
    {"smooth_l1_loss_beta_none", {N({4, 5}), N({4, 5})}, [](V x) { return F::smooth_l1_loss(x[0], x[1], {.reduction = F::Reduction::none, .beta = 0.5}); }, [](H h) { return smooth_l1_ref(h[0], h[1], 0.5, Red::none); }, {.grad = Kind::elementwise, .golden = loss_golden("smooth_l1_beta_none", {"x", "t"})}},
    {"huber_loss", {N({4, 5}), N({4, 5})}, [](V x) { return F::huber_loss(x[0], x[1], {.reduction = F::Reduction::sum, .delta = 0.7}); }, [](H h) { return huber_ref(h[0], h[1], 0.7, Red::sum); }, {.out = Kind::reduce, .golden = loss_golden("huber_delta_sum", {"x", "t"})}},
    {"kl_div", {N({3, 5}), P({3, 5})}, [](V x) { return F::kl_div(x[0], x[1], {.reduction = F::KLDivReduction::batchmean}); }, [](H h) { return kl_div_ref(h[0], h[1], false, Red::mean, 3); }, {.out = Kind::reduce, .golden = loss_golden("kl_batchmean", {"x", "t"})}},
    {"kl_div_log_target_none", {N({3, 5}), N({3, 5})}, [](V x) { return F::kl_div(x[0], x[1], {.reduction = F::Reduction::none, .log_target = true}); }, [](H h) { return kl_div_ref(h[0], h[1], true, Red::none, 1); }, {.grad = Kind::elementwise, .golden = loss_golden("kl_none_log_target", {"x", "t"})}},
    {"cosine_similarity", {N({4, 5}), N({4, 5})}, [](V x) { return F::cosine_similarity(x[0], x[1]); }, [](H h) { return cosine_similarity_ref(h[0], h[1], 1, 1e-8); }, {.out = Kind::reduce, .golden = loss_golden("cos_sim", {"a", "b"})}},
    {"cosine_similarity_dim0_broadcast", {N({5, 3}), N({5, 1})}, [](V x) { return F::cosine_similarity(x[0], x[1], {.dim = 0, .eps = 1e-6}); }, [](H h) { return cosine_similarity_ref(h[0], h[1], 0, 1e-6); }, {.out = Kind::reduce, .golden = loss_golden("cos_sim_dim0_bcast", {"a", "b"})}},
    {"pairwise_distance", {N({4, 5}), N({4, 5})}, [](V x) { return F::pairwise_distance(x[0], x[1], {.p = 1.0, .eps = 1e-3, .keepdim = true}); }, [](H h) { return with_shape(pairwise_distance_ref(h[0], h[1], 1, 1e-3), {4, 1}); }, {.out = Kind::reduce, .golden = loss_golden("pdist_p1_keepdim", {"a", "b"})}},
    {"cosine_embedding_loss", {N({6, 4}), N({6, 4})}, [](V x) { return F::cosine_embedding_loss(x[0], x[1], golden_const(x, "cos_emb.t", kLossGolden), {.margin = 0.2}); }, [](H h) { return cosine_embedding_ref(h[0], h[1], golden_host("cos_emb.t", kLossGolden), 0.2); }, {.out = Kind::reduce, .golden = loss_golden("cos_emb", {"a", "b"})}},
    {"margin_ranking_loss", {N({8}), N({8})}, [](V x) { return F::margin_ranking_loss(x[0], x[1], golden_const(x, "margin_rank_none.t", kLossGolden), {.reduction = F::Reduction::none}); }, [](H h) { const Host t = golden_host("margin_rank_none.t", kLossGolden); return generate({8}, [&](const Shape& i) { return std::max(0.0, -t.v[i[0]] * (at(h[0], i) - at(h[1], i))); }); }, {.grad = Kind::elementwise, .golden = loss_golden("margin_rank_none", {"a", "b"})}},
    {"triplet_margin_loss", {N({5, 4}), N({5, 4}), N({5, 4})}, [](V x) { return F::triplet_margin_loss(x[0], x[1], x[2], {.margin = 2.0, .p = 1.0, .swap = true, .reduction = F::Reduction::sum}); }, [](H h) { return triplet_ref(h[0], h[1], h[2], 2.0, 1.0, true, Red::sum); }, {.out = Kind::reduce, .golden = loss_golden("triplet_p1_swap_sum", {"a", "p", "n"})}},
    {"poisson_nll_loss", {N({3, 4}), N({3, 4})}, [](V x) { return F::poisson_nll_loss(x[0], x[1]); }, [](H h) { return poisson_nll_ref(h[0], h[1], true, false, Red::mean); }, {.out = Kind::reduce, .golden = loss_golden("poisson", {"x", "t"})}},
    {"poisson_nll_loss_rate_full", {P({3, 4})}, [](V x) { return F::poisson_nll_loss(x[0], golden_const(x, "poisson_rate_full_sum.t", kLossGolden), {.log_input = false, .full = true, .reduction = F::Reduction::sum}); }, [](H h) { return poisson_nll_ref(h[0], golden_host("poisson_rate_full_sum.t", kLossGolden), false, true, Red::sum); }, {.out = Kind::reduce, .golden = loss_golden("poisson_rate_full_sum", {"x"})}},
    {"gaussian_nll_loss", {N({4, 3}), N({4, 3}), P({4, 3})}, [](V x) { return F::gaussian_nll_loss(x[0], x[1], x[2]); }, [](H h) { return gaussian_nll_ref(h[0], h[1], h[2], false, Red::mean); }, {.out = Kind::reduce, .golden = loss_golden("gauss", {"x", "t", "v"})}},
    {"gaussian_nll_loss_homoscedastic_full", {N({4, 3}), N({4, 3}), P({4})}, [](V x) { return F::gaussian_nll_loss(x[0], x[1], x[2], {.full = true, .reduction = F::Reduction::sum}); }, [](H h) { return gaussian_nll_ref(h[0], h[1], h[2], true, Red::sum); }, {.out = Kind::reduce, .golden = loss_golden("gauss_short_full", {"x", "t", "v"})}},
    {"binary_cross_entropy", {U({4, 3}), U({4, 3})}, [](V x) { return F::binary_cross_entropy(x[0], x[1]); }, [](H h) { return bce_ref(h[0], h[1], nullptr, Red::mean); }, {.out = Kind::reduce, .golden = loss_golden("bce", {"x", "t"})}},
    {"binary_cross_entropy_weight_sum", {U({4, 3}), U({4, 3})}, [](V x) { return F::binary_cross_entropy(x[0], x[1], {.weight = golden_const(x, "bce_weight_sum.w", kLossGolden), .reduction = F::Reduction::sum}); }, [](H h) { const Host w = golden_host("bce_weight_sum.w", kLossGolden); return bce_ref(h[0], h[1], &w, Red::sum); }, {.out = Kind::reduce, .golden = loss_golden("bce_weight_sum", {"x", "t"})}},
    {"multilabel_soft_margin_loss", {N({4, 5})}, [](V x) { return F::multilabel_soft_margin_loss(x[0], golden_const(x, "mlsm.t", kLossGolden)); }, [](H h) { return multilabel_soft_margin_ref(h[0], golden_host("mlsm.t", kLossGolden), nullptr, Red::mean); }, {.out = Kind::reduce, .golden = loss_golden("mlsm", {"x"})}},
    {"multilabel_soft_margin_loss_weight_none", {N({4, 5}), N({4, 5})}, [](V x) { return F::multilabel_soft_margin_loss(x[0], x[1], {.weight = golden_const(x, "mlsm_weight_none.w", kLossGolden), .reduction = F::Reduction::none}); }, [](H h) { const Host w = golden_host("mlsm_weight_none.w", kLossGolden); return multilabel_soft_margin_ref(h[0], h[1], &w, Red::none); }, {.out = Kind::reduce, .golden = loss_golden("mlsm_weight_none", {"x", "t"})}},
    // ctc_loss on log_softmax(x) (PyTorch's gradient for log_probs assumes they are one: nn/functional_ctc.cpp), so
    // gradcheck checks a derivative. The golden of the first line is that composition on logits. The second's
    // golden holds log-probabilities x (an f32 log_softmax widened to f64, their exp summing to 1 within ~1e-7):
    // log_softmax(x) is x but for that rounding, and its backward passes PyTorch's gradient through unchanged
    // (it sums to 0 over the classes), hence the golden's tolerance. No host reference: the goldens stand for
    // the alpha-beta recursion (tests/test_losses.cpp checks more cases).
    {"ctc_loss", {N({7, 3, 5})}, [](V x) { return F::ctc_loss(log_softmax(x[0], 2), golden_const(x, "ctc_logits_sum.tg", kLossGolden), golden_const(x, "ctc_logits_sum.il", kLossGolden), golden_const(x, "ctc_logits_sum.tl", kLossGolden), {.reduction = F::Reduction::sum}); }, nullptr, {.out = Kind::reduce, .golden = loss_golden("ctc_logits_sum", {"x"})}},
    {"ctc_loss_concat_blank_last_none", {N({7, 3, 5})}, [](V x) { return F::ctc_loss(log_softmax(x[0], 2), golden_const(x, "ctc_concat_blank_last_none.tg", kLossGolden), golden_const(x, "ctc_concat_blank_last_none.il", kLossGolden), golden_const(x, "ctc_concat_blank_last_none.tl", kLossGolden), {.blank = 4, .reduction = F::Reduction::none}); }, nullptr, {.out = Kind::reduce, .golden = Golden{.file = kLossGolden, .name = "ctc_concat_blank_last_none", .inputs = {"x"}, .tol = 1e-6}}},
    // layers built from tensor ops
    {"linear", {N({4, 3}), N({5, 3}), N({5})}, [](V x) { return F::linear(x[0], x[1], x[2]); }, [](H h) { return affine_ref(h[0], h[1], h[2]); }, {.out = Kind::reduce, .golden = nn_golden("linear", {"x", "w", "b"})}},
    // dropout: a seeded generator inside the op, so each call draws the same mask (Philox: the same on both
    // devices; outputs and gradients exact) and the op is a function gradcheck can differentiate. No
    // independent reference for the mask itself: tests/test_nn_functional.cpp checks its statistics.
    {"dropout", {N({4, 50})}, [](V x) { Generator g(42); return F::dropout(x[0], 0.3, true, &g); }, nullptr, {.out = Kind::exact, .grad = Kind::exact}},
    {"dropout_larger", {N({64, 1000})}, [](V x) { Generator g(43); return F::dropout(x[0], 0.5, true, &g); }, nullptr, {.out = Kind::exact, .grad = Kind::exact, .no_gradcheck = kLarge, .contiguous_only = kVariant}},
    // embedding: the backward scatter-adds rows (atomics on the GPU: the order of the additions varies)
    {"embedding", {N({10, 4})}, [](V x) { return F::embedding(labels(x, kEmbeddingIndices, {2, 3}), x[0]); }, [](H h) { return embedding_ref(h[0], kEmbeddingIndices, {2, 3}); }, {.out = Kind::exact}},
    {"embedding_padding_idx", {N({10, 4})}, [](V x) { return F::embedding(labels(x, kEmbeddingIndices, {2, 3}), x[0], {.padding_idx = 3}); }, [](H h) { return embedding_ref(h[0], kEmbeddingIndices, {2, 3}); }, {.out = Kind::exact, .no_gradcheck = "the padding row's zero gradient is PyTorch's rule, not the derivative (the output does depend on that row)", .contiguous_only = kVariant}},
    {"embedding_bag", {N({5, 3})}, [](V x) { return F::embedding_bag(kBagInput.to(x[0].device()), x[0], {.offsets = kBagOffsets.to(x[0].device()), .mode = "mean"}); }, [](H h) { return embedding_bag_mean_ref(h[0]); }, {.out = Kind::reduce}},
    // --- conv, pool, pad, resample (issue 30) ---
    // F::pad in each mode (negative pads crop), against PyTorch's goldens; copies: exact outputs
    {"pad_const_neg", {N({2, 3, 4, 5})}, [](V x) { return F::pad(x[0], F::PadFuncOptions({-1, 2, 1, -2}).value(-1.0)); }, [](H h) { return pad_ref(h[0], {-1, 2, 1, -2}, PadRef::constant, -1.0); }, {.out = Kind::exact, .golden = conv_golden("pad_const_neg", {"x"})}},
    {"pad_reflect_2d", {N({2, 2, 4, 5})}, [](V x) { return F::pad(x[0], F::PadFuncOptions({1, 2, 3, 0}).mode(F::PadMode::reflect)); }, [](H h) { return pad_ref(h[0], {1, 2, 3, 0}, PadRef::reflect); }, {.out = Kind::exact, .golden = conv_golden("pad_reflect_2d", {"x"})}},
    {"pad_replicate_neg", {N({1, 2, 5})}, [](V x) { return F::pad(x[0], F::PadFuncOptions({-2, 3}).mode(F::PadMode::replicate)); }, [](H h) { return pad_ref(h[0], {-2, 3}, PadRef::replicate); }, {.out = Kind::exact, .golden = conv_golden("pad_replicate_neg", {"x"})}},
    {"pad_circular_3d", {N({1, 1, 3, 4, 5})}, [](V x) { return F::pad(x[0], F::PadFuncOptions({1, 1, 1, 2, 2, 0}).mode(F::PadMode::circular)); }, [](H h) { return pad_ref(h[0], {1, 1, 1, 2, 2, 0}, PadRef::circular); }, {.out = Kind::exact, .golden = conv_golden("pad_circular_3d", {"x"})}},
    // conv padding "same" (an even kernel: the extra on the right), transposed convolution
    {"conv2d_same_even", {N({2, 3, 6, 7}), N({4, 3, 4, 2}), N({4})}, [](V x) { return F::conv2d(x[0], x[1], x[2], F::Conv2dOptions().padding(nn::kSame).dilation({1, 3})); }, nullptr, {.out = Kind::conv, .grad = Kind::conv, .contiguous_only = kVariant, .golden = conv_golden("conv2d_same_even", {"x", "w", "b"})}},
    {"conv1d_same", {N({2, 3, 9}), N({4, 3, 4}), N({4})}, [](V x) { return F::conv1d(x[0], x[1], x[2], F::Conv1dOptions().padding("same")); }, nullptr, {.out = Kind::conv, .grad = Kind::conv, .contiguous_only = kVariant, .golden = conv_golden("conv1d_same_even", {"x", "w", "b"})}},
    {"conv_transpose2d", {N({2, 3, 4, 5}), N({3, 4, 3, 3}), N({4})}, [](V x) { return F::conv_transpose2d(x[0], x[1], x[2]); }, nullptr, {.out = Kind::conv, .grad = Kind::conv, .golden = conv_golden("convt2d_plain", {"x", "w", "b"})}},
    {"conv_transpose2d_everything", {N({2, 6, 3, 4}), N({6, 2, 3, 3}), N({6})}, [](V x) { return F::conv_transpose2d(x[0], x[1], x[2], F::ConvTranspose2dOptions().stride(2).padding({1, 2}).output_padding({1, 0}).groups(3).dilation(2)); }, nullptr, {.out = Kind::conv, .grad = Kind::conv, .contiguous_only = kVariant, .golden = conv_golden("convt2d_everything", {"x", "w", "b"})}},
    {"conv_transpose2d_op_dilation", {N({1, 2, 3, 4}), N({2, 2, 2, 2})}, [](V x) { return F::conv_transpose2d(x[0], x[1], {}, F::ConvTranspose2dOptions().output_padding({2, 1}).dilation({3, 2})); }, nullptr, {.out = Kind::conv, .grad = Kind::conv, .contiguous_only = kVariant, .golden = conv_golden("convt2d_op_dilation", {"x", "w"})}},
    {"conv_transpose1d", {N({2, 3, 7}), N({3, 5, 4}), N({5})}, [](V x) { return F::conv_transpose1d(x[0], x[1], x[2], F::ConvTranspose1dOptions().stride(2).padding(1).output_padding(1)); }, nullptr, {.out = Kind::conv, .grad = Kind::conv, .golden = conv_golden("convt1d_plain", {"x", "w", "b"})}},
    // max pooling with dilation and indices (the lines with indices output [y.flatten(), indices.flatten()])
    {"max_pool2d_dilation", {N({2, 3, 9, 10})}, [](V x) { return F::max_pool2d(x[0], F::MaxPool2dOptions(3).stride(2).padding(1).dilation(2)); }, [](H h) { return max_pool_indices_ref(h[0], {.kh = 3, .kw = 3, .sh = 2, .sw = 2, .ph = 1, .pw = 1, .dh = 2, .dw = 2}, false); }, {.out = Kind::exact, .contiguous_only = kVariant, .golden = conv_golden("maxpool_dil", {"x"})}},
    {"max_pool2d_with_indices", {N({2, 3, 7, 8})}, [](V x) { return values_and_indices(F::max_pool2d_with_indices(x[0], F::MaxPool2dOptions(3).stride(2).padding(1))); }, [](H h) { return max_pool_indices_ref(h[0], {.kh = 3, .kw = 3, .sh = 2, .sw = 2, .ph = 1, .pw = 1}); }, {.out = Kind::exact}},
    {"max_pool2d_dilation_ceil_indices", {N({2, 2, 8, 9})}, [](V x) { return values_and_indices(F::max_pool2d_with_indices(x[0], F::MaxPool2dOptions({2, 3}).stride({2, 1}).padding(1).dilation({3, 2}).ceil_mode(true))); }, [](H h) { return max_pool_indices_ref(h[0], {.kh = 2, .kw = 3, .sh = 2, .sw = 1, .ph = 1, .pw = 1, .dh = 3, .dw = 2, .ceil_mode = true}); }, {.out = Kind::exact, .contiguous_only = kVariant}},
    {"avg_pool2d_divisor_override", {N({2, 3, 7, 8})}, [](V x) { return F::avg_pool2d(x[0], F::AvgPool2dOptions(3).stride(2).padding(1).divisor_override(5)); }, nullptr, {.out = Kind::reduce, .contiguous_only = kVariant, .golden = conv_golden("avgpool_div", {"x"})}},
    {"max_pool1d", {N({2, 3, 12})}, [](V x) { return F::max_pool1d(x[0], F::MaxPool1dOptions(3).stride(2).padding(1).dilation(2).ceil_mode(true)); }, [](H h) { const Host r = max_pool_indices_ref(with_shape(h[0], {2, 3, 1, 12}), {.kh = 1, .kw = 3, .sh = 1, .sw = 2, .pw = 1, .dw = 2, .ceil_mode = true}, false); return with_shape(r, {2, 3, r.shape[3]}); }, {.out = Kind::exact, .golden = conv_golden("maxpool1d_dil_ceil", {"x"})}},
    {"avg_pool1d", {N({2, 3, 10})}, [](V x) { return F::avg_pool1d(x[0], F::AvgPool1dOptions(4).stride(3).padding(2).ceil_mode(true).count_include_pad(false)); }, nullptr, {.out = Kind::reduce, .golden = conv_golden("avgpool1d_nopad_ceil", {"x"})}},
    // max_unpool2d at the indices of a 2 × 2 pooling of another tensor (no repeats: the gradient is the derivative)
    {"max_unpool2d", {N({2, 3, 3, 4})}, [](V x) { return F::max_unpool2d(x[0], conv_golden_indices(x, "unpool2d.i"), 2); }, nullptr, {.out = Kind::exact, .grad = Kind::exact, .golden = conv_golden("unpool2d", {"x"})}},
    // interpolate: nearest selects (exact), the linear modes sum weighted neighbours (reduce tolerance)
    {"interpolate_nearest", {N({2, 3, 5, 7})}, [](V x) { return F::interpolate(x[0], F::InterpolateFuncOptions().scale_factor(std::vector<double>{2.5, 1.7})); }, nullptr, {.out = Kind::exact, .golden = conv_golden("nearest_2d_scale", {"x"})}},
    {"interpolate_bilinear", {N({2, 3, 5, 7})}, [](V x) { return F::interpolate(x[0], F::InterpolateFuncOptions().size(std::vector<int64_t>{8, 11}).mode(nn::InterpolateMode::bilinear)); }, nullptr, {.out = Kind::reduce, .golden = conv_golden("bilinear", {"x"})}},
    {"interpolate_bilinear_align_corners", {N({2, 3, 5, 7})}, [](V x) { return F::interpolate(x[0], F::InterpolateFuncOptions().size(std::vector<int64_t>{8, 11}).mode(nn::InterpolateMode::bilinear).align_corners(true)); }, nullptr, {.out = Kind::reduce, .contiguous_only = kVariant, .golden = conv_golden("bilinear_ac", {"x"})}},
    {"interpolate_linear", {N({2, 3, 6})}, [](V x) { return F::interpolate(x[0], F::InterpolateFuncOptions().scale_factor(std::vector<double>{2.3}).mode(nn::InterpolateMode::linear)); }, nullptr, {.out = Kind::reduce, .contiguous_only = kVariant, .golden = conv_golden("linear_1d_scale", {"x"})}},
    {"interpolate_trilinear", {N({1, 2, 3, 4, 5})}, [](V x) { return F::interpolate(x[0], F::InterpolateFuncOptions().size(std::vector<int64_t>{5, 3, 7}).mode(nn::InterpolateMode::trilinear)); }, nullptr, {.out = Kind::reduce, .contiguous_only = kVariant, .golden = conv_golden("trilinear", {"x"})}},
    {"pixel_shuffle", {N({2, 12, 3, 4})}, [](V x) { return F::pixel_shuffle(x[0], 2); }, [](H h) { return pixel_shuffle_ref(h[0], 2); }, {.out = Kind::exact, .grad = Kind::exact, .golden = conv_golden("pixel_shuffle", {"x"})}},
    {"pixel_unshuffle", {N({2, 3, 6, 8})}, [](V x) { return F::pixel_unshuffle(x[0], 2); }, [](H h) { return pixel_unshuffle_ref(h[0], 2); }, {.out = Kind::exact, .grad = Kind::exact, .golden = conv_golden("pixel_unshuffle", {"x"})}},
  };
  return table;
}
// NOLINTEND(readability-function-size)

// --- layouts --------------------------------------------------------------------------------------------------
enum class Layout { contiguous, transposed, sliced, expanded };
inline const char* layout_name(Layout l) {
  static const char* names[] = {"contiguous", "transposed", "sliced", "expanded"};
  return names[static_cast<int>(l)];
}

// A leaf for `in` in `layout`, on `device` in `dtype`; `expand` is set when the op must see
// leaf.expand(in.shape). The buffer is filled and moved first, then viewed, so a leaf on another device
// has the same layout (strides and offset) as the CPU one.
inline Tensor make_leaf(const In& in, Layout layout, Generator& gen, bool& expand, DType dtype = DType::f64,
                        Device device = kCPU) {
  const Shape& s = in.shape;
  expand = false;
  Tensor leaf;
  if (layout == Layout::transposed && s.size() >= 2) {  // a transposed view of a contiguous buffer
    Shape swapped = s;
    std::swap(swapped[s.size() - 1], swapped[s.size() - 2]);
    leaf = random_values(swapped, in.domain, gen, dtype, device).transpose(-1, -2);
  } else if (layout == Layout::sliced && !s.empty()) {  // every other element, from offset 1
    Shape padded = s;
    padded[s.size() - 1] = 2 * s.back() + 1;
    leaf = random_values(padded, in.domain, gen, dtype, device).slice(-1, 1, 2 * s.back() + 1, 2);
  } else if (layout == Layout::expanded && std::any_of(s.begin(), s.end(), [](int64_t n) { return n > 1; })) {
    Shape one = s;
    *std::find_if(one.begin(), one.end(), [](int64_t n) { return n > 1; }) = 1;
    leaf = random_values(one, in.domain, gen, dtype, device);
    expand = true;
  } else {
    leaf = random_values(s, in.domain, gen, dtype, device);
  }
  return leaf.requires_grad_();
}

// A line's layouts: all four, or contiguous only (Options::contiguous_only).
inline std::vector<Layout> layouts_of(const OpCase& c) {
  if (c.o.contiguous_only != nullptr) return {Layout::contiguous};
  return {Layout::contiguous, Layout::transposed, Layout::sliced, Layout::expanded};
}

// One run of a line as the parity and guard tests make it: leaves drawn as the gradcheck test draws them
// (seed 1000 + row, the same layout), the op on `device` in `dtype` (its state too, where it has one), then a
// backward from a seeded random upstream gradient.
struct OpRun {
  Outs outs;  // [0] the output, then the state the op updated (Options::state)
  std::vector<Tensor> leaves;
  bool non_contiguous = false;  // some input the op sees is a non-contiguous view
};
inline OpRun run_row(size_t row, Layout layout, DType dtype, Device device) {
  const OpCase& c = op_table()[row];
  Generator gen(1000 + row);
  OpRun r;
  std::vector<Tensor> xs;
  for (const In& in : c.inputs) {
    bool expand = false;
    r.leaves.push_back(make_leaf(in, layout, gen, expand, dtype, device));
    xs.push_back(expand ? r.leaves.back().expand(in.shape) : r.leaves.back());
    r.non_contiguous = r.non_contiguous || !xs.back().is_contiguous();
  }
  r.outs = c.o.state ? c.o.state(xs) : Outs{c.op(xs)};
  Generator upstream(5000 + row);
  r.outs[0].backward(random_values(r.outs[0].shape(), Domain::normal, upstream, r.outs[0].dtype(), device));
  return r;
}

}  // namespace ember::optable
