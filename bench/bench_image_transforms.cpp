// The image transforms per example, on the loader's input: an f32 [3, 375, 500] image (a typical ImageNet
// JPEG's size) with values in [0, 1]. Each iteration is one example with its own random draw (the example
// index counts up), so RandomResizedCrop sees torchvision's spread of window sizes. Reported as
// items_per_second (images/s per thread). tools/make_image_transform_golden.py --time measures
// torchvision's RandomResizedCrop(224) on a PIL image of the same size, for comparison (docs/benchmarks.md).
#include <benchmark/benchmark.h>

#include <ember/ember.h>

using namespace ember;

static void run_transform(benchmark::State& state, const data::Transform& t) {
  const Shape in_shape{3, 375, 500};
  Generator gen(0);
  const Tensor image = rand(in_shape, {}, &gen);
  Tensor out = zeros(t.output_shape(in_shape));
  uint64_t index = 0;
  for (auto _ : state) {
    data::ExampleRng rng(1, index++);
    t.apply(image.data<float>(), in_shape, out.data<float>(), rng);
    benchmark::DoNotOptimize(out.data<float>());
  }
  state.SetItemsProcessed(state.iterations());
}

static void BM_RandomResizedCrop224(benchmark::State& state) { run_transform(state, data::RandomResizedCrop(224)); }
static void BM_Resize256(benchmark::State& state) { run_transform(state, data::Resize(256)); }
static void BM_CenterCrop224(benchmark::State& state) { run_transform(state, data::CenterCrop(224)); }
static void BM_ColorJitter(benchmark::State& state) { run_transform(state, data::ColorJitter(0.4f, 0.4f, 0.4f, 0.1f)); }
static void BM_RandomRotation(benchmark::State& state) { run_transform(state, data::RandomRotation(15.0)); }
static void BM_Grayscale(benchmark::State& state) { run_transform(state, data::Grayscale(3)); }

BENCHMARK(BM_RandomResizedCrop224)->Unit(benchmark::kMicrosecond)->MinTime(1.0);
BENCHMARK(BM_Resize256)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CenterCrop224)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ColorJitter)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RandomRotation)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Grayscale)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
