// ctc_loss: PyTorch's CPU algorithm (LossCTC.cpp) — the alpha recursion in log space forward, the beta
// recursion and the posterior of each label backward — as one autograd node. It runs on the host in f64
// whatever the input's dtype: a CUDA input is copied to the CPU and its gradient copied back (no GPU kernel
// yet; the recursions are sequential in time anyway).
//
// Shapes: T input steps, N batch, C classes (blank included), S the longest target, L one sample's target
// length; the extended target l' = (blank, l1, blank, l2, ..., lL, blank) has 2L + 1 positions s.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "autograd/node.h"
#include "core/raw.h"
#include "nn/functional.h"

namespace ember::nn::functional {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// log(e^a + e^b + e^c) without overflow (-inf terms contribute nothing; all -inf gives -inf).
double log_add3(double a, double b, double c) {
  double m = std::max(a, std::max(b, c));
  if (m == kNegInf) m = 0;
  return std::log(std::exp(a - m) + std::exp(b - m) + std::exp(c - m)) + m;
}
double log_add(double a, double b) {
  if (a == kNegInf) return b;
  if (b == kNegInf) return a;
  const double m = std::max(a, b);
  return std::log1p(std::exp(-std::abs(a - b))) + m;
}

// The problem on the host: log_probs [T, N, C] in f64, row-major; every sample's target and lengths.
struct CtcProblem {
  int64_t T = 0, N = 0, C = 0, blank = 0;
  std::vector<double> lp;                   // [T, N, C]
  std::vector<std::vector<int64_t>> target;  // one per sample, its L labels
  std::vector<int64_t> input_length;
  double at(int64_t t, int64_t n, int64_t c) const { return lp[static_cast<size_t>((t * N + n) * C + c)]; }
  int64_t prime(int64_t n, int64_t s) const {  // the label at extended position s
    return s % 2 == 0 ? blank : target[static_cast<size_t>(n)][static_cast<size_t>(s / 2)];
  }
};

// log alpha of sample n: [input_length, 2L + 1], PyTorch's recursion.
std::vector<double> ctc_alpha(const CtcProblem& p, int64_t n) {
  const int64_t L = static_cast<int64_t>(p.target[static_cast<size_t>(n)].size()), S2 = 2 * L + 1;
  const int64_t Tn = p.input_length[static_cast<size_t>(n)];
  std::vector<double> a(static_cast<size_t>(Tn * S2), kNegInf);
  if (Tn == 0) return a;
  a[0] = p.at(0, n, p.blank);
  if (L > 0) a[1] = p.at(0, n, p.prime(n, 1));
  for (int64_t t = 1; t < Tn; ++t) {
    const double* prev = &a[static_cast<size_t>((t - 1) * S2)];
    double* cur = &a[static_cast<size_t>(t * S2)];
    for (int64_t s = 0; s < S2; ++s) {
      const int64_t c = p.prime(n, s);
      const double a2 = s > 0 ? prev[s - 1] : kNegInf;
      const double a3 = s > 1 && p.prime(n, s - 2) != c ? prev[s - 2] : kNegInf;
      cur[s] = log_add3(prev[s], a2, a3) + p.at(t, n, c);
    }
  }
  return a;
}

// -log p(target | input) from alpha: the paths ending in the last label or the last blank.
double ctc_nll(const CtcProblem& p, int64_t n, const std::vector<double>& alpha) {
  const int64_t L = static_cast<int64_t>(p.target[static_cast<size_t>(n)].size()), S2 = 2 * L + 1;
  const int64_t Tn = p.input_length[static_cast<size_t>(n)];
  if (Tn == 0) return L == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  const double* last = &alpha[static_cast<size_t>((Tn - 1) * S2)];
  return L == 0 ? -last[0] : -log_add(last[S2 - 1], last[S2 - 2]);
}

struct CtcLossBackward : autograd::Node {
  CtcProblem p;
  std::vector<std::vector<double>> alpha;  // per sample
  std::vector<double> nll;
  bool zero_infinity = false;
  DType dtype = DType::f32;
  Device device;
  std::string_view name() const override { return "ctc_loss"; }
  void release() override {
    p.lp = {};
    alpha = {};
  }
  // PyTorch's gradient (ctc_loss_backward_cpu_template): for t < input_length,
  //   d/d lp[t, c] = (e^lp[t, c] - e^(log Σ_{s: l'_s = c} α_t(s)·β_t(s) + nll - lp[t, c])) · grad
  // and 0 beyond. NOTE: the e^lp term makes this the gradient for log_probs = log_softmax(logits) (it is what
  // the logits receive through log_softmax's backward, which then adds nothing); it is not the partial
  // derivative with respect to arbitrary log_probs — PyTorch's convention, kept.
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    if (!needs_grad(0)) return;
    const std::vector<double> grad_out = raw::contiguous(raw::to(raw::to(g, kCPU), DType::f64)).to_vector<double>();
    const int64_t T = p.T, N = p.N, C = p.C;
    std::vector<double> grad(static_cast<size_t>(T * N * C), 0.0);
    std::vector<double> lcab(static_cast<size_t>(C));
    for (int64_t n = 0; n < N; ++n) {
      const int64_t L = static_cast<int64_t>(p.target[static_cast<size_t>(n)].size()), S2 = 2 * L + 1;
      const int64_t Tn = p.input_length[static_cast<size_t>(n)];
      const double nl = nll[static_cast<size_t>(n)];
      if (Tn == 0 || (zero_infinity && std::isinf(nl))) continue;  // zeros
      const std::vector<double>& a = alpha[static_cast<size_t>(n)];
      std::vector<double> beta(static_cast<size_t>(S2), kNegInf), earlier(static_cast<size_t>(S2));
      beta[static_cast<size_t>(S2 - 1)] = p.at(Tn - 1, n, p.blank);
      if (L > 0) beta[static_cast<size_t>(S2 - 2)] = p.at(Tn - 1, n, p.prime(n, S2 - 2));
      for (int64_t t = Tn - 1; t >= 0; --t) {
        if (t < Tn - 1) {  // beta_t from beta_{t+1} (held in `beta`), then swapped in
          for (int64_t s = S2 - 1; s >= 0; --s) {
            const int64_t c = p.prime(n, s);
            const double b2 = s < S2 - 1 ? beta[static_cast<size_t>(s + 1)] : kNegInf;
            const double b3 = s < S2 - 2 && p.prime(n, s + 2) != c ? beta[static_cast<size_t>(s + 2)] : kNegInf;
            earlier[static_cast<size_t>(s)] = log_add3(beta[static_cast<size_t>(s)], b2, b3) + p.at(t, n, c);
          }
          std::swap(beta, earlier);
        }
        std::fill(lcab.begin(), lcab.end(), kNegInf);
        for (int64_t s = 0; s < S2; ++s) {
          const int64_t c = p.prime(n, s);
          lcab[static_cast<size_t>(c)] =
              log_add(lcab[static_cast<size_t>(c)], a[static_cast<size_t>(t * S2 + s)] + beta[static_cast<size_t>(s)]);
        }
        const double gr = grad_out[grad_out.size() == 1 ? 0 : static_cast<size_t>(n)];
        for (int64_t c = 0; c < C; ++c) {
          const double lp = p.at(t, n, c);
          grad[static_cast<size_t>((t * N + n) * C + c)] = (std::exp(lp) - std::exp(lcab[static_cast<size_t>(c)] + nl - lp)) * gr;
        }
      }
    }
    Tensor out = from_vector(grad, Shape{T, N, C});
    grad_inputs[0] = raw::to(raw::to(out, dtype), device).view(next[0].shape);
  }
};

std::vector<int64_t> host_ints(const Tensor& t, const char* what) {
  EMBER_CHECK(t.defined(), "ctc_loss: ", what, " is an undefined tensor");
  EMBER_CHECK(t.dtype() == DType::i64, "ctc_loss: ", what, " must be i64, got ", dtype_name(t.dtype()),
              "; convert with .to(DType::i64)");
  return raw::contiguous(raw::to(t, kCPU)).to_vector<int64_t>();
}

}  // namespace

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const std::vector<int64_t>& input_lengths,
                const std::vector<int64_t>& target_lengths, const CTCLossOptions& o) {
  EMBER_CHECK(log_probs.defined() && targets.defined(), "ctc_loss: log_probs and targets must be defined tensors");
  EMBER_CHECK(log_probs.dim() == 3 || log_probs.dim() == 2, "ctc_loss: expected log_probs [T, N, C] (or [T, C] ",
              "unbatched), got shape ", log_probs.shape());
  EMBER_CHECK(is_floating(log_probs.dtype()), "ctc_loss: log_probs must be floating, got ", dtype_name(log_probs.dtype()));
  const bool batched = log_probs.dim() == 3;
  const Tensor lp3 = batched ? log_probs : log_probs.unsqueeze(1);
  const int64_t T = lp3.size(0), N = lp3.size(1), C = lp3.size(2);
  EMBER_CHECK(o.blank >= 0 && o.blank < C, "ctc_loss: blank (", o.blank, ") must be a class in [0, ", C, ")");
  EMBER_CHECK(static_cast<int64_t>(input_lengths.size()) == N, "ctc_loss: input_lengths has ", input_lengths.size(),
              " entries, expected one per sample (", N, ")");
  EMBER_CHECK(static_cast<int64_t>(target_lengths.size()) == N, "ctc_loss: target_lengths has ",
              target_lengths.size(), " entries, expected one per sample (", N, ")");
  const std::vector<int64_t> flat = host_ints(targets, "targets");
  CtcProblem p;
  p.T = T, p.N = N, p.C = C, p.blank = o.blank;
  p.input_length = input_lengths;
  p.target.resize(static_cast<size_t>(N));
  // Padded [N, S] (batched) or all targets concatenated 1-D (sum of target_lengths).
  const bool padded = batched && targets.dim() == 2;
  EMBER_CHECK(padded || targets.dim() == 1, "ctc_loss: targets must be padded [N, S] or concatenated 1-D, got shape ",
              targets.shape());
  int64_t offset = 0, total = 0;
  for (int64_t n = 0; n < N; ++n) {
    const int64_t len = target_lengths[static_cast<size_t>(n)], in = input_lengths[static_cast<size_t>(n)];
    EMBER_CHECK(in >= 0 && in <= T, "ctc_loss: input_lengths[", n, "] = ", in, " must be in [0, T = ", T, "]");
    EMBER_CHECK(len >= 0, "ctc_loss: target_lengths[", n, "] = ", len, " is negative");
    total += len;
    if (padded) {
      EMBER_CHECK(len <= targets.size(1), "ctc_loss: target_lengths[", n, "] = ", len,
                  " exceeds the padded targets' length S = ", targets.size(1), " (targets ", targets.shape(), ")");
      offset = n * targets.size(1);
    }
    EMBER_CHECK(padded || total <= static_cast<int64_t>(flat.size()), "ctc_loss: the target_lengths sum to at least ",
                total, " but the concatenated targets hold ", flat.size());
    auto& tg = p.target[static_cast<size_t>(n)];
    tg.assign(flat.begin() + offset, flat.begin() + offset + len);
    for (int64_t c : tg)
      EMBER_CHECK(c >= 0 && c < C && c != o.blank, "ctc_loss: target label ", c, " of sample ", n,
                  " must be a class in [0, ", C, ") other than blank (", o.blank, ")");
    if (!padded) offset += len;
  }
  // The host copy in f64: the recursions run there.
  p.lp = raw::contiguous(raw::to(raw::to(lp3.detach(), kCPU), DType::f64)).to_vector<double>();
  std::vector<std::vector<double>> alpha(static_cast<size_t>(N));
  std::vector<double> nll(static_cast<size_t>(N)), value(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) {
    alpha[static_cast<size_t>(n)] = ctc_alpha(p, n);
    nll[static_cast<size_t>(n)] = ctc_nll(p, n, alpha[static_cast<size_t>(n)]);
    value[static_cast<size_t>(n)] = o.zero_infinity && std::isinf(nll[static_cast<size_t>(n)]) ? 0.0 : nll[static_cast<size_t>(n)];
  }
  Tensor losses = raw::to(raw::to(from_vector(value, Shape{N}), log_probs.dtype()), log_probs.device());
  if (auto node = autograd::make_node<CtcLossBackward>(log_probs)) {
    node->p = std::move(p);
    node->alpha = std::move(alpha);
    node->nll = std::move(nll);
    node->zero_infinity = o.zero_infinity;
    node->dtype = log_probs.dtype();
    node->device = log_probs.device();
    autograd::set_history(losses, std::move(node));
  }
  Tensor out;
  switch (o.reduction) {
    case Reduction::none: out = losses; break;
    case Reduction::sum: out = sum(losses); break;
    case Reduction::mean: {  // each loss over its target length (at least 1), then the mean
      std::vector<double> lens(target_lengths.begin(), target_lengths.end());
      for (double& l : lens) l = std::max(l, 1.0);
      const Tensor len = raw::to(raw::to(from_vector(lens, Shape{N}), log_probs.dtype()), log_probs.device());
      out = mean(losses / len);
      break;
    }
  }
  return batched || o.reduction != Reduction::none ? out : out.squeeze(0);
}

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, const CTCLossOptions& o) {
  return ctc_loss(log_probs, targets, host_ints(input_lengths, "input_lengths"),
                  host_ints(target_lengths, "target_lengths"), o);
}

}  // namespace ember::nn::functional
