// ember-devices: what hardware this build of Ember can use — the CPU (model, cores, SIMD, threads, GEMM
// kernel, from the CPU backend's describe()) and CUDA: whether the build has it, how many GPUs the driver
// offers (name, compute capability, memory, driver/runtime/cuDNN versions), and whether --device cuda
// works or exactly why not; and the multi-process transports this build has (MPI, NCCL). Exit code 0 (with
// or without a GPU).
#include <thread>

#include <ember/ember.h>

#include "apps/cli.h"

using namespace ember;

int main(int argc, char** argv) {
  CLI::App cli{"Print the devices Ember can use", "ember-devices"};
  if (const int code = app::parse_cli(cli, argc, argv); code >= 0) return code;
  return app::run_main([] {
    std::printf("cpu: %s\n", describe(kCPU).c_str());
    std::printf("     %u hardware threads\n", std::thread::hardware_concurrency());
    std::printf("cuda: this build %s CUDA support; %d GPU(s) usable by the driver\n",
                cuda::built_with_cuda() ? "has" : "does not have", cuda::device_count());
    if (cuda::device_count() > 0) std::printf("  %s\n", cuda::versions().c_str());
    for (int i = 0; i < cuda::device_count(); ++i) {
      const cuda::GpuInfo g = cuda::gpu_info(i);
      std::printf("  cuda:%d  %s, compute capability %d.%d, %.1f GiB, %d multiprocessors\n", i, g.name.c_str(),
                  g.compute_major, g.compute_minor, static_cast<double>(g.total_memory) / (1 << 30), g.multiprocessors);
    }
    // Device::parse is what --device goes through: its refusal is exactly why training cannot use a GPU
    // (no CUDA in this build, no driver, no GPU, or no CUDA kernels in this version of Ember).
    try {
      std::printf("  --device cuda: usable (%s)\n", Device::parse("cuda").str().c_str());
    } catch (const Error& e) {
      std::printf("  --device cuda: not usable: %s (--device cpu works on every machine)\n", e.what());
    }
    std::printf("default device (--device auto): %s\n", Device::parse("auto").str().c_str());
    // What several processes can train with (docs/distributed.md): MPI for CPU tensors, NCCL for CUDA ones.
    std::printf("multi-process (mpirun -np N ember-train): %s\n", distributed::describe_backends().c_str());
    return 0;
  });
}
