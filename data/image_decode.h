#pragma once
// Image files: JPEG (libjpeg-turbo's TurboJPEG API) and PNG (libpng), decoded to 8-bit pixels with a
// requested channel count, as PIL's Image.open(path).convert(mode) gives them — the loader of torchvision's
// ImageFolder — so that decoded values agree with a PyTorch pipeline on the same files:
//   1 channel:  convert('L'):   gray as stored; color as L = (19595 R + 38470 G + 7471 B + 32768) >> 16
//   3 channels: convert('RGB'): gray replicated; an alpha channel dropped (not composited); palettes looked up
// PNG: gray, gray+alpha, RGB, RGBA and palette images, 1 to 16 bits per sample, interlaced or not; 16-bit
// samples keep their high byte (as PIL does for RGB; PIL clips 16-bit gray at 255 instead). JPEG: gray and
// YCbCr/RGB (CMYK is refused with a message); decoded with libjpeg's defaults (accurate integer DCT, fancy
// upsampling), as PIL does. EXIF orientation is not applied, as PIL's open() does not apply it.
//
// Errors: a corrupt, truncated, oversized or unsupported file throws ember::Error naming it (`name`) and
// what is wrong — never a crash (fuzz/fuzz_image.cpp feeds both decoders arbitrary bytes).
// Thread safety: every function may be called concurrently.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ember::data {

enum class ImageFormat { png, jpeg };

// PIL's DecompressionBombError limit (2 × Image.MAX_IMAGE_PIXELS): larger images are refused before
// any pixel memory is allocated.
inline constexpr int64_t kMaxImagePixels = 178956970;

// What a file's header says, without decoding the pixels.
struct ImageInfo {
  ImageFormat format = ImageFormat::png;
  int64_t height = 0, width = 0;
  bool gray = false;  // stored without color (gray, gray+alpha, gray JPEG): PIL opens it as 'L' or 'LA'
};

// 8-bit pixels, row-major HWC (height × width × channels).
struct Image {
  int64_t height = 0, width = 0;
  int channels = 0;
  std::vector<uint8_t> pixels;
};

// The format from the first bytes (PNG's signature, JPEG's SOI marker), or none.
std::optional<ImageFormat> sniff_image(std::span<const uint8_t> bytes);
// "PNG" or "JPEG".
const char* image_format_name(ImageFormat format);

// Parses the header only. Throws naming `name` when the bytes are not a PNG or JPEG, the header is corrupt
// or truncated, or the image has more than `max_pixels` pixels.
ImageInfo read_image_info(std::span<const uint8_t> bytes, const std::string& name,
                          int64_t max_pixels = kMaxImagePixels);

// Decodes to `channels` (1: PIL's 'L', 3: 'RGB'; anything else throws). Throws naming `name` as
// read_image_info does, and when the pixel data is corrupt or truncated.
Image decode_image(std::span<const uint8_t> bytes, const std::string& name, int channels,
                   int64_t max_pixels = kMaxImagePixels);

// HWC → CHW: out[c, y, x] = image.pixels[y, x, c]; `out` holds channels × height × width bytes.
void to_planar(const Image& image, uint8_t* out);

// The whole file. Throws naming `path` when it cannot be opened or read.
std::vector<uint8_t> read_file_bytes(const std::string& path);

// Encoders, for tools and tests: 8-bit HWC pixels with 1 (gray), 2 (gray+alpha), 3 (RGB) or 4 (RGBA)
// channels as a PNG file's bytes; 1 or 3 channels as a baseline JPEG of `quality` (1..100, 4:2:0
// subsampling for color). Throw ember::Error on bad arguments.
std::vector<uint8_t> encode_png(const uint8_t* pixels, int64_t height, int64_t width, int channels);
std::vector<uint8_t> encode_jpeg(const uint8_t* pixels, int64_t height, int64_t width, int channels, int quality = 90);

}  // namespace ember::data
