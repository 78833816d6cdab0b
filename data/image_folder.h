#pragma once
// Image datasets: a folder of JPEG/PNG files with one subfolder per class (torchvision's ImageFolder
// layout), and CIFAR-10's binary files.
//
//   root/cat/001.jpg, root/cat/002.png, root/dog/xyz.jpg, ...
//   auto train = std::make_shared<data::ImageFolder>("root", data::ImageFolderOptions{.channels = 3});
//   train->classes();  // {"cat", "dog"}: label 0 and 1
//
// Classes are the subfolder names in sorted order; a class's files (found recursively, symlinks followed)
// are sorted as torchvision sorts them (by folder, then name), so index i is the same file in both. An
// example is input f32 [C, H, W] in [0, 1] (the bytes / 255, torchvision's ToTensor) and target a 0-d i64.
//
// Before training starts, the constructor checks every file (several threads): its header (format, size),
// then with Verify::decode a full decode, which also fills the cache. Verify::fits (the default) decodes
// when every image fits the cache — work the first epoch would do anyway (Fashion-MNIST as 60000 PNGs:
// 1.4 s for the headers, 2.9 s more to decode them all) — and checks headers only otherwise, so that a large
// dataset is not decoded twice per epoch-one. A bad file — unreadable,
// not a PNG or JPEG, corrupt — fails the constructor naming it (and counting the others), or with
// BadFile::skip_with_warning is logged and left out. Images of one size make a fixed-shape dataset whose
// batches come straight from bytes (the loader's byte-table path, as IdxDataset); images of different sizes
// make a variable-shape dataset (Dataset::variable_input_shape), whose transforms must bring them to one
// size (e.g. RandomResizedCrop or Resize + CenterCrop).
//
// Decoding runs where examples are read: in the DataLoader's workers. Decoded images are kept in memory
// (planar u8, C × H × W bytes each) up to `cache_bytes`, the first ones in index order, so epochs after the
// first read no file; the cache is filled by whichever worker first decodes an image (or by Verify::decode).
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/idx.h"
#include "data/image_decode.h"

namespace ember::data {

enum class BadFile { fail, skip_with_warning };
enum class Verify { fits, header, decode };

struct ImageFolderOptions {
  // File name endings that count as images, compared without case; other files are ignored.
  std::vector<std::string> extensions{".jpg", ".jpeg", ".png"};
  // 1 (gray, PIL's convert('L')), 3 (RGB, convert('RGB')), or 0: 1 when every image is stored gray, else 3.
  int channels = 0;
  BadFile on_bad_file = BadFile::fail;
  Verify verify = Verify::fits;  // decode when every image fits the cache, else check headers
  // Memory for decoded images, in bytes (0: no cache; every read decodes the file).
  int64_t cache_bytes = int64_t{2} << 30;
  // Threads that check the files at construction (0: the machine's cores, at most 8).
  int threads = 0;
};

class ImageFolder : public Dataset {
 public:
  // Throws ember::Error when `root` is not a folder, has no class subfolders, a class has no image files
  // (after skipping bad ones), or a file is bad under BadFile::fail.
  explicit ImageFolder(const std::string& root, ImageFolderOptions options = {});
  ~ImageFolder() override;

  int64_t size() const override { return static_cast<int64_t>(files_.size()); }
  Example get(int64_t index) const override;
  ExampleSpec spec() const override;
  // Same-size images only (not variable_input_shape()): bytes / 255 straight into the batch rows.
  void get_batch(std::span<const int64_t> indices, const Tensor& input, const Tensor& target) const override;
  bool has_byte_inputs() const override { return !variable_; }
  float byte_value(uint8_t b) const override { return values_[b]; }
  void get_batch_bytes(std::span<const int64_t> indices, std::span<const float> table, const Tensor& input,
                       const Tensor& target) const override;
  bool variable_input_shape() const override { return variable_; }
  Shape input_shape(int64_t index) const override;
  std::string describe(int64_t index) const override;  // the file's path

  const std::string& root() const { return root_; }
  const std::vector<std::string>& classes() const { return classes_; }
  int channels() const { return channels_; }
  const std::string& path(int64_t index) const;
  int64_t label(int64_t index) const;
  // Files left out under BadFile::skip_with_warning, with the reason ("path: what is wrong").
  const std::vector<std::string>& skipped() const { return skipped_; }
  // Images held in the cache now / that fit it.
  int64_t cached() const;
  int64_t cache_capacity() const { return cache_slots_; }

 private:
  struct File {
    std::string path;
    int64_t label = 0, height = 0, width = 0;
    bool gray = false;
    int64_t offset = -1;  // its place in the cache (bytes), -1: not cached
  };
  // Example `index`'s planar bytes (C × H × W): from the cache, or decoded into the cache or `scratch`.
  const uint8_t* pixels(int64_t index, std::vector<uint8_t>& scratch) const;
  void decode_into(int64_t index, uint8_t* out) const;
  void write_rows(std::span<const int64_t> indices, const float* table, int64_t table_channels, const Tensor& input,
                  const Tensor& target, const char* op) const;

  std::string root_;
  ImageFolderOptions options_;
  std::vector<std::string> classes_;
  std::vector<File> files_;
  std::vector<std::string> skipped_;
  int channels_ = 3;
  bool variable_ = false;
  std::array<float, 256> values_{};  // b / 255
  // The cache: cache_slots_ images (the first ones), each at files_[i].offset; state_[i]: 0 empty,
  // 1 being written, 2 ready.
  int64_t cache_slots_ = 0;
  std::unique_ptr<uint8_t[]> cache_;
  std::unique_ptr<std::atomic<uint8_t>[]> state_;
};

// CIFAR-10's binary version (cifar-10-batches-bin: data_batch_1.bin .. data_batch_5.bin for Split::Train,
// test_batch.bin for Split::Test; 10000 records each of 1 label byte and 3072 image bytes, the R, G and B
// planes of a 32×32 image). `root` is that folder or the one holding it. Examples: input f32 [3, 32, 32] in
// [0, 1], target a 0-d i64 in 0..9. Throws naming the file when one is missing, its size is not a whole
// number of records, or a label is over 9 (CIFAR-100's files have two label bytes per record).
std::shared_ptr<IdxDataset> cifar10(const std::string& root, Split split);

// CIFAR-10's class names, in label order.
inline const std::vector<std::string>& cifar10_classes() {
  static const std::vector<std::string> names = {"airplane", "automobile", "bird",  "cat",  "deer",
                                                 "dog",      "frog",       "horse", "ship", "truck"};
  return names;
}

}  // namespace ember::data
