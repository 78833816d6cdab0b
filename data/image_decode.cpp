// JPEG and PNG decoding (data/image_decode.h). libpng reports errors by longjmp: every function that calls
// into libpng while a jump can land (png_setjmp_*) keeps only trivially destructible locals, so the jump
// never skips a destructor; C++ objects live in the callers.
#include "data/image_decode.h"

#include <png.h>
#include <turbojpeg.h>

#include <algorithm>
#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <memory>

#include "base/error.h"

namespace ember::data {
namespace {

// PIL's L24: ITU-R 601 luma in 16-bit fixed point, rounded (Pillow's Convert.c rgb2l).
inline uint8_t luma(const uint8_t* rgb) {
  return static_cast<uint8_t>((rgb[0] * 19595u + rgb[1] * 38470u + rgb[2] * 7471u + 0x8000u) >> 16);
}

void check_size(int64_t height, int64_t width, int64_t max_pixels, const std::string& name, const char* format) {
  EMBER_CHECK(height > 0 && width > 0, name, ": the ", format, " header gives a ", width, "x", height,
              " image; the file is corrupt");
  EMBER_CHECK(height * width <= max_pixels, name, ": the ", format, " image is ", width, "x", height, " (",
              height * width, " pixels), over the limit of ", max_pixels,
              " pixels (a corrupt header or a decompression bomb); shrink the image");
}

// Stored samples (`in_channels` per pixel: 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA) → `out_channels` (1 or 3)
// as PIL's convert('L') / convert('RGB'): alpha dropped, gray replicated, color to luma.
void convert_pixels(const uint8_t* in, int in_channels, uint8_t* out, int out_channels, int64_t pixels) {
  const bool gray_in = in_channels <= 2;
  for (int64_t p = 0; p < pixels; ++p, in += in_channels) {
    if (out_channels == 1) {
      *out++ = gray_in ? in[0] : luma(in);
    } else if (gray_in) {
      out[0] = out[1] = out[2] = in[0];
      out += 3;
    } else {
      out[0] = in[0], out[1] = in[1], out[2] = in[2];
      out += 3;
    }
  }
}

// ---- PNG ------------------------------------------------------------------------------------------------

struct PngSource {
  const uint8_t* data = nullptr;
  size_t size = 0, pos = 0;
  char message[200] = {};  // libpng's error message, copied before the jump
};

void png_on_error(png_structp png, png_const_charp message) {
  auto* src = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(src->message, sizeof src->message, "%s", message ? message : "unknown libpng error");
  png_longjmp(png, 1);
}

void png_on_warning(png_structp, png_const_charp) {}  // benign (e.g. a bad ancillary chunk): PIL ignores them too

void png_read_bytes(png_structp png, png_bytep out, size_t length) {
  auto* src = static_cast<PngSource*>(png_get_io_ptr(png));
  if (length > src->size - src->pos) png_error(png, "the file is truncated");
  std::memcpy(out, src->data + src->pos, length);
  src->pos += length;
}

struct PngHeader {
  png_uint_32 width = 0, height = 0;
  int bit_depth = 0, color_type = 0;
  int channels = 0;  // after the transforms: 1..4 samples of 8 bits
  size_t rowbytes = 0;
};

// Owns libpng's read structs.
struct PngReader {
  png_structp png = nullptr;
  png_infop info = nullptr;
  PngSource src;
  explicit PngReader(std::span<const uint8_t> bytes, const std::string& name) {
    src.data = bytes.data();
    src.size = bytes.size();
    png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, png_on_error, png_on_warning);
    if (png) info = png_create_info_struct(png);
    EMBER_CHECK(png && info, name, ": libpng could not allocate its reader (out of memory)");
    png_set_read_fn(png, &src, png_read_bytes);
  }
  ~PngReader() { png_destroy_read_struct(&png, info ? &info : nullptr, nullptr); }
  PngReader(const PngReader&) = delete;
  PngReader& operator=(const PngReader&) = delete;
};

// Reads the header; with `transforms`, sets up 8-bit output (16 bits: the high byte; 1, 2 and 4-bit gray
// scaled to 0..255; palettes expanded) and fills `out` as the rows will come. false on a libpng error.
bool png_setjmp_header(PngReader& r, PngHeader* out, bool transforms) {
  if (setjmp(png_jmpbuf(r.png))) return false;
  png_read_info(r.png, r.info);
  out->width = png_get_image_width(r.png, r.info);
  out->height = png_get_image_height(r.png, r.info);
  out->bit_depth = png_get_bit_depth(r.png, r.info);
  out->color_type = png_get_color_type(r.png, r.info);
  if (!transforms) return true;
  if (out->color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(r.png);
  if (out->color_type == PNG_COLOR_TYPE_GRAY && out->bit_depth < 8) png_set_expand_gray_1_2_4_to_8(r.png);
  if (out->bit_depth == 16) png_set_strip_16(r.png);
  png_set_interlace_handling(r.png);
  png_read_update_info(r.png, r.info);
  out->channels = png_get_channels(r.png, r.info);
  out->rowbytes = png_get_rowbytes(r.png, r.info);
  return true;
}

bool png_setjmp_rows(PngReader& r, png_bytep* rows) {
  if (setjmp(png_jmpbuf(r.png))) return false;
  png_read_image(r.png, rows);
  return true;
}

ImageInfo png_info(std::span<const uint8_t> bytes, const std::string& name, int64_t max_pixels) {
  PngReader r(bytes, name);
  PngHeader h;
  EMBER_CHECK(png_setjmp_header(r, &h, false), name, ": not a readable PNG file (", r.src.message, ")");
  check_size(h.height, h.width, max_pixels, name, "PNG");
  return {ImageFormat::png, h.height, h.width,
          h.color_type == PNG_COLOR_TYPE_GRAY || h.color_type == PNG_COLOR_TYPE_GRAY_ALPHA};
}

Image png_decode(std::span<const uint8_t> bytes, const std::string& name, int channels, int64_t max_pixels) {
  PngReader r(bytes, name);
  PngHeader h;
  EMBER_CHECK(png_setjmp_header(r, &h, true), name, ": not a readable PNG file (", r.src.message, ")");
  check_size(h.height, h.width, max_pixels, name, "PNG");
  EMBER_CHECK(h.channels >= 1 && h.channels <= 4 && h.rowbytes == static_cast<size_t>(h.width) * h.channels, name,
              ": unexpected PNG layout after conversion to 8 bits (", h.channels, " channels, ", h.rowbytes,
              " bytes per row); the file is corrupt");
  const int64_t pixels = int64_t{h.height} * h.width;
  std::vector<uint8_t> stored(static_cast<size_t>(pixels) * h.channels);
  std::vector<png_bytep> rows(h.height);
  for (png_uint_32 y = 0; y < h.height; ++y) rows[y] = stored.data() + static_cast<size_t>(y) * h.rowbytes;
  EMBER_CHECK(png_setjmp_rows(r, rows.data()), name, ": corrupt or truncated PNG pixel data (", r.src.message, ")");
  Image out{h.height, h.width, channels, {}};
  if (h.channels == channels) {
    out.pixels = std::move(stored);
  } else {
    out.pixels.resize(static_cast<size_t>(pixels) * channels);
    convert_pixels(stored.data(), h.channels, out.pixels.data(), channels, pixels);
  }
  return out;
}

// ---- JPEG -----------------------------------------------------------------------------------------------

// One TurboJPEG decompressor per thread, created on first use, and afresh after a failure: libjpeg can be
// left mid-stream by an error, and a reused handle then misreads the next file.
struct JpegHandle {
  tjhandle h = nullptr;
  ~JpegHandle() {
    if (h) tjDestroy(h);
  }
};
thread_local JpegHandle jpeg_handle;

tjhandle jpeg_decoder() {
  if (!jpeg_handle.h) jpeg_handle.h = tjInitDecompress();
  EMBER_CHECK(jpeg_handle.h != nullptr, "JPEG: TurboJPEG could not create a decompressor: ", tjGetErrorStr2(nullptr));
  return jpeg_handle.h;
}

// The error's text, then the handle is dropped (a fresh one serves the next file).
std::string jpeg_failed(tjhandle tj) {
  std::string why = tjGetErrorStr2(tj);
  tjDestroy(jpeg_handle.h);
  jpeg_handle.h = nullptr;
  return why;
}

struct JpegHeader {
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
};

JpegHeader jpeg_header(tjhandle tj, std::span<const uint8_t> bytes, const std::string& name, int64_t max_pixels) {
  JpegHeader h;
  EMBER_CHECK(bytes.size() <= 0xFFFFFFFFu, name, ": a JPEG file over 4 GiB is not supported");
  const int rc = tjDecompressHeader3(tj, bytes.data(), static_cast<unsigned long>(bytes.size()), &h.width, &h.height,
                                     &h.subsamp, &h.colorspace);
  if (rc != 0) detail::throw_error(name, ": not a readable JPEG file (", jpeg_failed(tj), ")");
  check_size(h.height, h.width, max_pixels, name, "JPEG");
  EMBER_CHECK(h.colorspace != TJCS_CMYK && h.colorspace != TJCS_YCCK, name,
              ": a CMYK JPEG; Ember reads gray and RGB (YCbCr) JPEGs: convert it to RGB");
  return h;
}

Image jpeg_decode(std::span<const uint8_t> bytes, const std::string& name, int channels, int64_t max_pixels) {
  tjhandle tj = jpeg_decoder();
  const JpegHeader h = jpeg_header(tj, bytes, name, max_pixels);
  const bool gray = h.colorspace == TJCS_GRAY;
  const int stored = gray ? 1 : 3;
  const int64_t pixels = int64_t{h.height} * h.width;
  std::vector<uint8_t> buf(static_cast<size_t>(pixels) * stored);
  const int rc = tjDecompress2(tj, bytes.data(), static_cast<unsigned long>(bytes.size()), buf.data(), h.width,
                               h.width * stored, h.height, gray ? TJPF_GRAY : TJPF_RGB, 0);
  if (rc != 0) {
    // Warnings (corrupt-data recoveries) still give an image, as PIL accepts it; a file that ends before
    // the image does is an error, as PIL's "image file is truncated".
    const bool error = tjGetErrorCode(tj) == TJERR_FATAL;
    const std::string why = jpeg_failed(tj);
    EMBER_CHECK(!error && why.find("Premature end") == std::string::npos, name, ": corrupt or truncated JPEG data (",
                why, ")");
  }
  Image out{h.height, h.width, channels, {}};
  if (stored == channels) {
    out.pixels = std::move(buf);
  } else {
    out.pixels.resize(static_cast<size_t>(pixels) * channels);
    convert_pixels(buf.data(), stored, out.pixels.data(), channels, pixels);
  }
  return out;
}

}  // namespace

std::optional<ImageFormat> sniff_image(std::span<const uint8_t> bytes) {
  static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (bytes.size() >= 8 && std::memcmp(bytes.data(), png_sig, 8) == 0) return ImageFormat::png;
  if (bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF) return ImageFormat::jpeg;
  return std::nullopt;
}

const char* image_format_name(ImageFormat format) { return format == ImageFormat::png ? "PNG" : "JPEG"; }

namespace {
ImageFormat format_of(std::span<const uint8_t> bytes, const std::string& name) {
  const auto format = sniff_image(bytes);
  EMBER_CHECK(format.has_value(), name, ": neither a PNG nor a JPEG file (",
              bytes.empty() ? "the file is empty" : "its first bytes are no image signature",
              "); remove it or convert it to PNG or JPEG");
  return *format;
}
}  // namespace

ImageInfo read_image_info(std::span<const uint8_t> bytes, const std::string& name, int64_t max_pixels) {
  if (format_of(bytes, name) == ImageFormat::png) return png_info(bytes, name, max_pixels);
  tjhandle tj = jpeg_decoder();
  const JpegHeader h = jpeg_header(tj, bytes, name, max_pixels);
  return {ImageFormat::jpeg, h.height, h.width, h.colorspace == TJCS_GRAY};
}

Image decode_image(std::span<const uint8_t> bytes, const std::string& name, int channels, int64_t max_pixels) {
  EMBER_CHECK(channels == 1 || channels == 3, name, ": cannot decode to ", channels,
              " channels; use 1 (gray, as PIL's convert('L')) or 3 (RGB)");
  if (format_of(bytes, name) == ImageFormat::png) return png_decode(bytes, name, channels, max_pixels);
  return jpeg_decode(bytes, name, channels, max_pixels);
}

void to_planar(const Image& image, uint8_t* out) {
  const int64_t plane = image.height * image.width;
  const uint8_t* in = image.pixels.data();
  if (image.channels == 1) {
    std::memcpy(out, in, static_cast<size_t>(plane));
    return;
  }
  const int c = image.channels;
  for (int ch = 0; ch < c; ++ch) {
    uint8_t* dst = out + ch * plane;
    for (int64_t p = 0; p < plane; ++p) dst[p] = in[p * c + ch];
  }
}

std::vector<uint8_t> read_file_bytes(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  EMBER_CHECK(f != nullptr, system_error_message("cannot open", path));
  std::vector<uint8_t> bytes;
  if (std::fseek(f.get(), 0, SEEK_END) == 0) {
    const long size = std::ftell(f.get());
    if (size > 0) bytes.reserve(static_cast<size_t>(size));
    std::rewind(f.get());
  }
  uint8_t chunk[1 << 16];
  size_t n = 0;
  while ((n = std::fread(chunk, 1, sizeof chunk, f.get())) > 0) bytes.insert(bytes.end(), chunk, chunk + n);
  EMBER_CHECK(!std::ferror(f.get()), system_error_message("cannot read", path));
  return bytes;
}

std::vector<uint8_t> encode_png(const uint8_t* pixels, int64_t height, int64_t width, int channels) {
  EMBER_CHECK(channels >= 1 && channels <= 4 && height > 0 && width > 0 && height <= 0x7FFFFFFF && width <= 0x7FFFFFFF,
              "encode_png: ", width, "x", height, " with ", channels, " channels; need a positive size and 1..4 channels");
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(width);
  image.height = static_cast<png_uint_32>(height);
  static const png_uint_32 formats[] = {PNG_FORMAT_GRAY, PNG_FORMAT_GA, PNG_FORMAT_RGB, PNG_FORMAT_RGBA};
  image.format = formats[channels - 1];
  png_alloc_size_t size = 0;
  EMBER_CHECK(png_image_write_get_memory_size(image, size, 0, pixels, 0, nullptr), "encode_png: ", image.message);
  std::vector<uint8_t> out(size);
  EMBER_CHECK(png_image_write_to_memory(&image, out.data(), &size, 0, pixels, 0, nullptr), "encode_png: ", image.message);
  out.resize(size);
  return out;
}

std::vector<uint8_t> encode_jpeg(const uint8_t* pixels, int64_t height, int64_t width, int channels, int quality) {
  EMBER_CHECK((channels == 1 || channels == 3) && height > 0 && width > 0 && height <= 65535 && width <= 65535 &&
                  quality >= 1 && quality <= 100,
              "encode_jpeg: ", width, "x", height, " with ", channels, " channels at quality ", quality,
              "; need 1 or 3 channels, sizes in 1..65535 and quality in 1..100");
  tjhandle tj = tjInitCompress();
  EMBER_CHECK(tj != nullptr, "encode_jpeg: TurboJPEG could not create a compressor");
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  const int rc = tjCompress2(tj, pixels, static_cast<int>(width), 0, static_cast<int>(height),
                             channels == 1 ? TJPF_GRAY : TJPF_RGB, &jpeg, &size, channels == 1 ? TJSAMP_GRAY : TJSAMP_420,
                             quality, 0);
  std::string why = rc == 0 ? "" : tjGetErrorStr2(tj);
  std::vector<uint8_t> out;
  if (rc == 0) out.assign(jpeg, jpeg + size);
  tjFree(jpeg);
  tjDestroy(tj);
  EMBER_CHECK(rc == 0, "encode_jpeg: ", why);
  return out;
}

}  // namespace ember::data
