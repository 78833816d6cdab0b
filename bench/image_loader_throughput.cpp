// Loader throughput on an image folder (data/image_folder.h), for docs/benchmarks.md:
//   image_loader_throughput <folder> [--workers N] [--batch B] [--epochs E] [--crop S]
//                           [--verify auto|header|decode] [--cache-mb M]
// Builds an ImageFolder (timing the file checks), then a DataLoader with RandomResizedCrop(S) + horizontal
// flip + ImageNet's Normalize (--crop S > 0: torchvision's usual training pipeline; images of any size), or
// Normalize alone (--crop 0: the images must be one size, e.g. Fashion-MNIST's), and reports samples/s for
// every epoch — the first one decodes (and fills the cache), later ones read the cache where it holds the
// images. tools/image_loader_torch.py measures torchvision's DataLoader on the same folder.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <ember/ember.h>

using namespace ember;
using clock_type = std::chrono::steady_clock;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <folder> [--workers N] [--batch B] [--epochs E] [--crop S] "
                         "[--verify auto|header|decode] [--cache-mb M]\n", argv[0]);
    return 2;
  }
  int workers = 2, epochs = 3;
  int64_t batch = 64, crop = 224, cache_mb = 2048;
  std::string verify = "auto";
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--workers") workers = std::atoi(value.c_str());
    else if (key == "--batch") batch = std::atoll(value.c_str());
    else if (key == "--epochs") epochs = std::atoi(value.c_str());
    else if (key == "--crop") crop = std::atoll(value.c_str());
    else if (key == "--verify") verify = value;
    else if (key == "--cache-mb") cache_mb = std::atoll(value.c_str());
    else {
      std::fprintf(stderr, "unknown option %s\n", key.c_str());
      return 2;
    }
  }
  try {
    auto t0 = clock_type::now();
    auto folder = std::make_shared<data::ImageFolder>(
        argv[1], data::ImageFolderOptions{.verify = verify == "decode"   ? data::Verify::decode
                                                    : verify == "header" ? data::Verify::header
                                                                         : data::Verify::fits,
                                          .cache_bytes = cache_mb << 20});
    const double open_s = std::chrono::duration<double>(clock_type::now() - t0).count();
    std::printf("%s: %lld images, %zu classes, %d channels%s; opened (%s check) in %.2f s; cache holds %lld\n", argv[1],
                static_cast<long long>(folder->size()), folder->classes().size(), folder->channels(),
                folder->variable_input_shape() ? ", sizes differ" : "", verify.c_str(), open_s,
                static_cast<long long>(folder->cache_capacity()));
    std::vector<data::AnyTransform> transforms;
    if (crop > 0) {
      transforms = {data::RandomResizedCrop(crop), data::RandomHorizontalFlip(),
                    data::Normalize({0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f})};
    } else {
      transforms = {data::Normalize({0.5f}, {0.5f})};
    }
    data::DataLoader loader(folder, {.batch_size = batch, .shuffle = true, .num_workers = workers, .seed = 0,
                                     .transforms = transforms});
    double checksum = 0;
    for (int e = 0; e < epochs; ++e) {
      t0 = clock_type::now();
      int64_t seen = 0;
      for (auto& b : loader) {
        seen += b.input.size(0);
        checksum += static_cast<double>(b.input.data<float>()[0]);
      }
      const double s = std::chrono::duration<double>(clock_type::now() - t0).count();
      std::printf("epoch %d: %lld samples in %.3f s = %.0f samples/s (cached %lld)\n", e + 1,
                  static_cast<long long>(seen), s, static_cast<double>(seen) / s,
                  static_cast<long long>(folder->cached()));
    }
    std::printf("batch input %s, checksum %.3f\n", loader.input_shape().str().c_str(), checksum);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
