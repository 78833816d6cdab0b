// safetensors: round trips, a file written by PyTorch (tests/data, made by tools/make_safetensors_golden.py),
// atomic writes (core/atomic_file.h), and every validation error of the reader.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/atomic_file.h"
#include "core/safetensors.h"

using namespace ember;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir() {
  const fs::path dir = fs::temp_directory_path() / ("ember_st_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A file from a header string and data bytes.
std::string make_file(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(n >> (8 * i));
  return out + header + data;
}

void expect_parse_error(const std::string& bytes, const std::string& needle) {
  try {
    safetensors::parse(bytes.data(), bytes.size(), "bad.safetensors");
    ADD_FAILURE() << "no error; expected one containing '" << needle << "'";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("bad.safetensors"), std::string::npos) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  }
}

}  // namespace

TEST(SafeTensors, RoundTripEveryDtypeAndLayout) {
  const fs::path path = temp_dir() / "rt.safetensors";
  Generator gen(7);
  const Tensor a = randn({3, 4}, {}, &gen);
  const Tensor b = randn({2, 5}, {.dtype = DType::f64}, &gen).t();  // non-contiguous: written contiguous
  const Tensor c = from_vector<int64_t>({-5, 0, 1LL << 40});
  const Tensor d = from_vector<bool>({true, false, false, true}, {2, 2});
  const Tensor s = scalar_tensor(3.25);
  safetensors::save(path.string(), {{"a", a}, {"b", b}, {"c", c}, {"d", d}, {"s", s}}, {{"epoch", "3"}});
  const auto back = safetensors::load(path.string());
  ASSERT_EQ(back.tensors.size(), 5u);
  EXPECT_EQ(back.metadata.at("epoch"), "3");
  EXPECT_EQ(back.find("a")->to_vector<float>(), a.to_vector<float>());
  EXPECT_EQ(back.find("b")->shape(), Shape({5, 2}));
  EXPECT_EQ(back.find("b")->to_vector<double>(), b.to_vector<double>());
  EXPECT_EQ(back.find("c")->to_vector<int64_t>(), c.to_vector<int64_t>());
  EXPECT_EQ(back.find("d")->dtype(), DType::b8);
  EXPECT_EQ(back.find("d")->to_vector<bool>(), d.to_vector<bool>());
  EXPECT_EQ(back.find("s")->dim(), 0);
  EXPECT_EQ(back.find("s")->item<float>(), 3.25f);
  EXPECT_EQ(back.find("missing"), nullptr);
  fs::remove_all(path.parent_path());
}

TEST(SafeTensors, HeaderIsAlignedJsonWithSortedOffsets) {
  const fs::path path = temp_dir() / "hdr.safetensors";
  safetensors::save(path.string(), {{"x", ones({2})}, {"y", zeros({3}, {.dtype = DType::i64})}});
  const std::string bytes = read_bytes(path);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[i])) << (8 * i);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + n + 2 * 4 + 3 * 8);
  const std::string header = bytes.substr(8, n);
  EXPECT_NE(header.find(R"("x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})"), std::string::npos) << header;
  EXPECT_NE(header.find(R"("y":{"dtype":"I64","shape":[3],"data_offsets":[8,32]})"), std::string::npos) << header;
  fs::remove_all(path.parent_path());
}

TEST(SafeTensors, ReadsAFileWrittenByPyTorch) {
  const auto f = safetensors::load(std::string(EMBER_TEST_DATA_DIR) + "/torch_written.safetensors");
  EXPECT_EQ(f.metadata.at("source"), "torch");
  EXPECT_EQ(f.find("weight")->shape(), Shape({2, 3}));
  EXPECT_EQ(f.find("weight")->to_vector<float>(), (std::vector<float>{0, .25f, .5f, .75f, 1, 1.25f}));
  EXPECT_EQ(f.find("bias")->dtype(), DType::f64);
  EXPECT_EQ(f.find("bias")->to_vector<double>(), (std::vector<double>{0, -1.5, -3, -4.5}));
  EXPECT_EQ(f.find("labels")->to_vector<int64_t>(), (std::vector<int64_t>{3, -2, 7}));
  EXPECT_EQ(f.find("mask")->to_vector<bool>(), (std::vector<bool>{true, false, true}));
  // 16-bit floats load as f32
  EXPECT_EQ(f.find("half")->dtype(), DType::f32);
  EXPECT_EQ(f.find("half")->to_vector<float>(), (std::vector<float>{0.5f, -2.0f, 65504.0f, 5.9604644775390625e-8f}));
  EXPECT_EQ(f.find("brain")->to_vector<float>(), (std::vector<float>{1.0f, -3.5f, 0.0078125f}));
  EXPECT_EQ(f.find("scalar")->dim(), 0);
  EXPECT_EQ(f.find("scalar")->item<float>(), 2.5f);
  EXPECT_EQ(f.find("empty")->shape(), Shape({0, 3}));
}

TEST(SafeTensors, FailedWriteLeavesThePreviousFileIntact) {
  const fs::path dir = temp_dir();
  const fs::path path = dir / "keep.safetensors";
  safetensors::save(path.string(), {{"w", full({4}, 1.0)}});
  const std::string before = read_bytes(path);
  // Writing into a directory that does not exist fails before touching the target...
  EXPECT_THROW(safetensors::save((dir / "nope" / "x.safetensors").string(), {{"w", ones({1})}}), Error);
  // ...and a failure at rename time (the target is a non-empty directory) cleans its temporary file.
  const fs::path blocked = dir / "blocked";
  fs::create_directories(blocked / "child");
  try {
    safetensors::save(blocked.string(), {{"w", ones({1})}});
    ADD_FAILURE() << "rename over a directory succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot rename"), std::string::npos) << e.what();
  }
  for (const auto& entry : fs::directory_iterator(dir))
    EXPECT_EQ(entry.path().string().find(".tmp."), std::string::npos) << entry.path();
  EXPECT_EQ(read_bytes(path), before);
  fs::remove_all(dir);
}

// core/atomic_file.h, which every file Ember replaces goes through (safetensors, config.yaml, metrics).
TEST(AtomicFile, WritesThePiecesInOrderAndReplacesTheFile) {
  const fs::path dir = temp_dir();
  const std::string path = (dir / "notes.txt").string();
  write_file_atomic(path, {"ab", "", "cd"});
  EXPECT_EQ(read_bytes(path), "abcd");
  write_file_atomic(path, std::string("x"));
  EXPECT_EQ(read_bytes(path), "x");
  for (const auto& entry : fs::directory_iterator(dir))
    EXPECT_EQ(entry.path().string().find(".tmp"), std::string::npos) << entry.path();
  // A directory that does not exist: the message names the temporary file and what to check.
  const std::string missing = (dir / "nope" / "y.txt").string();
  try {
    write_file_atomic(missing, std::string("y"));
    ADD_FAILURE() << "wrote into a missing directory";
  } catch (const Error& e) {
    const std::string expected = "cannot create '" + atomic_temporary_path(missing) + "': No such file or directory";
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("check that the directory exists"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(AtomicFile, TemporaryNamesCarryTheWritersPid) {
  const std::string tmp = atomic_temporary_path("run/metrics.csv");
  EXPECT_EQ(tmp, "run/metrics.csv.tmp." + std::to_string(::getpid()));
  EXPECT_EQ(atomic_temporary_owner(fs::path(tmp).filename().string()), ::getpid());
  EXPECT_EQ(atomic_temporary_owner("checkpoint-00000020.safetensors.tmp.4242"), 4242);
  EXPECT_EQ(atomic_temporary_owner("config.yaml.tmp4242"), 4242);  // the naming of earlier versions
  for (const char* other : {"metrics.csv", "notes.tmp", "x.tmp.", "x.tmp.12a", "x.tmp.-3", ".tmp.42", "x.tmp.0"})
    EXPECT_EQ(atomic_temporary_owner(other), std::nullopt) << other;
}

TEST(SafeTensors, CannotOpenNamesThePath) {
  try {
    safetensors::load("/nonexistent/dir/model.safetensors");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/model.safetensors"), std::string::npos);
  }
}

TEST(SafeTensors, ValidationErrors) {
  const std::string ok_header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::string data(8, '\0');
  ASSERT_NO_THROW(safetensors::parse(make_file(ok_header, data).data(), make_file(ok_header, data).size(), "ok"));

  expect_parse_error("abc", "less than the 8-byte header length");
  expect_parse_error(make_file(ok_header, data).substr(0, 20), "exceeds the file size");
  expect_parse_error(make_file("{not json", data), "not valid JSON");
  expect_parse_error(make_file("[1, 2]", ""), "not a JSON object");
  expect_parse_error(make_file(R"({"a":{"dtype":"F32","shape":[2]}})", data), "needs dtype, shape and data_offsets");
  expect_parse_error(make_file(R"({"a":{"dtype":"Q8","shape":[2],"data_offsets":[0,8]}})", data), "Q8 is not supported");
  expect_parse_error(make_file(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", data),
                     "non-negative integers");
  expect_parse_error(make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,80]}})", data), "outside the data");
  expect_parse_error(make_file(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", data), "needs 12");
  expect_parse_error(make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", data), "expected 0");
  expect_parse_error(make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", data),
                     "the tensors cover 4");
  expect_parse_error(make_file(R"({"__metadata__":{"k":1}})", ""), "is not a string");
  // A header length near 2^64 must not wrap around the size check.
  std::string huge(8, '\xff');
  expect_parse_error(huge + "{}", "exceeds the file size");
}

// Driven by tools/safetensors_roundtrip.py: writes a file for Python to check, or reads Python's.
TEST(SafeTensors, PythonRoundTrip) {
  const char* out = std::getenv("EMBER_SAFETENSORS_OUT");
  const char* in = std::getenv("EMBER_SAFETENSORS_IN");
  if (out == nullptr && in == nullptr) GTEST_SKIP() << "run by tools/safetensors_roundtrip.py (needs Python + torch)";
  if (out != nullptr) {
    safetensors::save(out, {{"w", arange(12, {.dtype = DType::f32}).reshape({3, 4}) * 0.5f},
                            {"idx", arange(5, {.dtype = DType::i64}) - 2}},
                      {{"writer", "ember"}});
  }
  if (in != nullptr) {
    const auto f = safetensors::load(in);
    EXPECT_EQ(f.metadata.at("writer"), "python");
    EXPECT_EQ(f.find("w_times_two")->to_vector<float>(),
              (arange(12, {.dtype = DType::f32}) * 1.0f).to_vector<float>());
    EXPECT_EQ(f.find("idx")->to_vector<int64_t>(), (std::vector<int64_t>{-2, -1, 0, 1, 2}));
  }
}
