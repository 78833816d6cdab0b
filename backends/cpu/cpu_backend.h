#pragma once
// The CPU backend: OpenMP loops over the shared functors of backends/kernels.h, OpenBLAS GEMM, and a
// caching allocator. It is the reference every other backend is checked against.
#include "backends/backend.h"
#include "backends/caching_allocator.h"

namespace ember::cpu {

class CpuBackend final : public Backend {
 public:
  CpuBackend() = default;
  // Memory from `system` instead of the C library: tests make a CPU stand-in for a GPU with a capacity.
  explicit CpuBackend(CachingAllocator::SystemAllocator system) : allocator_(std::move(system)) {}
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

  void optimizer_step(OptimizerOp op, const OptimizerParams& p, const TensorArg& param, const TensorArg& grad,
                      const TensorArg* s0, const TensorArg* s1, const TensorArg* s2) override;
  void conv2d_forward(const TensorArg& x, const TensorArg& w, const TensorArg* bias, const TensorArg& y,
                      const Conv2dParams& p) override;
  void conv2d_backward(const TensorArg& x, const TensorArg& w, const TensorArg& grad_y, const TensorArg* grad_x,
                       const TensorArg* grad_w, const TensorArg* grad_bias, const Conv2dParams& p) override;
  void pool2d_forward(PoolOp op, const TensorArg& x, const TensorArg& y, const TensorArg* indices,
                      const Pool2dParams& p) override;
  void pool2d_backward(PoolOp op, const TensorArg& grad_y, const TensorArg* indices, const TensorArg& grad_x,
                       const Pool2dParams& p) override;
  void softmax_forward(const TensorArg& x, const TensorArg& y, bool log) override;
  void softmax_backward(const TensorArg& grad_y, const TensorArg& y, const TensorArg& grad_x, bool log) override;
  void cross_entropy_forward(const TensorArg& logits, const TensorArg& target, const TensorArg& loss,
                             const TensorArg& lse, int64_t ignore_index, double label_smoothing) override;
  void cross_entropy_backward(const TensorArg& logits, const TensorArg& target, const TensorArg& lse,
                              const TensorArg& grad_loss, const TensorArg& grad_logits, int64_t ignore_index,
                              double label_smoothing) override;
  void batch_norm_forward(const TensorArg& x, const TensorArg* weight, const TensorArg* bias,
                          const TensorArg* running_mean, const TensorArg* running_var, const TensorArg& y,
                          const TensorArg& save_mean, const TensorArg& save_invstd, bool training, double momentum,
                          double eps) override;
  void batch_norm_backward(const TensorArg& grad_y, const TensorArg& x, const TensorArg* weight,
                           const TensorArg& save_mean, const TensorArg& save_invstd, const TensorArg* grad_x,
                           const TensorArg* grad_weight, const TensorArg* grad_bias, bool training) override;
  void layer_norm_forward(const TensorArg& x, const TensorArg* weight, const TensorArg* bias, const TensorArg& y,
                          const TensorArg& save_mean, const TensorArg& save_invstd, double eps) override;
  void layer_norm_backward(const TensorArg& grad_y, const TensorArg& x, const TensorArg* weight,
                           const TensorArg& save_mean, const TensorArg& save_invstd, const TensorArg* grad_x,
                           const TensorArg* grad_weight, const TensorArg* grad_bias) override;

  std::string describe() override;

  // Scratch memory from the caching allocator, returned on scope exit.
  class Workspace {
   public:
    Workspace(CpuBackend& b, size_t bytes) : b_(b), bytes_(bytes), ptr_(b.allocator_.allocate(bytes)) {}
    ~Workspace() { b_.allocator_.deallocate(ptr_, bytes_); }
    Workspace(const Workspace&) = delete;
    Workspace& operator=(const Workspace&) = delete;
    template <typename T> T* as() const { return static_cast<T*>(ptr_); }

   private:
    CpuBackend& b_;
    size_t bytes_;
    void* ptr_;
  };

 private:
  CachingAllocator allocator_;
};

CpuBackend& cpu_backend();

}  // namespace ember::cpu
