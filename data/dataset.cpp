#include "data/dataset.h"

#include <cstring>
#include <numeric>

#include "core/raw.h"
#include "data/random.h"

namespace ember::data {
namespace {

// Bytes of one example row of a contiguous [N, ...] tensor.
size_t row_bytes(const Shape& example_shape, DType dtype) {
  return static_cast<size_t>(example_shape.numel()) * dtype_size(dtype);
}

Shape drop_first(const Shape& shape) {
  Shape s;
  for (int d = 1; d < shape.size(); ++d) s.push_back(shape[d]);
  return s;
}

// Checks that `out` is a contiguous CPU [B, example...] tensor of `dtype` for get_batch.
void check_batch_out(const Tensor& out, int64_t batch, const Shape& example, DType dtype, const char* what) {
  Shape expected = example;
  expected.insert(0, batch);
  EMBER_CHECK(out.defined() && out.device().is_cpu() && out.is_contiguous() && out.dtype() == dtype &&
                  out.shape() == expected,
              "get_batch: the ", what, " buffer must be a contiguous cpu ", dtype_name(dtype), " tensor of shape ",
              expected, "; got ", out.defined() ? out.shape().str() + " " + std::string(dtype_name(out.dtype())) : "undefined");
}

// Copies one example tensor into `row`, checking it matches the spec.
void copy_example(const Tensor& t, const Shape& shape, DType dtype, void* row, int64_t index, const char* what) {
  EMBER_CHECK(t.defined() && t.shape() == shape && t.dtype() == dtype, "get_batch: example ", index, "'s ", what,
              " is ", t.defined() ? t.shape().str() + " " + std::string(dtype_name(t.dtype())) : "undefined",
              " but the dataset's examples are ", shape, " ", dtype_name(dtype), " (its spec())",
              "; every example must have the same shape and dtype to be collated into a batch");
  const Tensor c = raw::contiguous(t.device().is_cpu() ? t : raw::to(t, kCPU));
  std::memcpy(row, c.data_ptr(), row_bytes(shape, dtype));
}

}  // namespace

void check_index(int64_t index, int64_t size, const char* op) {
  EMBER_CHECK(index >= 0 && index < size, op, ": index ", index, " is out of range for a dataset of ", size,
              " examples (valid: 0..", size - 1, ")");
}

ExampleSpec Dataset::spec() const {
  EMBER_CHECK(size() > 0, "Dataset::spec: the dataset is empty, so it has no example shapes; check its source");
  const Example e = get(0);
  EMBER_CHECK(e.input.defined() && e.target.defined(),
              "Dataset::spec: example 0 has an undefined input or target; get() must return both tensors");
  return {e.input.shape(), e.input.dtype(), e.target.shape(), e.target.dtype()};
}

Shape Dataset::input_shape(int64_t index) const {
  check_index(index, size(), "Dataset::input_shape");
  return spec().input_shape;
}

std::string Dataset::describe(int64_t index) const { return "example " + std::to_string(index); }

float Dataset::byte_value(uint8_t) const {
  detail::throw_error("Dataset::byte_value: this dataset does not store its inputs as bytes (has_byte_inputs() is false)");
}

void Dataset::get_batch_bytes(std::span<const int64_t>, std::span<const float>, const Tensor&, const Tensor&) const {
  detail::throw_error("Dataset::get_batch_bytes: this dataset does not store its inputs as bytes "
                      "(has_byte_inputs() is false); use get_batch");
}

void Dataset::get_batch(std::span<const int64_t> indices, const Tensor& input, const Tensor& target) const {
  // The buffers' shapes (less the batch dim) are the spec: no spec() call (which may get(0)) per batch.
  const auto batch = static_cast<int64_t>(indices.size());
  EMBER_CHECK(input.defined() && target.defined() && input.dim() > 0 && target.dim() > 0,
              "get_batch: the input and target buffers must be defined tensors with a batch dim");
  const Shape in_shape = drop_first(input.shape()), tg_shape = drop_first(target.shape());
  check_batch_out(input, batch, in_shape, input.dtype(), "input");
  check_batch_out(target, batch, tg_shape, target.dtype(), "target");
  auto* in = static_cast<char*>(input.data_ptr());
  auto* tg = static_cast<char*>(target.data_ptr());
  const size_t in_row = row_bytes(in_shape, input.dtype()), tg_row = row_bytes(tg_shape, target.dtype());
  for (int64_t b = 0; b < batch; ++b) {
    const Example e = get(indices[b]);
    copy_example(e.input, in_shape, input.dtype(), in + b * in_row, indices[b], "input");
    copy_example(e.target, tg_shape, target.dtype(), tg + b * tg_row, indices[b], "target");
  }
}

// --- TensorDataset -------------------------------------------------------------------------------------

TensorDataset::TensorDataset(const Tensor& inputs, const Tensor& targets) { init(inputs, targets, "TensorDataset"); }

void TensorDataset::init(const Tensor& inputs, const Tensor& targets, const char* op) {
  EMBER_CHECK(inputs.defined() && targets.defined(), op, ": inputs and targets must both be defined tensors");
  EMBER_CHECK(inputs.dim() > 0 && targets.dim() > 0, op, ": inputs ", inputs.shape(), " and targets ",
              targets.shape(), " must have a dim 0 that indexes examples");
  EMBER_CHECK(inputs.size(0) == targets.size(0), op, ": inputs ", inputs.shape(), " and targets ", targets.shape(),
              " have different numbers of examples (dim 0: ", inputs.size(0), " vs ", targets.size(0), ")");
  inputs_ = raw::contiguous(raw::to(inputs, kCPU));
  targets_ = raw::contiguous(raw::to(targets, kCPU));
  size_ = inputs.size(0);
  spec_ = {drop_first(inputs.shape()), inputs.dtype(), drop_first(targets.shape()), targets.dtype()};
}

Example TensorDataset::get(int64_t index) const {
  check_index(index, size_, "TensorDataset::get");
  return {raw::select(inputs_, 0, index), raw::select(targets_, 0, index)};
}

void TensorDataset::get_batch(std::span<const int64_t> indices, const Tensor& input, const Tensor& target) const {
  const auto batch = static_cast<int64_t>(indices.size());
  check_batch_out(input, batch, spec_.input_shape, spec_.input_dtype, "input");
  check_batch_out(target, batch, spec_.target_shape, spec_.target_dtype, "target");
  const size_t in_row = row_bytes(spec_.input_shape, spec_.input_dtype);
  const size_t tg_row = row_bytes(spec_.target_shape, spec_.target_dtype);
  const auto* in_src = static_cast<const char*>(inputs_.data_ptr());
  const auto* tg_src = static_cast<const char*>(targets_.data_ptr());
  auto* in = static_cast<char*>(input.data_ptr());
  auto* tg = static_cast<char*>(target.data_ptr());
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t i = indices[b];
    check_index(i, size_, "TensorDataset::get_batch");
    std::memcpy(in + b * in_row, in_src + i * in_row, in_row);
    std::memcpy(tg + b * tg_row, tg_src + i * tg_row, tg_row);
  }
}

// --- Subset and random_split ---------------------------------------------------------------------------

Subset::Subset(DatasetPtr base, std::vector<int64_t> indices) : base_(std::move(base)), indices_(std::move(indices)) {
  EMBER_CHECK(base_ != nullptr, "Subset: the base dataset is null");
  const int64_t n = base_->size();
  for (int64_t i : indices_) check_index(i, n, "Subset");
}

Example Subset::get(int64_t index) const {
  check_index(index, size(), "Subset::get");
  return base_->get(indices_[index]);
}

namespace {
// The base dataset's indices of a Subset's `indices`. NOTE: one small vector per batch (not per example);
// the base then takes its own fast path.
std::vector<int64_t> base_indices(std::span<const int64_t> indices, const std::vector<int64_t>& subset,
                                  const char* op) {
  std::vector<int64_t> mapped(indices.size());
  for (size_t b = 0; b < indices.size(); ++b) {
    check_index(indices[b], static_cast<int64_t>(subset.size()), op);
    mapped[b] = subset[indices[b]];
  }
  return mapped;
}
}  // namespace

ExampleSpec Subset::spec() const {
  ExampleSpec s = base_->spec();
  if (base_->variable_input_shape() && !indices_.empty()) s.input_shape = base_->input_shape(indices_[0]);
  return s;
}

Shape Subset::input_shape(int64_t index) const {
  check_index(index, size(), "Subset::input_shape");
  return base_->input_shape(indices_[index]);
}

std::string Subset::describe(int64_t index) const {
  check_index(index, size(), "Subset::describe");
  return base_->describe(indices_[index]);
}

void Subset::get_batch(std::span<const int64_t> indices, const Tensor& input, const Tensor& target) const {
  base_->get_batch(base_indices(indices, indices_, "Subset::get_batch"), input, target);
}

void Subset::get_batch_bytes(std::span<const int64_t> indices, std::span<const float> table, const Tensor& input,
                             const Tensor& target) const {
  base_->get_batch_bytes(base_indices(indices, indices_, "Subset::get_batch_bytes"), table, input, target);
}

std::vector<int64_t> random_permutation(int64_t n, Generator& gen) {
  std::vector<int64_t> perm(n);
  std::iota(perm.begin(), perm.end(), int64_t{0});
  const uint64_t first = gen.advance(static_cast<uint64_t>(n));
  for (int64_t i = n - 1; i > 0; --i) {
    const Philox4 r = philox4x32_10(gen.seed(), first + static_cast<uint64_t>(i));
    const uint64_t bits = (static_cast<uint64_t>(r.v[0]) << 32) | r.v[1];
    std::swap(perm[i], perm[uniform_below(bits, static_cast<uint64_t>(i + 1))]);
  }
  return perm;
}

std::vector<std::shared_ptr<Subset>> random_split(DatasetPtr dataset, const std::vector<int64_t>& lengths,
                                                  uint64_t seed) {
  EMBER_CHECK(dataset != nullptr, "random_split: the dataset is null");
  int64_t total = 0;
  for (int64_t len : lengths) {
    EMBER_CHECK(len >= 0, "random_split: length ", len, " is negative");
    total += len;
  }
  EMBER_CHECK(total == dataset->size(), "random_split: the lengths add up to ", total, " but the dataset has ",
              dataset->size(), " examples; make them add up exactly");
  Generator gen(seed);
  const std::vector<int64_t> perm = random_permutation(dataset->size(), gen);
  std::vector<std::shared_ptr<Subset>> parts;
  int64_t start = 0;
  for (int64_t len : lengths) {
    parts.push_back(std::make_shared<Subset>(dataset, std::vector<int64_t>(perm.begin() + start, perm.begin() + start + len)));
    start += len;
  }
  return parts;
}

}  // namespace ember::data
