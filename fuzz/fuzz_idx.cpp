// libFuzzer target for the IDX reader: gunzip (when the input starts with the gzip magic), the header
// checks, and IdxDataset's validation and conversion. Any input must end in a value or an ember::Error —
// never a crash, a sanitizer report, a hang or an unbounded allocation.
//
//   CXX=clang++ cmake -S . -B build-fuzz -DEMBER_FUZZ=ON -DEMBER_BUILD_TESTS=OFF -DEMBER_BUILD_BENCH=OFF
//   cmake --build build-fuzz -j2 --target fuzz_idx
//   build-fuzz/fuzz/fuzz_idx -max_total_time=300 -rss_limit_mb=2048 fuzz/corpus/idx
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/raw.h"
#include "data/idx.h"

using namespace ember;

namespace {

// An array of `n` zero u8 values with dims [n] (labels) or [n, 1] (images), to pair with the input.
data::IdxArray companion(int64_t n, bool images) {
  data::IdxArray a;
  a.name = images ? "companion-images" : "companion-labels";
  a.dims = images ? std::vector<int64_t>{n, 1} : std::vector<int64_t>{n};
  a.numel = n;
  a.bytes.assign(static_cast<size_t>(n), 0);
  return a;
}

void exercise_dataset(const data::IdxArray& parsed) {
  const int64_t n = parsed.dims[0];
  if (n > (int64_t{1} << 20)) return;  // companion arrays would be too large to be useful
  const bool as_images = parsed.dims.size() >= 2;
  data::IdxDataset ds = as_images ? data::IdxDataset(parsed, companion(n, false))
                                  : data::IdxDataset(companion(n, true), parsed);
  const int64_t batch = std::min<int64_t>(ds.size(), 4);
  if (batch == 0) return;
  Shape in_shape = ds.spec().input_shape;
  in_shape.insert(0, batch);
  Tensor input = raw::empty(in_shape, DType::f32, kCPU), target = raw::empty(Shape{batch}, DType::i64, kCPU);
  std::vector<int64_t> indices;
  for (int64_t b = 0; b < batch; ++b) indices.push_back(ds.size() - 1 - b);
  ds.get_batch(indices, input, target);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    std::vector<uint8_t> bytes(data, data + size);
    if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) bytes = data::gunzip(bytes, "fuzz-input");
    const data::IdxArray parsed = data::parse_idx(std::move(bytes), "fuzz-input");
    exercise_dataset(parsed);
  } catch (const Error&) {
    // Expected: a malformed file is an ember::Error.
  }
  return 0;
}
