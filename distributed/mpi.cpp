// CPU-tensor collectives over MPI (distributed/mpi.h). A collective that must finish before the call returns
// is MPI's blocking one (MPI_Allreduce, MPI_Bcast, ...: Open MPI's tuned algorithms; a 2 MB all-reduce of two
// ranks on one machine takes 245 µs, its non-blocking MPI_Iallreduce 590-620 µs), watched by a thread that
// aborts the job once it has run past timeout(); all_reduce's early return is MPI_Iallreduce, completed by a
// polling wait with the same deadline. Either way a rank that died or hangs ends the job after timeout()
// seconds instead of blocking the others forever.
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <sched.h>
#include <thread>
#include <unistd.h>

#include "base/error.h"
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

std::thread::id& main_thread() {  // the thread that called init()
  static std::thread::id id;
  return id;
}
int g_rank = 0;                          // this process's rank, from init()
int g_thread_level = MPI_THREAD_SINGLE;  // what MPI_Init_thread provided

int world_rank() { return g_rank; }

[[noreturn]] void abort_on_timeout(const char* what) {
  std::fprintf(stderr,
               "ember: rank %d: %s has not completed after %.0f s (EMBER_COLLECTIVE_TIMEOUT): another rank died "
               "or hangs; aborting the job\n",
               world_rank(), what, timeout());
  std::fflush(stderr);
  // From the watchdog's thread while the main one is inside MPI: allowed with MPI_THREAD_MULTIPLE; without
  // it, exiting non-zero makes the launcher end the job just the same.
  if (g_thread_level == MPI_THREAD_MULTIPLE || std::this_thread::get_id() == main_thread())
    MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);
}

// The deadline of the blocking MPI call in progress (calls come from one thread, one at a time): a thread
// started with the first call looks every period and, once the call has run past timeout(), aborts the
// job. Arming and disarming are two atomic stores: nothing is woken per call.
class Watchdog {
 public:
  void arm(const char* what) {
    std::call_once(started_, [this] {
      const double limit = timeout();  // (here: a bad EMBER_COLLECTIVE_TIMEOUT throws on the caller's thread)
      std::thread([this, limit] { run(limit); }).detach();
    });
    what_.store(what, std::memory_order_relaxed);
    started_at_.store(now_ns(), std::memory_order_release);
  }
  void disarm() { started_at_.store(0, std::memory_order_release); }

 private:
  static int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  [[noreturn]] void run(double limit) {
    const auto period = std::chrono::duration<double>(std::clamp(limit / 8, 0.01, 1.0));
    for (;;) {
      std::this_thread::sleep_for(period);
      const int64_t at = started_at_.load(std::memory_order_acquire);
      if (at != 0 && static_cast<double>(now_ns() - at) * 1e-9 > limit) abort_on_timeout(what_.load());
    }
  }
  std::once_flag started_;
  std::atomic<int64_t> started_at_{0};  // 0: no call in progress
  std::atomic<const char*> what_{""};
};

Watchdog& watchdog() {
  static Watchdog& w = *new Watchdog;  // never destroyed: its detached thread reads it until the process ends
  return w;
}

// A blocking MPI call under the watchdog, for the guard's lifetime.
class Watched {
 public:
  explicit Watched(const char* what) { watchdog().arm(what); }
  ~Watched() { watchdog().disarm(); }
  Watched(const Watched&) = delete;
  Watched& operator=(const Watched&) = delete;
};

void average(Tensor t, ReduceOp op, int world) {  // (a handle: mul_ writes the caller's tensor)
  if (op == ReduceOp::avg && world > 1) t.mul_(1.0 / world);
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
    if (now > deadline) abort_on_timeout(what);
    if (now - start < std::chrono::seconds(1)) sched_yield();
    else usleep(100);
  }
}

class MpiWork final : public Work {
 public:
  MpiWork(MPI_Request request, Tensor t, ReduceOp op, int world)
      : request_(request), tensor_(std::move(t)), op_(op), world_(world) {}
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
    average(tensor_, op_, world_);
  }
  MPI_Request request_;
  Tensor tensor_;
  ReduceOp op_;
  int world_;
  bool done_ = false;
};

class MpiCollectives final : public Collectives {
 public:
  MpiCollectives(int rank, int world) : rank_(rank), world_(world) {}
  std::string name() const override { return "MPI"; }

  std::unique_ptr<Work> all_reduce(const Tensor& t, ReduceOp op) override {
    check_op(t, op);
    MPI_Request request;
    check(MPI_Iallreduce(MPI_IN_PLACE, t.data_ptr(), static_cast<int>(t.numel()), mpi_type(t.dtype()), mpi_op(op),
                         MPI_COMM_WORLD, &request),
          "MPI_Iallreduce");
    t.impl().storage->bump_version();
    return std::make_unique<MpiWork>(request, t, op, world_);
  }
  void all_reduce_now(const Tensor& t, ReduceOp op) override {
    check_op(t, op);
    {
      const Watched watched("all_reduce (MPI_Allreduce)");
      check(MPI_Allreduce(MPI_IN_PLACE, t.data_ptr(), static_cast<int>(t.numel()), mpi_type(t.dtype()), mpi_op(op),
                          MPI_COMM_WORLD),
            "MPI_Allreduce");
    }
    t.impl().storage->bump_version();
    average(t, op, world_);
  }
  void broadcast(const Tensor& t, int root) override {
    {
      const Watched watched("broadcast (MPI_Bcast)");
      check(MPI_Bcast(t.data_ptr(), static_cast<int>(t.numel()), mpi_type(t.dtype()), root, MPI_COMM_WORLD),
            "MPI_Bcast");
    }
    if (rank_ != root) t.impl().storage->bump_version();
  }
  void all_gather(const Tensor& in, const Tensor& out) override {
    const int n = static_cast<int>(in.numel());
    {
      const Watched watched("all_gather (MPI_Allgather)");
      check(MPI_Allgather(in.data_ptr(), n, mpi_type(in.dtype()), out.data_ptr(), n, mpi_type(out.dtype()),
                          MPI_COMM_WORLD),
            "MPI_Allgather");
    }
    out.impl().storage->bump_version();
  }
  void barrier() override {
    const Watched watched("barrier (MPI_Barrier)");
    check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
  }

 private:
  static void check_op(const Tensor& t, ReduceOp op) {
    EMBER_CHECK(op != ReduceOp::avg || t.dtype() == DType::f32 || t.dtype() == DType::f64,
                "all_reduce: avg needs a floating tensor, this one is ", dtype_name(t.dtype()), "; use sum");
  }
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
  // Multiple: the watchdog's thread may call MPI_Abort while this one is inside a collective.
  check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &g_thread_level), "MPI_Init_thread");
  check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  Rank r;
  check(MPI_Comm_rank(MPI_COMM_WORLD, &r.rank), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &r.size), "MPI_Comm_size");
  g_rank = r.rank;
  main_thread() = std::this_thread::get_id();
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
  const Watched watched("broadcast of the NCCL id (MPI_Bcast)");
  check(MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
}

}  // namespace ember::distributed::mpi
