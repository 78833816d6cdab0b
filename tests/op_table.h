#pragma once
// The op table shared by the gradcheck test (tests/test_gradcheck.cpp) and the CPU-vs-CUDA parity test
// (tests/test_cuda_parity.cpp): every differentiable op, one line each (input shapes, the op, an independent
// reference for its forward), and the leaves both tests build (contiguous, transposed, strided-slice and
// expanded layouts). Adding an op is one line here; both tests pick it up.
//
// Constant tensors the ops use (indices, masks) live on the CPU; the op lambdas move them to the device of
// their first input (a no-op on the CPU), so the same line runs on any device.
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <ember/ember.h>

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
  return generate(x.shape, [&](const Shape& idx) {
    Shape j = idx;
    double m = -INFINITY, s = 0;
    for (j[dim] = 0; j[dim] < x.shape[dim]; ++j[dim]) m = std::max(m, at(x, j));
    for (j[dim] = 0; j[dim] < x.shape[dim]; ++j[dim]) s += std::exp(at(x, j) - m);
    return log ? at(x, idx) - m - std::log(s) : std::exp(at(x, idx) - m) / s;
  });
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
enum class Domain { normal, positive };
struct In {
  Shape shape;
  Domain domain = Domain::normal;
};
inline In N(Shape s) { return {s, Domain::normal}; }
inline In P(Shape s) { return {s, Domain::positive}; }  // in [0.5, 2): for log, sqrt, pow bases, divisors

using V = const std::vector<Tensor>&;
using H = const std::vector<Host>&;

struct OpCase {
  std::string name;
  std::vector<In> inputs;
  std::function<Tensor(V)> op;
  std::function<Host(H)> ref;
  double forward_tol = 1e-12;  // relative and absolute, against the reference
  double eps = 1e-6, atol = 1e-5, rtol = 1e-3;
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
    {"sum", {N({3, 4})}, [](V x) { return sum(x[0]); }, [](H h) { return rsum(h[0]); }},
    {"sum_dim", {N({3, 4})}, [](V x) { return x[0].sum({1}); }, [](H h) { return rsum(h[0], {1}); }},
    {"sum_dims_keepdim", {N({2, 3, 4})}, [](V x) { return sum(x[0], {0, -1}, true); }, [](H h) { return rsum(h[0], {0, 2}, true); }},
    {"mean", {N({3, 4})}, [](V x) { return mean(x[0]); }, [](H h) { return reduce(h[0], {}, false, 0.0, std::plus<>(), true); }},
    {"mean_dim_keepdim", {N({3, 4})}, [](V x) { return mean(x[0], {-1}, true); }, [](H h) { return reduce(h[0], {1}, true, 0.0, std::plus<>(), true); }},
    {"max", {N({3, 4})}, [](V x) { return max(x[0]); }, [](H h) { return rmax(h[0]); }},
    {"min", {N({3, 4})}, [](V x) { return x[0].min(); }, [](H h) { return rmin(h[0]); }},
    {"amax", {N({2, 3, 4})}, [](V x) { return amax(x[0], {1}); }, [](H h) { return rmax(h[0], {1}); }},
    {"amin", {N({2, 3, 4})}, [](V x) { return amin(x[0], {0, 2}, true); }, [](H h) { return rmin(h[0], {0, 2}, true); }},
    {"max_dim", {N({3, 4})}, [](V x) { return std::get<0>(max(x[0], 1)); }, [](H h) { return rmax(h[0], {1}); }},
    {"min_dim", {N({3, 4})}, [](V x) { return std::get<0>(min(x[0], 0, true)); }, [](H h) { return rmin(h[0], {0}, true); }},
    {"softmax", {N({3, 5})}, [](V x) { return softmax(x[0], -1); }, [](H h) { return softmax_ref(h[0], -1, false); }},
    {"softmax_dim0", {N({3, 5})}, [](V x) { return softmax(x[0], 0); }, [](H h) { return softmax_ref(h[0], 0, false); }},
    {"log_softmax", {N({3, 5})}, [](V x) { return log_softmax(x[0], 1); }, [](H h) { return softmax_ref(h[0], 1, true); }},
    {"log_softmax_dim0", {N({3, 5})}, [](V x) { return log_softmax(x[0], 0); }, [](H h) { return softmax_ref(h[0], 0, true); }},
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
    {"matmul", {N({3, 4}), N({4, 5})}, [](V x) { return matmul(x[0], x[1]); }, [](H h) { return matmul_ref(h[0], h[1]); }},
    {"matmul_batched", {N({2, 3, 4}), N({2, 4, 5})}, [](V x) { return matmul(x[0], x[1]); }, [](H h) { return matmul_ref(h[0], h[1]); }},
    {"matmul_broadcast_batch", {N({2, 1, 3, 4}), N({3, 4, 2})}, [](V x) { return matmul(x[0], x[1]); }, [](H h) { return matmul_ref(h[0], h[1]); }},
    {"matmul_batched_by_matrix", {N({2, 3, 4}), N({4, 5})}, [](V x) { return x[0].matmul(x[1]); }, [](H h) { return matmul_ref(h[0], h[1]); }},
    {"matmul_vector_matrix", {N({4}), N({4, 3})}, [](V x) { return matmul(x[0], x[1]); }, [](H h) { return matmul_ref(h[0], h[1]); }},
    {"matmul_matrix_vector", {N({3, 4}), N({4})}, [](V x) { return matmul(x[0], x[1]); }, [](H h) { return matmul_ref(h[0], h[1]); }},
    {"matmul_vector_vector", {N({4}), N({4})}, [](V x) { return matmul(x[0], x[1]); }, [](H h) { return matmul_ref(h[0], h[1]); }},
    {"matmul_vector_batched", {N({4}), N({2, 4, 3})}, [](V x) { return matmul(x[0], x[1]); }, [](H h) { return matmul_ref(h[0], h[1]); }},
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
    {"to_dtype", {N({3, 4})}, [](V x) { return x[0].to(DType::f32) * 2.0; }, [](H h) { return map1(h[0], [](double a) { return 2 * a; }); }, 1e-6, 1e-3, 1e-3, 1e-2},
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

// Values drawn on the CPU in f64 (so a seed gives the same numbers whatever the dtype and device asked
// for), then converted to `dtype` and moved to `device`.
inline Tensor random_values(const Shape& shape, Domain domain, Generator& gen, DType dtype = DType::f64,
                            Device device = kCPU) {
  const Tensor u = rand(shape, {.dtype = DType::f64}, &gen);
  NoGradGuard no_grad;
  return (domain == Domain::positive ? u * 1.5 + 0.5 : (u - 0.5) * 4.0).to(dtype).to(device);
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

}  // namespace ember::optable
