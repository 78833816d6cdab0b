#include "backends/cpu/conv_onednn.h"

#if EMBER_WITH_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "base/parallel.h"
#include "backends/cpu/signal_guard.h"
#include "base/log.h"

namespace ember::cpu {
namespace {

using dnnl::memory;
using tag = memory::format_tag;

struct Context {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
};
Context& context() {
  static Context c;
  return c;
}

// Everything that determines a primitive: the shapes and the parameters.
using Key = std::tuple<int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                       int64_t, int64_t, int64_t, int64_t, bool>;

struct Descs {
  memory::desc src, weights, bias, dst;
  memory::dims strides, dilates, pad_l, pad_r;
};

Descs descs(const TensorArg& x, const TensorArg& w, const TensorArg& y, const Conv2dParams& p) {
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3], O = w.shape[0], KH = w.shape[2],
                KW = w.shape[3], OH = y.shape[2], OW = y.shape[3], G = p.groups;
  const auto f32 = memory::data_type::f32;
  Descs d;
  d.src = memory::desc({N, C, H, W}, f32, tag::nchw);
  d.weights = G == 1 ? memory::desc({O, C, KH, KW}, f32, tag::oihw) : memory::desc({G, O / G, C / G, KH, KW}, f32, tag::goihw);
  d.bias = memory::desc({O}, f32, tag::x);
  d.dst = memory::desc({N, O, OH, OW}, f32, tag::nchw);
  d.strides = {p.stride[0], p.stride[1]};
  d.dilates = {p.dilation[0] - 1, p.dilation[1] - 1};  // oneDNN counts the gaps
  d.pad_l = {p.padding[0], p.padding[1]};
  // Right padding that yields PyTorch's output size (floor division may leave input rows unused).
  d.pad_r = {(OH - 1) * p.stride[0] + p.dilation[0] * (KH - 1) + 1 - H - p.padding[0],
             (OW - 1) * p.stride[1] + p.dilation[1] * (KW - 1) + 1 - W - p.padding[1]};
  return d;
}

// `slot`: the thread slot that uses the entry's scratch memories (thread_slot()). The OpenMP team size in effect
// is part of the key too: oneDNN sizes a primitive's work split when it is created and must execute it with
// the same number of threads.
Key key(int kind, const TensorArg& x, const TensorArg& w, const TensorArg& y, const Conv2dParams& p, bool bias) {
  const int64_t slot = int64_t{thread_slot()} * 4096 + OpenMpTeam::size();
  return {kind, x.shape[0], x.shape[1], x.shape[2], x.shape[3], w.shape[0], w.shape[2], w.shape[3], y.shape[2], y.shape[3],
          p.stride[0] * 1000 + p.stride[1], p.padding[0] * 1000 + p.padding[1], p.dilation[0] * 1000 + p.dilation[1],
          p.groups, slot, bias};
}

// Primitives get their scratchpad from the caller (one per cache entry, so per thread slot): in the library's
// default mode all primitives share one global scratchpad (Debian's oneDNN is not built with
// DNNL_ENABLE_CONCURRENT_EXEC), and chunks of a batch run on several threads at once (onednn_conv2d_forward).
dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// A reorder between two layouts, created once (with its scratchpad) and run on any memories of those layouts.
struct Reorder {
  dnnl::primitive prim;
  memory scratchpad;  // null when the reorder needs none
  Reorder() = default;
  Reorder(const memory::desc& from, const memory::desc& to, const dnnl::engine& eng) {
    const dnnl::reorder::primitive_desc pd(eng, from, eng, to, user_scratchpad());
    prim = dnnl::reorder(pd);
    if (pd.scratchpad_desc().get_size() > 0) scratchpad = memory(pd.scratchpad_desc(), eng);
  }
  void run(dnnl::stream& s, const memory& from, const memory& to) const {
    std::unordered_map<int, memory> args = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    if (scratchpad) args[DNNL_ARG_SCRATCHPAD] = scratchpad;
    prim.execute(s, args);
  }
};

// An argument in the layout a primitive wants: when that differs from the plain (caller's) layout, a
// cached buffer in the wanted layout, filled (in) or emptied (back) by a cached reorder.
struct Scratch {
  memory wanted;  // null when the plain layout is what the primitive wants
  Reorder to_wanted, to_plain;
  Scratch() = default;
  Scratch(const memory::desc& want, const memory::desc& plain, const dnnl::engine& eng) {
    if (want == plain) return;
    wanted = memory(want, eng);
    to_wanted = Reorder(plain, want, eng);
    to_plain = Reorder(want, plain, eng);
  }
  memory in(dnnl::stream& s, const memory& plain) const {
    if (!wanted) return plain;
    to_wanted.run(s, plain, wanted);
    return wanted;
  }
  memory out(const memory& plain) const { return wanted ? wanted : plain; }
  void back(dnnl::stream& s, const memory& plain) const {
    if (wanted) to_plain.run(s, wanted, plain);
  }
};

// A forward primitive and its arguments in its preferred (blocked) layouts, kept with it so that no call
// allocates.
struct Cached {
  std::mutex in_use;  // held while a call uses the scratch memories
  dnnl::primitive forward;
  Scratch src, weights, dst;
  memory scratchpad;
};

struct Backward {
  std::mutex in_use;
  dnnl::primitive data, weights;
  memory data_scratchpad, weights_scratchpad;
  Scratch data_diff_dst, data_weights, data_diff_src, w_src, w_diff_dst, w_diff_weights;
};

// The layout the weights primitive wants grad_y in (the plain one when it needs no reorder).
memory::desc weights_diff_dst_desc(const Backward& c, const memory& plain) {
  return c.w_diff_dst.wanted ? c.w_diff_dst.wanted.get_desc() : plain.get_desc();
}

std::mutex g_mutex;  // guards the two maps (their nodes never move) and the primitives' creation
std::map<Key, Backward>& backward_cache() {
  static std::map<Key, Backward> c;
  return c;
}
std::map<Key, Cached>& cache() {
  static std::map<Key, Cached> c;
  return c;
}

dnnl::convolution_forward::primitive_desc forward_pd(Descs d, bool bias, bool any_layout = false) {
  if (any_layout) {  // let oneDNN pick the blocked layouts its fastest kernels want
    d.src = memory::desc(d.src.dims(), memory::data_type::f32, tag::any);
    d.weights = memory::desc(d.weights.dims(), memory::data_type::f32, tag::any);
    d.dst = memory::desc(d.dst.dims(), memory::data_type::f32, tag::any);
  }
  const auto desc = bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                                           d.src, d.weights, d.bias, d.dst, d.strides, d.dilates, d.pad_l, d.pad_r)
                         : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                                           d.src, d.weights, d.dst, d.strides, d.dilates, d.pad_l, d.pad_r);
  return {desc, user_scratchpad(), context().engine};
}

memory mem(const memory::desc& md, const TensorArg& a) { return memory(md, context().engine, a.data); }

bool usable(const TensorArg& x) { return x.dtype == DType::f32; }

// One oneDNN call over the whole of x (a batch chunk when split).
bool forward_whole(const TensorArg& x, const TensorArg& w, const TensorArg* bias, const TensorArg& y,
                   const Conv2dParams& p) {
  try {
    const AsyncSignalsBlocked no_signals;  // signal_guard.h: some oneDNN kernels move RSP into the heap
    const OpenMpTeam team;  // before the primitive is created: it is made for this team size
    const Descs d = descs(x, w, y, p);
    std::unique_lock lock(g_mutex);
    Cached& c = cache()[key(0, x, w, y, p, bias != nullptr)];
    const std::lock_guard using_it(c.in_use);  // the scratch memories belong to one call at a time
    auto& eng = context().engine;
    if (!c.forward) {
      const auto pd = forward_pd(d, bias != nullptr, /*any_layout=*/true);
      c.forward = dnnl::convolution_forward(pd);
      c.src = Scratch(pd.src_desc(), d.src, eng);
      c.weights = Scratch(pd.weights_desc(), d.weights, eng);
      c.dst = Scratch(pd.dst_desc(), d.dst, eng);
      c.scratchpad = memory(pd.scratchpad_desc(), eng);
    }
    lock.unlock();
    dnnl::stream s(eng);
    const memory dst = mem(d.dst, y);
    std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, c.src.in(s, mem(d.src, x))},
                                            {DNNL_ARG_WEIGHTS, c.weights.in(s, mem(d.weights, w))},
                                            {DNNL_ARG_DST, c.dst.out(dst)},
                                            {DNNL_ARG_SCRATCHPAD, c.scratchpad}};
    if (bias != nullptr) args[DNNL_ARG_BIAS] = mem(d.bias, *bias);
    c.forward.execute(s, args);
    c.dst.back(s, dst);
    s.wait();
    return true;
  } catch (const dnnl::error& e) {
    logger().debug("conv2d: oneDNN declined ({}); using im2col + GEMM", e.what());
    return false;
  }
}

bool backward_whole(const TensorArg& x, const TensorArg& w, const TensorArg& grad_y, const TensorArg* grad_x,
                    const TensorArg* grad_w, const TensorArg* grad_bias, const Conv2dParams& p) {
  try {
    const AsyncSignalsBlocked no_signals;  // signal_guard.h: some oneDNN kernels move RSP into the heap
    const OpenMpTeam team;  // before the primitives are created: they are made for this team size
    const Descs d = descs(x, w, grad_y, p);
    const bool with_bias = grad_bias != nullptr;
    std::unique_lock lock(g_mutex);
    Backward& c = backward_cache()[key(1, x, w, grad_y, p, with_bias)];
    const std::lock_guard using_it(c.in_use);
    auto& eng = context().engine;
    if (!c.data) {
      const auto fwd = forward_pd(d, with_bias, /*any_layout=*/true);
      Descs any = d;
      any.src = memory::desc(d.src.dims(), memory::data_type::f32, tag::any);
      any.weights = memory::desc(d.weights.dims(), memory::data_type::f32, tag::any);
      any.dst = memory::desc(d.dst.dims(), memory::data_type::f32, tag::any);
      const dnnl::convolution_backward_data::primitive_desc data_pd(
          dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, any.src, any.weights, any.dst,
                                                d.strides, d.dilates, d.pad_l, d.pad_r),
          user_scratchpad(), eng, fwd);
      const auto wdesc = with_bias ? dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, any.src,
                                                                              any.weights, d.bias, any.dst, d.strides,
                                                                              d.dilates, d.pad_l, d.pad_r)
                                   : dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, any.src,
                                                                              any.weights, any.dst, d.strides, d.dilates,
                                                                              d.pad_l, d.pad_r);
      const dnnl::convolution_backward_weights::primitive_desc weights_pd(wdesc, user_scratchpad(), eng, fwd);
      c.data = dnnl::convolution_backward_data(data_pd);
      c.weights = dnnl::convolution_backward_weights(weights_pd);
      c.data_scratchpad = memory(data_pd.scratchpad_desc(), eng);
      c.weights_scratchpad = memory(weights_pd.scratchpad_desc(), eng);
      c.data_diff_dst = Scratch(data_pd.diff_dst_desc(), d.dst, eng);
      c.data_weights = Scratch(data_pd.weights_desc(), d.weights, eng);
      c.data_diff_src = Scratch(data_pd.diff_src_desc(), d.src, eng);
      c.w_src = Scratch(weights_pd.src_desc(), d.src, eng);
      c.w_diff_dst = Scratch(weights_pd.diff_dst_desc(), d.dst, eng);
      c.w_diff_weights = Scratch(weights_pd.diff_weights_desc(), d.weights, eng);
    }
    lock.unlock();
    dnnl::stream s(eng);
    const memory gy = mem(d.dst, grad_y);
    memory gy_data;  // grad_y in the data primitive's layout, reused by the weights primitive when equal
    if (grad_x != nullptr) {
      const memory gx = mem(d.src, *grad_x);
      gy_data = c.data_diff_dst.in(s, gy);
      c.data.execute(s, {{DNNL_ARG_DIFF_DST, gy_data},
                         {DNNL_ARG_WEIGHTS, c.data_weights.in(s, mem(d.weights, w))},
                         {DNNL_ARG_DIFF_SRC, c.data_diff_src.out(gx)},
                         {DNNL_ARG_SCRATCHPAD, c.data_scratchpad}});
      c.data_diff_src.back(s, gx);
    }
    if (grad_w != nullptr || with_bias) {
      // oneDNN computes the weight gradient with the bias gradient; when only the latter is wanted the
      // former goes to the cached scratch (or a temporary when the layouts are plain).
      std::vector<float> unused;
      memory gw = grad_w != nullptr ? mem(d.weights, *grad_w)
                                    : (unused.resize(d.weights.get_size() / sizeof(float)), memory(d.weights, eng, unused.data()));
      std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, c.w_src.in(s, mem(d.src, x))},
                                              {DNNL_ARG_DIFF_DST, gy_data && gy_data.get_desc() == weights_diff_dst_desc(c, gy)
                                                                      ? gy_data
                                                                      : c.w_diff_dst.in(s, gy)},
                                              {DNNL_ARG_DIFF_WEIGHTS, c.w_diff_weights.out(gw)}};
      if (with_bias) args[DNNL_ARG_DIFF_BIAS] = mem(d.bias, *grad_bias);
      args[DNNL_ARG_SCRATCHPAD] = c.weights_scratchpad;
      c.weights.execute(s, args);
      c.w_diff_weights.back(s, gw);
    }
    s.wait();
    return true;
  } catch (const dnnl::error& e) {
    logger().debug("conv2d backward: oneDNN declined ({}); using im2col + GEMM", e.what());
    return false;
  }
}

// Batch chunks a call is split into across Ember's pool, each one single-threaded oneDNN call (an OpenMpTeam
// inside a region is one thread): oneDNN's OpenMP regions would otherwise wait at their end for every thread,
// a descheduled one included (parallel.h). One chunk (a batch of one, one thread, a nested call): one call
// with oneDNN's own threading.
int64_t batch_chunks(int64_t n) {
  if (n < 2 || !can_parallelize()) return 1;
  return std::min<int64_t>(n, int64_t{num_threads()} * pool_detail::kChunksPerThread);
}

// Images [n0, n0 + count) of a batch-major operand.
TensorArg batch_slice(const TensorArg& t, int64_t n0, int64_t count) {
  TensorArg s = t;
  s.shape[0] = count;
  s.data = t.ptr<float>() + n0 * t.strides[0];
  return s;
}

}  // namespace

bool onednn_available() { return true; }

bool onednn_conv2d_forward(const TensorArg& x, const TensorArg& w, const TensorArg* bias, const TensorArg& y,
                           const Conv2dParams& p) {
  if (!usable(x)) return false;
  const int64_t N = x.shape[0];
  const Ranges split(N, batch_chunks(N));
  if (split.chunks < 2) return forward_whole(x, w, bias, y, p);
  std::atomic<bool> ok{true};
  parallel_chunks(split.chunks, [&](int64_t c) {
    const int64_t n0 = split.begin(c), count = split.end(c) - n0;
    if (!forward_whole(batch_slice(x, n0, count), w, bias, batch_slice(y, n0, count), p)) ok = false;
  });
  return ok;
}

bool onednn_conv2d_backward(const TensorArg& x, const TensorArg& w, const TensorArg& grad_y, const TensorArg* grad_x,
                            const TensorArg* grad_w, const TensorArg* grad_bias, const Conv2dParams& p) {
  if (!usable(x)) return false;
  const int64_t N = x.shape[0];
  const Ranges split(N, batch_chunks(N));
  if (split.chunks < 2) return backward_whole(x, w, grad_y, grad_x, grad_w, grad_bias, p);
  // Each chunk's weight and bias gradients go to a buffer of its own, summed in chunk order afterwards: the
  // result does not depend on which thread ran which chunk.
  const int64_t wn = grad_w != nullptr ? grad_w->numel() : 0, bn = grad_bias != nullptr ? grad_bias->numel() : 0;
  thread_local std::vector<float> buffer;  // grows to the largest need, then no allocation per call
  buffer.resize(static_cast<size_t>(split.chunks * (wn + bn)));
  float* const partial = buffer.data();  // (a thread_local named in the lambdas would be each thread's own)
  std::atomic<bool> ok{true};
  parallel_chunks(split.chunks, [&](int64_t c) {
    const int64_t n0 = split.begin(c), count = split.end(c) - n0;
    const TensorArg xc = batch_slice(x, n0, count), gyc = batch_slice(grad_y, n0, count);
    TensorArg gxc, gwc, gbc;
    if (grad_x != nullptr) gxc = batch_slice(*grad_x, n0, count);
    if (grad_w != nullptr) (gwc = *grad_w).data = partial + c * (wn + bn);
    if (grad_bias != nullptr) (gbc = *grad_bias).data = partial + c * (wn + bn) + wn;
    if (!backward_whole(xc, w, gyc, grad_x != nullptr ? &gxc : nullptr, grad_w != nullptr ? &gwc : nullptr,
                        grad_bias != nullptr ? &gbc : nullptr, p))
      ok = false;
  });
  if (!ok) return false;
  float* const gw = ptr_or_null<float>(grad_w);
  float* const gb = ptr_or_null<float>(grad_bias);
  parallel_for(wn + bn, kGrainSize, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float acc = 0;
      for (int64_t c = 0; c < split.chunks; ++c) acc += partial[c * (wn + bn) + i];
      (i < wn ? gw[i] : gb[i - wn]) = acc;
    }
  });
  return true;
}

}  // namespace ember::cpu

#else  // no oneDNN in this build

namespace ember::cpu {
bool onednn_available() { return false; }
bool onednn_conv2d_forward(const TensorArg&, const TensorArg&, const TensorArg*, const TensorArg&, const Conv2dParams&) {
  return false;
}
bool onednn_conv2d_backward(const TensorArg&, const TensorArg&, const TensorArg&, const TensorArg*, const TensorArg*,
                            const TensorArg*, const Conv2dParams&) {
  return false;
}
}  // namespace ember::cpu

#endif
