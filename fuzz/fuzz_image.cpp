// libFuzzer target for the image decoders (data/image_decode.cpp): any bytes must decode — header and
// pixels, to 1 and to 3 channels — or end in an ember::Error; never a crash, a sanitizer report or a leak
// (libpng's longjmp error path and libjpeg's error recovery included). Seeds: PNG files of every color
// type and bit depth and JPEGs (fuzz/corpus/image, from tests/data/images). Images over 4 megapixels are
// refused by the size limit before any pixel memory is allocated, so a forged header costs nothing.
//
//   CXX=clang++ cmake -S . -B build-fuzz -DEMBER_FUZZ=ON -DEMBER_BUILD_TESTS=OFF -DEMBER_BUILD_BENCH=OFF
//   cmake --build build-fuzz -j2 --target fuzz_image
//   build-fuzz/fuzz/fuzz_image -max_total_time=300 -rss_limit_mb=2048 fuzz/corpus/image
#include <cstddef>
#include <cstdint>
#include <span>

#include "base/error.h"
#include "data/image_decode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  constexpr int64_t kMaxPixels = int64_t{1} << 22;
  try {
    const ember::data::ImageInfo info = ember::data::read_image_info(bytes, "fuzz", kMaxPixels);
    (void)info;
  } catch (const ember::Error&) {
  }
  for (const int channels : {1, 3}) {
    try {
      const ember::data::Image img = ember::data::decode_image(bytes, "fuzz", channels, kMaxPixels);
      if (img.pixels.size() != static_cast<size_t>(img.height * img.width * channels)) __builtin_trap();
    } catch (const ember::Error&) {
    }
  }
  return 0;
}
