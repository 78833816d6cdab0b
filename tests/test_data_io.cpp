// IDX and CSV readers: parsing, and every error path a user can hit (each checks the message).
#include <stdlib.h>

#include <chrono>
#include <cstring>
#include <numeric>

#include "data_test_util.h"

using namespace ember;
using namespace ember::testing;

namespace {

// Three 2×3 images with pixels 0..17 and labels {2, 0, 1}.
struct IdxFiles {
  TempDir dir;
  std::string images = dir.file("images.idx"), labels = dir.file("labels.idx");
  IdxFiles() {
    std::vector<uint8_t> pixels(18);
    std::iota(pixels.begin(), pixels.end(), uint8_t{0});
    pixels[17] = 255;
    write_bytes(images, idx_bytes(0x08, {3, 2, 3}, pixels));
    write_bytes(labels, idx_bytes(0x08, {3}, {2, 0, 1}));
  }
};

}  // namespace

TEST(IdxDataset, ReadsImagesAndLabels) {
  IdxFiles f;
  data::IdxDataset ds(f.images, f.labels);
  EXPECT_EQ(ds.size(), 3);
  EXPECT_EQ(ds.num_classes(), 3);
  const data::Example e = ds.get(1);
  EXPECT_EQ(e.input.shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(e.input.dtype(), DType::f32);
  EXPECT_EQ(e.target.dtype(), DType::i64);
  EXPECT_EQ(e.target.item<int64_t>(), 0);
  const std::vector<float> v = e.input.to_vector<float>();
  for (int k = 0; k < 6; ++k) EXPECT_FLOAT_EQ(v[k], static_cast<float>(6 + k) / 255.0f);
  EXPECT_FLOAT_EQ(ds.get(2).input.to_vector<float>()[5], 1.0f);  // 255 → 1
}

TEST(IdxDataset, OptionsKeepRawValuesAndDropTheChannelDim) {
  IdxFiles f;
  data::IdxDataset ds(f.images, f.labels, {.scale = false, .channel_dim = false});
  EXPECT_EQ(ds.spec().input_shape, (Shape{2, 3}));
  EXPECT_FLOAT_EQ(ds.get(0).input.to_vector<float>()[4], 4.0f);
}

TEST(IdxDataset, GzipIsDetectedFromTheContent) {
  IdxFiles f;
  const std::string gz = f.dir.file("images.gz"), plain_name = f.dir.file("labels-no-suffix");
  std::ifstream in(f.images, std::ios::binary);
  std::vector<uint8_t> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  write_bytes(gz, gzip_bytes(raw));
  write_bytes(plain_name, gzip_bytes(idx_bytes(0x08, {3}, {2, 0, 1})));  // gzipped, no .gz in the name
  data::IdxDataset plain(f.images, f.labels), zipped(gz, plain_name);
  EXPECT_EQ(plain.get(2).input.to_vector<float>(), zipped.get(2).input.to_vector<float>());
  EXPECT_EQ(zipped.labels(), (std::vector<int64_t>{2, 0, 1}));
}

TEST(IdxDataset, GetBatchMatchesGet) {
  IdxFiles f;
  data::IdxDataset ds(f.images, f.labels);
  Tensor input = empty({2, 1, 2, 3}), target = empty({2}, {.dtype = DType::i64});
  const std::vector<int64_t> idx = {2, 0};
  ds.get_batch(idx, input, target);
  EXPECT_EQ(target.to_vector<int64_t>(), (std::vector<int64_t>{1, 2}));
  std::vector<float> expected = ds.get(2).input.to_vector<float>(), second = ds.get(0).input.to_vector<float>();
  expected.insert(expected.end(), second.begin(), second.end());
  EXPECT_EQ(input.to_vector<float>(), expected);
  expect_error([&] { ds.get(3); }, {"index 3 is out of range", "3 examples"});
}

// EMBER_FAULT_INJECT (data/fault.h), read when a dataset is built: one example's reads fail, naming the file.
TEST(IdxDataset, FaultInjectionMakesOneExampleUnreadable) {
  IdxFiles f;
  struct Unset {
    ~Unset() { ::unsetenv("EMBER_FAULT_INJECT"); }
  } unset;
  ::setenv("EMBER_FAULT_INJECT", "read:2", 1);
  data::IdxDataset ds(f.images, f.labels);
  EXPECT_NO_THROW(ds.get(1));
  expect_error([&] { ds.get(2); }, {f.images + ": example 2 could not be read (fault injected by EMBER_FAULT_INJECT=read:2)"});
  Tensor input = empty({2, 1, 2, 3}), target = empty({2}, {.dtype = DType::i64});
  const std::vector<int64_t> idx = {0, 2};
  expect_error([&] { ds.get_batch(idx, input, target); }, {f.images + ": example 2 could not be read"});

  ::setenv("EMBER_FAULT_INJECT", "read:2@labels", 1);  // another file's text: this dataset is not affected
  EXPECT_NO_THROW(data::IdxDataset(f.images, f.labels).get(2));
  ::setenv("EMBER_FAULT_INJECT", "read:2@images.idx", 1);
  expect_error([&] { data::IdxDataset(f.images, f.labels).get(2); }, {"example 2 could not be read"});
  for (const char* bad : {"read:", "read:-1", "read:2x", "2", "write:2", "read:2@"}) {
    ::setenv("EMBER_FAULT_INJECT", bad, 1);
    expect_error([&] { data::IdxDataset(f.images, f.labels); },
                 {"EMBER_FAULT_INJECT='" + std::string(bad) + "' is not a fault to inject"});
  }
  ::setenv("EMBER_FAULT_INJECT", "", 1);  // empty: off
  EXPECT_NO_THROW(data::IdxDataset(f.images, f.labels).get(2));
}

TEST(IdxDataset, LabelsMayBeWiderIntegersButNotNegative) {
  TempDir dir;
  write_bytes(dir.file("i"), idx_bytes(0x08, {2, 1}, {7, 8}));
  write_bytes(dir.file("l32"), idx_bytes(0x0C, {2}, {0, 0, 1, 0, 0, 0, 0, 5}));  // 256, 5
  EXPECT_EQ(data::IdxDataset(dir.file("i"), dir.file("l32")).labels(), (std::vector<int64_t>{256, 5}));
  write_bytes(dir.file("l8"), idx_bytes(0x09, {2}, {3, 0xFF}));  // signed byte -1
  expect_error([&] { data::IdxDataset(dir.file("i"), dir.file("l8")); }, {dir.file("l8"), "label -1 at index 1", "negative"});
}

TEST(IdxDataset, AnEmptyFilePairIsAnEmptyDataset) {
  TempDir dir;
  write_bytes(dir.file("i"), idx_bytes(0x08, {0, 28, 28}, {}));
  write_bytes(dir.file("l"), idx_bytes(0x08, {0}, {}));
  EXPECT_EQ(data::IdxDataset(dir.file("i"), dir.file("l")).size(), 0);
}

// --- IDX errors: each names the file and what is wrong ---------------------------------------------------

// Each case (what, message): its file, written by write(path, case), makes load(path, case) throw an error
// naming the path and every piece of the case's message.
template <typename Case, typename Write, typename Load>
void expect_each_rejected(const std::vector<Case>& cases, const char* file, Write write, Load load) {
  TempDir dir;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string path = dir.file(file);
    write(path, c);
    std::vector<std::string> pieces = c.message;
    pieces.push_back(path);
    expect_error([&] { load(path, c); }, pieces);
  }
}

struct BadIdx {
  const char* what;
  std::vector<uint8_t> bytes;
  std::vector<std::string> message;
};

TEST(IdxErrors, MalformedFilesAreClearErrors) {
  const std::vector<BadIdx> cases = {
      {"empty", {}, {"too short"}},
      {"bad magic", {0x1f, 0x00, 0x08, 0x01, 0, 0, 0, 0}, {"not an IDX file", "two zero bytes"}},
      {"unknown type", idx_bytes(0x07, {1}, {0}), {"unknown IDX element type code 7"}},
      {"zero dims", idx_bytes(0x08, {}, {}), {"declares 0 dims"}},
      {"nine dims", idx_bytes(0x08, {1, 1, 1, 1, 1, 1, 1, 1, 1}, {0}), {"declares 9 dims", "1 to 8"}},
      {"truncated header", {0, 0, 0x08, 3, 0, 0, 0, 2, 0, 0}, {"truncated header", "3 dims need 16 bytes"}},
      {"truncated data", idx_bytes(0x08, {2, 2, 2}, {1, 2, 3, 4, 5}), {"truncated", "[2, 2, 2]", "need 24 bytes", "has 21"}},
      {"trailing bytes", idx_bytes(0x08, {2}, {1, 2, 3}), {"1 unexpected bytes after the data"}},
      {"overflowing dims", idx_bytes(0x08, {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, {1}), {"truncated", "need more bytes"}},
      {"a zero dim beside overflowing ones", idx_bytes(0x08, {3, 0, 0xFFFDFFFD, 0xFFFEFDFC}, {}),
       {"dims [3, 0, 4294836221, 4294901244]", "the nonzero dims multiply to more than 2^63 - 1"}},
      {"int32 short", idx_bytes(0x0C, {2}, {0, 0, 0, 1, 0, 0}), {"truncated", "int32 (0x0C)"}},
  };
  expect_each_rejected(cases, "bad", [](const std::string& path, const BadIdx& c) { write_bytes(path, c.bytes); },
                       [](const std::string& path, const BadIdx&) { data::load_idx(path); });
}

TEST(IdxErrors, MissingFileSaysItCannotOpen) {
  expect_error([] { data::load_idx("/nonexistent/dir/x.idx"); }, {"/nonexistent/dir/x.idx", "cannot open"});
}

TEST(IdxErrors, SwappedOrMismatchedFilesAreNamed) {
  IdxFiles f;
  expect_error([&] { data::IdxDataset(f.labels, f.images); }, {f.labels, "is this a labels file?"});
  TempDir dir;
  write_bytes(dir.file("float_images"), idx_bytes(0x0D, {1, 1}, {0, 0, 0, 0}));
  expect_error([&] { data::IdxDataset(dir.file("float_images"), f.labels); }, {"float32 (0x0D)", "unsigned-byte"});
  write_bytes(dir.file("labels2d"), idx_bytes(0x08, {3, 1}, {0, 1, 2}));
  expect_error([&] { data::IdxDataset(f.images, dir.file("labels2d")); }, {"labels2d", "has 2 dims", "exactly 1"});
  write_bytes(dir.file("flabels"), idx_bytes(0x0D, {1}, {0, 0, 0, 0}));
  expect_error([&] { data::IdxDataset(f.images, dir.file("flabels")); }, {"flabels", "must be integers"});
  write_bytes(dir.file("labels4"), idx_bytes(0x08, {4}, {0, 1, 2, 3}));
  expect_error([&] { data::IdxDataset(f.images, dir.file("labels4")); },
               {f.images, "3 images", dir.file("labels4"), "4 labels", "do not belong together"});
}

TEST(IdxErrors, CorruptGzipIsAnErrorNotACrash) {
  IdxFiles f;
  std::ifstream in(f.images, std::ios::binary);
  const std::vector<uint8_t> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::vector<uint8_t> gz = gzip_bytes(raw);
  TempDir dir;
  const std::string path = dir.file("x.gz");

  write_bytes(path, std::vector<uint8_t>(gz.begin(), gz.begin() + gz.size() / 2));
  expect_error([&] { data::load_idx(path); }, {path, "truncated"});

  std::vector<uint8_t> corrupt = gz;
  for (size_t i = 10; i < corrupt.size() - 8; ++i) corrupt[i] ^= 0x5A;
  write_bytes(path, corrupt);
  expect_error([&] { data::load_idx(path); }, {path, "gzip"});

  std::vector<uint8_t> trailing = gz;
  trailing.push_back('x');
  trailing.push_back('y');
  write_bytes(path, trailing);
  expect_error([&] { data::load_idx(path); }, {path, "2 unexpected bytes after the end of the gzip stream"});
}

TEST(IdxDataset, ConcatenatedGzipMembersAreOneFile) {
  const std::vector<uint8_t> whole = idx_bytes(0x08, {4}, {1, 2, 3, 4});
  std::vector<uint8_t> gz = gzip_bytes({whole.begin(), whole.begin() + 6});
  const std::vector<uint8_t> rest = gzip_bytes({whole.begin() + 6, whole.end()});
  gz.insert(gz.end(), rest.begin(), rest.end());
  TempDir dir;
  write_bytes(dir.file("x.gz"), gz);
  const data::IdxArray a = data::load_idx(dir.file("x.gz"));
  EXPECT_EQ(a.numel, 4);
  EXPECT_EQ(a.integer_at(3), 4);
}

// The files of `dir` (names only).
std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> names;
  if (!std::filesystem::exists(dir)) return names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  return names;
}

// A gzipped IDX file of at least 1 MiB is inflated once into the cache and mapped from there afterwards.
TEST(IdxCache, ALargeGzippedFileIsInflatedOnceThenMapped) {
  TempDir dir;
  const std::string cache = dir.file("cache"), path = dir.file("images-idx3-ubyte.gz");
  ASSERT_EQ(::setenv("EMBER_CACHE_DIR", cache.c_str(), 1), 0);
  EXPECT_EQ(data::idx_cache_dir(), cache + "/idx");
  std::vector<uint8_t> pixels(1100 * 32 * 32);
  for (size_t k = 0; k < pixels.size(); ++k) pixels[k] = static_cast<uint8_t>((k * 7919) >> 3);
  write_bytes(path, gzip_bytes(idx_bytes(0x08, {1100, 32, 32}, pixels)));

  const data::IdxArray first = data::load_idx(path);
  EXPECT_EQ(first.mapped, nullptr);  // inflated, and written to the cache
  ASSERT_EQ(files_in(cache + "/idx").size(), 1u);
  const std::string entry = cache + "/idx/" + files_in(cache + "/idx")[0];
  EXPECT_TRUE(files_in(cache + "/idx")[0].starts_with("images-idx3-ubyte."));

  const data::IdxArray second = data::load_idx(path);
  ASSERT_NE(second.mapped, nullptr);
  EXPECT_EQ(second.name, path);  // messages name the real file
  EXPECT_EQ(second.dims, (std::vector<int64_t>{1100, 32, 32}));
  EXPECT_EQ(std::memcmp(second.data(), pixels.data(), pixels.size()), 0);

  // A damaged entry is not used: the file is inflated again and the entry rewritten.
  std::filesystem::resize_file(entry, 1000);
  const data::IdxArray third = data::load_idx(path);
  EXPECT_EQ(third.mapped, nullptr);
  EXPECT_EQ(std::memcmp(third.data(), pixels.data(), pixels.size()), 0);
  EXPECT_NE(data::load_idx(path).mapped, nullptr);

  // A changed file gets a new entry, and the old one goes.
  pixels[5] ^= 0xFF;
  write_bytes(path, gzip_bytes(idx_bytes(0x08, {1100, 32, 32}, pixels)));
  std::filesystem::last_write_time(path, std::filesystem::last_write_time(path) + std::chrono::seconds(2));
  const data::IdxArray changed = data::load_idx(path);
  EXPECT_EQ(changed.mapped, nullptr);
  EXPECT_EQ(changed.data()[5], pixels[5]);
  ASSERT_EQ(files_in(cache + "/idx").size(), 1u);
  EXPECT_NE(cache + "/idx/" + files_in(cache + "/idx")[0], entry);
  EXPECT_EQ(data::load_idx(path).data()[5], pixels[5]);
}

TEST(IdxCache, SmallFilesAndTheOffSwitchWriteNothing) {
  TempDir dir;
  const std::string cache = dir.file("cache");
  write_bytes(dir.file("small.gz"), gzip_bytes(idx_bytes(0x08, {4}, {1, 2, 3, 4})));
  std::vector<uint8_t> pixels(2 << 20, 3);
  write_bytes(dir.file("large.gz"), gzip_bytes(idx_bytes(0x08, {2, 1 << 20}, pixels)));
  ASSERT_EQ(::setenv("EMBER_CACHE_DIR", cache.c_str(), 1), 0);
  EXPECT_EQ(data::load_idx(dir.file("small.gz")).integer_at(3), 4);
  EXPECT_TRUE(files_in(cache + "/idx").empty());
  ASSERT_EQ(::setenv("EMBER_CACHE_DIR", "off", 1), 0);
  EXPECT_EQ(data::idx_cache_dir(), "");
  EXPECT_EQ(data::load_idx(dir.file("large.gz")).numel, 2 << 20);
  EXPECT_TRUE(files_in(cache + "/idx").empty());
  // An unwritable cache directory costs only the time.
  ASSERT_EQ(::setenv("EMBER_CACHE_DIR", "/proc/ember-no-such-dir", 1), 0);
  EXPECT_EQ(data::load_idx(dir.file("large.gz")).numel, 2 << 20);
}

// --- Fashion-MNIST from Debian's dataset-fashion-mnist -----------------------------------------------------

TEST(FashionMnist, LoadsTheDebianPackage) {
  if (!std::filesystem::exists(data::kFashionMnistDir))
    GTEST_SKIP() << data::kFashionMnistDir << " is absent: apt-get install dataset-fashion-mnist to run this test";
  auto train = data::fashion_mnist(data::Split::Train);
  auto test = data::fashion_mnist(data::Split::Test);
  EXPECT_EQ(train->size(), 60000);
  EXPECT_EQ(test->size(), 10000);
  EXPECT_EQ(train->spec().input_shape, (Shape{1, 28, 28}));
  EXPECT_EQ(train->num_classes(), 10);
  std::vector<int64_t> per_class(10);
  for (int64_t label : train->labels()) ++per_class[label];
  EXPECT_EQ(per_class, std::vector<int64_t>(10, 6000));  // Fashion-MNIST's train split is balanced
  const std::vector<float> x = train->get(0).input.to_vector<float>();
  EXPECT_EQ(*std::min_element(x.begin(), x.end()), 0.0f);
  EXPECT_LE(*std::max_element(x.begin(), x.end()), 1.0f);
  EXPECT_GT(*std::max_element(x.begin(), x.end()), 0.5f);
  EXPECT_EQ(train->labels()[0], 9);  // the first training image is an ankle boot
}

TEST(FashionMnist, MissingDirectorySaysHowToInstall) {
  expect_error([] { data::fashion_mnist(data::Split::Test, "/nonexistent/fmnist"); },
               {"/nonexistent/fmnist/t10k-images-idx3-ubyte.gz not found", "apt-get install dataset-fashion-mnist"});
}

// --- CSV -----------------------------------------------------------------------------------------------------

TEST(CsvDataset, HeaderNamedLabelAnywhere) {
  TempDir dir;
  write_text(dir.file("a.csv"), "x1, label ,x2\r\n0.5,1,-2\r\n\r\n+1.5e1, 0 ,3\r\n");
  data::CsvDataset ds(dir.file("a.csv"));
  EXPECT_EQ(ds.size(), 2);
  EXPECT_EQ(ds.feature_names(), (std::vector<std::string>{"x1", "x2"}));
  EXPECT_EQ(ds.get(1).input.to_vector<float>(), (std::vector<float>{15.0f, 3.0f}));
  EXPECT_EQ(ds.get(0).target.item<int64_t>(), 1);
  EXPECT_EQ(ds.get(0).target.dtype(), DType::i64);
}

TEST(CsvDataset, NoHeaderLabelByPositionAndOtherDelimiters) {
  TempDir dir;
  write_text(dir.file("b.csv"), "1;2;3\n4;5;6\n");
  data::CsvDataset last(dir.file("b.csv"), {.label_column = "-1", .delimiter = ';'});
  EXPECT_EQ(last.get(1).input.to_vector<float>(), (std::vector<float>{4.0f, 5.0f}));
  EXPECT_EQ(last.get(1).target.item<int64_t>(), 6);
  data::CsvDataset first(dir.file("b.csv"), {.label_column = "0", .delimiter = ';', .target_dtype = DType::f32});
  EXPECT_EQ(first.get(0).input.to_vector<float>(), (std::vector<float>{2.0f, 3.0f}));
  EXPECT_EQ(first.get(0).target.dtype(), DType::f32);
  // A forced header turns the first numeric line into names.
  data::CsvDataset forced(dir.file("b.csv"), {.label_column = "3", .delimiter = ';',
                                              .header = data::CsvOptions::Header::Present});
  EXPECT_EQ(forced.size(), 1);
  EXPECT_EQ(forced.feature_names(), (std::vector<std::string>{"1", "2"}));
}

struct BadCsv {
  const char* what;
  std::string text;
  std::vector<std::string> message;
  data::CsvOptions options = {};
};

TEST(CsvErrors, NameTheLineAndColumn) {
  const std::vector<BadCsv> cases = {
      {"wrong field count", "a,label\n1,2\n3,4,5\n", {":3: 3 fields, expected 2", "header on line 1"}},
      {"not a number", "a,b,label\n1,2,0\n1,x7,0\n", {":3: column 'b' (2): 'x7' is not a number"}},
      {"empty field", "a,label\n1,0\n,1\n", {":3: column 'a' (1) is empty"}},
      {"fractional label", "a,label\n1,0.5\n", {":2: label '0.5'", "not an integer", "target_dtype = f32"}},
      {"missing label column", "a,b\n1,2\n", {"label column 'label' not found", "the columns are: a, b"}},
      {"no header, bad position", "1,2\n", {"label column 'label' not found", "0-based position"}},
      {"header only", "a,label\n", {"no data lines after the header"}},
      {"empty file", "\n\n", {"no data lines"}},
      {"one column", "label\n1\n", {":1: one column only", "delimiter"}},
      {"bad data line without header", "1,2\n3\n", {":2: 1 fields, expected 2 as on the first line"},
       {.label_column = "0"}},
  };
  expect_each_rejected(cases, "bad.csv", [](const std::string& path, const BadCsv& c) { write_text(path, c.text); },
                       [](const std::string& path, const BadCsv& c) { data::CsvDataset ds(path, c.options); });
  expect_error([] { data::CsvDataset ds("/nonexistent/x.csv"); }, {"/nonexistent/x.csv", "cannot open"});
}
