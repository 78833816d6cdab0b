// Fused nn ops on the CPU: conv2d forward and forward+backward for the two convolutions of the Fashion-MNIST
// CNN (GFLOP/s, direct-convolution FLOPs: 2·N·O·OH·OW·C·KH·KW per pass), pooling, batch norm,
// cross entropy and an optimizer step. tools/bench_torch_nn.py measures the same ops in LibTorch (through
// Debian's python3-torch) for the side-by-side figures in docs/benchmarks.md.
#include <benchmark/benchmark.h>

#include <algorithm>

#include <ember/ember.h>

#include "nn/functional.h"

using namespace ember;
namespace F = ember::nn::functional;

namespace {

void conv_counters(benchmark::State& state, double flops_per_pass, int passes) {
  state.counters["GFLOP/s"] = benchmark::Counter(flops_per_pass * passes, benchmark::Counter::kIsIterationInvariantRate,
                                                 benchmark::Counter::kIs1000);
}

// args: N, C, H, O (3×3 kernel, padding 1)
void BM_Conv2dForward(benchmark::State& state) {
  const int64_t N = state.range(0), C = state.range(1), H = state.range(2), O = state.range(3);
  Generator gen(0);
  const Tensor x = randn({N, C, H, H}, {}, &gen), w = randn({O, C, 3, 3}, {}, &gen), b = randn({O}, {}, &gen);
  const auto o = F::Conv2dOptions().padding(1);
  for (auto _ : state) benchmark::DoNotOptimize(F::conv2d(x, w, b, o).data_ptr());
  conv_counters(state, 2.0 * N * O * H * H * C * 9, 1);
}
BENCHMARK(BM_Conv2dForward)->Args({64, 1, 28, 32})->Args({64, 32, 14, 64})->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Conv2dForwardBackward(benchmark::State& state) {
  const int64_t N = state.range(0), C = state.range(1), H = state.range(2), O = state.range(3);
  Generator gen(0);
  // The first layer of a network needs no input gradient; the second does: 2 or 3 passes of FLOPs.
  const bool input_grad = C > 1;
  Tensor x = randn({N, C, H, H}, {}, &gen), w = randn({O, C, 3, 3}, {}, &gen), b = randn({O}, {}, &gen);
  x.requires_grad_(input_grad);
  w.requires_grad_();
  b.requires_grad_();
  const auto o = F::Conv2dOptions().padding(1);
  const Tensor g = randn({N, O, H, H}, {}, &gen);
  for (auto _ : state) {
    F::conv2d(x, w, b, o).backward(g);
    benchmark::DoNotOptimize(w.grad().data_ptr());
    w.set_grad({});
    b.set_grad({});
    if (input_grad) x.set_grad({});
  }
  conv_counters(state, 2.0 * N * O * H * H * C * 9, input_grad ? 3 : 2);
}
BENCHMARK(BM_Conv2dForwardBackward)->Args({64, 1, 28, 32})->Args({64, 32, 14, 64})->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_MaxPool2d(benchmark::State& state) {
  const Tensor x = randn({64, 32, 28, 28});
  F::Pool2dOptions o;
  for (auto _ : state) benchmark::DoNotOptimize(F::max_pool2d(x, o).data_ptr());
  state.counters["GB/s"] = benchmark::Counter(x.numel() * 4.0 * 1.25 + x.numel() * 2.0,  // read x, write y + i64 indices
                                              benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_MaxPool2d)->Unit(benchmark::kMicrosecond)->UseRealTime();

// The CNN's first pool, forward and backward (the indices kept, the gradient spread back).
void BM_MaxPool2dForwardBackward(benchmark::State& state) {
  Tensor x = randn({64, 32, 28, 28}).requires_grad_();
  const Tensor g = randn({64, 32, 14, 14});
  for (auto _ : state) {
    F::max_pool2d(x, F::Pool2dOptions{}).backward(g);
    benchmark::DoNotOptimize(x.grad().data_ptr());
    x.set_grad({});
  }
}
BENCHMARK(BM_MaxPool2dForwardBackward)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_BatchNormTrainForward(benchmark::State& state) {
  const Tensor x = randn({64, 32, 28, 28});
  Tensor rm = zeros({32}), rv = ones({32}), w = ones({32}), b = zeros({32});
  for (auto _ : state) benchmark::DoNotOptimize(F::batch_norm(x, rm, rv, w, b, true).data_ptr());
  state.counters["GB/s"] = benchmark::Counter(x.numel() * 4.0 * 4,  // two statistics passes, read + write
                                              benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_BatchNormTrainForward)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_BatchNormTrainForwardBackward(benchmark::State& state) {
  Tensor x = randn({64, 32, 28, 28}).requires_grad_();
  Tensor rm = zeros({32}), rv = ones({32}), w = ones({32}).requires_grad_(), b = zeros({32}).requires_grad_();
  const Tensor g = randn({64, 32, 28, 28});
  for (auto _ : state) {
    F::batch_norm(x, rm, rv, w, b, true).backward(g);
    benchmark::DoNotOptimize(x.grad().data_ptr());
    x.set_grad({}), w.set_grad({}), b.set_grad({});
  }
}
BENCHMARK(BM_BatchNormTrainForwardBackward)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_CrossEntropyForwardBackward(benchmark::State& state) {
  Tensor logits = randn({256, 10}).requires_grad_();
  const Tensor target = (rand({256}) * 10.0f).to(DType::i64);
  for (auto _ : state) {
    F::cross_entropy(logits, target).backward();
    benchmark::DoNotOptimize(logits.grad().data_ptr());
    logits.set_grad({});
  }
}
BENCHMARK(BM_CrossEntropyForwardBackward)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Wide rows (a 1000-class classifier, a vocabulary-sized softmax): the fused row kernels.
void BM_SoftmaxForwardBackward(benchmark::State& state) {
  Tensor x = randn({256, 1000}).requires_grad_();
  const Tensor g = randn({256, 1000});
  const bool log = state.range(0) != 0;
  for (auto _ : state) {
    (log ? log_softmax(x, 1) : softmax(x, 1)).backward(g);
    benchmark::DoNotOptimize(x.grad().data_ptr());
    x.set_grad({});
  }
}
BENCHMARK(BM_SoftmaxForwardBackward)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_CrossEntropyWideForwardBackward(benchmark::State& state) {
  Tensor logits = randn({256, 1000}).requires_grad_();
  const Tensor target = (rand({256}) * 1000.0f).to(DType::i64);
  F::CrossEntropyOptions o;
  o.label_smoothing = state.range(0) != 0 ? 0.1 : 0.0;
  for (auto _ : state) {
    F::cross_entropy(logits, target, o).backward();
    benchmark::DoNotOptimize(logits.grad().data_ptr());
    logits.set_grad({});
  }
}
BENCHMARK(BM_CrossEntropyWideForwardBackward)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_AdamStep(benchmark::State& state) {
  const int64_t n = state.range(0);
  Tensor p = randn({n}), g = randn({n}), m = zeros({n}), v = zeros({n});
  OptimizerParams params;
  const TensorArg ma = m.arg(), va = v.arg();
  for (auto _ : state) {
    ++params.step;
    backend(kCPU).optimizer_step(OptimizerOp::adam, params, p.arg(), g.arg(), &ma, &va, nullptr);
  }
  state.counters["GB/s"] = benchmark::Counter(n * 4.0 * 7, benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);  // read p g m v, write p m v
}
BENCHMARK(BM_AdamStep)->Arg(1 << 20)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

// Attention forward+backward, one head, E = 64, f32, sequence length T (args: T, fused): the fused op
// against the naive composition softmax(q·kᵀ/8)·v through Ember's own ops, which stores the [T, T] scores.
// peak_MiB: the CPU allocator's high-water mark during one pass, inputs excluded.
void BM_AttentionForwardBackward(benchmark::State& state) {
  const int64_t T = state.range(0);
  const bool fused = state.range(1) != 0;
  Generator gen(0);
  Tensor q = randn({1, 1, T, 64}, {}, &gen).requires_grad_(), k = randn({1, 1, T, 64}, {}, &gen).requires_grad_(),
         v = randn({1, 1, T, 64}, {}, &gen).requires_grad_();
  const Tensor g = randn({1, 1, T, 64}, {}, &gen);
  size_t peak = 0;
  for (auto _ : state) {
    backend(kCPU).reset_peak_memory_stats(0);
    const size_t base = memory_stats(kCPU).allocated;
    const Tensor y = fused ? F::scaled_dot_product_attention(q, k, v)
                           : matmul(softmax(matmul(q, k.transpose(-2, -1)) * 0.125, -1), v);
    y.backward(g);
    peak = std::max(peak, memory_stats(kCPU).peak_allocated - base);
    benchmark::DoNotOptimize(q.grad().data_ptr());
    for (Tensor* t : {&q, &k, &v}) t->set_grad({});
  }
  state.counters["peak_MiB"] = static_cast<double>(peak) / (1 << 20);
  state.SetLabel(fused ? "fused" : "naive");
}
BENCHMARK(BM_AttentionForwardBackward)
    ->ArgsProduct({{1024, 2048, 4096}, {1, 0}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Attention forward+backward at the char GPT's training shape (args: B, dropout in %): H = 4, T = 128, head
// dim 32, causal, f32; one layer's op of BM_CharGptTrainStep (B = 32, dropout 10%).
void BM_AttentionGptShape(benchmark::State& state) {
  const int64_t B = state.range(0);
  const double dropout = static_cast<double>(state.range(1)) / 100;
  Generator gen(0);
  Tensor q = randn({B, 4, 128, 32}, {}, &gen).requires_grad_(), k = randn({B, 4, 128, 32}, {}, &gen).requires_grad_(),
         v = randn({B, 4, 128, 32}, {}, &gen).requires_grad_();
  const Tensor g = randn({B, 4, 128, 32}, {}, &gen);
  for (auto _ : state) {
    const Tensor y = F::scaled_dot_product_attention(q, k, v, {.is_causal = true, .dropout_p = dropout, .gen = &gen});
    y.backward(g);
    benchmark::DoNotOptimize(q.grad().data_ptr());
    for (Tensor* t : {&q, &k, &v}) t->set_grad({});
  }
}
BENCHMARK(BM_AttentionGptShape)->ArgsProduct({{32}, {10, 0}})->Unit(benchmark::kMillisecond)->UseRealTime();

// One training step of configs/char_gpt.yaml's model (vocab 113, context 128, width 128, 4 layers, 4 heads,
// dropout 0.1, batch 32): forward, cross entropy over B·T tokens, backward, AdamW. tools/bench_torch_nn.py
// times the PyTorch twin of the same step.
void BM_CharGptTrainStep(benchmark::State& state) {
  Generator gen(0);
  auto model = std::make_shared<nn::GPT>(nn::GPTOptions{.vocab_size = 113}, &gen);
  optim::AdamW opt(model->parameters(), {.lr = 1e-3});
  const Tensor x = randint(0, 113, {32, 128}, {.dtype = DType::i64}, &gen);
  const Tensor y = randint(0, 113, {32, 128}, {.dtype = DType::i64}, &gen);
  for (auto _ : state) {
    opt.zero_grad();
    const Tensor loss = F::cross_entropy(model->forward(x).flatten(0, 1), y.flatten());
    loss.backward();
    opt.step();
    benchmark::DoNotOptimize(loss.item<float>());
  }
  state.counters["tokens/s"] = benchmark::Counter(32.0 * 128, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_CharGptTrainStep)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(3.0);

// --- recurrent layers: a forward + backward of nn::LSTM / nn::GRU (64 → 256, 2 layers, T = 128, B = 32) ---
// arg: 1 = LSTM, 0 = GRU. Per layer and step: one h·W_hhᵀ GEMM and the fused cell, forward and backward.
void BM_RecurrentForwardBackward(benchmark::State& state) {
  const bool lstm = state.range(0) != 0;
  Generator gen(0);
  const auto o = nn::RNNOptions(64, 256).num_layers(2);
  std::shared_ptr<nn::RNNBase> rnn = lstm ? std::shared_ptr<nn::RNNBase>(std::make_shared<nn::LSTM>(o, &gen))
                                          : std::shared_ptr<nn::RNNBase>(std::make_shared<nn::GRU>(o, &gen));
  Tensor x = randn({128, 32, 64}, {}, &gen).requires_grad_();
  for (auto _ : state) {
    rnn->forward(x).sum().backward();
    benchmark::DoNotOptimize(x.grad().data_ptr());
    x.set_grad({});
    rnn->zero_grad();
  }
  state.SetLabel(lstm ? "LSTM" : "GRU");
}
BENCHMARK(BM_RecurrentForwardBackward)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
