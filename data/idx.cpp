// IdxDataset and Fashion-MNIST. The file format and its checks are in idx_file.cpp.
#include <filesystem>

#include "base/log.h"
#include "core/raw.h"
#include "data/fault.h"
#include "data/idx.h"

namespace ember::data {

IdxDataset::IdxDataset(const std::string& images_path, const std::string& labels_path, IdxOptions options)
    : IdxDataset(load_idx(images_path), load_idx(labels_path), options) {}

IdxDataset::IdxDataset(IdxArray images, IdxArray labels, IdxOptions options)
    : images_(std::move(images)), scale_(options.scale ? 1.0f / 255.0f : 1.0f) {
  for (int b = 0; b < 256; ++b) values_[b] = static_cast<float>(b) * scale_;
  const std::string& in = images_.name;
  const std::string& ln = labels.name;
  EMBER_CHECK(images_.type == IdxType::u8, in, ": the images file holds ", idx_type_name(images_.type),
              " values; IdxDataset reads unsigned-byte (0x08) images as MNIST ships them — is this a labels file?");
  EMBER_CHECK(images_.dims.size() >= 2, in, ": the images file has dims [", images_.dims.size() == 1 ?
              std::to_string(images_.dims[0]) : "", "]; images need [N, ...] with at least 2 dims "
              "(MNIST: [N, 28, 28]) — is this a labels file?");
  EMBER_CHECK(labels.type != IdxType::f32 && labels.type != IdxType::f64, ln, ": the labels file holds ",
              idx_type_name(labels.type), " values; labels must be integers (u8, i8, i16 or i32)");
  EMBER_CHECK(labels.dims.size() == 1, ln, ": the labels file has ", labels.dims.size(),
              " dims; labels need exactly 1 ([N]) — is this an images file?");
  EMBER_CHECK(labels.dims[0] == images_.dims[0], in, " holds ", images_.dims[0], " images but ", ln, " holds ",
              labels.dims[0], " labels; the files do not belong together");

  size_ = images_.dims[0];
  row_ = size_ > 0 ? images_.numel / size_ : 1;
  // At most 8 dims in the file, so the example shape plus the batch dim fits a Tensor.
  for (size_t d = 1; d < images_.dims.size(); ++d) example_shape_.push_back(images_.dims[d]);
  if (options.channel_dim && images_.dims.size() == 3) example_shape_.insert(0, 1);

  labels_.resize(size_);
  for (int64_t i = 0; i < size_; ++i) {
    labels_[i] = labels.integer_at(i);
    EMBER_CHECK(labels_[i] >= 0, ln, ": label ", labels_[i], " at index ", i,
                " is negative; class labels must be 0..C-1");
    num_classes_ = std::max(num_classes_, labels_[i] + 1);
  }
  fault_index_ = injected_read_fault(in);
}

void IdxDataset::write_rows(std::span<const int64_t> indices, const float* table, int64_t table_channels,
                            const Tensor& input, const Tensor& target, const char* op) const {
  const auto batch = static_cast<int64_t>(indices.size());
  EMBER_CHECK(input.dtype() == DType::f32 && target.dtype() == DType::i64 && input.is_contiguous() &&
                  target.is_contiguous() && input.numel() == batch * row_ && target.numel() == batch,
              op, ": expected contiguous buffers input f32 [", batch, ", ", row_, " values] and target i64 [", batch,
              "]; got ", input.shape(), " ", dtype_name(input.dtype()), " and ", target.shape(), " ",
              dtype_name(target.dtype()));
  const int64_t channels = example_channels(example_shape_), plane = row_ / std::max<int64_t>(channels, 1);
  float* in = input.data<float>();
  int64_t* tg = target.data<int64_t>();
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t index = indices[b];
    check_index(index, size_, op);
    if (index == fault_index_) [[unlikely]] throw_injected_read_fault(images_.name, index);
    const uint8_t* src = images_.data() + index * row_;
    float* dst = in + b * row_;
    if (table == nullptr) {
      const float scale = scale_;
      for (int64_t k = 0; k < row_; ++k) dst[k] = static_cast<float>(src[k]) * scale;  // vectorised
      tg[b] = labels_[index];
      continue;
    }
    for (int64_t c = 0; c < channels; ++c) {
      const float* t = table + (table_channels == 1 ? 0 : c) * 256;
      for (int64_t k = c * plane; k < (c + 1) * plane; ++k) dst[k] = t[src[k]];
    }
    tg[b] = labels_[index];
  }
}

Example IdxDataset::get(int64_t index) const {
  Tensor input = raw::empty(example_shape_, DType::f32, kCPU);  // a batch of one: write_rows checks numel only
  Tensor target = raw::empty(Shape{}, DType::i64, kCPU);
  write_rows({&index, 1}, nullptr, 1, input, target, "IdxDataset::get");
  return {input, target};
}

void IdxDataset::get_batch(std::span<const int64_t> indices, const Tensor& input, const Tensor& target) const {
  write_rows(indices, nullptr, 1, input, target, "IdxDataset::get_batch");
}

void IdxDataset::get_batch_bytes(std::span<const int64_t> indices, std::span<const float> table, const Tensor& input,
                                 const Tensor& target) const {
  const int64_t channels = example_channels(example_shape_);
  EMBER_CHECK(static_cast<int64_t>(table.size()) == channels * 256, "IdxDataset::get_batch_bytes: the table holds ",
              table.size(), " values; examples ", example_shape_, " need 256 per channel (", channels * 256, ")");
  write_rows(indices, table.data(), channels, input, target, "IdxDataset::get_batch_bytes");
}

std::shared_ptr<IdxDataset> fashion_mnist(Split split, const std::string& dir) {
  const std::string prefix = split == Split::Train ? "train" : "t10k";
  auto find = [&](const std::string& stem) {
    const std::string base = dir + "/" + prefix + "-" + stem;
    for (const std::string& path : {base + ".gz", base})
      if (std::filesystem::exists(path)) return path;
    detail::throw_error("fashion_mnist: ", base, ".gz not found (nor uncompressed); install Debian's "
                        "dataset-fashion-mnist package (apt-get install dataset-fashion-mnist) or pass the "
                        "directory that holds the IDX files");
  };
  const std::string images = find("images-idx3-ubyte");  // images first: the error names the first missing file
  const std::string labels = find("labels-idx1-ubyte");
  auto ds = std::make_shared<IdxDataset>(images, labels);
  logger().debug("fashion_mnist: {} examples of {} from {}", ds->size(), prefix, dir);
  return ds;
}

}  // namespace ember::data
