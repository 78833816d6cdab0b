#pragma once
// IDX files (the MNIST format, http://yann.lecun.com/exdb/mnist/) and the datasets built from them.
//
// An IDX file is: two zero bytes, a type byte, a dims count D, then D big-endian uint32 sizes, then the
// values (big-endian, row-major). Files may be gzip-compressed (detected from the content, not the name).
// The parser never trusts the header: the magic, type, dims and the data size are all checked, and
// every problem is an ember::Error naming the file and what is wrong — never a crash (fuzz/fuzz_idx.cpp).
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace ember::data {

enum class IdxType : uint8_t { u8 = 0x08, i8 = 0x09, i16 = 0x0B, i32 = 0x0C, f32 = 0x0D, f64 = 0x0E };

// "unsigned byte (0x08)", ...
std::string idx_type_name(IdxType type);

// A read-only memory mapping of a whole file (unmapped with the last IdxArray that shares it).
class MappedFile {
 public:
  // Maps `path`; throws ember::Error naming it when it cannot be opened or mapped.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::span<const uint8_t> bytes() const { return {data_, size_}; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// A parsed IDX file: its dims and its values as stored (big-endian) from `data_offset` on, in `bytes` or,
// for a file read from the decompressed cache (load_idx), in `mapped`.
struct IdxArray {
  std::string name;  // the file name, for messages
  IdxType type = IdxType::u8;
  std::vector<int64_t> dims;
  std::vector<uint8_t> bytes;  // the whole decompressed file (empty when mapped)
  std::shared_ptr<const MappedFile> mapped;
  size_t data_offset = 0;
  int64_t numel = 0;  // product of dims

  const uint8_t* data() const { return (mapped ? mapped->bytes().data() : bytes.data()) + data_offset; }
  // Element i converted to i64 (integer types only; throws for f32/f64).
  int64_t integer_at(int64_t i) const;
};

// The file's bytes, gunzipped when they start with the gzip magic (1f 8b). Throws naming `path` when it
// cannot be read or the gzip stream is corrupt or truncated.
std::vector<uint8_t> read_file_maybe_gzip(const std::string& path);
// Inflates a gzip stream; `name` is used in messages. Throws on a corrupt or truncated stream.
std::vector<uint8_t> gunzip(std::span<const uint8_t> compressed, const std::string& name);
// Parses decompressed IDX bytes. Throws naming `name` on a bad magic, unknown type, zero or too many
// dims (at most 8), or a data size that does not match the dims (truncated or with trailing bytes).
IdxArray parse_idx(std::vector<uint8_t> bytes, const std::string& name);
// read_file_maybe_gzip + parse_idx. A gzipped file of at least 1 MiB decompressed (Fashion-MNIST's
// images: 47 MB, ~0.3 s to inflate) is inflated once into the cache directory and mapped from there on
// later loads, so a run starts in milliseconds: "<stem>.<key>.idx" under idx_cache_dir(), the key a hash
// of the file's absolute path, size and modification time (a changed file gets a new entry, and the old
// one is removed). The cached copy is checked like any IDX file; one that fails is rewritten. A cache
// that cannot be written only costs the time (logged at debug level).
IdxArray load_idx(const std::string& path);
// $EMBER_CACHE_DIR/idx, else $XDG_CACHE_HOME/ember/idx, else $HOME/.cache/ember/idx; empty (no cache)
// when EMBER_CACHE_DIR is set to "" or "off", or none of them is set.
std::string idx_cache_dir();

struct IdxOptions {
  bool scale = true;        // images as value / 255 (in [0, 1]); false: the raw 0..255 values as f32
  bool channel_dim = true;  // N×H×W images become examples [1, H, W] (C = 1), ready for conv2d
};

// Images and labels from a pair of IDX files, as MNIST and Fashion-MNIST ship them.
//   images: unsigned-byte IDX with dims [N, ...] (MNIST: [N, 28, 28]); example input f32 [1, H, W] for
//           3-D files with channel_dim (else the dims after N), scaled to [0, 1].
//   labels: integer IDX (u8, i8, i16 or i32) with dims [N]; example target a 0-d i64; no label negative.
// Throws ember::Error naming the file when a file is unreadable or malformed, when the images are not
// unsigned bytes, when the labels are not 1-D integers, or when the two counts differ. get/get_batch
// throw for the example EMBER_FAULT_INJECT names (data/fault.h: fault injection for tests), if any.
class IdxDataset : public Dataset {
 public:
  IdxDataset(const std::string& images_path, const std::string& labels_path, IdxOptions options = {});
  IdxDataset(IdxArray images, IdxArray labels, IdxOptions options = {});

  int64_t size() const override { return size_; }
  Example get(int64_t index) const override;
  ExampleSpec spec() const override { return {example_shape_, DType::f32, Shape{}, DType::i64}; }
  // Converts bytes straight into the batch rows: no allocation per example.
  void get_batch(std::span<const int64_t> indices, const Tensor& input, const Tensor& target) const override;
  // The images stay bytes in memory (1 byte per pixel); byte b reads as b / 255 (b with scale false).
  bool has_byte_inputs() const override { return true; }
  float byte_value(uint8_t b) const override { return values_[b]; }
  void get_batch_bytes(std::span<const int64_t> indices, std::span<const float> table, const Tensor& input,
                       const Tensor& target) const override;

  // Largest label + 1 (0 for an empty dataset).
  int64_t num_classes() const { return num_classes_; }
  const std::vector<int64_t>& labels() const { return labels_; }

 private:
  // Rows indices[b] into input (f32 [B, row_]) through `table` (256 values per channel, `table_channels`
  // of them: 1 for all channels alike), or converted as b × scale_ when `table` is null (the same values,
  // vectorised: a table lookup per byte is about twice as slow); labels into target (i64 [B]). `op` names
  // the caller in errors.
  void write_rows(std::span<const int64_t> indices, const float* table, int64_t table_channels, const Tensor& input,
                  const Tensor& target, const char* op) const;

  IdxArray images_;
  std::vector<int64_t> labels_;
  Shape example_shape_;
  int64_t size_ = 0;
  int64_t row_ = 0;  // values per example
  int64_t num_classes_ = 0;
  float scale_ = 1.0f / 255.0f;       // byte b reads as b × scale_ (1/255, or 1 without options.scale)
  std::array<float, 256> values_{};  // the same as a table (byte_value)
  int64_t fault_index_ = -1;  // EMBER_FAULT_INJECT's example (data/fault.h); -1: none
};

enum class Split { Train, Test };

// Fashion-MNIST's class names, in label order (torchvision's FashionMNIST.classes).
inline constexpr std::array<const char*, 10> kFashionMnistClasses = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};

// Where Debian's dataset-fashion-mnist package installs the files.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// Fashion-MNIST (60000 train / 10000 test examples, input f32 [1, 28, 28] in [0, 1], target i64 in
// 0..9) from `dir`, holding {train,t10k}-{images-idx3,labels-idx1}-ubyte, gzipped (.gz) or not.
// Throws naming the missing file and how to install it when the files are absent.
std::shared_ptr<IdxDataset> fashion_mnist(Split split, const std::string& dir = kFashionMnistDir);

}  // namespace ember::data
