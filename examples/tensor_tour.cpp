// A tour of the tensor API: factories, views, broadcasting, reductions, matmul, and what the CPU
// backend runs with. Run: ./build/examples/tensor_tour
#include <ember/ember.h>

#include <iostream>

using namespace ember;

int main() {
  std::cout << "CPU: " << describe(kCPU) << "\n";
  std::cout << "CUDA: " << (cuda::is_available() ? std::to_string(cuda::device_count()) + " GPU(s)"
                                                   : cuda::unavailable_reason())
            << "\n\n";

  Tensor a = arange(6).reshape({2, 3});                         // [[0, 1, 2], [3, 4, 5]]
  Tensor b = from_vector<float>({10, 20, 30});                  // broadcast along rows
  std::cout << "a + b =\n" << a + b << "\n";
  std::cout << "a.t() (a view, no copy) =\n" << a.t() << "\n";
  std::cout << "a.sum({1}) = " << a.sum({1}) << "\n";
  std::cout << "argmax(a, 1) = " << argmax(a, 1) << "\n";

  Generator gen(42);
  Tensor x = randn({4, 3}, {}, &gen);
  Tensor w = randn({3, 2}, {}, &gen);
  std::cout << "relu(x @ w) =\n" << relu(matmul(x, w)) << "\n";

  const MemoryStats stats = memory_stats(kCPU);
  std::cout << "CPU allocator: " << stats.allocated << " bytes in live tensors, " << stats.reserved
            << " reserved\n";
  return 0;
}
