#pragma once
// NCCL collectives on GPU buffers, without any CUDA or NCCL header: the part of distributed/'s NCCL backend
// that must live in backends/cuda/ (DESIGN.md: only backends/cuda/ sees CUDA headers). Every call is queued
// on the GPU's Ember stream (the one its ops run on), so it is ordered after the ops that produced the
// buffer and before those that read it; nothing here waits for the GPU.
//
// A build without CUDA or without NCCL (nccl.h and libnccl.so not found at configure time) links the
// stand-in (backends/no_nccl.cpp): built_with_nccl() is false and the rest throws ember::Error saying so.
#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "base/dtype.h"

namespace ember::nccl {

bool built_with_nccl();
// "NCCL 2.27.3", or why there is none.
std::string version();

using UniqueId = std::array<char, 128>;  // ncclUniqueId: made by one rank, sent to the others (over MPI)
UniqueId make_unique_id();

enum class Op { sum, avg, max, min };

// One communicator: this process's rank among `world` processes, on GPU `device`.
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual void all_reduce(void* data, int64_t count, DType dtype, Op op) = 0;  // in place
  virtual void broadcast(void* data, int64_t count, DType dtype, int root) = 0;
  // out holds world × count elements: rank r's `in` lands at r × count.
  virtual void all_gather(const void* in, void* out, int64_t count, DType dtype) = 0;
  virtual int device() const = 0;
};

// Collective: every rank calls it with the same id. Throws ember::Error naming the NCCL error.
std::unique_ptr<Communicator> make_communicator(const UniqueId& id, int rank, int world, int device);

}  // namespace ember::nccl
