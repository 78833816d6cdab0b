// ImageFolder and CIFAR-10 (data/image_folder.h).
#include "data/image_folder.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <thread>

#include "base/log.h"
#include "core/raw.h"

namespace ember::data {
namespace fs = std::filesystem;
namespace {

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

bool has_extension(const std::string& name, const std::vector<std::string>& extensions) {
  const std::string l = lower(name);
  return std::any_of(extensions.begin(), extensions.end(),
                     [&](const std::string& e) { return l.size() >= e.size() && l.compare(l.size() - e.size(), e.size(), e) == 0; });
}

// fn(i) for i in [0, n) on `threads` threads; fn must not throw.
template <typename Fn>
void parallel_indices(int64_t n, int threads, Fn fn) {
  std::atomic<int64_t> next{0};
  const auto work = [&] {
    for (int64_t start; (start = next.fetch_add(16)) < n;)
      for (int64_t i = start; i < std::min(n, start + 16); ++i) fn(i);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
}

}  // namespace

ImageFolder::ImageFolder(const std::string& root, ImageFolderOptions options) : root_(root), options_(std::move(options)) {
  for (int b = 0; b < 256; ++b) values_[b] = static_cast<float>(b) / 255.0f;  // ToTensor: byte / 255
  EMBER_CHECK(options_.channels == 0 || options_.channels == 1 || options_.channels == 3, "ImageFolder ", root_,
              ": channels is ", options_.channels, "; use 1 (gray), 3 (RGB) or 0 (1 when every image is gray, else 3)");
  EMBER_CHECK(!options_.extensions.empty(), "ImageFolder ", root_, ": the list of extensions is empty; give at least "
              "one, e.g. .png");
  for (std::string& e : options_.extensions) e = lower(e.empty() || e[0] == '.' ? e : "." + e);
  std::error_code ec;
  EMBER_CHECK(fs::is_directory(root_, ec), "ImageFolder: ", root_, " is not a folder; give the folder that holds one "
              "subfolder of images per class (root/<class>/<image>.png)");

  // Classes: the subfolders, sorted. Files: per class, recursively, sorted by folder then name (torchvision).
  for (const fs::directory_entry& e : fs::directory_iterator(root_))
    if (e.is_directory()) classes_.push_back(e.path().filename().string());
  std::sort(classes_.begin(), classes_.end());
  EMBER_CHECK(!classes_.empty(), "ImageFolder: ", root_, " has no subfolders; put each class's images in a subfolder "
              "named after the class (root/<class>/<image>.png)");
  for (size_t c = 0; c < classes_.size(); ++c) {
    std::vector<std::pair<std::string, std::string>> found;  // (folder, name)
    const fs::path dir = fs::path(root_) / classes_[c];
    for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::follow_directory_symlink);
         it != fs::recursive_directory_iterator(); ++it) {
      if (it->is_regular_file() && has_extension(it->path().filename().string(), options_.extensions))
        found.emplace_back(it->path().parent_path().string(), it->path().filename().string());
    }
    std::sort(found.begin(), found.end());
    for (const auto& [folder, name] : found)
      files_.push_back(File{(fs::path(folder) / name).string(), static_cast<int64_t>(c)});
  }

  // The headers (every file, in parallel), then each class must keep a file.
  const int threads = options_.threads > 0 ? options_.threads
                                           : static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
  std::vector<std::string> errors(files_.size());
  parallel_indices(size(), threads, [&](int64_t i) {
    File& f = files_[i];
    try {
      const ImageInfo info = read_image_info(read_file_bytes(f.path), f.path);
      f.height = info.height, f.width = info.width, f.gray = info.gray;
    } catch (const std::exception& e) {  // read_file_bytes may also throw std::bad_alloc
      errors[i] = e.what();
    }
  });
  const auto drop_bad = [&](const char* stage) {
    std::vector<std::string> bad;
    for (const std::string& e : errors)
      if (!e.empty()) bad.push_back(e);
    if (bad.empty()) return;
    EMBER_CHECK(options_.on_bad_file == BadFile::skip_with_warning, "ImageFolder ", root_, ": ", bad.size(),
                " bad image file", bad.size() > 1 ? "s" : "", " (", stage, "); the first: ", bad[0],
                ". Remove or fix ", bad.size() > 1 ? "them" : "it", ", or skip bad files (on_bad_file: skip_with_warning)");
    std::vector<File> kept;
    for (size_t i = 0; i < files_.size(); ++i) {
      if (errors[i].empty()) {
        kept.push_back(std::move(files_[i]));
      } else {
        logger().warn("ImageFolder: skipping {}", errors[i]);
        skipped_.push_back(errors[i]);
      }
    }
    files_ = std::move(kept);
    errors.assign(files_.size(), "");
  };
  drop_bad("checking headers");
  std::vector<int64_t> per_class(classes_.size(), 0);
  for (const File& f : files_) ++per_class[f.label];
  for (size_t c = 0; c < classes_.size(); ++c)
    EMBER_CHECK(per_class[c] > 0, "ImageFolder ", root_, ": the class folder ", classes_[c], " holds no ",
                skipped_.empty() ? "" : "good ", "image file (extensions: ", join(options_.extensions),
                "); add images or remove the folder");

  channels_ = options_.channels;
  if (channels_ == 0) channels_ = std::all_of(files_.begin(), files_.end(), [](const File& f) { return f.gray; }) ? 1 : 3;
  // The cache holds the first images in index order, as many as fit.
  const auto assign_cache = [&] {
    int64_t used = 0;
    cache_slots_ = 0;
    for (File& f : files_) f.offset = -1;
    for (File& f : files_) {
      const int64_t bytes = channels_ * f.height * f.width;
      if (used + bytes > options_.cache_bytes) break;
      f.offset = used;
      used += bytes;
      ++cache_slots_;
    }
    cache_ = used > 0 ? std::make_unique_for_overwrite<uint8_t[]>(static_cast<size_t>(used)) : nullptr;
    state_ = std::make_unique<std::atomic<uint8_t>[]>(files_.size());
  };
  assign_cache();
  const bool fits = cache_slots_ == size();
  if (options_.verify == Verify::decode || (options_.verify == Verify::fits && fits)) {
    parallel_indices(size(), threads, [&](int64_t i) {
      std::vector<uint8_t> scratch;
      try {
        pixels(i, scratch);
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
    const size_t before = files_.size();
    drop_bad("decoding");
    if (files_.size() != before) assign_cache();  // offsets moved: the cache fills again as examples are read
  }
  for (const File& f : files_) variable_ = variable_ || f.height != files_[0].height || f.width != files_[0].width;
  logger().debug("ImageFolder {}: {} images of {} classes, {} channels, {} cached{}", root_, files_.size(),
                 classes_.size(), channels_, cache_slots_, variable_ ? ", sizes differ" : "");
}

ImageFolder::~ImageFolder() = default;

const std::string& ImageFolder::path(int64_t index) const {
  check_index(index, size(), "ImageFolder::path");
  return files_[index].path;
}

int64_t ImageFolder::label(int64_t index) const {
  check_index(index, size(), "ImageFolder::label");
  return files_[index].label;
}

std::string ImageFolder::describe(int64_t index) const { return path(index); }

Shape ImageFolder::input_shape(int64_t index) const {
  check_index(index, size(), "ImageFolder::input_shape");
  return Shape{channels_, files_[index].height, files_[index].width};
}

ExampleSpec ImageFolder::spec() const { return {input_shape(0), DType::f32, Shape{}, DType::i64}; }

int64_t ImageFolder::cached() const {
  int64_t n = 0;
  for (int64_t i = 0; i < cache_slots_; ++i) n += state_[i].load(std::memory_order_relaxed) == 2;
  return n;
}

void ImageFolder::decode_into(int64_t index, uint8_t* out) const {
  const File& f = files_[index];
  const Image image = decode_image(read_file_bytes(f.path), f.path, channels_);
  EMBER_CHECK(image.height == f.height && image.width == f.width, f.path, ": the image is now ", image.width, "x",
              image.height, " but was ", f.width, "x", f.height, " when the dataset was opened; do not change the "
              "files while training");
  to_planar(image, out);
}

const uint8_t* ImageFolder::pixels(int64_t index, std::vector<uint8_t>& scratch) const {
  const File& f = files_[index];
  if (f.offset >= 0) {
    uint8_t* slot = cache_.get() + f.offset;
    std::atomic<uint8_t>& state = state_[index];
    uint8_t s = state.load(std::memory_order_acquire);
    if (s == 2) return slot;
    if (s == 0 && state.compare_exchange_strong(s, 1, std::memory_order_acq_rel)) {
      try {
        decode_into(index, slot);
      } catch (...) {
        state.store(0, std::memory_order_release);
        throw;
      }
      state.store(2, std::memory_order_release);
      return slot;
    }
    // Another thread is decoding it right now: decode a private copy rather than wait.
  }
  scratch.resize(static_cast<size_t>(channels_ * f.height * f.width));
  decode_into(index, scratch.data());
  return scratch.data();
}

Example ImageFolder::get(int64_t index) const {
  check_index(index, size(), "ImageFolder::get");
  std::vector<uint8_t> scratch;
  const uint8_t* src = pixels(index, scratch);
  Tensor input = raw::empty(input_shape(index), DType::f32, kCPU);
  Tensor target = raw::empty(Shape{}, DType::i64, kCPU);
  float* dst = input.data<float>();
  const int64_t n = input.numel();
  for (int64_t k = 0; k < n; ++k) dst[k] = values_[src[k]];
  *target.data<int64_t>() = files_[index].label;
  return {input, target};
}

void ImageFolder::write_rows(std::span<const int64_t> indices, const float* table, int64_t table_channels,
                             const Tensor& input, const Tensor& target, const char* op) const {
  EMBER_CHECK(!variable_, op, ": the images of ", root_, " differ in size; read them with get() (the DataLoader does)");
  const auto batch = static_cast<int64_t>(indices.size());
  const int64_t plane = files_[0].height * files_[0].width, row = channels_ * plane;
  EMBER_CHECK(input.dtype() == DType::f32 && target.dtype() == DType::i64 && input.is_contiguous() &&
                  target.is_contiguous() && input.numel() == batch * row && target.numel() == batch,
              op, ": expected contiguous buffers input f32 [", batch, ", ", channels_, ", ", files_[0].height, ", ",
              files_[0].width, "] and target i64 [", batch, "]; got ", input.shape(), " ", dtype_name(input.dtype()),
              " and ", target.shape(), " ", dtype_name(target.dtype()));
  float* in = input.data<float>();
  int64_t* tg = target.data<int64_t>();
  std::vector<uint8_t> scratch;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t index = indices[b];
    check_index(index, size(), op);
    const uint8_t* src = pixels(index, scratch);
    float* dst = in + b * row;
    for (int64_t c = 0; c < channels_; ++c) {
      const float* t = table == nullptr ? values_.data() : table + (table_channels == 1 ? 0 : c) * 256;
      for (int64_t k = c * plane; k < (c + 1) * plane; ++k) dst[k] = t[src[k]];
    }
    tg[b] = files_[index].label;
  }
}

void ImageFolder::get_batch(std::span<const int64_t> indices, const Tensor& input, const Tensor& target) const {
  write_rows(indices, nullptr, 1, input, target, "ImageFolder::get_batch");
}

void ImageFolder::get_batch_bytes(std::span<const int64_t> indices, std::span<const float> table, const Tensor& input,
                                  const Tensor& target) const {
  EMBER_CHECK(static_cast<int64_t>(table.size()) == channels_ * 256, "ImageFolder::get_batch_bytes: the table holds ",
              table.size(), " values; ", channels_, "-channel images need ", channels_ * 256);
  write_rows(indices, table.data(), channels_, input, target, "ImageFolder::get_batch_bytes");
}

// ---- CIFAR-10 -------------------------------------------------------------------------------------------

std::shared_ptr<IdxDataset> cifar10(const std::string& root, Split split) {
  constexpr int64_t kImage = 3 * 32 * 32, kRecord = 1 + kImage;
  const std::vector<std::string> names =
      split == Split::Train
          ? std::vector<std::string>{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
                                     "data_batch_5.bin"}
          : std::vector<std::string>{"test_batch.bin"};
  // root itself, or the archive's folder inside it
  fs::path dir = root;
  if (!fs::exists(dir / names[0]) && fs::exists(dir / "cifar-10-batches-bin" / names[0])) dir /= "cifar-10-batches-bin";
  IdxArray images, labels;
  images.name = (dir / names[0]).string() + (names.size() > 1 ? " .. data_batch_5.bin" : "");
  labels.name = images.name;
  for (const std::string& name : names) {
    const std::string path = (dir / name).string();
    EMBER_CHECK(fs::exists(path), "cifar10: ", path, " not found; download CIFAR-10's binary version "
                "(cifar-10-binary.tar.gz from https://www.cs.toronto.edu/~kriz/cifar.html), unpack it and give its "
                "cifar-10-batches-bin folder (or the folder holding it) as the root");
    const std::vector<uint8_t> bytes = read_file_bytes(path);
    const auto size = static_cast<int64_t>(bytes.size());
    EMBER_CHECK(size > 0 && size % kRecord == 0, "cifar10: ", path, " holds ", size, " bytes, not a whole number of ",
                kRecord, "-byte records (1 label byte + 3072 image bytes); the file is truncated or not CIFAR-10's");
    for (int64_t r = 0; r < size / kRecord; ++r) {
      const uint8_t* rec = bytes.data() + r * kRecord;
      EMBER_CHECK(rec[0] <= 9, "cifar10: ", path, ": record ", r, " has label ", int{rec[0]},
                  "; CIFAR-10's are 0..9 (is this CIFAR-100's file, with 2 label bytes per record?)");
      labels.bytes.push_back(rec[0]);
      images.bytes.insert(images.bytes.end(), rec + 1, rec + kRecord);
    }
  }
  const auto n = static_cast<int64_t>(labels.bytes.size());
  images.dims = {n, 3, 32, 32};
  images.numel = n * kImage;
  labels.dims = {n};
  labels.numel = n;
  auto ds = std::make_shared<IdxDataset>(std::move(images), std::move(labels));
  logger().debug("cifar10: {} examples from {}", ds->size(), dir.string());
  return ds;
}

}  // namespace ember::data
