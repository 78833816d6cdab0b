#pragma once
// Helpers for the data tests: small datasets, and IDX/CSV/gzip files written into a temporary directory.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <ember/ember.h>

#include "scratch.h"

namespace ember::testing {

using TempDir = test::Scratch;  // dir.file("images.idx"): a path in a fresh directory, removed afterwards

// `n` examples: target i (i64) and an f32 input of `shape` whose element k (row-major) is value(i, k).
inline std::shared_ptr<data::TensorDataset> indexed_dataset(int64_t n, const Shape& shape,
                                                            const std::function<float(int64_t i, int64_t k)>& value) {
  std::vector<float> x;
  std::vector<int64_t> y;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < shape.numel(); ++k) x.push_back(value(i, k));
    y.push_back(i);
  }
  Shape all = shape;
  all.insert(0, n);
  return std::make_shared<data::TensorDataset>(from_vector(x, all), from_vector(y));
}

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// gzip (not zlib) framing, as gzip(1) writes it.
inline std::vector<uint8_t> gzip_bytes(const std::vector<uint8_t>& raw) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::vector<uint8_t> out(deflateBound(&zs, raw.size()) + 64);
  zs.next_in = const_cast<Bytef*>(raw.data());
  zs.avail_in = static_cast<uInt>(raw.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// An IDX file: 0, 0, type, ndims, big-endian dims, then `payload` as given.
inline std::vector<uint8_t> idx_bytes(uint8_t type, const std::vector<uint32_t>& dims, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> b = {0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(d >> s));
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

// Runs `fn`, expecting an ember::Error whose message contains every one of `pieces`.
template <typename Fn>
void expect_error(Fn&& fn, const std::vector<std::string>& pieces) {
  try {
    fn();
    ADD_FAILURE() << "expected an ember::Error containing '" << pieces.front() << "'";
  } catch (const Error& e) {
    const std::string message = e.what();
    for (const std::string& p : pieces) EXPECT_NE(message.find(p), std::string::npos) << "'" << p << "' not in: " << message;
  }
}

}  // namespace ember::testing
