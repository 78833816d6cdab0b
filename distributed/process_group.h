#pragma once
// Process groups: collectives across the processes of a job (PyTorch's torch.distributed).
//
//   distributed::init();                          // reads the launcher's environment (launch.h)
//   auto& world = distributed::world();
//   world.all_reduce(grad, distributed::ReduceOp::avg);  // every rank ends with the mean
//   world.broadcast(weights, /*root=*/0);
//   distributed::finalize();                      // or let the process exit normally
//
// Backends, chosen from the tensor's device: MPI for CPU tensors (a build with MPI, processes started by
// mpirun/srun), NCCL for CUDA tensors (a CUDA build with NCCL; its communicator is created on first use,
// its id sent from rank 0 over MPI). A single process without a launcher needs neither: its collectives
// are the identity (all_gather returns the tensor itself).
//
// Rules, as in MPI and NCCL: every rank calls the same collectives in the same order with tensors of the
// same shape and dtype. Tensors are contiguous; in-place calls change the tensor's data and bump its
// storage version. A collective that has not finished after timeout() seconds (EMBER_COLLECTIVE_TIMEOUT,
// default 300) — a rank died or hangs — aborts the whole job with a message naming the rank and the
// collective: never a hang. Under mpirun, a rank that dies ends the job at once, and mpirun names it.
//
// Thread use: collectives are called from one thread (the one that called init()).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "distributed/launch.h"

namespace ember::distributed {

enum class ReduceOp { sum, avg, max, min };

// A collective in flight (all_reduce_async). wait() blocks until it has finished (throws on failure or
// aborts the job on timeout); test() says whether it has, and moves it on. Either is safe to call twice.
class Work {
 public:
  virtual ~Work() = default;
  virtual bool test() = 0;
  virtual void wait() = 0;
};

// A Work that had finished when it was made (a collective that completes on the call, or queues on a stream).
class DoneWork final : public Work {
 public:
  bool test() override { return true; }
  void wait() override {}
};

// One transport (MPI, NCCL, or the single-process identity).
class Collectives {
 public:
  virtual ~Collectives() = default;
  virtual std::string name() const = 0;
  virtual std::unique_ptr<Work> all_reduce(const Tensor& t, ReduceOp op) = 0;  // in place, may return early
  // The same, finished on return; a transport may have a faster algorithm for it than for the early return
  // (MPI's blocking MPI_Allreduce against its non-blocking one).
  virtual void all_reduce_now(const Tensor& t, ReduceOp op) { all_reduce(t, op)->wait(); }
  virtual void broadcast(const Tensor& t, int root) = 0;
  virtual void all_gather(const Tensor& in, const Tensor& out) = 0;  // out: [world, ...in.shape]
  virtual void barrier() = 0;
};

class ProcessGroup {
 public:
  ProcessGroup(int rank, int world_size, std::unique_ptr<Collectives> cpu, std::unique_ptr<Collectives> cuda);
  ~ProcessGroup();
  int rank() const { return rank_; }
  int size() const { return world_size_; }

  // Every rank's `t` becomes the reduction of all ranks' `t` (sum, mean, max or min; element-wise).
  void all_reduce(const Tensor& t, ReduceOp op = ReduceOp::sum);
  // The same without waiting: the tensor may not be read or written until the Work has finished.
  std::unique_ptr<Work> all_reduce_async(const Tensor& t, ReduceOp op = ReduceOp::sum);
  // Every rank's `t` becomes root's.
  void broadcast(const Tensor& t, int root = 0);
  // [world, ...t.shape]: rank r's tensor at index r.
  Tensor all_gather(const Tensor& t);
  void barrier();

  // Scalars and strings, for the apps: metrics summed across ranks, rank 0's config hash.
  std::vector<double> all_reduce(std::vector<double> values, ReduceOp op = ReduceOp::sum);
  std::vector<std::string> all_gather(const std::string& text);

  // The transport serving tensors on `device` ("MPI", "NCCL", "single process"), or throws saying why none.
  Collectives& collectives(Device device);

 private:
  void check(const Tensor& t, const char* op) const;
  int rank_ = 0, world_size_ = 1;
  std::unique_ptr<Collectives> cpu_, cuda_;
};

// Sets up the world group from the launcher's environment (launch.h); a second call returns the same
// Launch. Throws ember::Error when the launcher started several processes but this build has no MPI (and
// says how to rebuild), or when EMBER_WORLD_SIZE > 1 without a launcher Ember can join.
const Launch& init();
// What init() checks before it starts anything: `requested` (detect_launch()) against whether an MPI
// launcher started this process and whether the build has MPI. Throws the error init() would.
void check_launch(const Launch& requested, bool under_mpi_launcher, bool built_with_mpi);
bool is_initialized();
// The world group (init() first; throws otherwise).
ProcessGroup& world();
// rank()/world_size()/local_rank() of this process: 0, 1, 0 before init().
int rank();
int world_size();
int local_rank();
// Seconds a collective may take before the job is aborted (EMBER_COLLECTIVE_TIMEOUT, default 300).
double timeout();
// Ends the MPI session (call after the last collective; normal exit only — on an error use abort()).
void finalize();
// Ends every process of the job with `code`, at once (MPI_Abort); a plain exit without MPI.
[[noreturn]] void abort(int code);
// "MPI (Open MPI v4.1.4)", "NCCL 2.28.9", "no MPI in this build", ...: for logs and ember-devices.
std::string describe_backends();

}  // namespace ember::distributed
