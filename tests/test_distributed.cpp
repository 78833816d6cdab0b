// distributed/: launcher detection, collectives, DistributedDataParallel, the loader's shards. CTest runs
// this program twice: as one process (test_distributed.*) and under `mpirun -np 2` (test_distributed_mpi2,
// label mpi), where every rank runs every test and the checks compare across ranks. Each case works for any
// world size.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <numeric>
#include <set>

#include <ember/ember.h>

#include "backends/nccl.h"
#include "test_helpers.h"

using namespace ember;
namespace dist = ember::distributed;
using ember::test::throws_error;

namespace {

dist::ProcessGroup& group() {
  static const bool once = [] {
    dist::init();
    std::atexit([] { dist::finalize(); });
    return true;
  }();
  (void)once;
  return dist::world();
}

dist::GetEnv env_of(const std::map<std::string, std::string>& vars) {
  return [vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to(DType::f64).contiguous().to_vector<double>();
  const std::vector<double> y = b.to(DType::f64).contiguous().to_vector<double>();
  EXPECT_EQ(x.size(), y.size());
  double m = 0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

// A small MLP, the same weights on every call with the same seed. `smooth`: tanh after both hidden layers.
// NOTE: with a ReLU, f32 training runs that differ only in summation order drift apart by ~1e-5 and then,
// now and then, jump (a unit's sign flips for one example: 3e-3 after 200 steps, measured in f32 against
// f64 on one process alone), so f32 comparisons over many steps use the smooth variant.
std::shared_ptr<nn::Sequential> mlp(int64_t in, int64_t hidden, int64_t out, DType dtype, uint64_t seed,
                                    bool smooth = false) {
  Generator gen(seed);
  auto net = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(in, hidden, true, &gen),
      std::make_shared<nn::Tanh>(), std::make_shared<nn::Linear>(hidden, hidden, true, &gen),
      smooth ? std::shared_ptr<nn::Module>(std::make_shared<nn::Tanh>()) : std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(hidden, out, true, &gen)});
  net->to(dtype);
  return net;
}

}  // namespace

// --- launcher environment -------------------------------------------------------------------------------

TEST(Launch, ReadsEachLaunchersVariables) {
  dist::Launch l = dist::detect_launch(env_of({}));
  EXPECT_EQ(l.launcher, "none");
  EXPECT_EQ(l.world_size, 1);
  l = dist::detect_launch(env_of({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "8"},
                                  {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}));
  EXPECT_EQ(l.launcher, "Open MPI");
  EXPECT_EQ(l.rank, 3);
  EXPECT_EQ(l.world_size, 8);
  EXPECT_EQ(l.local_rank, 1);
  EXPECT_EQ(l.local_world_size, 2);
  l = dist::detect_launch(env_of({{"PMI_RANK", "2"}, {"PMI_SIZE", "4"}}));
  EXPECT_EQ(l.launcher, "PMI");
  EXPECT_EQ(l.rank, 2);
  l = dist::detect_launch(env_of({{"SLURM_PROCID", "5"}, {"SLURM_STEP_NUM_TASKS", "6"}, {"SLURM_LOCALID", "1"}}));
  EXPECT_EQ(l.launcher, "Slurm");
  EXPECT_EQ(l.rank, 5);
  EXPECT_EQ(l.local_rank, 1);
  // A batch script's own shell (no job step): one process, whatever the job's ntasks.
  EXPECT_EQ(dist::detect_launch(env_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}})).world_size, 1);
  // Explicit variables win.
  l = dist::detect_launch(env_of({{"EMBER_RANK", "1"}, {"EMBER_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "0"},
                                  {"OMPI_COMM_WORLD_SIZE", "2"}}));
  EXPECT_EQ(l.launcher, "EMBER_*");
  EXPECT_EQ(l.rank, 1);
}

TEST(Launch, BadValuesNameTheVariable) {
  EXPECT_TRUE(throws_error([] { dist::detect_launch(env_of({{"PMI_RANK", "x"}, {"PMI_SIZE", "2"}})); },
                           {"PMI_RANK='x'", "not a number"}));
  EXPECT_TRUE(throws_error([] { dist::detect_launch(env_of({{"EMBER_RANK", "2"}, {"EMBER_WORLD_SIZE", "2"}})); },
                           {"EMBER_RANK=2", "EMBER_WORLD_SIZE=2", "world size - 1"}));
}

TEST(Launch, AskingForMoreThanTheBuildHasSaysWhatToDo) {
  dist::Launch two;
  two.launcher = "Open MPI";
  two.world_size = 2;
  two.rank = 1;
  EXPECT_TRUE(throws_error([&] { dist::check_launch(two, true, false); },
                           {"Open MPI started 2 processes", "rank 1", "no MPI", "libopenmpi-dev", "rebuild"}));
  two.launcher = "EMBER_*";
  EXPECT_TRUE(throws_error([&] { dist::check_launch(two, false, true); },
                           {"EMBER_WORLD_SIZE asks for 2 processes", "mpirun -np 2"}));
  dist::check_launch(two, true, true);  // a launcher and MPI: fine
  dist::Launch one;
  one.launcher = "Open MPI";
  dist::check_launch(one, true, false);  // mpirun -np 1 without MPI: one process, fine
}

// --- collectives ------------------------------------------------------------------------------------------

TEST(Collectives, AllReduceBroadcastAllGatherBarrier) {
  dist::ProcessGroup& g = group();
  const int r = g.rank(), n = g.size();
  for (DType dtype : {DType::f32, DType::f64}) {
    using Op = dist::ReduceOp;
    const std::vector<std::pair<Op, double>> cases = {
        {Op::sum, n * (n + 1) / 2.0}, {Op::avg, (n + 1) / 2.0}, {Op::max, n}, {Op::min, 1}};
    for (const auto& [op, expected] : cases) {
      Tensor t = full({2, 3}, r + 1, {.dtype = dtype});
      g.all_reduce(t, op);
      EXPECT_EQ(max_abs_diff(t, full({2, 3}, expected)), 0) << dtype_name(dtype);
    }
  }
  Tensor counts = full({4}, r, {.dtype = DType::i64});
  g.all_reduce(counts);
  EXPECT_EQ(counts.to_vector<int64_t>(), std::vector<int64_t>(4, int64_t{n} * (n - 1) / 2));
  Tensor b = full({2, 2}, r);
  g.broadcast(b, n - 1);
  EXPECT_EQ(max_abs_diff(b, full({2, 2}, n - 1)), 0);
  const Tensor all = g.all_gather(full({3}, 10.0 * r, {.dtype = DType::f64}));
  ASSERT_EQ(all.shape(), (Shape{n, 3}));
  for (int k = 0; k < n; ++k) EXPECT_EQ(max_abs_diff(all.select(0, k), full({3}, 10.0 * k)), 0);
  const std::vector<std::string> names = g.all_gather(std::string(static_cast<size_t>(r + 1), 'a' + r));
  ASSERT_EQ(static_cast<int>(names.size()), n);
  for (int k = 0; k < n; ++k) EXPECT_EQ(names[k], std::string(static_cast<size_t>(k + 1), 'a' + k));
  EXPECT_EQ(g.all_reduce(std::vector<double>{1.5, static_cast<double>(r)}),
            (std::vector<double>{1.5 * n, n * (n - 1) / 2.0}));
  auto work = g.all_reduce_async(full({5}, 1.0), dist::ReduceOp::sum);
  work->wait();
  EXPECT_TRUE(work->test());
  g.barrier();
  EXPECT_TRUE(throws_error([&] { g.all_reduce(zeros({3, 4}).transpose(0, 1)); }, {"all_reduce", "not contiguous"}));
  EXPECT_TRUE(throws_error([&] { g.broadcast(zeros({2}), n); }, {"root", "not a rank"}));
}

// --- DistributedDataParallel -----------------------------------------------------------------------------

// Each rank takes its quarter-slice of one global batch; DDP's averaged gradients must equal one process's
// gradients of the whole batch (the loss is a mean, so the mean of equal-sized slices' gradients is it).
TEST(DistributedDataParallel, AveragedGradientsEqualTheConcatenatedBatch) {
  dist::ProcessGroup& g = group();
  const int r = g.rank(), n = g.size();
  const int64_t per_rank = 4, features = 6, classes = 3;
  Generator data_gen(11);
  const Tensor x = randn({per_rank * n, features}, {.dtype = DType::f64}, &data_gen);
  const Tensor y = randint(0, classes, {per_rank * n}, {.dtype = DType::i64}, &data_gen);

  auto reference = mlp(features, 5, classes, DType::f64, 3);
  nn::functional::cross_entropy(reference->forward(x), y).backward();

  for (double cap_mb : {25.0, 1e-5}) {  // one bucket; a bucket per parameter
    auto net = mlp(features, 5, classes, DType::f64, 3);
    if (r > 0) {  // other ranks start elsewhere: construction must bring rank 0's weights
      NoGradGuard no_grad;
      for (Tensor p : net->parameters()) p.add_(full_like(p, static_cast<double>(r)));
    }
    dist::DistributedDataParallel ddp(net, {.bucket_cap_mb = cap_mb});
    const Tensor mine = x.narrow(0, r * per_rank, per_rank), my_y = y.narrow(0, r * per_rank, per_rank);
    nn::functional::cross_entropy(ddp.forward(mine), my_y).backward();
    const auto ref_params = reference->named_parameters();
    const auto params = net->named_parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      EXPECT_EQ(max_abs_diff(params[i].second, ref_params[i].second), 0) << params[i].first;
      ASSERT_TRUE(params[i].second.grad().defined()) << params[i].first;
      EXPECT_LE(max_abs_diff(params[i].second.grad(), ref_params[i].second.grad()), 1e-12) << params[i].first;
    }
    {
      const auto layout = ddp.bucket_layout();
      if (cap_mb < 1) {
        ASSERT_EQ(layout.size(), params.size());
        EXPECT_EQ(layout.front(), std::vector<size_t>{params.size() - 1});  // reverse registration order
      } else {
        EXPECT_EQ(layout.size(), 1u);
      }
      EXPECT_EQ(ddp.buckets_reduced(), static_cast<int64_t>(layout.size()));
    }
  }
}

// Buckets near the output start their all-reduce while backward still computes the layers below: when
// the first layer's weight gradient is in, the later buckets are already on their way.
TEST(DistributedDataParallel, BucketsStartDuringBackward) {
  group();
  auto net = mlp(8, 8, 4, DType::f32, 5);
  dist::DistributedDataParallel ddp(net, {.bucket_cap_mb = 1e-5});
  const Tensor first_weight = net->parameters().front();
  int64_t started_before_first = -1;
  auto probe = autograd::add_grad_ready_hook(first_weight, [&](const Tensor&) {
    if (started_before_first < 0) started_before_first = ddp.buckets_reduced();
  });
  Generator gen(1);
  ddp.forward(randn({4, 8}, {}, &gen)).sum().backward();
  // The probe runs after DDP's own hook on that weight (registration order): every bucket of the layers
  // above has been started by then (the first layer's bias too, when its gradient came first).
  EXPECT_GE(started_before_first, static_cast<int64_t>(net->parameters().size()) - 2);
  EXPECT_EQ(ddp.buckets_reduced(), static_cast<int64_t>(net->parameters().size()));
}

TEST(DistributedDataParallel, NoSyncAccumulatesLocallyThenAverages) {
  dist::ProcessGroup& g = group();
  const int r = g.rank(), n = g.size();
  Generator data_gen(21);
  const Tensor a = randn({2 * n, 4}, {.dtype = DType::f64}, &data_gen);
  const Tensor b = randn({2 * n, 4}, {.dtype = DType::f64}, &data_gen);
  // One process, both micro-batches' mean losses (each weighted 1/2), over every rank's rows.
  auto reference = mlp(4, 3, 2, DType::f64, 9);
  (reference->forward(a).square().mean() * 0.5).backward();
  (reference->forward(b).square().mean() * 0.5).backward();
  // Locally: this rank's rows of micro-batch a only.
  auto local = mlp(4, 3, 2, DType::f64, 9);
  (local->forward(a.narrow(0, 2 * r, 2)).square().mean() * 0.5).backward();

  auto net = mlp(4, 3, 2, DType::f64, 9);
  dist::DistributedDataParallel ddp(net);
  {
    auto guard = ddp.no_sync();
    (ddp.forward(a.narrow(0, 2 * r, 2)).square().mean() * 0.5).backward();
  }
  const auto params = net->parameters(), local_params = local->parameters(), ref_params = reference->parameters();
  for (size_t i = 0; i < params.size(); ++i)  // not averaged yet: this rank's own gradient
    EXPECT_EQ(max_abs_diff(params[i].grad(), local_params[i].grad()), 0);
  (ddp.forward(b.narrow(0, 2 * r, 2)).square().mean() * 0.5).backward();
  for (size_t i = 0; i < params.size(); ++i)
    EXPECT_LE(max_abs_diff(params[i].grad(), ref_params[i].grad()), 1e-12);
}

namespace {
// Uses `used` only: `unused` gets no gradient from backward.
struct TwoHeads : nn::Module {
  std::shared_ptr<nn::Linear> used, unused;
  TwoHeads()
      : used(register_module("used", std::make_shared<nn::Linear>(3, 2))),
        unused(register_module("unused", std::make_shared<nn::Linear>(3, 2))) {}
  Tensor forward(const Tensor& x) override { return used->forward(x); }
};
}  // namespace

TEST(DistributedDataParallel, UnusedParametersCountAsZeroAndDoNotHang) {
  group();
  auto net = std::make_shared<TwoHeads>();
  dist::DistributedDataParallel ddp(net);
  ddp.forward(ones({2, 3})).sum().backward();
  EXPECT_TRUE(net->used->parameters()[0].grad().defined());
  // Reduced as zeros, so every rank's optimizer sees the same thing.
  ASSERT_TRUE(net->unused->parameters()[0].grad().defined());
  EXPECT_EQ(max_abs_diff(net->unused->parameters()[0].grad(), zeros({2, 3})), 0);
}

TEST(DistributedDataParallel, BuffersComeFromRankZeroEveryForward) {
  dist::ProcessGroup& g = group();
  auto bn = std::make_shared<nn::BatchNorm1d>(3);
  dist::DistributedDataParallel ddp(bn);
  {
    NoGradGuard no_grad;
    bn->buffers()[0].fill_(static_cast<double>(g.rank() + 7));  // running_mean drifts apart
  }
  ddp.eval();
  ddp.forward(ones({2, 3}));
  EXPECT_EQ(max_abs_diff(bn->buffers()[0], full({3}, 7.0)), 0);
}

// --- the loader's shards (DistributedSampler) --------------------------------------------------------------

TEST(DistributedSampler, ShardsInterleaveOneBigBatchAndResumeExactly) {
  const int64_t examples = 10;
  std::vector<double> values(examples);
  for (int64_t i = 0; i < examples; ++i) values[i] = static_cast<double>(i);
  auto set = std::make_shared<data::TensorDataset>(from_vector(values, {examples, 1}),
                                                   arange(0, examples, 1, {.dtype = DType::i64}));
  data::DataLoader whole(set, {.batch_size = 4, .shuffle = true, .seed = 5});
  std::vector<std::vector<int64_t>> big;
  for (auto it = whole.begin(); it != whole.end(); ++it) big.push_back(whole.batch_indices());
  std::vector<std::vector<std::vector<int64_t>>> shard_batches(2);
  for (int64_t s = 0; s < 2; ++s) {
    data::DataLoader part(set, {.batch_size = 2, .shuffle = true, .seed = 5, .num_shards = 2, .shard = s});
    EXPECT_EQ(part.epoch_size(), 5);
    EXPECT_EQ(part.num_batches(), 3);
    for (auto it = part.begin(); it != part.end(); ++it) shard_batches[s].push_back(part.batch_indices());
  }
  ASSERT_EQ(big.size(), 3u);
  for (size_t b = 0; b < big.size(); ++b) {  // batch b of both shards = batch b of the whole
    std::multiset<int64_t> together(shard_batches[0][b].begin(), shard_batches[0][b].end());
    together.insert(shard_batches[1][b].begin(), shard_batches[1][b].end());
    EXPECT_EQ(together, std::multiset<int64_t>(big[b].begin(), big[b].end())) << "batch " << b;
  }
  // 3 shards of 10: padded to 12 by repeating the epoch's first two examples.
  std::multiset<int64_t> covered;
  for (int64_t s = 0; s < 3; ++s) {
    data::DataLoader part(set, {.batch_size = 8, .shuffle = true, .seed = 5, .num_shards = 3, .shard = s});
    for (auto it = part.begin(); it != part.end(); ++it)
      for (int64_t i : part.batch_indices()) covered.insert(i);
  }
  EXPECT_EQ(covered.size(), 12u);
  EXPECT_EQ(std::set<int64_t>(covered.begin(), covered.end()).size(), 10u);
  // Resume: a fresh loader at a saved position continues with the same batches.
  data::DataLoader first(set, {.batch_size = 2, .shuffle = true, .seed = 5, .num_shards = 2, .shard = 1});
  auto it = first.begin();
  ++it;
  const data::LoaderState at = first.state();
  ++it;
  const std::vector<int64_t> expected = first.batch_indices();
  data::DataLoader resumed(set, {.batch_size = 2, .shuffle = true, .seed = 5, .num_shards = 2, .shard = 1});
  resumed.load_state(at);
  resumed.begin();
  EXPECT_EQ(resumed.batch_indices(), expected);
  EXPECT_TRUE(throws_error([&] { data::DataLoader(set, {.batch_size = 2, .num_shards = 2, .shard = 2}); },
                           {"shard 2 of num_shards 2", "rank"}));
}

// --- 200 steps of the Fashion MLP: n ranks × batch 64/n track 1 rank × batch 64 -------------------------

namespace {
std::vector<Tensor> train_fashion(const data::DatasetPtr& set, DType dtype, int64_t batch, int64_t shards,
                                  int64_t shard, dist::ProcessGroup* g) {
  auto net = mlp(784, 32, 10, dtype, 13, /*smooth=*/dtype == DType::f32);
  std::unique_ptr<dist::DistributedDataParallel> ddp;
  if (g != nullptr) ddp = std::make_unique<dist::DistributedDataParallel>(net);
  nn::Module& model = ddp ? static_cast<nn::Module&>(*ddp) : *net;
  optim::SGD opt(net->parameters(), {.lr = 0.05, .momentum = 0.9});
  data::DataLoader loader(set, {.batch_size = batch, .shuffle = true, .seed = 17, .num_shards = shards, .shard = shard});
  for (auto& b : loader) {
    opt.zero_grad();
    nn::functional::cross_entropy(model.forward(b.input.to(dtype)), b.target).backward();
    opt.step();
  }
  return net->parameters();
}
}  // namespace

TEST(DistributedDataParallel, FashionMlp200StepsTrackOneProcessWithTheGlobalBatch) {
  dist::ProcessGroup& g = group();
  const int n = g.size();
  if (64 % n != 0) GTEST_SKIP() << "world size " << n << " does not divide the global batch 64";
  std::shared_ptr<data::IdxDataset> train;
  try {
    train = data::fashion_mnist(data::Split::Train);
  } catch (const Error& e) {
    GTEST_SKIP() << "Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist): " << e.what();
  }
  std::vector<int64_t> first(200 * 64);
  std::iota(first.begin(), first.end(), int64_t{0});
  auto set = std::make_shared<data::Subset>(train, first);
  // Only the order of the sums differs (n partial means averaged vs one mean). f64: measured 6e-15 with the
  // ReLU MLP. f32: its rounding of those sums, amplified over 200 momentum steps (the tanh MLP, see mlp()).
  for (const auto& [dtype, tolerance] : {std::pair{DType::f64, 1e-12}, std::pair{DType::f32, 1e-4}}) {
    const std::vector<Tensor> mine = train_fashion(set, dtype, 64 / n, n, g.rank(), &g);
    const std::vector<Tensor> single = train_fashion(set, dtype, 64, 1, 0, nullptr);
    double worst = 0;
    for (size_t i = 0; i < mine.size(); ++i) {
      worst = std::max(worst, max_abs_diff(mine[i], single[i]));
      // Every rank holds the same weights, to the bit.
      const Tensor all = g.all_gather(mine[i].contiguous());
      for (int k = 1; k < n; ++k) EXPECT_EQ(max_abs_diff(all.select(0, k), all.select(0, 0)), 0);
    }
    EXPECT_LE(worst, tolerance) << dtype_name(dtype);
    std::printf("[ rank %d ] %s: largest weight difference after 200 steps, %d x batch %d vs 1 x batch 64: %.3g\n",
                g.rank(), std::string(dtype_name(dtype)).c_str(), n, 64 / n, worst);
  }
}

// --- NCCL: CUDA tensors (skips without a GPU; scripts/gpu_check.sh runs it as one rank on the GPU machine) ---

TEST(Nccl, CudaTensorsAllReduceBroadcastAllGatherAndDdp) {
  if (!cuda::is_available()) GTEST_SKIP() << "no usable GPU: " << cuda::unavailable_reason();
  if (!nccl::built_with_nccl()) GTEST_SKIP() << nccl::version();
  dist::ProcessGroup& g = group();
  const int r = g.rank(), n = g.size();
  if (cuda::device_count() < n) GTEST_SKIP() << "NCCL needs a GPU per process: " << n << " processes, "
                                             << cuda::device_count() << " GPU(s)";
  const Device gpu(DeviceType::CUDA, dist::local_rank() % cuda::device_count());
  EXPECT_EQ(g.collectives(gpu).name().substr(0, 4), "NCCL");
  Tensor t = full({2, 3}, r + 1, {.device = gpu});
  g.all_reduce(t, dist::ReduceOp::sum);
  EXPECT_EQ(max_abs_diff(t.to(kCPU), full({2, 3}, n * (n + 1) / 2.0)), 0);
  t = full({4}, r + 1, {.dtype = DType::f64, .device = gpu});
  g.all_reduce(t, dist::ReduceOp::avg);
  EXPECT_EQ(max_abs_diff(t.to(kCPU), full({4}, (n + 1) / 2.0)), 0);
  Tensor b = full({3}, r, {.device = gpu});
  g.broadcast(b, n - 1);
  EXPECT_EQ(max_abs_diff(b.to(kCPU), full({3}, n - 1)), 0);
  const Tensor all = g.all_gather(full({2}, 10.0 * r, {.device = gpu})).to(kCPU);
  for (int k = 0; k < n; ++k) EXPECT_EQ(max_abs_diff(all.select(0, k), full({2}, 10.0 * k)), 0);

  // DDP on the GPU: the averaged gradients of each rank's slice equal one process's over the whole batch.
  Generator data_gen(31);
  const Tensor x = randn({4 * n, 6}, {}, &data_gen).to(gpu);
  const Tensor y = randint(0, 3, {4 * n}, {.dtype = DType::i64}, &data_gen).to(gpu);
  auto reference = mlp(6, 5, 3, DType::f32, 3);
  reference->to(gpu);
  nn::functional::cross_entropy(reference->forward(x), y).backward();
  auto net = mlp(6, 5, 3, DType::f32, 3);
  net->to(gpu);
  dist::DistributedDataParallel ddp(net, {.bucket_cap_mb = 1e-5});
  nn::functional::cross_entropy(ddp.forward(x.narrow(0, 4 * r, 4)), y.narrow(0, 4 * r, 4)).backward();
  const auto params = net->parameters(), ref_params = reference->parameters();
  for (size_t i = 0; i < params.size(); ++i)
    EXPECT_LE(max_abs_diff(params[i].grad().to(kCPU), ref_params[i].grad().to(kCPU)), 1e-6) << "parameter " << i;
  EXPECT_EQ(ddp.buckets_reduced(), static_cast<int64_t>(params.size()));
}
