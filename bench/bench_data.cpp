// DataLoader throughput on Fashion-MNIST train (60000 examples) at batch 64: one epoch per iteration,
// reported as items_per_second (samples/s). Args: num_workers, random crop (0/1: RandomCrop(28, 4)).
// The loop body only touches each batch, so this is the loader's own ceiling; the issue asks for well over
// 300k samples/s without transforms and over 100k with random crop.
#include <benchmark/benchmark.h>

#include <filesystem>

#include <ember/ember.h>

using namespace ember;

static void BM_FashionMnistEpoch(benchmark::State& state) {
  if (!std::filesystem::exists(data::kFashionMnistDir)) {
    state.SkipWithError("Fashion-MNIST is absent: apt-get install dataset-fashion-mnist");
    return;
  }
  static const auto train = data::fashion_mnist(data::Split::Train);
  data::DataLoaderOptions options{.batch_size = 64, .shuffle = true, .num_workers = static_cast<int>(state.range(0)),
                                  .seed = 0};
  if (state.range(1) != 0) options.transforms = {data::RandomCrop(28, 4)};
  data::DataLoader loader(train, options);
  int64_t samples = 0;
  for (auto _ : state) {
    for (auto& batch : loader) {
      benchmark::DoNotOptimize(batch.input.data_ptr());
      samples += batch.input.size(0);
    }
  }
  state.SetItemsProcessed(samples);
  state.counters["batches_per_epoch"] = static_cast<double>(loader.num_batches());
}
BENCHMARK(BM_FashionMnistEpoch)
    ->ArgNames({"workers", "crop"})
    ->ArgsProduct({{0, 1, 2}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);

BENCHMARK_MAIN();
