#pragma once
// The CPU backend: OpenMP loops over the shared functors of backends/kernels.h, OpenBLAS GEMM, and a
// caching allocator. It is the reference every other backend is checked against.
#include "backends/backend.h"
#include "backends/cpu/allocator.h"

namespace ember::cpu {

class CpuBackend final : public Backend {
 public:
  DeviceType type() const override { return DeviceType::CPU; }

  void* allocate(size_t bytes, int) override { return allocator_.allocate(bytes); }
  void deallocate(void* ptr, size_t bytes, int) override { allocator_.deallocate(ptr, bytes); }
  MemoryStats memory_stats(int) override { return allocator_.stats(); }
  void reset_peak_memory_stats(int) override { allocator_.reset_peak(); }
  void empty_cache(int) override { allocator_.empty_cache(); }
  void synchronize(int) override {}

  void copy(const TensorArg& src, const TensorArg& dst) override;
  void copy_bytes_host(void* device_ptr, void* host_ptr, size_t bytes, bool to_host, int) override;
  void fill(const TensorArg& out, double value) override;

  void unary(UnaryOp op, const TensorArg& in, const TensorArg& out, double alpha, double beta) override;
  void binary(BinaryOp op, const TensorArg& a, const TensorArg& b, const TensorArg& out) override;
  void where(const TensorArg& cond, const TensorArg& a, const TensorArg& b, const TensorArg& out) override;
  void reduce(ReduceOp op, const TensorArg& in, const TensorArg& out) override;
  void arg_reduce(ArgReduceOp op, const TensorArg& in, const TensorArg& out, int dim) override;
  void index(IndexOp op, const TensorArg& in, const TensorArg& index, const TensorArg& out, int dim) override;
  void random(RandomOp op, const TensorArg& out, uint64_t seed, uint64_t offset, double a, double b) override;
  void matmul(const TensorArg& a, const TensorArg& b, const TensorArg& out) override;

  std::string describe() override;

 private:
  CachingAllocator allocator_;
};

CpuBackend& cpu_backend();

}  // namespace ember::cpu
