// NCCL communicators and collectives on Ember's per-GPU stream (backends/nccl.h).
#include <nccl.h>

#include <cstring>

#include "backends/cuda/check.h"
#include "backends/cuda/cuda_backend.h"
#include "base/error.h"
#include "backends/nccl.h"

#define EMBER_NCCL_CHECK(call)                                                                       \
  do {                                                                                               \
    const ncclResult_t ember_nr_ = (call);                                                           \
    if (ember_nr_ != ncclSuccess) [[unlikely]]                                                       \
      ::ember::cuda::detail::throw_call_error(__FILE__, __LINE__, #call, "NCCL", "ncclResult",       \
                                              ncclGetErrorString(ember_nr_));                        \
  } while (0)

namespace ember::nccl {
namespace {

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return ncclFloat32;
    case DType::f64: return ncclFloat64;
    case DType::i64: return ncclInt64;
    case DType::b8: return ncclUint8;
  }
  detail::throw_error("NCCL: unknown dtype");
}

ncclRedOp_t nccl_op(Op op) {
  switch (op) {
    case Op::sum: return ncclSum;
    case Op::avg: return ncclAvg;
    case Op::max: return ncclMax;
    case Op::min: return ncclMin;
  }
  detail::throw_error("NCCL: unknown reduce op");
}

static_assert(sizeof(ncclUniqueId) == sizeof(UniqueId), "ncclUniqueId is 128 bytes");

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(const UniqueId& id, int rank, int world, int device) : device_(device) {
    ncclUniqueId nid;
    std::memcpy(&nid, id.data(), sizeof nid);
    cuda::cuda_backend().context(device);  // makes `device` current and creates its stream
    EMBER_NCCL_CHECK(ncclCommInitRank(&comm_, world, nid, rank));
  }
  ~NcclCommunicator() override {
    if (comm_ != nullptr) ncclCommDestroy(comm_);
  }
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  void all_reduce(void* data, int64_t count, DType dtype, Op op) override {
    EMBER_NCCL_CHECK(ncclAllReduce(data, data, static_cast<size_t>(count), nccl_type(dtype), nccl_op(op), comm_, stream()));
  }
  void broadcast(void* data, int64_t count, DType dtype, int root) override {
    EMBER_NCCL_CHECK(ncclBroadcast(data, data, static_cast<size_t>(count), nccl_type(dtype), root, comm_, stream()));
  }
  void all_gather(const void* in, void* out, int64_t count, DType dtype) override {
    EMBER_NCCL_CHECK(ncclAllGather(in, out, static_cast<size_t>(count), nccl_type(dtype), comm_, stream()));
  }
  int device() const override { return device_; }

 private:
  cudaStream_t stream() { return cuda::cuda_backend().context(device_).stream; }
  int device_;
  ncclComm_t comm_ = nullptr;
};

}  // namespace

bool built_with_nccl() { return true; }

std::string version() {
  int v = 0;
  ncclGetVersion(&v);
  return "NCCL " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

UniqueId make_unique_id() {
  ncclUniqueId nid;
  EMBER_NCCL_CHECK(ncclGetUniqueId(&nid));
  UniqueId id;
  std::memcpy(id.data(), &nid, sizeof nid);
  return id;
}

std::unique_ptr<Communicator> make_communicator(const UniqueId& id, int rank, int world, int device) {
  return std::make_unique<NcclCommunicator>(id, rank, world, device);
}

}  // namespace ember::nccl
