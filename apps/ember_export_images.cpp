// ember-export-images --out DIR [--dir FASHION_DIR] [--limit N]
// Writes Fashion-MNIST as PNG files in the ImageFolder layout (data/image_folder.h), a ready example of
// a folder dataset that needs no download:
//   DIR/train/<class>/<index>.png   (60000)      DIR/test/<class>/<index>.png   (10000)
// The class folders are "0_tshirt_top", "1_trouser", ... so that their sorted order is Fashion-MNIST's
// label order. Each image is the IDX file's 28×28 gray bytes, unchanged (8-bit gray PNG).
// configs/fashion_folder.yaml trains on the result. Exit codes: apps/cli.h.
#include <filesystem>
#include <fstream>

#include <ember/ember.h>

#include "apps/cli.h"

using namespace ember;
namespace fs = std::filesystem;

namespace {
const char* const kFolders[] = {"0_tshirt_top", "1_trouser", "2_pullover", "3_dress", "4_coat",
                                "5_sandal",     "6_shirt",   "7_sneaker",  "8_bag",   "9_ankle_boot"};

std::string find_idx(const std::string& dir, const std::string& stem) {
  const std::string base = dir + "/" + stem;
  for (const std::string& path : {base + ".gz", base})
    if (fs::exists(path)) return path;
  throw app::ConfigError(base + "[.gz] not found; install Debian's dataset-fashion-mnist or give --dir");
}

// One split: images and labels as IDX, written under out/<split>/<class>/; returns the files written.
int64_t export_split(const std::string& dir, const std::string& prefix, const fs::path& out, int64_t limit) {
  const data::IdxArray images = data::load_idx(find_idx(dir, prefix + "-images-idx3-ubyte"));
  const data::IdxArray labels = data::load_idx(find_idx(dir, prefix + "-labels-idx1-ubyte"));
  EMBER_CHECK(images.type == data::IdxType::u8 && images.dims.size() == 3 && labels.dims.size() == 1 &&
                  labels.dims[0] == images.dims[0],
              images.name, " and ", labels.name, " are not a Fashion-MNIST images/labels pair");
  for (const char* folder : kFolders) fs::create_directories(out / folder);
  const int64_t n = limit > 0 ? std::min(limit, images.dims[0]) : images.dims[0];
  const int64_t h = images.dims[1], w = images.dims[2];
  for (int64_t i = 0; i < n; ++i) {
    const int64_t label = labels.integer_at(i);
    EMBER_CHECK(label >= 0 && label < 10, labels.name, ": label ", label, " at ", i, " is not a Fashion-MNIST class");
    const std::vector<uint8_t> png = data::encode_png(images.data() + i * h * w, h, w, 1);
    char name[32];
    std::snprintf(name, sizeof name, "%05lld.png", static_cast<long long>(i));
    const fs::path path = out / kFolders[label] / name;
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(png.data()), static_cast<std::streamsize>(png.size()));
    EMBER_CHECK(f.good(), system_error_message("cannot write", path.string()));
  }
  return n;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{"Write Fashion-MNIST as PNG files in the ImageFolder layout (DIR/train/<class>/, DIR/test/<class>/)",
               "ember-export-images"};
  std::string out, dir = data::kFashionMnistDir;
  int64_t limit = 0;
  cli.add_option("--out", out, "the folder to write (train/ and test/ are created in it)")->required();
  cli.add_option("--dir", dir, "the folder holding Fashion-MNIST's IDX files")->capture_default_str();
  cli.add_option("--limit", limit, "at most this many images per split (0: all)")->check(CLI::NonNegativeNumber);
  if (const int code = app::parse_cli(cli, argc, argv); code >= 0) return code;
  return app::run_main([&] {
    const int64_t train = export_split(dir, "train", fs::path(out) / "train", limit);
    const int64_t test = export_split(dir, "t10k", fs::path(out) / "test", limit);
    std::printf("wrote %lld training and %lld test images to %s/{train,test}/<class>/\n", static_cast<long long>(train),
                static_cast<long long>(test), out.c_str());
    return 0;
  });
}
