// NCCL for a build without it (no CUDA, or nccl.h/libnccl.so not found at configure time).
#include "base/error.h"
#include "backends/nccl.h"

namespace ember::nccl {
namespace {
constexpr const char* kMissing =
    "this build of Ember has no NCCL (it needs the CUDA backend and nccl.h/libnccl.so, e.g. under /usr/local/cuda, "
    "at configure time); rebuild with them, or train on CPU tensors (MPI)";
}  // namespace

bool built_with_nccl() { return false; }
std::string version() { return kMissing; }
UniqueId make_unique_id() { detail::throw_error("nccl::make_unique_id: ", kMissing); }
std::unique_ptr<Communicator> make_communicator(const UniqueId&, int, int, int) {
  detail::throw_error("nccl::make_communicator: ", kMissing);
}

}  // namespace ember::nccl
