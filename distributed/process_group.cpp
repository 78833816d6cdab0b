#include "distributed/process_group.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "autograd/ops.h"
#include "backends/cuda_info.h"
#include "base/error.h"
#include "backends/nccl.h"
#include "distributed/mpi.h"

namespace ember::distributed {
namespace {

// One process: every collective is the identity.
class SingleProcess final : public Collectives {
 public:
  std::string name() const override { return "single process"; }
  std::unique_ptr<Work> all_reduce(const Tensor&, ReduceOp) override { return std::make_unique<DoneWork>(); }
  void broadcast(const Tensor&, int) override {}
  void all_gather(const Tensor& in, const Tensor& out) override { out.select(0, 0).copy_(in); }
  void barrier() override {}
};

nccl::Op nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return nccl::Op::sum;
    case ReduceOp::avg: return nccl::Op::avg;
    case ReduceOp::max: return nccl::Op::max;
    case ReduceOp::min: return nccl::Op::min;
  }
  detail::throw_error("distributed: unknown reduce op");
}

// CUDA tensors over NCCL: one communicator per GPU used, made on first use (rank 0's id sent over MPI).
// The calls are queued on the GPU's stream, ordered with Ember's ops: their Work is done at once.
class NcclCollectives final : public Collectives {
 public:
  NcclCollectives(int rank, int world) : rank_(rank), world_(world) {}
  std::string name() const override { return nccl::version(); }
  std::unique_ptr<Work> all_reduce(const Tensor& t, ReduceOp op) override {
    comm(t).all_reduce(t.data_ptr(), t.numel(), t.dtype(), nccl_op(op));
    t.impl().storage->bump_version();
    return std::make_unique<DoneWork>();
  }
  void broadcast(const Tensor& t, int root) override {
    comm(t).broadcast(t.data_ptr(), t.numel(), t.dtype(), root);
    t.impl().storage->bump_version();
  }
  void all_gather(const Tensor& in, const Tensor& out) override {
    comm(in).all_gather(in.data_ptr(), out.data_ptr(), in.numel(), in.dtype());
    out.impl().storage->bump_version();
  }
  void barrier() override {
    EMBER_CHECK(!comms_.empty(), "barrier on NCCL: no CUDA tensor was communicated yet; barrier() on the "
                "process group uses MPI for that");
    Tensor one = zeros({1}, {.device = Device(DeviceType::CUDA, comms_.begin()->first)});
    all_reduce(one, ReduceOp::sum);
    (void)one.item<float>();  // waits for the GPU
  }

 private:
  nccl::Communicator& comm(const Tensor& t) {
    const int device = t.device().index;
    auto it = comms_.find(device);
    if (it != comms_.end()) return *it->second;
    nccl::UniqueId id{};
    if (rank_ == 0) id = nccl::make_unique_id();
    if (world_ > 1) mpi::broadcast_bytes(id.data(), id.size(), 0);
    return *comms_.emplace(device, nccl::make_communicator(id, rank_, world_, device)).first->second;
  }
  int rank_, world_;
  std::map<int, std::unique_ptr<nccl::Communicator>> comms_;
};

struct State {
  bool initialized = false;
  Launch launch;
  std::unique_ptr<ProcessGroup> world;
};
State& state() {
  static State s;
  return s;
}

// The launcher's variables without EMBER_*: what MPI itself will see.
Launch launcher_only() {
  return detect_launch([](const char* name) -> const char* {
    return std::string_view(name).starts_with("EMBER_") ? nullptr : std::getenv(name);
  });
}

}  // namespace

ProcessGroup::ProcessGroup(int rank, int world_size, std::unique_ptr<Collectives> cpu, std::unique_ptr<Collectives> cuda)
    : rank_(rank), world_size_(world_size), cpu_(std::move(cpu)), cuda_(std::move(cuda)) {}
ProcessGroup::~ProcessGroup() = default;

Collectives& ProcessGroup::collectives(Device device) {
  if (!device.is_cuda()) return *cpu_;
  if (!cuda_)
    detail::throw_error("distributed: a CUDA tensor in a collective across ", world_size_, " processes, but ",
                        nccl::version(), "; or move the tensor to the CPU (MPI)");
  return *cuda_;
}

void ProcessGroup::check(const Tensor& t, const char* op) const {
  EMBER_CHECK(t.defined(), op, ": the tensor is undefined");
  EMBER_CHECK(t.is_contiguous(), op, ": the tensor (shape ", t.shape(), ") is not contiguous; pass t.contiguous() "
              "and copy the result back");
}

void ProcessGroup::all_reduce(const Tensor& t, ReduceOp op) {
  check(t, "all_reduce");
  collectives(t.device()).all_reduce_now(t, op);
}

std::unique_ptr<Work> ProcessGroup::all_reduce_async(const Tensor& t, ReduceOp op) {
  check(t, "all_reduce");
  return collectives(t.device()).all_reduce(t, op);
}

void ProcessGroup::broadcast(const Tensor& t, int root) {
  check(t, "broadcast");
  EMBER_CHECK(root >= 0 && root < world_size_, "broadcast: root ", root, " is not a rank of this group (0 to ",
              world_size_ - 1, ")");
  collectives(t.device()).broadcast(t, root);
}

Tensor ProcessGroup::all_gather(const Tensor& t) {
  check(t, "all_gather");
  Shape shape{world_size_};
  for (int64_t d : t.shape()) shape.push_back(d);
  Tensor out = empty(shape, {.dtype = t.dtype(), .device = t.device()});
  collectives(t.device()).all_gather(t, out);
  return out;
}

void ProcessGroup::barrier() { cpu_->barrier(); }

std::vector<double> ProcessGroup::all_reduce(std::vector<double> values, ReduceOp op) {
  if (world_size_ == 1 || values.empty()) return values;
  const Tensor t = from_vector(values, {static_cast<int64_t>(values.size())}, {.dtype = DType::f64});
  all_reduce(t, op);
  return t.to_vector<double>();
}

std::vector<std::string> ProcessGroup::all_gather(const std::string& text) {
  if (world_size_ == 1) return {text};
  const std::vector<double> longest = all_reduce({static_cast<double>(text.size())}, ReduceOp::max);
  const auto n = static_cast<int64_t>(longest[0]);
  std::vector<int64_t> codes(static_cast<size_t>(n) + 1, -1);  // -1 pads; slot 0 holds the length
  codes[0] = static_cast<int64_t>(text.size());
  for (size_t i = 0; i < text.size(); ++i) codes[i + 1] = static_cast<unsigned char>(text[i]);
  const std::vector<int64_t> all = all_gather(from_vector(codes, {n + 1}, {.dtype = DType::i64})).to_vector<int64_t>();
  std::vector<std::string> out;
  for (int r = 0; r < world_size_; ++r) {
    const int64_t* row = all.data() + r * (n + 1);
    std::string s;
    for (int64_t i = 0; i < row[0]; ++i) s.push_back(static_cast<char>(row[i + 1]));
    out.push_back(std::move(s));
  }
  return out;
}

void check_launch(const Launch& launch, bool under_mpi_launcher, bool built_with_mpi) {
  if (launch.world_size > 1 && !under_mpi_launcher)
    detail::throw_error("distributed::init: ", launch.launcher == "EMBER_*" ? "EMBER_WORLD_SIZE" : launch.launcher,
                        " asks for ", launch.world_size, " processes, but Ember joins processes only through MPI: "
                        "start them with mpirun -np ", launch.world_size, " (or srun), which sets each one's rank");
  if (launch.world_size > 1 && !built_with_mpi)
    detail::throw_error("distributed::init: ", launch.launcher, " started ", launch.world_size,
                        " processes (this is rank ", launch.rank, "), but this build of Ember has no MPI, so they "
                        "cannot train together; install Open MPI (apt-get install libopenmpi-dev openmpi-bin, or "
                        "scripts/setup.sh) and rebuild — CMake finds it by itself — or run a single process "
                        "without the launcher");
}

const Launch& init() {
  State& s = state();
  if (s.initialized) return s.launch;
  const Launch launch = detect_launch();
  const Launch launcher = launcher_only();
  check_launch(launch, launcher.from_launcher(), mpi::built_with_mpi());
  std::unique_ptr<Collectives> cpu, cuda;
  int rank = 0, size = 1;
  if (mpi::built_with_mpi() && launcher.from_launcher()) {
    const mpi::Rank r = mpi::init();
    EMBER_CHECK(r.rank == launch.rank && r.size == launch.world_size, "distributed::init: ", launch.launcher,
                " says rank ", launch.rank, " of ", launch.world_size, " but MPI says rank ", r.rank, " of ", r.size,
                "; unset the EMBER_RANK/EMBER_WORLD_SIZE variables (the launcher sets the ranks)");
    rank = r.rank;
    size = r.size;
    cpu = mpi::make_collectives(rank, size);
  } else {
    cpu = std::make_unique<SingleProcess>();
  }
  if (nccl::built_with_nccl()) cuda = std::make_unique<NcclCollectives>(rank, size);
  else if (size == 1) cuda = std::make_unique<SingleProcess>();
  s.world = std::make_unique<ProcessGroup>(rank, size, std::move(cpu), std::move(cuda));
  s.launch = launch;
  s.launch.rank = rank;
  s.launch.world_size = size;
  s.initialized = true;
  return s.launch;
}

bool is_initialized() { return state().initialized; }

ProcessGroup& world() {
  EMBER_CHECK(state().initialized, "distributed::world(): call distributed::init() first");
  return *state().world;
}

int rank() { return state().initialized ? state().launch.rank : 0; }
int world_size() { return state().initialized ? state().launch.world_size : 1; }
int local_rank() { return state().initialized ? state().launch.local_rank : 0; }

double timeout() {
  static const double seconds = [] {
    const char* text = std::getenv("EMBER_COLLECTIVE_TIMEOUT");
    if (text == nullptr) return 300.0;
    char* end = nullptr;
    const double v = std::strtod(text, &end);
    EMBER_CHECK(*text != '\0' && *end == '\0' && v > 0, "EMBER_COLLECTIVE_TIMEOUT='", text,
                "' is not a positive number of seconds");
    return v;
  }();
  return seconds;
}

void finalize() {
  State& s = state();
  s.world.reset();
  mpi::finalize();
  s.initialized = false;
}

void abort(int code) { mpi::abort(code); }

std::string describe_backends() {
  return (mpi::built_with_mpi() ? mpi::version() : std::string("no MPI in this build")) + "; " +
         (nccl::built_with_nccl() ? nccl::version() : std::string("no NCCL in this build"));
}

}  // namespace ember::distributed
