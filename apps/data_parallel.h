#pragma once
// ember-train under a launcher (mpirun -np N, srun): what the training loop needs to run as one of N
// data-parallel processes (docs/distributed.md). With one process every call here is free and changes
// nothing.
//
// - Each process trains on its shard of every epoch (Session's train loader: shard = rank) with the
//   config's batch_size: the global batch is N × batch_size (logged at the start).
// - The model is wrapped in DistributedDataParallel: rank 0's initial weights everywhere, gradients
//   averaged during backward; gradient accumulation synchronises only on a step's last micro-batch.
// - Decisions that must be the same everywhere are agreed on: with skip_nonfinite, a non-finite loss on any
//   rank skips the step on all (without it, that rank stops with the error and the job ends); a signal on
//   any rank checkpoints and stops all; running sums are summed
//   across ranks before metrics and checkpoints; the end-of-epoch evaluation (each rank evaluates the whole
//   test set) and the metric for the plateau scheduler are rank 0's.
// - Only rank 0 writes files (run directory, checkpoints, metrics, trace) and prints progress; the other
//   ranks log warnings only. Every rank reads the checkpoint on --resume (a shared filesystem, or copies).
// - A rank whose config hash differs from rank 0's is refused at start (every rank exits, naming it).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apps/session.h"
#include "distributed/ddp.h"

namespace ember::app {

class DataParallel {
 public:
  // For an initialised distributed::world() (ember-train's main calls init()); wraps session.model in DDP
  // when there are several processes.
  explicit DataParallel(Session& session);

  int rank() const { return rank_; }
  int world() const { return world_; }
  bool root() const { return rank_ == 0; }

  // The module to call for training steps: the DDP wrapper, or the model itself.
  nn::Module& train_module() { return ddp_ ? static_cast<nn::Module&>(*ddp_) : *model_; }
  // No gradient averaging while the guard lives (the first micro-batches of an accumulated step).
  std::optional<distributed::DistributedDataParallel::NoSync> no_sync();

  // True on every rank when `flag` is true on any.
  bool any(bool flag) const;
  // Element-wise sums across ranks.
  std::vector<double> sum(std::vector<double> values) const;
  // Rank 0's value on every rank.
  double from_root(double value) const;
  // Throws ConfigError on every rank unless all ranks' config hashes equal rank 0's (naming those that differ).
  void check_same_config(const std::string& hash) const;
  // "2 processes × batch 32 = global batch 64 (Open MPI, MPI (Open MPI v4.1.4))", or "" for one process.
  std::string describe(int64_t batch_size) const;

 private:
  int rank_ = 0, world_ = 1;
  std::shared_ptr<nn::Module> model_;
  std::shared_ptr<distributed::DistributedDataParallel> ddp_;
};

}  // namespace ember::app
