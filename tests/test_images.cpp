// Image files and datasets: the JPEG/PNG decoders against PIL's decodes of the same files
// (tools/make_image_golden.py), corrupt and truncated files, ImageFolder (layout, order, bad files, sizes
// that differ, the cache) and CIFAR-10's binary files.
#include <filesystem>
#include <numeric>

#include "data_test_util.h"

using namespace ember;
using namespace ember::testing;
namespace fs = std::filesystem;

namespace {

const std::string kGolden = std::string(EMBER_TEST_DATA_DIR) + "/images/";

std::vector<uint8_t> golden(const std::string& name) { return data::read_file_bytes(kGolden + name); }

// A w × h image with `channels` whose bytes follow `seed` (HWC).
std::vector<uint8_t> pattern(int64_t h, int64_t w, int channels, int seed) {
  std::vector<uint8_t> px(static_cast<size_t>(h * w * channels));
  for (size_t k = 0; k < px.size(); ++k) px[k] = static_cast<uint8_t>((k * 37 + static_cast<size_t>(seed) * 11) % 251);
  return px;
}

void write_png(const std::string& path, int64_t h, int64_t w, int channels, int seed) {
  fs::create_directories(fs::path(path).parent_path());
  const auto px = pattern(h, w, channels, seed);
  write_bytes(path, data::encode_png(px.data(), h, w, channels));
}

// The message of what fn throws as ember::Error ("" when it does not throw).
template <typename Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(ImageDecode, MatchesPilOnEveryPngKindAndJpeg) {
  const std::vector<std::string> files = {"l.png",       "la.png",        "rgb.png",   "rgba.png",  "palette.png",
                                          "palette_trns.png", "gray1.png", "gray4.png", "rgb16.png", "rgb.jpg",
                                          "gray.jpg"};
  for (const std::string& f : files) {
    const auto bytes = golden(f);
    const std::string stem = f.substr(0, f.find('.'));  // golden pixels: <file>.L.raw and <file>.RGB.raw
    for (const int channels : {1, 3}) {
      SCOPED_TRACE(f + " to " + std::to_string(channels) + " channels");
      const data::Image img = data::decode_image(bytes, f, channels);
      const auto want = golden(f + (channels == 1 ? ".L.raw" : ".RGB.raw"));
      ASSERT_EQ(img.channels, channels);
      ASSERT_EQ(static_cast<size_t>(img.height * img.width * channels), want.size());
      EXPECT_EQ(img.pixels, want);
    }
    const data::ImageInfo info = data::read_image_info(bytes, f);
    EXPECT_EQ(info.format, f.ends_with(".jpg") ? data::ImageFormat::jpeg : data::ImageFormat::png) << f;
    EXPECT_EQ(info.gray, stem == "l" || stem == "la" || stem == "gray1" || stem == "gray4" || stem == "gray") << f;
    EXPECT_EQ(info.width, f.ends_with(".jpg") ? 21 : 7) << f;
  }
}

TEST(ImageDecode, EncodersRoundTrip) {
  for (const int channels : {1, 2, 3, 4}) {
    const auto px = pattern(9, 13, channels, channels);
    const auto png = data::encode_png(px.data(), 9, 13, channels);
    const data::Image back = data::decode_image(png, "mem.png", channels == 1 || channels == 2 ? 1 : 3);
    for (int64_t p = 0; p < 9 * 13; ++p)  // the alpha channel is dropped, as PIL's convert does
      for (int c = 0; c < back.channels; ++c) ASSERT_EQ(back.pixels[p * back.channels + c], px[p * channels + c]);
  }
  const auto px = pattern(16, 24, 3, 5);
  const auto jpg = data::encode_jpeg(px.data(), 16, 24, 3, 95);
  const data::Image back = data::decode_image(jpg, "mem.jpg", 3);
  EXPECT_EQ(back.height, 16);
  EXPECT_EQ(back.width, 24);
  std::vector<uint8_t> planar(back.pixels.size());
  data::to_planar(back, planar.data());
  EXPECT_EQ(planar[1 * 16 * 24 + 5], back.pixels[5 * 3 + 1]);  // channel 1 of pixel 5
}

// Every prefix of every golden file, and single-byte corruptions: an image or an ember::Error naming the
// file — never a crash or another exception (the fuzz target goes further).
TEST(ImageDecode, TruncatedAndCorruptFilesAreErrorsNamingTheFile) {
  for (const std::string f : {"rgb.png", "palette.png", "rgb16.png", "rgb.jpg", "gray.jpg"}) {
    const auto bytes = golden(f);
    const data::Image whole = data::decode_image(bytes, f, 3);
    // What follows the pixel data — PNG's IEND chunk (12 bytes), JPEG's EOI marker (2) — may be cut, as
    // PIL allows: the image is then whole.
    const size_t trailer = f.ends_with(".png") ? 12 : 2;
    for (size_t n = 0; n < bytes.size(); ++n) {
      const std::span<const uint8_t> prefix(bytes.data(), n);
      std::string msg;
      try {
        const data::Image img = data::decode_image(prefix, "cut/" + f, 3);
        EXPECT_GE(n, bytes.size() - trailer) << f << " cut to " << n << " bytes decoded";
        EXPECT_EQ(img.pixels, whole.pixels) << f << " cut to " << n;
        continue;
      } catch (const Error& e) {
        msg = e.what();
      }
      EXPECT_NE(msg.find("cut/" + f), std::string::npos) << msg;
    }
    for (size_t k = 0; k < bytes.size(); ++k) {
      auto bad = bytes;
      bad[k] ^= 0x5A;
      const std::string msg = error_of([&] { data::decode_image(bad, "bad/" + f, 1); });
      if (!msg.empty()) {
        EXPECT_NE(msg.find("bad/" + f), std::string::npos) << msg;
      }
    }
  }
  EXPECT_NE(error_of([] { data::decode_image(std::vector<uint8_t>{'G', 'I', 'F', '8'}, "x.gif", 3); })
                .find("x.gif: neither a PNG nor a JPEG"),
            std::string::npos);
  EXPECT_NE(error_of([] { data::decode_image(golden("rgb.png"), "x.png", 2); }).find("use 1 (gray"), std::string::npos);
}

TEST(ImageDecode, OversizedHeaderIsRefusedBeforeAllocating) {
  auto bytes = golden("l.png");
  const auto px = pattern(300, 400, 1, 1);
  const auto big = data::encode_png(px.data(), 300, 400, 1);
  const std::string msg = error_of([&] { data::decode_image(big, "big.png", 1, /*max_pixels=*/100000); });
  EXPECT_NE(msg.find("big.png: the PNG image is 400x300 (120000 pixels), over the limit"), std::string::npos) << msg;
  bytes[18] = 0xEA;  // IHDR's width 7 → 0xEA07: the chunk's CRC no longer matches
  EXPECT_NE(error_of([&] { data::read_image_info(bytes, "w.png"); }).find("w.png"), std::string::npos);
}

// ---- ImageFolder ----------------------------------------------------------------------------------------

TEST(ImageFolder, ClassesFilesAndValuesAsTorchvisionOrdersThem) {
  TempDir dir;
  const fs::path root = dir.dir() / "root";
  write_png((root / "dog" / "b.png").string(), 4, 5, 3, 1);
  write_png((root / "dog" / "a.PNG").string(), 4, 5, 3, 2);  // extensions match without case
  write_png((root / "cat" / "sub" / "z.png").string(), 4, 5, 3, 3);
  write_png((root / "cat" / "y.png").string(), 4, 5, 3, 4);
  write_text((root / "cat" / "notes.txt").string(), "not an image");
  data::ImageFolder ds(root.string());
  EXPECT_EQ(ds.classes(), (std::vector<std::string>{"cat", "dog"}));
  ASSERT_EQ(ds.size(), 4);
  // torchvision: per class, folders in sorted order ("cat" < "cat/sub"), names sorted within each
  EXPECT_EQ(fs::path(ds.path(0)).filename(), "y.png");
  EXPECT_EQ(fs::path(ds.path(1)).filename(), "z.png");
  EXPECT_EQ(fs::path(ds.path(2)).filename(), "a.PNG");
  EXPECT_EQ(fs::path(ds.path(3)).filename(), "b.png");
  EXPECT_EQ(ds.label(1), 0);
  EXPECT_EQ(ds.label(2), 1);
  EXPECT_EQ(ds.channels(), 3);
  EXPECT_FALSE(ds.variable_input_shape());
  EXPECT_EQ(ds.spec().input_shape, (Shape{3, 4, 5}));
  // get(): planar, byte / 255 (ToTensor)
  const data::Example e = ds.get(3);
  EXPECT_EQ(e.target.item<int64_t>(), 1);
  const auto px = pattern(4, 5, 3, 1);
  const auto in = e.input.to_vector<float>();
  for (int c = 0; c < 3; ++c)
    for (int p = 0; p < 20; ++p) ASSERT_EQ(in[c * 20 + p], static_cast<float>(px[p * 3 + c]) / 255.0f);
  // the loader's batches (byte-table path with Normalize) equal get() then normalize
  data::DataLoader loader(std::make_shared<data::ImageFolder>(root.string()),
                          {.batch_size = 4, .transforms = {data::Normalize({0.5f}, {0.25f})}});
  const data::Batch& b = *loader.begin();
  const auto got = b.input.to_vector<float>();
  for (int k = 0; k < 60; ++k) ASSERT_FLOAT_EQ(got[3 * 60 + k], (in[k] - 0.5f) / 0.25f);
  EXPECT_EQ(b.target.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 1, 1}));
}

TEST(ImageFolder, ChannelsFollowTheFilesOrTheOption) {
  TempDir dir;
  const fs::path root = dir.dir() / "root";
  write_png((root / "a" / "1.png").string(), 3, 3, 1, 1);
  write_png((root / "b" / "2.png").string(), 3, 3, 2, 2);  // gray + alpha: still gray
  EXPECT_EQ(data::ImageFolder(root.string()).channels(), 1);
  EXPECT_EQ(data::ImageFolder(root.string(), {.channels = 3}).spec().input_shape, (Shape{3, 3, 3}));
  write_png((root / "b" / "3.png").string(), 3, 3, 3, 3);
  EXPECT_EQ(data::ImageFolder(root.string()).channels(), 3);
  const data::ImageFolder gray(root.string(), {.channels = 1});
  const auto rgb = pattern(3, 3, 3, 3);
  EXPECT_EQ(gray.get(2).input.to_vector<float>()[0],
            static_cast<float>((rgb[0] * 19595 + rgb[1] * 38470 + rgb[2] * 7471 + 0x8000) >> 16) / 255.0f);
}

TEST(ImageFolder, BadFilesFailNamingThePathOrAreSkipped) {
  TempDir dir;
  const fs::path root = dir.dir() / "root";
  write_png((root / "a" / "1.png").string(), 3, 3, 1, 1);
  write_png((root / "a" / "2.png").string(), 3, 3, 1, 2);
  write_png((root / "b" / "3.png").string(), 3, 3, 1, 3);
  write_text((root / "b" / "4.jpg").string(), "not a jpeg");
  const std::string bad = (root / "b" / "4.jpg").string();
  std::string msg = error_of([&] { data::ImageFolder ds(root.string()); });
  EXPECT_NE(msg.find("1 bad image file (checking headers); the first: " + bad + ": neither a PNG nor a JPEG"),
            std::string::npos) << msg;
  EXPECT_NE(msg.find("on_bad_file: skip_with_warning"), std::string::npos) << msg;
  const data::ImageFolder skipped(root.string(), {.on_bad_file = data::BadFile::skip_with_warning});
  EXPECT_EQ(skipped.size(), 3);
  ASSERT_EQ(skipped.skipped().size(), 1u);
  EXPECT_EQ(skipped.skipped()[0].rfind(bad, 0), 0u);

  // A header that reads but pixel data cut short: found by Verify::decode, else when the example is read.
  const auto px = pattern(40, 40, 3, 9);
  auto png = data::encode_png(px.data(), 40, 40, 3);
  png.resize(png.size() - 40);
  write_bytes(bad, png);
  const auto lazy = std::make_shared<data::ImageFolder>(root.string(), data::ImageFolderOptions{.verify = data::Verify::header});
  EXPECT_TRUE(lazy->variable_input_shape());
  msg = error_of([&] { lazy->get(3); });
  EXPECT_NE(msg.find(bad + ": corrupt or truncated PNG pixel data"), std::string::npos) << msg;
  msg = error_of([&] { data::ImageFolder ds(root.string(), {.verify = data::Verify::decode}); });
  EXPECT_NE(msg.find("(decoding); the first: " + bad), std::string::npos) << msg;
  // The default decodes when everything fits the cache (here), else checks headers only.
  msg = error_of([&] { data::ImageFolder ds(root.string()); });
  EXPECT_NE(msg.find("(decoding); the first: " + bad), std::string::npos) << msg;
  EXPECT_EQ(error_of([&] { data::ImageFolder ds(root.string(), {.cache_bytes = 100}); }), "");
  const data::ImageFolder decoded(root.string(), {.on_bad_file = data::BadFile::skip_with_warning,
                                                  .verify = data::Verify::decode});
  EXPECT_EQ(decoded.size(), 3);
  EXPECT_FALSE(decoded.variable_input_shape());

  fs::remove(bad);
  fs::remove((root / "b" / "3.png").string());
  msg = error_of([&] { data::ImageFolder ds(root.string()); });
  EXPECT_NE(msg.find("the class folder b holds no image file"), std::string::npos) << msg;
  msg = error_of([&] { data::ImageFolder ds((root / "a" / "1.png").string()); });
  EXPECT_NE(msg.find("is not a folder"), std::string::npos) << msg;
}

TEST(ImageFolder, SizesThatDifferNeedTransformsThatMakeThemOne) {
  TempDir dir;
  const fs::path root = dir.dir() / "root";
  write_png((root / "a" / "small.png").string(), 6, 8, 3, 1);
  write_png((root / "b" / "large.png").string(), 10, 12, 3, 2);
  auto ds = std::make_shared<data::ImageFolder>(root.string());
  ASSERT_TRUE(ds->variable_input_shape());
  EXPECT_EQ(ds->input_shape(1), (Shape{3, 10, 12}));
  // No transform that fixes the size: refused when the loader is built, naming both files.
  std::string msg = error_of([&] { data::DataLoader loader(ds, {.batch_size = 2}); });
  EXPECT_NE(msg.find("small.png (input [3, 6, 8]) comes out [3, 6, 8], but "), std::string::npos) << msg;
  EXPECT_NE(msg.find("large.png (input [3, 10, 12]) comes out [3, 10, 12]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("stack expects each tensor to be equal size"), std::string::npos) << msg;
  msg = error_of([&] { data::DataLoader loader(ds, {.batch_size = 2, .transforms = {data::RandomHorizontalFlip()}}); });
  EXPECT_NE(msg.find("transforms (RandomHorizontalFlip) do not bring them to one"), std::string::npos) << msg;
  // A crop to 5×5 does; the batch holds each image's own crop, the same for any worker count.
  for (const int workers : {0, 2}) {
    data::DataLoader loader(ds, {.batch_size = 2, .num_workers = workers, .seed = 3,
                                 .transforms = {data::RandomCrop(5), data::Normalize({0.f}, {1.f})}});
    const data::Batch& b = *loader.begin();
    EXPECT_EQ(b.input.shape(), (Shape{2, 3, 5, 5}));
    const auto x = b.input.to_vector<float>();
    const auto big = ds->get(1).input.to_vector<float>();
    // the crop of the large image is a 5×5 window of it: find its top-left corner
    bool found = false;
    for (int y = 0; y + 5 <= 10 && !found; ++y)
      for (int xo = 0; xo + 5 <= 12 && !found; ++xo) {
        bool same = true;
        for (int c = 0; c < 3 && same; ++c)
          for (int r = 0; r < 5 && same; ++r)
            for (int q = 0; q < 5 && same; ++q) same = x[75 + c * 25 + r * 5 + q] == big[c * 120 + (y + r) * 12 + xo + q];
        found = same;
      }
    EXPECT_TRUE(found) << workers << " workers";
  }
}

TEST(ImageFolder, TheCacheFillsOnTheFirstEpochAndKeepsTheValues) {
  TempDir dir;
  const fs::path root = dir.dir() / "root";
  for (int i = 0; i < 12; ++i) write_png((root / (i % 2 ? "odd" : "even") / (std::to_string(i) + ".png")).string(), 4, 4, 1, i);
  const data::ImageFolderOptions lazy{.verify = data::Verify::header};
  const auto cached = std::make_shared<data::ImageFolder>(root.string(), lazy);
  const auto partial = std::make_shared<data::ImageFolder>(root.string(), data::ImageFolderOptions{.cache_bytes = 5 * 16});
  const auto uncached = std::make_shared<data::ImageFolder>(root.string(), data::ImageFolderOptions{.cache_bytes = 0});
  EXPECT_EQ(cached->cache_capacity(), 12);
  EXPECT_EQ(partial->cache_capacity(), 5);
  EXPECT_EQ(uncached->cache_capacity(), 0);
  EXPECT_EQ(cached->cached(), 0);   // header checks only: the loader's workers fill it
  EXPECT_EQ(partial->cached(), 0);  // the default, when not everything fits: the same
  EXPECT_EQ(data::ImageFolder(root.string()).cached(), 12);  // the default when it all fits: decoded up front
  std::vector<std::vector<float>> epochs;
  for (const auto& ds : {cached, partial, uncached}) {
    data::DataLoader loader(ds, {.batch_size = 5, .shuffle = true, .num_workers = 2, .seed = 1});
    for (int epoch = 0; epoch < 2; ++epoch) {
      std::vector<float> all;
      for (auto& b : loader) {
        const auto v = b.input.to_vector<float>();
        all.insert(all.end(), v.begin(), v.end());
      }
      epochs.push_back(all);
    }
  }
  EXPECT_EQ(cached->cached(), 12);
  EXPECT_EQ(partial->cached(), 5);
  for (size_t k = 2; k < epochs.size(); ++k) EXPECT_EQ(epochs[k], epochs[k % 2]);
  // From the cache, no file is read: removing them changes nothing for the cached dataset.
  fs::remove_all(root);
  EXPECT_EQ(cached->get(7).input.to_vector<float>().size(), 16u);
  EXPECT_NE(error_of([&] { uncached->get(7); }).find("cannot open"), std::string::npos);
}

// ---- CIFAR-10 -------------------------------------------------------------------------------------------

namespace {
// `n` records of label (i + first) % 10 and image bytes (i * 7 + k) % 256, in CIFAR-10's layout.
std::vector<uint8_t> cifar_records(int n, int first) {
  std::vector<uint8_t> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(static_cast<uint8_t>((i + first) % 10));
    for (int k = 0; k < 3072; ++k) out.push_back(static_cast<uint8_t>((i * 7 + k + first) % 256));
  }
  return out;
}
}  // namespace

TEST(Cifar10, ReadsTheBinaryBatches) {
  TempDir dir;
  const fs::path bin = dir.dir() / "cifar-10-batches-bin";
  fs::create_directories(bin);
  for (int f = 1; f <= 5; ++f) write_bytes((bin / ("data_batch_" + std::to_string(f) + ".bin")).string(), cifar_records(2, f));
  write_bytes((bin / "test_batch.bin").string(), cifar_records(3, 0));
  const auto train = data::cifar10(dir.dir().string(), data::Split::Train);  // the folder holding the archive's
  const auto test = data::cifar10(bin.string(), data::Split::Test);
  EXPECT_EQ(train->size(), 10);
  EXPECT_EQ(test->size(), 3);
  EXPECT_EQ(train->spec().input_shape, (Shape{3, 32, 32}));
  const data::Example e = train->get(3);  // file 2, record 1
  EXPECT_EQ(e.target.item<int64_t>(), 3);
  const auto x = e.input.to_vector<float>();
  EXPECT_FLOAT_EQ(x[0], static_cast<float>((7 + 0 + 2) % 256) / 255.0f);        // R plane, pixel 0
  EXPECT_FLOAT_EQ(x[1024 + 5], static_cast<float>((7 + 1029 + 2) % 256) / 255.0f);  // G plane, pixel 5
  EXPECT_EQ(data::cifar10_classes()[3], "cat");

  auto cut = cifar_records(3, 0);
  cut.pop_back();
  write_bytes((bin / "test_batch.bin").string(), cut);
  EXPECT_NE(error_of([&] { data::cifar10(bin.string(), data::Split::Test); }).find("test_batch.bin holds 9218 bytes, not a whole number"),
            std::string::npos);
  auto c100 = cifar_records(1, 0);
  c100[0] = 42;
  write_bytes((bin / "test_batch.bin").string(), c100);
  EXPECT_NE(error_of([&] { data::cifar10(bin.string(), data::Split::Test); }).find("record 0 has label 42"), std::string::npos);
  fs::remove(bin / "data_batch_4.bin");
  EXPECT_NE(error_of([&] { data::cifar10(bin.string(), data::Split::Train); }).find("data_batch_4.bin not found"),
            std::string::npos);
}
