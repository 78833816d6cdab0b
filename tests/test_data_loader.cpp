// DataLoader: batching, shuffle determinism across worker counts, resume, errors, shutdown.
// Run under ThreadSanitizer too (build-tsan, EMBER_NUM_THREADS=1).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <numeric>
#include <random>
#include <set>
#include <thread>

#include "base/parallel.h"
#include "data_test_util.h"

using namespace ember;
using namespace ember::testing;

namespace {

// N examples: input [1, 4, 4] f32 filled with i (plus a gradient, so crops and flips are visible), target i.
std::shared_ptr<data::TensorDataset> images(int64_t n) {
  return indexed_dataset(n, {1, 4, 4},
                         [](int64_t i, int64_t k) { return static_cast<float>(i) + 0.01f * static_cast<float>(k); });
}

// Every batch of one epoch, as (input values, target values).
using Epoch = std::vector<std::pair<std::vector<float>, std::vector<int64_t>>>;

Epoch run_epoch(data::DataLoader& loader, int64_t stop_after = -1) {
  Epoch out;
  for (auto& batch : loader) {
    out.emplace_back(batch.input.to_vector<float>(), batch.target.to_vector<int64_t>());
    if (static_cast<int64_t>(out.size()) == stop_after) break;
  }
  return out;
}

// A dataset that throws for one index, and can be slowed down.
struct Faulty : data::Dataset {
  std::shared_ptr<data::TensorDataset> base = images(64);
  int64_t bad = -1;
  int sleep_ms = 0;
  mutable std::atomic<int> calls{0};
  int64_t size() const override { return base->size(); }
  data::Example get(int64_t i) const override { return base->get(i); }
  data::ExampleSpec spec() const override { return base->spec(); }
  void get_batch(std::span<const int64_t> idx, const Tensor& in, const Tensor& tg) const override {
    ++calls;
    if (sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
    for (int64_t i : idx) EMBER_CHECK(i != bad, "Faulty: example ", i, " is unreadable");
    base->get_batch(idx, in, tg);
  }
};

// Runs `fn` on its own thread and waits at most `seconds` for it: the watchdog of the tests below. What
// `fn` throws is rethrown here. On a timeout the test fails and the process ends at once (a hung thread
// cannot be joined, and ending beats hanging the suite).
template <typename Fn>
void within(double seconds, Fn&& fn) {
  std::promise<void> done;
  std::future<void> finished = done.get_future();
  std::thread runner([&fn, done = std::move(done)]() mutable {
    try {
      fn();
      done.set_value();
    } catch (...) {
      done.set_exception(std::current_exception());
    }
  });
  if (finished.wait_for(std::chrono::duration<double>(seconds)) != std::future_status::ready) {
    ADD_FAILURE() << "watchdog: still running after " << seconds << " s (a hang)";
    std::fflush(stdout);
    std::_Exit(1);
  }
  runner.join();
  finished.get();
}

// The threads of this process (/proc/self/task).
int thread_count() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

}  // namespace

TEST(DataLoader, BatchesShapesAndDropLast) {
  auto ds = images(10);
  data::DataLoader loader(ds, {.batch_size = 4});
  EXPECT_EQ(loader.num_batches(), 3);
  std::vector<Shape> shapes;
  for (auto& batch : loader) {
    shapes.push_back(batch.input.shape());
    EXPECT_EQ(batch.target.dtype(), DType::i64);
    EXPECT_TRUE(batch.input.is_contiguous());
  }
  EXPECT_EQ(shapes, (std::vector<Shape>{{4, 1, 4, 4}, {4, 1, 4, 4}, {2, 1, 4, 4}}));
  const Epoch ordered = run_epoch(loader);
  EXPECT_EQ(ordered[2].second, (std::vector<int64_t>{8, 9}));  // no shuffle: in order

  data::DataLoader dropping(ds, {.batch_size = 4, .num_workers = 2, .drop_last = true});
  EXPECT_EQ(dropping.num_batches(), 2);
  EXPECT_EQ(run_epoch(dropping).size(), 2u);
}

TEST(DataLoader, EveryExampleOncePerEpoch) {
  auto ds = images(103);
  for (int workers : {0, 1, 3}) {
    SCOPED_TRACE(workers);
    data::DataLoader loader(ds, {.batch_size = 8, .shuffle = true, .num_workers = workers, .seed = 3});
    for (int epoch = 0; epoch < 2; ++epoch) {
      std::multiset<int64_t> seen;
      for (const auto& [x, y] : run_epoch(loader)) seen.insert(y.begin(), y.end());
      EXPECT_EQ(seen.size(), 103u);
      EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 103u);
    }
  }
}

TEST(DataLoader, SameBatchesForAnyNumberOfWorkers) {
  auto ds = images(90);
  auto options = [](int workers) {
    return data::DataLoaderOptions{.batch_size = 7, .shuffle = true, .num_workers = workers, .seed = 11, .prefetch = 1,
                                   .transforms = {data::RandomCrop(4, 1), data::RandomHorizontalFlip()}};
  };
  data::DataLoader reference(ds, options(0));
  const Epoch e0 = run_epoch(reference), e1 = run_epoch(reference);
  EXPECT_NE(e0, e1);  // a new permutation (and new crops) each epoch
  for (int workers : {1, 2, 4}) {
    SCOPED_TRACE(workers);
    data::DataLoader loader(ds, options(workers));
    EXPECT_EQ(run_epoch(loader), e0);
    EXPECT_EQ(run_epoch(loader), e1);
  }
  data::DataLoader other_seed(ds, {.batch_size = 7, .shuffle = true, .seed = 12});
  EXPECT_NE(run_epoch(other_seed)[0].second, e0[0].second);
}

TEST(DataLoader, ResumeSeesTheBatchesAnUninterruptedRunSees) {
  auto ds = images(50);
  auto options = [](int workers) {
    return data::DataLoaderOptions{.batch_size = 6, .shuffle = true, .num_workers = workers, .seed = 5,
                                   .transforms = {data::RandomCrop(4, 2)}};
  };
  data::DataLoader straight(ds, options(2));
  const Epoch a0 = run_epoch(straight), a1 = run_epoch(straight), a2 = run_epoch(straight);

  std::string saved;
  {
    data::DataLoader first(ds, options(2));
    run_epoch(first);
    EXPECT_EQ(run_epoch(first, 3), Epoch(a1.begin(), a1.begin() + 3));
    EXPECT_EQ(first.state().epoch, 1);
    EXPECT_EQ(first.state().batch, 3);
    saved = first.state().str();
  }  // destroyed mid-epoch, like a killed run
  for (int workers : {0, 3}) {
    SCOPED_TRACE(workers);
    data::DataLoader resumed(ds, options(workers));
    resumed.load_state(data::LoaderState::parse(saved));
    EXPECT_EQ(run_epoch(resumed), Epoch(a1.begin() + 3, a1.end()));
    EXPECT_EQ(resumed.state().epoch, 2);
    EXPECT_EQ(resumed.state().batch, 0);
    EXPECT_EQ(run_epoch(resumed), a2);
  }
  // Between epochs, the state names the next epoch; restoring it replays that epoch.
  data::DataLoader again(ds, options(1));
  run_epoch(again);
  const data::LoaderState between = again.state();
  EXPECT_EQ(between.batch, 0);
  data::DataLoader replay(ds, options(0));
  replay.load_state(between);
  EXPECT_EQ(run_epoch(replay), a1);
  EXPECT_EQ(run_epoch(replay), a2);
  EXPECT_NE(a0, a1);
}

// Workers run their ops serially: the CPU pool is the training thread's (base/parallel.h).
struct RecordsParallelism : Faulty {
  mutable std::atomic<int> parallel_calls{0};
  void get_batch(std::span<const int64_t> idx, const Tensor& in, const Tensor& tg) const override {
    if (cpu::can_parallelize()) ++parallel_calls;
    Faulty::get_batch(idx, in, tg);
  }
};

TEST(DataLoader, WorkersDoNotTakeTheThreadPool) {
  auto ds = std::make_shared<RecordsParallelism>();
  data::DataLoader loader(ds, {.batch_size = 8, .num_workers = 2});
  for (auto& batch : loader) (void)batch;
  EXPECT_GT(ds->calls.load(), 0);
  EXPECT_EQ(ds->parallel_calls.load(), 0);
}

TEST(DataLoader, LoadStateRejectsForeignPositions) {
  data::DataLoader loader(images(10), {.batch_size = 5});
  expect_error([&] { loader.load_state({.epoch = 0, .batch = 3}); }, {"epoch=0 batch=3", "2 batches per epoch"});
  expect_error([] { data::LoaderState::parse("epoch=1 batch=x"); }, {"'epoch=1 batch=x' is not a loader position"});
  const data::LoaderState s{.epoch = 4, .batch = 1, .rng = {.seed = 9, .offset = 123}};
  EXPECT_EQ(data::LoaderState::parse(s.str()), s);
}

TEST(DataLoader, WorkerExceptionsReachTheLoopWithTheirMessage) {
  for (int workers : {0, 2}) {
    SCOPED_TRACE(workers);
    auto ds = std::make_shared<Faulty>();
    ds->bad = 37;
    data::DataLoader loader(ds, {.batch_size = 8, .num_workers = workers});
    int64_t batches = 0;
    expect_error([&] {
      for (auto& batch : loader) {
        (void)batch;
        ++batches;
      }
    }, {"DataLoader: batch 4 of epoch 0 failed", "Faulty: example 37 is unreadable"});
    EXPECT_EQ(batches, 4);  // the four good batches before it arrived
    ds->bad = -1;
    EXPECT_EQ(run_epoch(loader).size(), 8u);  // the loader is usable afterwards
  }
}

// A read failing in a worker while the others are busy with batches around it, at the first, a middle and
// the last batch: the consumer gets the error with the dataset's message at that batch — after every
// batch before it — and by then every worker thread has been joined; nothing hangs (watchdog).
TEST(DataLoader, AWorkerReadFailingMidEpochReachesTheConsumerAndJoinsTheWorkers) {
  auto ds = std::make_shared<Faulty>();  // 64 examples: 16 batches of 4
  ds->sleep_ms = 2;                      // the workers are mid-batch when the failure arrives
  data::DataLoader warm(ds, {.batch_size = 4, .num_workers = 1});
  run_epoch(warm);  // any lazily started thread (OpenMP) exists before the count below
  for (const int64_t bad_batch : {int64_t{0}, int64_t{9}, int64_t{15}}) {
    for (const int workers : {1, 4}) {
      SCOPED_TRACE("bad batch " + std::to_string(bad_batch) + ", workers " + std::to_string(workers));
      within(60, [&] {
        ds->bad = bad_batch * 4 + 1;
        const int threads_before = thread_count();
        data::DataLoader loader(ds, {.batch_size = 4, .shuffle = false, .num_workers = workers, .prefetch = 3});
        std::vector<int64_t> delivered;
        std::string message;
        try {
          for (auto& batch : loader) delivered.push_back(batch.target.to_vector<int64_t>().front() / 4);
        } catch (const Error& e) {
          message = e.what();
          EXPECT_EQ(thread_count(), threads_before) << "worker threads still running after the error reached the loop";
        }
        EXPECT_NE(message.find("DataLoader: batch " + std::to_string(bad_batch) + " of epoch 0 failed in worker "),
                  std::string::npos) << message;
        EXPECT_NE(message.find("Faulty: example " + std::to_string(ds->bad) + " is unreadable"), std::string::npos) << message;
        std::vector<int64_t> expected(static_cast<size_t>(bad_batch));
        std::iota(expected.begin(), expected.end(), int64_t{0});
        EXPECT_EQ(delivered, expected);  // every batch before the failed one, in order
        const int calls = ds->calls.load();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        EXPECT_EQ(ds->calls.load(), calls) << "a worker went on reading after the error";
        ds->bad = -1;
        EXPECT_EQ(run_epoch(loader).size(), 16u);  // usable again: the next epoch is whole
      });
    }
  }
}

// The worker fails on a batch the consumer never reaches (it stops early): nothing is thrown and the
// loader's destructor joins the workers.
TEST(DataLoader, AFailureAheadOfAnAbandonedEpochIsDroppedWithTheWorkers) {
  auto ds = std::make_shared<Faulty>();
  ds->bad = 9;  // batch 2
  within(60, [&] {
    const int threads_before = thread_count();
    {
      data::DataLoader loader(ds, {.batch_size = 4, .num_workers = 3, .prefetch = 2});
      EXPECT_EQ(run_epoch(loader, 2).size(), 2u);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the workers have built (or failed) batch 2
    }
    EXPECT_EQ(thread_count(), threads_before);
  });
}

TEST(DataLoader, DestroyingMidEpochJoinsTheWorkers) {
  auto ds = std::make_shared<Faulty>();
  ds->sleep_ms = 20;
  const auto start = std::chrono::steady_clock::now();
  {
    data::DataLoader loader(ds, {.batch_size = 2, .num_workers = 3, .prefetch = 2});
    for (auto& batch : loader) {
      (void)batch;
      break;
    }
  }
  // Each worker finishes at most the batch it is building; none is left running (the dataset would be
  // destroyed under it: ASan/TSan catch that).
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(ms, 1000);
  EXPECT_LE(ds->calls.load(), 1 + 3 * 2 + 3);  // bounded prefetch: first batch + window + in progress
  const int calls = ds->calls.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  EXPECT_EQ(ds->calls.load(), calls);  // nothing runs after the destructor returned
}

TEST(DataLoader, AbandonedEpochStartsTheNextOne) {
  auto ds = images(20);
  data::DataLoader reference(ds, {.batch_size = 5, .shuffle = true, .seed = 1});
  run_epoch(reference);
  const Epoch second = run_epoch(reference);
  data::DataLoader loader(ds, {.batch_size = 5, .shuffle = true, .num_workers = 2, .seed = 1});
  run_epoch(loader, 1);
  EXPECT_EQ(run_epoch(loader), second);
}

TEST(DataLoader, BatchAllocatorHook) {
  std::atomic<int> calls{0};
  data::BatchAllocator counting = [&](const Shape& shape, DType dtype) {
    ++calls;
    return empty(shape, {.dtype = dtype});
  };
  data::DataLoader loader(images(12), {.batch_size = 4, .num_workers = 2, .allocator = counting});
  EXPECT_EQ(run_epoch(loader).size(), 3u);
  EXPECT_EQ(calls.load(), 6);  // input and target per batch
  data::DataLoader wrong(images(12), {.batch_size = 4, .allocator = [](const Shape&, DType) { return zeros({3}); }});
  expect_error([&] { run_epoch(wrong); }, {"batch allocator returned [3] f32", "request of [4, 1, 4, 4] f32"});
}

TEST(DataLoader, TransformsAndOptionsAreCheckedWhenBuilt) {
  auto ds = images(4);
  expect_error([&] { data::DataLoader(ds, {.batch_size = 0}); }, {"batch_size is 0"});
  expect_error([&] { data::DataLoader(ds, {.num_workers = -1}); }, {"num_workers is -1"});
  expect_error([&] { data::DataLoader(ds, {.prefetch = 0}); }, {"prefetch is 0"});
  expect_error([&] { data::DataLoader(nullptr); }, {"dataset is null"});
  expect_error([&] { data::DataLoader(ds, {.transforms = {data::Normalize({0, 0}, {1, 1})}}); }, {"Normalize", "1 channels"});
  auto ints = std::make_shared<data::TensorDataset>(zeros({2, 3}, {.dtype = DType::i64}), zeros({2}));
  expect_error([&] { data::DataLoader(ints, {.transforms = {data::RandomHorizontalFlip()}}); }, {"transforms need f32 inputs", "i64"});
  data::DataLoader cropped(ds, {.batch_size = 2, .transforms = {data::RandomCrop(2, 3, 0)}});
  EXPECT_EQ(cropped.input_shape(), (Shape{1, 2, 3}));
  EXPECT_EQ((*cropped.begin()).input.shape(), (Shape{2, 1, 2, 3}));
}

TEST(DataLoader, NormalizeAppliesToTheBatch) {
  auto ds = images(3);
  data::DataLoader loader(ds, {.batch_size = 3, .transforms = {data::Normalize({1.0f}, {2.0f})}});
  const Epoch e = run_epoch(loader);
  EXPECT_FLOAT_EQ(e[0].first[16 * 2 + 5], (2.05f - 1.0f) / 2.0f);
}

// A byte dataset that counts the fused reads (get_batch_bytes), forwarding everything to an IdxDataset.
struct CountingBytes : data::Dataset {
  std::shared_ptr<data::IdxDataset> base;
  mutable std::atomic<int> fused_reads{0};
  explicit CountingBytes(std::shared_ptr<data::IdxDataset> b) : base(std::move(b)) {}
  int64_t size() const override { return base->size(); }
  data::Example get(int64_t i) const override { return base->get(i); }
  data::ExampleSpec spec() const override { return base->spec(); }
  void get_batch(std::span<const int64_t> idx, const Tensor& in, const Tensor& tg) const override {
    base->get_batch(idx, in, tg);
  }
  bool has_byte_inputs() const override { return true; }
  float byte_value(uint8_t b) const override { return base->byte_value(b); }
  void get_batch_bytes(std::span<const int64_t> idx, std::span<const float> table, const Tensor& in,
                       const Tensor& tg) const override {
    ++fused_reads;
    base->get_batch_bytes(idx, table, in, tg);
  }
};

// The loader folds Normalize (and any leading pointwise transform) into a byte dataset's conversion table
// (data/collate.h). Its batches must equal, bit for bit, the unfused path: the same examples as f32 in a
// TensorDataset (no byte inputs), converted first and transformed after.
TEST(DataLoader, FusedByteConversionEqualsConvertThenTransformBitForBit) {
  std::mt19937 gen(7);
  constexpr uint32_t n = 40;
  // [C, H, W] with 3 channels, [1, H, W] (a 3-D file gets the channel dim) and a flat [12] feature vector.
  for (const std::vector<uint32_t>& dims : {std::vector<uint32_t>{n, 3, 5, 4}, {n, 6, 7}, {n, 12}}) {
    std::vector<uint32_t> example(dims.begin() + 1, dims.end());
    uint32_t row = 1;
    for (uint32_t d : example) row *= d;
    std::vector<uint8_t> pixels(n * row), labels(n);
    for (size_t k = 0; k < pixels.size(); ++k) pixels[k] = k < 256 ? static_cast<uint8_t>(k) : static_cast<uint8_t>(gen());
    for (uint32_t i = 0; i < n; ++i) labels[i] = static_cast<uint8_t>(i % 10);
    auto idx = std::make_shared<data::IdxDataset>(data::parse_idx(idx_bytes(0x08, dims, pixels), "images"),
                                                  data::parse_idx(idx_bytes(0x08, {n}, labels), "labels"));
    auto fused = std::make_shared<CountingBytes>(idx);
    std::vector<float> values;
    for (uint32_t i = 0; i < n; ++i)
      for (float v : idx->get(i).input.to_vector<float>()) values.push_back(v);
    Shape all = idx->spec().input_shape;
    all.insert(0, n);
    auto reference = std::make_shared<data::TensorDataset>(from_vector(values, all), from_vector(std::vector<int64_t>(n, 0)));

    const int64_t channels = data::example_channels(idx->spec().input_shape);
    std::vector<float> mean, std;
    for (int64_t c = 0; c < channels; ++c) mean.push_back(0.1f + 0.37f * static_cast<float>(c)), std.push_back(0.3f + 0.11f * static_cast<float>(c));
    const data::Normalize norm(mean, std), second({0.2860f}, {0.3530f});
    std::vector<std::pair<std::vector<data::AnyTransform>, bool>> cases = {  // (transforms, fused?)
        {{norm}, true}, {{norm, second}, true}, {{second}, true}};
    if (dims.size() > 2) {
      cases.push_back({{norm, data::RandomHorizontalFlip()}, true});
      cases.push_back({{data::RandomCrop(dims[dims.size() - 2], dims.back(), 1), norm}, false});
    }
    for (const auto& [transforms, expect_fused] : cases) {
      fused->fused_reads = 0;
      for (int workers : {0, 2}) {
        data::DataLoader a(fused, {.batch_size = 16, .shuffle = true, .num_workers = workers, .seed = 3, .transforms = transforms});
        data::DataLoader b(reference, {.batch_size = 16, .shuffle = true, .seed = 3, .transforms = transforms});
        const Epoch got = run_epoch(a), want = run_epoch(b);
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < got.size(); ++i) {
          ASSERT_EQ(got[i].first.size(), want[i].first.size());
          EXPECT_EQ(std::memcmp(got[i].first.data(), want[i].first.data(), got[i].first.size() * sizeof(float)), 0)
              << "batch " << i << " of examples " << all << " with " << transforms.size() << " transforms";
        }
      }
      EXPECT_EQ(fused->fused_reads.load() > 0, expect_fused) << all << ", " << transforms.size() << " transforms";
    }
  }
}

TEST(DataLoader, FashionMnistEpoch) {
  if (!std::filesystem::exists(data::kFashionMnistDir))
    GTEST_SKIP() << data::kFashionMnistDir << " is absent: apt-get install dataset-fashion-mnist to run this test";
  auto train = data::fashion_mnist(data::Split::Test);
  data::DataLoader loader(train, {.batch_size = 64, .shuffle = true, .num_workers = 2, .seed = 0});
  int64_t examples = 0, label_sum = 0;
  for (auto& batch : loader) {
    ASSERT_EQ(batch.input.size(1), 1);
    examples += batch.input.size(0);
    for (int64_t y : batch.target.to_vector<int64_t>()) label_sum += y;
  }
  EXPECT_EQ(examples, 10000);
  EXPECT_EQ(label_sum, 1000 * 45);  // 1000 of each class 0..9
}
