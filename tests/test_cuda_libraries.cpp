// A CUDA build loads cuBLAS and cuDNN only when a CUDA device is first used (backends/cuda/lazy_libs.cpp):
// a CPU run maps neither (libcublasLt alone is ~150 MiB resident). Checked from this process's own
// /proc/self/maps, on any machine; in a CPU-only build the first test holds trivially.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include <ember/ember.h>

namespace ember {
namespace {

// The mapped files of this process whose name contains `name` (e.g. "libcublas"), one per mapping.
std::vector<std::string> mapped(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  std::vector<std::string> found;
  for (std::string line; std::getline(maps, line);)
    if (line.find(name) != std::string::npos) found.push_back(line);
  return found;
}

std::string lines(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& line : v) s += "\n  " + line;
  return s;
}

// What a CPU training run of a CUDA build does with CUDA: asks whether it is there (--device auto, the
// loader's pin_memory), then trains on the CPU.
TEST(CudaLibraries, ACpuRunMapsNoCublasNorCudnn) {
  const Device device = Device::parse("auto");
  if (device.is_cuda()) GTEST_SKIP() << "this machine has a usable GPU: --device auto would use it";
  (void)cuda::is_available();
  (void)cuda::device_count();
  manual_seed(0);
  nn::Sequential model({std::make_shared<nn::Linear>(8, 16), std::make_shared<nn::ReLU>(),
                        std::make_shared<nn::Linear>(16, 3)});
  optim::Adam opt(model.parameters(), {.lr = 1e-2});
  const Tensor x = randn({32, 8}), y = from_vector(std::vector<int64_t>(32, 1));
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    nn::functional::cross_entropy(model.forward(x), y).backward();
    opt.step();
  }
  for (const char* lib : {"libcublas", "libcudnn"})
    EXPECT_TRUE(mapped(lib).empty()) << "a CPU run mapped " << lib << ":" << lines(mapped(lib));
}

// The forwarding itself: cuda::versions() asks cuDNN for its version, which loads libcudnn.so.9 through
// lazy_libs.cpp (no GPU needed) and nothing of cuBLAS.
TEST(CudaLibraries, CudnnLoadsOnItsFirstCall) {
  if (!cuda::built_with_cuda()) GTEST_SKIP() << "a CPU-only build has no CUDA libraries to load";
  ASSERT_TRUE(mapped("libcudnn.so").empty()) << "cuDNN was mapped before its first call:" << lines(mapped("libcudnn"));
  const std::string versions = cuda::versions();
  EXPECT_EQ(versions.find("not loadable"), std::string::npos) << versions;
  EXPECT_FALSE(mapped("libcudnn.so").empty()) << "cuda::versions() did not load cuDNN: " << versions;
  EXPECT_TRUE(mapped("libcublas").empty()) << "cuda::versions() loaded cuBLAS:" << lines(mapped("libcublas"));
}

}  // namespace
}  // namespace ember
