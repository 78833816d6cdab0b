// Framework overhead on a tiny model, where it dominates: an MLP 10-10-10 at batch 1 (a training step:
// zero_grad + forward + cross-entropy + backward; the forward alone) and adding two 1-element tensors.
// LibTorch 1.13 (Debian's libtorch-dev, 2 threads) takes ~58 µs, ~6.5 µs and ~0.7 µs for these here.
// Run: ./build/bench/bench_autograd
#include <benchmark/benchmark.h>

#include <ember/ember.h>

#include <vector>

using namespace ember;

namespace {

// Linear layers as nn::Linear computes them: x @ Wᵀ + b, W [out, in].
struct Mlp {
  Generator gen{0};
  Tensor w1 = (randn({10, 10}, {}, &gen) * 0.3).requires_grad_();
  Tensor b1 = zeros({10}).requires_grad_();
  Tensor w2 = (randn({10, 10}, {}, &gen) * 0.3).requires_grad_();
  Tensor b2 = zeros({10}).requires_grad_();
  Tensor x = randn({1, 10}, {}, &gen);
  Tensor target = from_vector<int64_t>({3}, {1, 1});

  Tensor forward() const { return matmul(relu(matmul(x, w1.t()) + b1), w2.t()) + b2; }
  void zero_grad() {
    for (Tensor* p : {&w1, &b1, &w2, &b2}) p->set_grad(Tensor());
  }
};

// -mean(log_softmax(logits)[target]): cross-entropy from the ops (a fused one comes with nn/).
Tensor cross_entropy(const Tensor& logits, const Tensor& target) {
  return -gather(log_softmax(logits, 1), 1, target).mean();
}

void BM_MlpTrainStep(benchmark::State& state) {
  Mlp mlp;
  for (auto _ : state) {
    mlp.zero_grad();
    const Tensor loss = cross_entropy(mlp.forward(), mlp.target);
    loss.backward();
    benchmark::DoNotOptimize(mlp.w1.grad().data_ptr());
  }
}
BENCHMARK(BM_MlpTrainStep)->Unit(benchmark::kMicrosecond);

void BM_MlpForward(benchmark::State& state) {  // records the graph, as in training
  Mlp mlp;
  for (auto _ : state) benchmark::DoNotOptimize(mlp.forward().data_ptr());
}
BENCHMARK(BM_MlpForward)->Unit(benchmark::kMicrosecond);

void BM_MlpForwardNoGrad(benchmark::State& state) {
  Mlp mlp;
  NoGradGuard no_grad;
  for (auto _ : state) benchmark::DoNotOptimize(mlp.forward().data_ptr());
}
BENCHMARK(BM_MlpForwardNoGrad)->Unit(benchmark::kMicrosecond);

void BM_AddOneElement(benchmark::State& state) {
  const Tensor a = ones({1}), b = ones({1});
  for (auto _ : state) benchmark::DoNotOptimize((a + b).data_ptr());
}
BENCHMARK(BM_AddOneElement)->Unit(benchmark::kNanosecond);

}  // namespace

BENCHMARK_MAIN();
