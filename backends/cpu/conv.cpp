// conv2d on the CPU: im2col + OpenBLAS GEMM over chunks of images whose column buffer stays in cache.
// With at least `threads` chunks, each thread takes whole chunks (single-threaded GEMM inside the
// parallel region); otherwise chunks run in turn with multi-threaded GEMM.
//
// Shapes (NCHW): x [N, C, H, W], w [O, C/G, KH, KW], y [N, O, OH, OW]; per group g the GEMM is
//   y_g [O/G, OH·OW] = w_g [O/G, CKK] · col_g [CKK, OH·OW],  CKK = (C/G)·KH·KW.
#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/checks.h"
#include "backends/cpu/conv_onednn.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/openblas.h"
#include "base/parallel.h"

namespace ember::cpu {
namespace {

struct ConvGeometry {
  int64_t N, C, H, W, O, KH, KW, OH, OW, G, Cg, Og, CKK, OHW;
  int64_t sh, sw, ph, pw, dh, dw;
  bool col_is_input;  // 1×1 kernel, stride 1, no padding: the column matrix is the input itself

  ConvGeometry(const TensorArg& x, const TensorArg& w, const TensorArg& y, const Conv2dParams& p)
      : N(x.shape[0]), C(x.shape[1]), H(x.shape[2]), W(x.shape[3]), O(w.shape[0]), KH(w.shape[2]), KW(w.shape[3]),
        OH(y.shape[2]), OW(y.shape[3]), G(p.groups), Cg(C / G), Og(O / G), CKK(Cg * KH * KW), OHW(OH * OW),
        sh(p.stride[0]), sw(p.stride[1]), ph(p.padding[0]), pw(p.padding[1]), dh(p.dilation[0]), dw(p.dilation[1]),
        col_is_input(KH == 1 && KW == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0) {}

  // Output columns ow whose input column ow·sw - pw + kw·dw lies in [0, W): [lo, hi).
  void valid_range(int64_t k_off, int64_t extent, int64_t stride, int64_t pad, int64_t out, int64_t& lo,
                   int64_t& hi) const {
    const int64_t shift = pad - k_off;  // i = o·stride - shift must be in [0, extent)
    lo = shift <= 0 ? 0 : (shift + stride - 1) / stride;
    hi = extent - 1 + shift < 0 ? 0 : (extent - 1 + shift) / stride + 1;
    lo = std::min(lo, out);
    hi = std::clamp(hi, lo, out);
  }
};

// col [CKK, OH·OW] ← x_g [Cg, H, W]; rows of col are `ld` apart (ld ≥ OH·OW: several images side by side).
template <typename T>
void im2col(const ConvGeometry& g, const T* x, T* col, int64_t ld) {
  for (int64_t c = 0; c < g.Cg; ++c)
    for (int64_t kh = 0; kh < g.KH; ++kh)
      for (int64_t kw = 0; kw < g.KW; ++kw) {
        T* row = col + ((c * g.KH + kh) * g.KW + kw) * ld;
        int64_t w_lo, w_hi;
        g.valid_range(kw * g.dw, g.W, g.sw, g.pw, g.OW, w_lo, w_hi);
        for (int64_t oh = 0; oh < g.OH; ++oh) {
          T* out = row + oh * g.OW;
          const int64_t ih = oh * g.sh - g.ph + kh * g.dh;
          if (ih < 0 || ih >= g.H) {
            std::fill(out, out + g.OW, T(0));
            continue;
          }
          const T* in = x + (c * g.H + ih) * g.W + kw * g.dw - g.pw;  // in[ow·sw] is column ow
          std::fill(out, out + w_lo, T(0));
          if (g.sw == 1) std::memcpy(out + w_lo, in + w_lo, (w_hi - w_lo) * sizeof(T));
          else
            for (int64_t ow = w_lo; ow < w_hi; ++ow) out[ow] = in[ow * g.sw];
          std::fill(out + w_hi, out + g.OW, T(0));
        }
      }
}

// x_g [Cg, H, W] += col [CKK, OH·OW] (the adjoint of im2col), rows `ld` apart.
template <typename T>
void col2im(const ConvGeometry& g, const T* col, T* x, int64_t ld) {
  for (int64_t c = 0; c < g.Cg; ++c)
    for (int64_t kh = 0; kh < g.KH; ++kh)
      for (int64_t kw = 0; kw < g.KW; ++kw) {
        const T* row = col + ((c * g.KH + kh) * g.KW + kw) * ld;
        int64_t w_lo, w_hi;
        g.valid_range(kw * g.dw, g.W, g.sw, g.pw, g.OW, w_lo, w_hi);
        for (int64_t oh = 0; oh < g.OH; ++oh) {
          const int64_t ih = oh * g.sh - g.ph + kh * g.dh;
          if (ih < 0 || ih >= g.H) continue;
          const T* in = row + oh * g.OW;
          T* out = x + (c * g.H + ih) * g.W + kw * g.dw - g.pw;
          for (int64_t ow = w_lo; ow < w_hi; ++ow) out[ow * g.sw] += in[ow];
        }
      }
}

// Images are processed in chunks of k side by side — col [CKK, k·OH·OW] — so narrow images still make a
// GEMM wide enough for OpenBLAS, while a chunk's buffers (~256 KiB) stay in cache. 1×1 convolutions
// use the input as the column matrix directly, one image at a time.
int64_t chunk_images(const ConvGeometry& g) {
  if (g.col_is_input) return 1;
  // Measured (bench_nn): 64K elements is as fast as one image per GEMM on the Fashion-MNIST CNN's convs and
  // faster for narrow images; larger chunks fall out of cache and lose up to 40%.
  constexpr int64_t kTargetElements = 1 << 16;
  return std::clamp<int64_t>(kTargetElements / std::max<int64_t>(1, (g.CKK + g.Og) * g.OHW), 1, g.N);
}

// Runs fn(first_image, count, thread_slot) over chunks of k images: in parallel over chunks when there
// are enough of them for every thread, else one chunk after another (GEMM then uses all threads).
template <typename Fn>
void for_each_chunk(int64_t n_images, int64_t k, Fn&& fn) {
  const int64_t chunks = (n_images + k - 1) / k;
  const auto run = [&](int64_t c, int slot) { fn(c * k, std::min(k, n_images - c * k), slot); };
  if (chunks >= num_threads() && num_threads() > 1) {
    parallel_for(chunks, 1, [&](int64_t begin, int64_t end) {
      const int slot = thread_slot();
      for (int64_t c = begin; c < end; ++c) run(c, slot);
    });
  } else {
    enable_flush_denormal_on_this_thread();
    for (int64_t c = 0; c < chunks; ++c) run(c, 0);
  }
}

template <typename T>
void conv_forward(CpuBackend& be, const ConvGeometry& g, const T* x, const T* w, const T* bias, T* y) {
  const int slots = num_threads();
  const int64_t k = chunk_images(g), ld = k * g.OHW;
  // Per slot: the column matrix [CKK, k·OHW] and the GEMM result [Og, k·OHW].
  const int64_t per_slot = g.col_is_input ? 0 : (g.CKK + g.Og) * ld;
  CpuBackend::Workspace ws(be, sizeof(T) * per_slot * slots);
  for_each_chunk(g.N, k, [&](int64_t n0, int64_t count, int slot) {
    T* col = ws.as<T>() + slot * per_slot;
    T* out = col + g.CKK * ld;
    for (int64_t gi = 0; gi < g.G; ++gi) {
      const T* wg = w + gi * g.Og * g.CKK;
      if (g.col_is_input) {  // count == 1: y_g = w_g · x_g straight into the output
        const T* xg = x + (n0 * g.C + gi * g.Cg) * g.H * g.W;
        gemm<T>(false, false, g.Og, g.OHW, g.CKK, T(1), wg, g.CKK, xg, g.OHW, T(0), y + (n0 * g.O + gi * g.Og) * g.OHW,
                g.OHW);
      } else {
        for (int64_t j = 0; j < count; ++j) im2col(g, x + ((n0 + j) * g.C + gi * g.Cg) * g.H * g.W, col + j * g.OHW, ld);
        gemm<T>(false, false, g.Og, count * g.OHW, g.CKK, T(1), wg, g.CKK, col, ld, T(0), out, ld);
      }
      for (int64_t j = 0; j < count; ++j)
        for (int64_t o = 0; o < g.Og; ++o) {
          T* dst = y + ((n0 + j) * g.O + gi * g.Og + o) * g.OHW;
          const T b = bias != nullptr ? bias[gi * g.Og + o] : T(0);
          if (g.col_is_input) {
            if (bias != nullptr)
              for (int64_t i = 0; i < g.OHW; ++i) dst[i] += b;
          } else {
            const T* src = out + o * ld + j * g.OHW;
            for (int64_t i = 0; i < g.OHW; ++i) dst[i] = src[i] + b;
          }
        }
    }
  });
}

template <typename T>
void conv_backward(CpuBackend& be, const ConvGeometry& g, const T* x, const T* w, const T* gy, T* gx, T* gw, T* gb) {
  const int slots = num_threads();
  const int64_t k = chunk_images(g), ld = k * g.OHW;
  // Per slot: col of x [CKK, ld], the gathered output gradient [Og, ld], the column gradient [CKK, ld].
  const int64_t per_slot = g.col_is_input ? 0 : (2 * g.CKK + g.Og) * ld;
  CpuBackend::Workspace cols(be, sizeof(T) * per_slot * slots);
  CpuBackend::Workspace partial(be, gw != nullptr ? sizeof(T) * g.O * g.CKK * slots : 0);
  if (gw != nullptr) std::fill(partial.as<T>(), partial.as<T>() + g.O * g.CKK * slots, T(0));
  for_each_chunk(g.N, k, [&](int64_t n0, int64_t count, int slot) {
    T* col = cols.as<T>() + slot * per_slot;
    T* gy_chunk = col + g.CKK * ld;
    T* grad_col = gy_chunk + g.Og * ld;
    if (gx != nullptr) std::fill(gx + n0 * g.C * g.H * g.W, gx + (n0 + count) * g.C * g.H * g.W, T(0));
    for (int64_t gi = 0; gi < g.G; ++gi) {
      const T* wg = w + gi * g.Og * g.CKK;
      const T* xg = x + (n0 * g.C + gi * g.Cg) * g.H * g.W;
      const T* gyg = gy + (n0 * g.O + gi * g.Og) * g.OHW;
      T* gxg = gx != nullptr ? gx + (n0 * g.C + gi * g.Cg) * g.H * g.W : nullptr;
      if (g.col_is_input) {  // count == 1
        if (gw != nullptr)
          gemm<T>(false, true, g.Og, g.CKK, g.OHW, T(1), gyg, g.OHW, xg, g.OHW, T(1),
                  partial.as<T>() + slot * g.O * g.CKK + gi * g.Og * g.CKK, g.CKK);
        if (gx != nullptr) gemm<T>(true, false, g.CKK, g.OHW, g.Og, T(1), wg, g.CKK, gyg, g.OHW, T(0), gxg, g.OHW);
        continue;
      }
      for (int64_t j = 0; j < count; ++j)  // gather gy_g of each image side by side: [Og, count·OHW]
        for (int64_t o = 0; o < g.Og; ++o)
          std::memcpy(gy_chunk + o * ld + j * g.OHW, gyg + (j * g.O + o) * g.OHW, g.OHW * sizeof(T));
      if (gw != nullptr) {  // partial_g [Og, CKK] += gy_chunk · colᵀ
        for (int64_t j = 0; j < count; ++j) im2col(g, xg + j * g.C * g.H * g.W, col + j * g.OHW, ld);
        gemm<T>(false, true, g.Og, g.CKK, count * g.OHW, T(1), gy_chunk, ld, col, ld, T(1),
                partial.as<T>() + slot * g.O * g.CKK + gi * g.Og * g.CKK, g.CKK);
      }
      if (gx != nullptr) {  // grad_col [CKK, count·OHW] = w_gᵀ · gy_chunk, scattered back image by image
        gemm<T>(true, false, g.CKK, count * g.OHW, g.Og, T(1), wg, g.CKK, gy_chunk, ld, T(0), grad_col, ld);
        for (int64_t j = 0; j < count; ++j) col2im(g, grad_col + j * g.OHW, gxg + j * g.C * g.H * g.W, ld);
      }
    }
  });
  if (gw != nullptr) {  // sum the partials in slot order
    const int64_t len = g.O * g.CKK;
    std::copy(partial.as<T>(), partial.as<T>() + len, gw);
    for (int s = 1; s < slots; ++s)
      for (int64_t i = 0; i < len; ++i) gw[i] += partial.as<T>()[s * len + i];
  }
  if (gb != nullptr) {
    parallel_for(g.O, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, g.N * g.OHW)), [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) {
        double acc = 0;
        for (int64_t n = 0; n < g.N; ++n) {
          const T* row = gy + (n * g.O + o) * g.OHW;
          for (int64_t i = 0; i < g.OHW; ++i) acc += row[i];
        }
        gb[o] = static_cast<T>(acc);
      }
    });
  }
}

}  // namespace

void CpuBackend::conv2d_forward(const TensorArg& x, const TensorArg& w, const TensorArg* bias, const TensorArg& y,
                                const Conv2dParams& p) {
  checks::check_conv2d_forward(x, w, bias, y, p);
  if (onednn_conv2d_forward(x, w, bias, y, p)) return;
  const ConvGeometry g(x, w, y, p);
  dispatch_floating(x.dtype, "conv2d", [&](auto tag) {
    using T = decltype(tag);
    conv_forward<T>(*this, g, x.ptr<T>(), w.ptr<T>(), ptr_or_null<const T>(bias), y.ptr<T>());
  });
}

void CpuBackend::conv2d_backward(const TensorArg& x, const TensorArg& w, const TensorArg& grad_y,
                                 const TensorArg* grad_x, const TensorArg* grad_w, const TensorArg* grad_bias,
                                 const Conv2dParams& p) {
  checks::check_conv2d_backward(x, w, grad_y, grad_x, grad_w, grad_bias, p);
  if (onednn_conv2d_backward(x, w, grad_y, grad_x, grad_w, grad_bias, p)) return;
  const ConvGeometry g(x, w, grad_y, p);
  dispatch_floating(x.dtype, "conv2d_backward", [&](auto tag) {
    using T = decltype(tag);
    conv_backward<T>(*this, g, x.ptr<T>(), w.ptr<T>(), grad_y.ptr<T>(), ptr_or_null<T>(grad_x),
                     ptr_or_null<T>(grad_w), ptr_or_null<T>(grad_bias));
  });
}

}  // namespace ember::cpu
