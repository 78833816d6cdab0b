// CPU-tensor collectives over MPI (distributed/mpi.h). Every collective is non-blocking underneath
// (MPI_Iallreduce, MPI_Ibcast, ...) and completed by a polling wait with a deadline: a rank that died or
// hangs aborts the job after timeout() seconds instead of blocking the others forever.
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <sched.h>
#include <unistd.h>

#include "backends/error.h"
#include "distributed/mpi.h"

namespace ember::distributed::mpi {
namespace {

void check(int code, const char* call) {
  if (code == MPI_SUCCESS) [[likely]] return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  detail::throw_error("distributed: ", call, " failed: ", std::string(text, static_cast<size_t>(length)),
                      " (another rank may have died; the launcher's output names it)");
}

MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return MPI_FLOAT;
    case DType::f64: return MPI_DOUBLE;
    case DType::i64: return MPI_INT64_T;
    case DType::b8: return MPI_UINT8_T;
  }
  detail::throw_error("distributed: unknown dtype");
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return MPI_SUM;  // avg: the sum, divided by the world size once it has arrived
    case ReduceOp::max: return MPI_MAX;
    case ReduceOp::min: return MPI_MIN;
  }
  detail::throw_error("distributed: unknown reduce op");
}

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

// Polls `request` until it completes; past the deadline, says which collective stalled and aborts the job.
// NOTE: a busy poll is fastest when every rank has its own core, but on a shared or oversubscribed machine
// it takes the core from the rank being waited for. So: spin for the first 50 µs (a peer that is nearly there),
// then yield the core between polls. Sleeping between polls only after a second (a long wait: rank 0 writing
// a checkpoint): a large message over shared memory moves in fragments, each needing a poll on both sides,
// so sleeping earlier stretches a 2 MB all-reduce by milliseconds.
void wait_for(MPI_Request& request, const char* what) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const auto deadline = start + std::chrono::duration<double>(timeout());
  int done = 0;
  for (uint64_t polls = 0;; ++polls) {
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
    if (done) return;
    if (polls < 64) continue;
    const auto now = clock::now();
    if (now - start < std::chrono::microseconds(50)) continue;
    if (now > deadline) {
      std::fprintf(stderr,
                   "ember: rank %d: %s has not completed after %.0f s (EMBER_COLLECTIVE_TIMEOUT): another rank died "
                   "or hangs; aborting the job\n",
                   world_rank(), what, timeout());
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (now - start < std::chrono::seconds(1)) sched_yield();
    else usleep(100);
  }
}

class MpiWork final : public Work {
 public:
  MpiWork(MPI_Request request, Tensor t, bool average, int world)
      : request_(request), tensor_(std::move(t)), average_(average), world_(world) {}
  ~MpiWork() override {
    // NOTE: MPI still writes into the tensor until the request completes: a dropped Work waits.
    if (!done_) wait();
  }
  bool test() override {
    if (done_) return true;
    int flag = 0;
    check(MPI_Test(&request_, &flag, MPI_STATUS_IGNORE), "MPI_Iallreduce");
    if (flag) finish();
    return done_;
  }
  void wait() override {
    if (done_) return;
    wait_for(request_, "all_reduce (MPI_Iallreduce)");
    finish();
  }

 private:
  void finish() {
    done_ = true;
    if (average_ && world_ > 1) tensor_.mul_(1.0 / world_);
  }
  MPI_Request request_;
  Tensor tensor_;
  bool average_;
  int world_;
  bool done_ = false;
};

class MpiCollectives final : public Collectives {
 public:
  MpiCollectives(int rank, int world) : rank_(rank), world_(world) {}
  std::string name() const override { return "MPI"; }

  std::unique_ptr<Work> all_reduce(const Tensor& t, ReduceOp op) override {
    EMBER_CHECK(op != ReduceOp::avg || t.dtype() == DType::f32 || t.dtype() == DType::f64,
                "all_reduce: avg needs a floating tensor, this one is ", dtype_name(t.dtype()), "; use sum");
    MPI_Request request;
    check(MPI_Iallreduce(MPI_IN_PLACE, t.data_ptr(), static_cast<int>(t.numel()), mpi_type(t.dtype()), mpi_op(op),
                         MPI_COMM_WORLD, &request),
          "MPI_Iallreduce");
    t.impl().storage->bump_version();
    return std::make_unique<MpiWork>(request, t, op == ReduceOp::avg, world_);
  }
  void broadcast(const Tensor& t, int root) override {
    MPI_Request request;
    check(MPI_Ibcast(t.data_ptr(), static_cast<int>(t.numel()), mpi_type(t.dtype()), root, MPI_COMM_WORLD, &request),
          "MPI_Ibcast");
    wait_for(request, "broadcast (MPI_Ibcast)");
    if (rank_ != root) t.impl().storage->bump_version();
  }
  void all_gather(const Tensor& in, const Tensor& out) override {
    MPI_Request request;
    const int n = static_cast<int>(in.numel());
    check(MPI_Iallgather(in.data_ptr(), n, mpi_type(in.dtype()), out.data_ptr(), n, mpi_type(out.dtype()),
                         MPI_COMM_WORLD, &request),
          "MPI_Iallgather");
    wait_for(request, "all_gather (MPI_Iallgather)");
    out.impl().storage->bump_version();
  }
  void barrier() override {
    MPI_Request request;
    check(MPI_Ibarrier(MPI_COMM_WORLD, &request), "MPI_Ibarrier");
    wait_for(request, "barrier (MPI_Ibarrier)");
  }

 private:
  int rank_, world_;
};

}  // namespace

bool built_with_mpi() { return true; }

std::string version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string v(text, static_cast<size_t>(length));
  if (const size_t cut = v.find_first_of(",\n"); cut != std::string::npos) v.resize(cut);
  return "MPI (" + v + ")";
}

Rank init() {
  int provided = 0;
  check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  Rank r;
  check(MPI_Comm_rank(MPI_COMM_WORLD, &r.rank), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &r.size), "MPI_Comm_size");
  return r;
}

bool initialized() {
  int init = 0, done = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&done);
  return init && !done;
}

void finalize() {
  if (initialized()) MPI_Finalize();
}

void abort(int code) {
  if (initialized()) MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

std::unique_ptr<Collectives> make_collectives(int rank, int world) {
  return std::make_unique<MpiCollectives>(rank, world);
}

void broadcast_bytes(void* data, size_t bytes, int root) {
  MPI_Request request;
  check(MPI_Ibcast(data, static_cast<int>(bytes), MPI_BYTE, root, MPI_COMM_WORLD, &request), "MPI_Ibcast");
  wait_for(request, "broadcast of the NCCL id (MPI_Ibcast)");
}

}  // namespace ember::distributed::mpi
