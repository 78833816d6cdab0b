// max/avg pool2d over NCHW, one (n, c) plane per task. The output size is the caller's (nn computes
// OH = ⌊(H + 2·pad - kernel) / stride⌋ + 1, or ⌈⌉ in ceil_mode, whose last window may reach past the
// padding: nn_math::pool_window clips it; adaptive pooling takes any OH, OW and PyTorch's adaptive windows).
#include <algorithm>
#include <vector>

#include "backends/checks.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/nn_math.h"
#include "base/parallel.h"

namespace ember::cpu {
namespace {

using Window = nn_math::PoolWindow;
constexpr auto window = nn_math::pool_window;

// The common 2×2, stride 2, unpadded max pool of one plane, in two vectorisable passes over contiguous
// memory instead of four gathers per output (which took 80% of the pool's time): first each row's
// horizontal pairs (`pair`/`right`, rows 0 … 2·OH-1), then each output picks the top or the bottom pair.
// Row-major first maximum and NaN propagation as the general path: within a pair the right element wins
// only when strictly greater or NaN, and the bottom pair wins the same way, which is the scan order's rule
// (a tie stays with the earlier element; the last NaN in scan order wins).
//
// The second pass works a row of outputs at a time, and rows are short (OW = 14 or 7 in a Fashion-MNIST
// CNN: shorter than a vector, so the compiled loop ran as a branchy scalar remainder). So every row but
// the plane's last computes kAhead outputs (or up to the plane's end) from a padded `pair`: the outputs past
// OW land on the next row's and are rewritten by it; the last row computes exactly OW.
constexpr int64_t kAhead = 16;  // one AVX-512 vector of floats

template <bool kIndices, typename T>
void max_pool_2x2(const T* __restrict xp, T* __restrict out, int64_t* __restrict idx, int64_t W, int64_t OH,
                  int64_t OW, T* __restrict pair, int32_t* __restrict right) {
  const auto pick = [](T a, T b) { return (b > a) | (b != b); };
  const int64_t rows = 2 * OH;
  const auto pairs_of_row = [&](const T* __restrict in, T* __restrict pv, int32_t* __restrict pr, int64_t n) {
    for (int64_t k = 0; k < n; ++k) {
      const T a = in[2 * k], b = in[2 * k + 1];
      const bool r = pick(a, b);
      pv[k] = r ? b : a;
      pr[k] = r;
    }
  };
  if (W == 2 * OW) pairs_of_row(xp, pair, right, rows * OW);  // the rows are one contiguous run of pairs
  else
    for (int64_t r = 0; r < rows; ++r) pairs_of_row(xp + r * W, pair + r * OW, right + r * OW, OW);
  const auto w = static_cast<int32_t>(W);
  for (int64_t oh = 0; oh < OH; ++oh) {
    const T *top = pair + 2 * oh * OW, *bottom = top + OW;
    const int32_t *top_r = right + 2 * oh * OW, *bottom_r = top_r + OW;
    T* o = out + oh * OW;
    int64_t* io = idx + oh * OW;
    const auto row = static_cast<int32_t>(2 * oh) * w;
    const int64_t n = oh + 1 == OH ? OW : std::min(std::max(OW, kAhead), (OH - oh) * OW);
    for (int64_t ow = 0; ow < n; ++ow) {  // (both rows loaded, selects only: this loop vectorises)
      const T t = top[ow], bt = bottom[ow];
      const bool b = pick(t, bt);
      o[ow] = b ? bt : t;
      if constexpr (kIndices) {
        const int32_t at_top = top_r[ow], at_bottom = w + bottom_r[ow];
        io[ow] = row + 2 * static_cast<int32_t>(ow) + (b ? at_bottom : at_top);
      }
    }
  }
}

// The windows of a 2×2, stride 2, unpadded pool: disjoint and all whole (not in ceil_mode over an odd size,
// whose last window is partial); int32 index arithmetic.
bool is_2x2(const Pool2dParams& p, int64_t H, int64_t W, int64_t OH, int64_t OW) {
  return !p.adaptive && p.kernel[0] == 2 && p.kernel[1] == 2 && p.stride[0] == 2 && p.stride[1] == 2 &&
         p.padding[0] == 0 && p.padding[1] == 0 && 2 * OH <= H && 2 * OW <= W && H * W < (int64_t{1} << 31);
}

// max_pool_2x2's backward for one plane of an even width (W = 2·OW): every element of gx written once, in
// order — each window's gradient at its index, zeros elsewhere — instead of a zero fill and a scatter. Rows
// ahead as in max_pool_2x2: gx's row r computes up to kAhead pairs, those past its end land on row r + 1 and
// are rewritten by it; the reads stay inside the plane's outputs.
template <typename T>
void max_unpool_2x2(const T* __restrict g, const int64_t* __restrict idx, T* __restrict gp, int64_t H, int64_t OH,
                    int64_t OW) {
  const int64_t W = 2 * OW;
  for (int64_t r = 0; r < 2 * OH; ++r) {
    const T* gr = g + (r / 2) * OW;
    const int64_t* ir = idx + (r / 2) * OW;
    T* row = gp + r * W;
    const int64_t n = std::min(std::max(OW, kAhead), (OH - r / 2) * OW);
    for (int64_t ow = 0; ow < n; ++ow) {
      const int64_t at = r * W + 2 * ow;
      row[2 * ow] = ir[ow] == at ? gr[ow] : T(0);
      row[2 * ow + 1] = ir[ow] == at + 1 ? gr[ow] : T(0);
    }
  }
  std::fill(gp + 2 * OH * W, gp + H * W, T(0));  // an odd height's last row
}

template <typename T>
void pool_forward(PoolOp op, const checks::PoolDims& d, const TensorArg& x, const TensorArg& y, int64_t* indices,
                  const Pool2dParams& p) {
  const int64_t planes = d.planes, H = d.H, W = d.W, OH = d.OH, OW = d.OW;
  const T* in = x.ptr<T>();
  T* out = y.ptr<T>();
  const bool fast_2x2 = op == PoolOp::max && is_2x2(p, H, W, OH, OW);
  parallel_for(planes, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, H * W)), [&](int64_t begin, int64_t end) {
    for (int64_t pl = begin; pl < end; ++pl) {
      const T* xp = in + pl * H * W;
      if (fast_2x2) {
        thread_local std::vector<T> pair;  // this thread's scratch, one plane's pairs
        thread_local std::vector<int32_t> right;  // (int32, as wide as a float: one vector length for the loop)
        pair.resize(static_cast<size_t>(2 * OH * OW + kAhead));  // (max_pool_2x2 reads ahead)
        right.resize(pair.size());
        T* y = out + pl * OH * OW;
        if (indices != nullptr) max_pool_2x2<true>(xp, y, indices + pl * OH * OW, W, OH, OW, pair.data(), right.data());
        else max_pool_2x2<false>(xp, y, nullptr, W, OH, OW, pair.data(), right.data());
        continue;
      }
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          const Window win = window(p, H, W, OH, OW, oh, ow);
          const int64_t o = pl * OH * OW + oh * OW + ow;
          if (op == PoolOp::max) {
            T best;  // (locals: stores through out[] could alias xp and stay in the loop)
            int64_t at;
            nn_math::max_pool_window(xp, W, win, best, at);
            out[o] = best;
            if (indices != nullptr) indices[o] = at;
          } else {
            out[o] = nn_math::avg_pool_window(xp, W, win);
          }
        }
    }
  });
}

template <typename T>
void pool_backward(PoolOp op, const checks::PoolDims& d, const TensorArg& gy, const int64_t* indices,
                   const TensorArg& gx, const Pool2dParams& p) {
  const int64_t planes = d.planes, H = d.H, W = d.W, OH = d.OH, OW = d.OW;
  const T* g = gy.ptr<T>();
  T* out = gx.ptr<T>();
  const bool disjoint_2x2 = op == PoolOp::max && is_2x2(p, H, W, OH, OW) && W == 2 * OW;
  parallel_for(planes, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, H * W)), [&](int64_t begin, int64_t end) {
    for (int64_t pl = begin; pl < end; ++pl) {
      T* gp = out + pl * H * W;
      if (disjoint_2x2) {  // every element of gx written once, in order, instead of zero-fill and scatter
        max_unpool_2x2(g + pl * OH * OW, indices + pl * OH * OW, gp, H, OH, OW);
        continue;
      }
      std::fill(gp, gp + H * W, T(0));
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t o = pl * OH * OW + oh * OW + ow;
          if (op == PoolOp::max) {
            gp[indices[o]] += g[o];
          } else {
            const Window win = window(p, H, W, OH, OW, oh, ow);
            const T share = g[o] / static_cast<T>(win.divisor);
            for (int64_t h = win.h0; h < win.h1; ++h)
              for (int64_t w = win.w0; w < win.w1; ++w) gp[h * W + w] += share;
          }
        }
    }
  });
}

}  // namespace

void CpuBackend::pool2d_forward(PoolOp op, const TensorArg& x, const TensorArg& y, const TensorArg* indices,
                                const Pool2dParams& p) {
  const checks::PoolDims d = checks::check_pool2d_forward(op, x, y, indices, p);
  dispatch_floating(x.dtype, "pool2d", [&](auto tag) {
    pool_forward<decltype(tag)>(op, d, x, y, ptr_or_null<int64_t>(indices), p);
  });
}

void CpuBackend::pool2d_backward(PoolOp op, const TensorArg& grad_y, const TensorArg* indices, const TensorArg& grad_x,
                                 const Pool2dParams& p) {
  const checks::PoolDims d = checks::check_pool2d_backward(op, grad_y, indices, grad_x, p);
  dispatch_floating(grad_x.dtype, "pool2d_backward", [&](auto tag) {
    pool_backward<decltype(tag)>(op, d, grad_y, ptr_or_null<int64_t>(indices), grad_x, p);
  });
}

}  // namespace ember::cpu
