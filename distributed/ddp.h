#pragma once
// DistributedDataParallel: one model replica per process, gradients averaged across the processes during
// backward — PyTorch's torch.nn.parallel.DistributedDataParallel contract:
//
//   distributed::init();
//   auto net = std::make_shared<Net>();
//   auto ddp = std::make_shared<nn::DistributedDataParallel>(net);  // rank 0's weights on every rank
//   optim::SGD opt(net->parameters(), {.lr = 0.1});
//   for (auto& batch : loader) {             // loader built with .shard = rank, .num_shards = world size
//     opt.zero_grad();
//     cross_entropy(ddp->forward(batch.input), batch.target).backward();  // grads: the mean over ranks
//     opt.step();                                                        // same step on every rank
//   }
//
// - Construction broadcasts every parameter and buffer from rank 0 (collective: all ranks construct it).
// - Gradients go in buckets of about bucket_cap_mb (25 MB), filled in reverse registration order (roughly
//   the order backward produces them), one flat buffer per bucket and per dtype/device. A grad-ready hook
//   (autograd/hooks.h) on each parameter copies its gradient in; when a bucket is complete its all-reduce
//   starts (MPI_Iallreduce, or NCCL on the GPU stream) while backward goes on with the layers below; the last
//   bucket, with nothing left to overlap, is reduced on the spot (MPI_Allreduce). At the end of backward
//   every bucket is finished, divided by the world size and copied back into .grad.
//   Buckets start in order, the same on every rank. Parameters the backward did not reach count as zero
//   gradients (PyTorch's find_unused_parameters), so models with unused branches need no flag.
// - no_sync(): while its guard lives, backward only accumulates into .grad locally (gradient
//   accumulation); the first backward after it averages the accumulated gradients.
// - forward() broadcasts the buffers (batch-norm running statistics) from rank 0 first, as PyTorch's
//   broadcast_buffers=True does, so every rank evaluates with rank 0's statistics.
// One process (world size 1) works the same way, the all-reduce being the identity (CPU) or NCCL's with one
// rank (CUDA): gradients equal the module's own, at the cost of the copies in and out of the buckets.
// ember-train wraps its model only when there are several processes.
#include <memory>
#include <vector>

#include "autograd/hooks.h"
#include "distributed/process_group.h"
#include "nn/module.h"

namespace ember::distributed {

struct DdpOptions {
  double bucket_cap_mb = 25;
  bool broadcast_buffers = true;
};

class DistributedDataParallel : public nn::Module {
 public:
  // The group defaults to world() (init() first).
  explicit DistributedDataParallel(std::shared_ptr<nn::Module> module, DdpOptions options = {},
                                   ProcessGroup* group = nullptr);
  ~DistributedDataParallel() override;

  std::string type_name() const override { return "DistributedDataParallel"; }
  Tensor forward(const Tensor& x) override;
  nn::Module& module() { return *module_; }

  // While the returned guard lives, gradients are not averaged (local accumulation).
  class NoSync {
   public:
    explicit NoSync(DistributedDataParallel& ddp) : ddp_(&ddp), previous_(ddp.sync_) { ddp.sync_ = false; }
    ~NoSync() {
      if (ddp_) ddp_->sync_ = previous_;
    }
    NoSync(NoSync&& other) noexcept : ddp_(std::exchange(other.ddp_, nullptr)), previous_(other.previous_) {}
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;
    NoSync& operator=(NoSync&&) = delete;

   private:
    DistributedDataParallel* ddp_;
    bool previous_;
  };
  [[nodiscard]] NoSync no_sync() { return NoSync(*this); }

  // The buckets as built: parameter indices (into module().parameters()) per bucket, in launch order.
  std::vector<std::vector<size_t>> bucket_layout() const;
  // Collectives started during backward so far (all buckets, over the run): for tests and logs.
  int64_t buckets_reduced() const { return buckets_reduced_; }

 private:
  struct Bucket;
  void build_buckets(double cap_bytes);
  void on_grad_ready(size_t param);
  void launch_ready_buckets();
  void finish_backward();

  std::shared_ptr<nn::Module> module_;
  ProcessGroup* group_;
  DdpOptions options_;
  std::vector<Tensor> params_;              // module's parameters, registration order
  std::vector<std::unique_ptr<Bucket>> buckets_;
  std::vector<std::pair<size_t, size_t>> slot_;  // per parameter: bucket, index within it
  std::vector<autograd::HookHandle> hooks_;
  bool sync_ = true;
  bool in_backward_ = false;  // a backward with sync has marked something ready
  size_t next_launch_ = 0;    // the first bucket not yet started in this backward
  int64_t buckets_reduced_ = 0;
};

}  // namespace ember::distributed

namespace ember::nn {
using DistributedDataParallel = distributed::DistributedDataParallel;
}  // namespace ember::nn
