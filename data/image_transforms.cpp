#include "data/image_transforms.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>

namespace ember::data {

namespace {

int64_t height_of(const Shape& shape) { return shape[shape.size() - 2]; }
int64_t width_of(const Shape& shape) { return shape.back(); }
// The number of H × W planes (C for [C, H, W], 1 for [H, W]).
int64_t planes_of(const Shape& shape) {
  const int64_t hw = height_of(shape) * width_of(shape);
  return hw == 0 ? 0 : shape.numel() / hw;
}
Shape with_size(Shape shape, int64_t h, int64_t w) {
  shape[shape.size() - 2] = h;
  shape[shape.size() - 1] = w;
  return shape;
}
void check_image(const Shape& shape, const char* who) {
  EMBER_CHECK(shape.size() >= 2 && height_of(shape) > 0 && width_of(shape) > 0, who, ": inputs ", shape,
              " are not images; it takes [C, H, W] (or [H, W]) with H, W >= 1");
}
// C of a [C, H, W] image that the colour transforms accept (1 or 3).
int64_t check_color_image(const Shape& shape, const char* who) {
  EMBER_CHECK(shape.size() == 3 && (shape[0] == 1 || shape[0] == 3), who, ": inputs ", shape,
              " are not [C, H, W] images with C = 1 (gray) or 3 (RGB); convert them first (e.g. Grayscale)");
  return shape[0];
}

constexpr float kLumaR = 0.299f, kLumaG = 0.587f, kLumaB = 0.114f;  // ITU-R 601-2, as PIL's convert('L')

// --- Bilinear resampling, PIL's way (Pillow's Resample.c) ------------------------------------------------

// The weights of one resampling pass, in_size pixels -> out_size: output pixel i is
// sum_k weights[i * ksize + k] * in[start[i] + k] for k < count[i].
struct Coefficients {
  std::vector<float> weights;
  std::vector<int64_t> start, count;
  int64_t ksize = 0;
};

double triangle(double x) {
  x = std::abs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

// Pillow's precompute_coeffs with the bilinear filter: the triangle's support (1 pixel) is stretched by the
// downscale factor when shrinking — the antialiasing — and each output pixel's weights are normalised to 1.
void compute_coefficients(int64_t in_size, int64_t out_size, Coefficients& c) {
  const double scale = static_cast<double>(in_size) / static_cast<double>(out_size);
  const double filterscale = std::max(scale, 1.0);
  const double support = filterscale;
  const double inv_filterscale = 1.0 / filterscale;
  c.ksize = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  c.weights.assign(static_cast<size_t>(out_size * c.ksize), 0.0f);  // reuses the thread's capacity
  c.start.resize(static_cast<size_t>(out_size));
  c.count.resize(static_cast<size_t>(out_size));
  for (int64_t i = 0; i < out_size; ++i) {
    const double center = (static_cast<double>(i) + 0.5) * scale;
    // NOTE: Pillow truncates toward zero here ((int) casts), then clamps to the image.
    const int64_t lo = std::max<int64_t>(static_cast<int64_t>(center - support + 0.5), 0);
    const int64_t hi = std::min<int64_t>(static_cast<int64_t>(center + support + 0.5), in_size);
    double total = 0.0;
    for (int64_t x = lo; x < hi; ++x) total += triangle((static_cast<double>(x) - center + 0.5) * inv_filterscale);
    float* w = c.weights.data() + i * c.ksize;
    for (int64_t x = lo; x < hi; ++x) {
      const double v = triangle((static_cast<double>(x) - center + 0.5) * inv_filterscale);
      w[x - lo] = static_cast<float>(total != 0.0 ? v / total : v);
    }
    c.start[i] = lo;
    c.count[i] = hi - lo;
  }
}

// Eight floats that the compiler keeps in one vector register (two on machines without 256-bit vectors).
using Lanes8 = float __attribute__((vector_size(32)));
constexpr int64_t kLanes = 8;

// Scratch of one worker thread, reused from example to example (grows to the largest image it has seen).
struct ResizeScratch {
  Coefficients horizontal, vertical;
  std::vector<float> rows;  // the horizontal pass's output, the vertical pass's input
  std::vector<Lanes8> block;  // the horizontal pass's transposed rows
};
ResizeScratch& resize_scratch() {
  thread_local ResizeScratch scratch;
  return scratch;
}

// dst[r][x] ← the horizontal pass over `rows` rows of src (row r at src + r * stride, in_w pixels), out_w
// outputs a row. Eight rows at a time: they are transposed into `block` ([in_w][8]), so that each output
// column is a short sum of 8-wide vectors, rather than eight scalar dot products over a gather.
void horizontal_pass(const float* src, int64_t stride, int64_t rows, int64_t in_w, const Coefficients& c,
                     int64_t out_w, float* dst, std::vector<Lanes8>& block) {
  int64_t r = 0;
  if (rows >= kLanes) block.resize(static_cast<size_t>(in_w));
  for (; r + kLanes <= rows; r += kLanes) {
    for (int64_t j = 0; j < kLanes; ++j) {
      const float* s = src + (r + j) * stride;
      for (int64_t x = 0; x < in_w; ++x) block[x][j] = s[x];
    }
    for (int64_t x = 0; x < out_w; ++x) {
      const float* w = c.weights.data() + x * c.ksize;
      const Lanes8* b = block.data() + c.start[x];
      Lanes8 acc = {};
      for (int64_t k = 0; k < c.count[x]; ++k) acc += w[k] * b[k];
      for (int64_t j = 0; j < kLanes; ++j) dst[(r + j) * out_w + x] = acc[j];
    }
  }
  for (; r < rows; ++r) {  // the last rows, one at a time
    const float* s = src + r * stride;
    float* d = dst + r * out_w;
    for (int64_t x = 0; x < out_w; ++x) {
      const float* w = c.weights.data() + x * c.ksize;
      const float* p = s + c.start[x];
      float acc = 0.0f;
      for (int64_t k = 0; k < c.count[x]; ++k) acc += w[k] * p[k];
      d[x] = acc;
    }
  }
}

// dst[y][x] ← the vertical pass over src (row r at src + (r - first) * stride, width out_w); out_h rows.
void vertical_pass(const float* src, int64_t stride, int64_t first, const Coefficients& c, int64_t out_h,
                   int64_t out_w, float* dst) {
  for (int64_t y = 0; y < out_h; ++y) {
    float* d = dst + y * out_w;
    std::fill(d, d + out_w, 0.0f);
    const float* w = c.weights.data() + y * c.ksize;
    for (int64_t k = 0; k < c.count[y]; ++k) {
      const float* s = src + (c.start[y] - first + k) * stride;
      const float wk = w[k];
      for (int64_t x = 0; x < out_w; ++x) d[x] += wk * s[x];
    }
  }
}

// Python's round(d / 2) for an integer d >= 0: halves go to the even neighbour (banker's rounding).
int64_t half_rounded_even(int64_t d) {
  const int64_t q = d / 2;
  return (d % 2 == 1 && q % 2 == 1) ? q + 1 : q;
}

}  // namespace

// --- The functional forms ------------------------------------------------------------------------------

namespace image {

std::array<int64_t, 2> shorter_side_size(int64_t h, int64_t w, int64_t size) {
  const int64_t shorter = std::min(h, w), longer = std::max(h, w);
  // int(size * long / short) in Python: a double division, truncated.
  const auto other = static_cast<int64_t>(static_cast<double>(size) * static_cast<double>(longer) / static_cast<double>(shorter));
  return w <= h ? std::array<int64_t, 2>{other, size} : std::array<int64_t, 2>{size, other};
}

void resized_crop(const float* in, const Shape& shape, Box box, int64_t out_h, int64_t out_w, float* out) {
  const int64_t h = height_of(shape), w = width_of(shape), planes = planes_of(shape);
  EMBER_CHECK(box.top >= 0 && box.left >= 0 && box.height > 0 && box.width > 0 && box.top + box.height <= h &&
                  box.left + box.width <= w && out_h > 0 && out_w > 0,
              "resized_crop: the window (top ", box.top, ", left ", box.left, ", ", box.height, "x", box.width,
              ") does not lie inside the image ", shape, " or the output ", out_h, "x", out_w, " is empty");
  ResizeScratch& s = resize_scratch();
  // As Pillow: a pass whose size does not change is skipped (it would be the identity).
  const bool horizontal = out_w != box.width, vertical = out_h != box.height;
  if (horizontal) compute_coefficients(box.width, out_w, s.horizontal);
  if (vertical) compute_coefficients(box.height, out_h, s.vertical);
  // The window's rows that the vertical pass reads, [first, last): the horizontal pass does only those.
  const int64_t first = vertical ? s.vertical.start[0] : 0;
  const int64_t last = vertical ? s.vertical.start[out_h - 1] + s.vertical.count[out_h - 1] : out_h;
  if (horizontal && vertical) s.rows.resize(static_cast<size_t>((last - first) * out_w));
  for (int64_t p = 0; p < planes; ++p) {
    const float* src = in + p * h * w + box.top * w + box.left;  // the window's row r at src + r * w
    float* dst = out + p * out_h * out_w;
    if (!vertical) {
      if (horizontal) {
        horizontal_pass(src, w, out_h, box.width, s.horizontal, out_w, dst, s.block);
      } else {
        for (int64_t r = 0; r < out_h; ++r)
          std::memcpy(dst + r * out_w, src + r * w, static_cast<size_t>(out_w) * sizeof(float));
      }
      continue;
    }
    if (horizontal) {
      horizontal_pass(src + first * w, w, last - first, box.width, s.horizontal, out_w, s.rows.data(), s.block);
      vertical_pass(s.rows.data(), out_w, first, s.vertical, out_h, out_w, dst);
    } else {
      vertical_pass(src, w, 0, s.vertical, out_h, out_w, dst);
    }
  }
}

void rotate(const float* in, const Shape& shape, double degrees, std::span<const float> fill, float* out) {
  const int64_t h = height_of(shape), w = width_of(shape), planes = planes_of(shape);
  EMBER_CHECK(fill.size() == 1 || static_cast<int64_t>(fill.size()) == planes, "rotate: ", fill.size(),
              " fill values for an image ", shape, " with ", planes, " channels; give one per channel, or one");
  // Pillow's Image.rotate: the inverse map from output to input pixel centres about (w / 2, h / 2), with
  // the matrix entries rounded to 15 decimals (so 90 and 180 degrees are exact), then its affine transform
  // with nearest-neighbour sampling in 16.16 fixed point (Geometry.c, affine_fixed), which this follows to
  // pick the same source pixel.
  const double angle = -degrees * std::numbers::pi / 180.0;
  const auto round15 = [](double v) { return std::round(v * 1e15) / 1e15; };
  const double a = round15(std::cos(angle)), b = round15(std::sin(angle));
  const double d = round15(-std::sin(angle)), e = a;
  const double cx = static_cast<double>(w) / 2.0, cy = static_cast<double>(h) / 2.0;
  const double c = a * -cx + b * -cy + cx, f = d * -cx + e * -cy + cy;
  const auto fix = [](double v) { return static_cast<int64_t>(std::floor(v * 65536.0 + 0.5)); };
  const int64_t a0 = fix(a), a1 = fix(b), a3 = fix(d), a4 = fix(e);
  const int64_t x0 = fix(c + b * 0.5 + a * 0.5), y0 = fix(f + e * 0.5 + d * 0.5);
  thread_local std::vector<int64_t> source;  // one row's source pixel offsets (-1: outside), for every plane
  source.resize(static_cast<size_t>(w));
  for (int64_t y = 0; y < h; ++y) {
    int64_t xx = x0 + y * a1, yy = y0 + y * a4;
    for (int64_t x = 0; x < w; ++x, xx += a0, yy += a3) {
      const int64_t sx = xx >> 16, sy = yy >> 16;  // floor, as Pillow's arithmetic shift
      source[x] = (sx >= 0 && sx < w && sy >= 0 && sy < h) ? sy * w + sx : -1;
    }
    for (int64_t p = 0; p < planes; ++p) {
      const float* src = in + p * h * w;
      float* dst = out + p * h * w + y * w;
      const float fv = fill[fill.size() == 1 ? 0 : p];
      for (int64_t x = 0; x < w; ++x) dst[x] = source[x] >= 0 ? src[source[x]] : fv;
    }
  }
}

void adjust_brightness(float* img, const Shape& shape, float factor) {
  check_color_image(shape, "adjust_brightness");
  for (int64_t k = 0, n = shape.numel(); k < n; ++k) img[k] = std::clamp(img[k] * factor, 0.0f, 1.0f);
}

void adjust_contrast(float* img, const Shape& shape, float factor) {
  const int64_t channels = check_color_image(shape, "adjust_contrast");
  const int64_t plane = shape[1] * shape[2];
  // The grayscale image's sum (one channel: the image's): 8 float lanes over blocks of 1024 pixels, the
  // blocks added in double (a single float accumulator would round away the small terms of a big image).
  const float* r = img;
  const float *g = channels == 3 ? img + plane : img, *b = channels == 3 ? img + 2 * plane : img;
  const float wr = channels == 3 ? kLumaR : 1.0f, wg = channels == 3 ? kLumaG : 0.0f, wb = channels == 3 ? kLumaB : 0.0f;
  double sum = 0.0;
  int64_t k = 0;
  while (k + kLanes <= plane) {
    Lanes8 lanes = {};
    for (const int64_t end = std::min(plane, k + 1024); k + kLanes <= end; k += kLanes) {
      Lanes8 vr, vg, vb;
      std::memcpy(&vr, r + k, sizeof vr);
      std::memcpy(&vg, g + k, sizeof vg);
      std::memcpy(&vb, b + k, sizeof vb);
      lanes += wr * vr + wg * vg + wb * vb;
    }
    for (int j = 0; j < kLanes; ++j) sum += lanes[j];
  }
  for (; k < plane; ++k) sum += wr * r[k] + wg * g[k] + wb * b[k];
  const float offset = (1.0f - factor) * static_cast<float>(sum / static_cast<double>(plane));
  for (int64_t k = 0, n = shape.numel(); k < n; ++k) img[k] = std::clamp(factor * img[k] + offset, 0.0f, 1.0f);
}

void adjust_saturation(float* img, const Shape& shape, float factor) {
  if (check_color_image(shape, "adjust_saturation") == 1) return;
  const int64_t plane = shape[1] * shape[2];
  float *r = img, *g = img + plane, *b = img + 2 * plane;
  for (int64_t k = 0; k < plane; ++k) {
    const float gray = (1.0f - factor) * (kLumaR * r[k] + kLumaG * g[k] + kLumaB * b[k]);
    r[k] = std::clamp(factor * r[k] + gray, 0.0f, 1.0f);
    g[k] = std::clamp(factor * g[k] + gray, 0.0f, 1.0f);
    b[k] = std::clamp(factor * b[k] + gray, 0.0f, 1.0f);
  }
}

void adjust_hue(float* img, const Shape& shape, float hue_shift) {
  EMBER_CHECK(hue_shift >= -0.5f && hue_shift <= 0.5f, "adjust_hue: shift ", hue_shift, " is not in [-0.5, 0.5]");
  if (check_color_image(shape, "adjust_hue") == 1) return;
  const int64_t plane = shape[1] * shape[2];
  float *r = img, *g = img + plane, *b = img + 2 * plane;
  // RGB -> HSV as torchvision's _rgb2hsv, the hue shifted modulo 1, HSV -> RGB in the closed form
  // channel(n) = v - v s clamp(min(t, 4 - t), 0, 1), t = (n + 6 hue) mod 6 (n = 5, 3, 1 for R, G, B), which
  // equals _hsv2rgb's six sectors. Written once for T = float and for Lanes8 (8 pixels; GCC does not
  // vectorise the scalar loop by itself), with selects instead of branches.
  const auto shift = [hue_shift](auto red, auto green, auto blue, auto& out_r, auto& out_g, auto& out_b) {
    using T = decltype(red);
    const T zero = T{} + 0.0f, one = T{} + 1.0f;
    const T gb_max = green > blue ? green : blue, gb_min = green < blue ? green : blue;
    const T maxc = red > gb_max ? red : gb_max, minc = red < gb_min ? red : gb_min;
    const T range = maxc - minc;
    const auto gray = range == zero;
    const T saturation = range / (gray ? one : maxc);
    const T inv = one / (gray ? one : range);
    const T rc = (maxc - red) * inv, gc = (maxc - green) * inv, bc = (maxc - blue) * inv;
    const T h6 = maxc == red ? bc - gc : (maxc == green ? 2.0f + rc - bc : 4.0f + gc - rc);  // in [-1, 5]
    T hue = h6 * (1.0f / 6.0f) + 1.0f + hue_shift;  // > 0: h6 / 6 >= -1/6 and the shift >= -1/2
    if constexpr (std::is_same_v<T, float>) {
      hue -= std::floor(hue);  // Python's % 1.0
    } else {
      using Ints8 = int32_t __attribute__((vector_size(32)));
      hue -= __builtin_convertvector(__builtin_convertvector(hue, Ints8), T);  // truncation is floor here
    }
    const T sextant = hue * 6.0f, chroma = maxc * saturation;
    const auto channel = [&](float n) {
      T t = n + sextant;
      t = t >= 6.0f ? t - 6.0f : t;
      T ramp = t < 4.0f - t ? t : 4.0f - t;
      ramp = ramp < zero ? zero : (ramp > one ? one : ramp);
      return maxc - chroma * ramp;
    };
    out_r = channel(5.0f);
    out_g = channel(3.0f);
    out_b = channel(1.0f);
  };
  int64_t k = 0;
  for (; k + kLanes <= plane; k += kLanes) {
    Lanes8 vr, vg, vb;
    std::memcpy(&vr, r + k, sizeof vr);
    std::memcpy(&vg, g + k, sizeof vg);
    std::memcpy(&vb, b + k, sizeof vb);
    shift(vr, vg, vb, vr, vg, vb);
    std::memcpy(r + k, &vr, sizeof vr);
    std::memcpy(g + k, &vg, sizeof vg);
    std::memcpy(b + k, &vb, sizeof vb);
  }
  for (; k < plane; ++k) shift(r[k], g[k], b[k], r[k], g[k], b[k]);
}

void to_grayscale(const float* in, const Shape& shape, int64_t out_channels, float* out) {
  const int64_t channels = check_color_image(shape, "to_grayscale");
  EMBER_CHECK(out_channels == 1 || out_channels == 3, "to_grayscale: num_output_channels ", out_channels,
              " is not 1 or 3");
  const int64_t plane = shape[1] * shape[2];
  if (channels == 3) {
    for (int64_t k = 0; k < plane; ++k) out[k] = kLumaR * in[k] + kLumaG * in[plane + k] + kLumaB * in[2 * plane + k];
  } else {
    std::memcpy(out, in, static_cast<size_t>(plane) * sizeof(float));
  }
  for (int64_t c = 1; c < out_channels; ++c) std::memcpy(out + c * plane, out, static_cast<size_t>(plane) * sizeof(float));
}

}  // namespace image

// --- Resize --------------------------------------------------------------------------------------------

Resize::Resize(int64_t height, int64_t width) : height_(height), width_(width) {
  EMBER_CHECK(height > 0 && width >= 0, "Resize: size (", height, ", ", width,
              ") must be positive (one size, width 0: the shorter side; two: height and width)");
}

Shape Resize::output_shape(const Shape& shape) const {
  check_image(shape, "Resize");
  if (width_ > 0) return with_size(shape, height_, width_);
  const auto [h, w] = image::shorter_side_size(height_of(shape), width_of(shape), height_);
  EMBER_CHECK(h > 0 && w > 0, "Resize: shorter side ", height_, " makes inputs ", shape,
              " empty on the longer side; give a larger size");
  return with_size(shape, h, w);
}

void Resize::apply(const float* in, const Shape& in_shape, float* out, ExampleRng&) const {
  const Shape out_shape = output_shape(in_shape);
  image::resized_crop(in, in_shape, {0, 0, height_of(in_shape), width_of(in_shape)}, height_of(out_shape),
                      width_of(out_shape), out);
}

// --- CenterCrop ----------------------------------------------------------------------------------------

CenterCrop::CenterCrop(int64_t height, int64_t width) : height_(height), width_(width) {
  EMBER_CHECK(height > 0 && width > 0, "CenterCrop: size ", height, "x", width, " must be positive");
}

Shape CenterCrop::output_shape(const Shape& shape) const {
  check_image(shape, "CenterCrop");
  return with_size(shape, height_, width_);
}

void CenterCrop::apply(const float* in, const Shape& in_shape, float* out, ExampleRng&) const {
  const int64_t h = height_of(in_shape), w = width_of(in_shape), planes = planes_of(in_shape);
  // torchvision: an image smaller than the window is padded with zeros, (d // 2) before and the rest after;
  // a larger one is cropped at round(d / 2) (Python's round: halves to even). As an offset of the window in
  // the image, negative where padded:
  const int64_t top = h >= height_ ? half_rounded_even(h - height_) : -((height_ - h) / 2);
  const int64_t left = w >= width_ ? half_rounded_even(w - width_) : -((width_ - w) / 2);
  crop_padded(in, planes, h, w, top, left, height_, width_, 0.0f, out);
}

// --- RandomResizedCrop ---------------------------------------------------------------------------------

RandomResizedCrop::RandomResizedCrop(int64_t height, int64_t width, std::array<double, 2> scale,
                                     std::array<double, 2> ratio)
    : height_(height), width_(width), scale_(scale), log_ratio_{}, ratio_(ratio) {
  EMBER_CHECK(height > 0 && width > 0, "RandomResizedCrop: size ", height, "x", width, " must be positive");
  EMBER_CHECK(scale[0] > 0 && scale[0] <= scale[1], "RandomResizedCrop: scale (", scale[0], ", ", scale[1],
              ") must be a range of area fractions 0 < min <= max, e.g. (0.08, 1)");
  EMBER_CHECK(ratio[0] > 0 && ratio[0] <= ratio[1], "RandomResizedCrop: ratio (", ratio[0], ", ", ratio[1],
              ") must be a range of aspect ratios 0 < min <= max, e.g. (3/4, 4/3)");
  log_ratio_ = {std::log(ratio[0]), std::log(ratio[1])};
}

Shape RandomResizedCrop::output_shape(const Shape& shape) const {
  check_image(shape, "RandomResizedCrop");
  return with_size(shape, height_, width_);
}

image::Box RandomResizedCrop::sample(int64_t h, int64_t w, ExampleRng& rng) const {
  const double area = static_cast<double>(h) * static_cast<double>(w);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * (scale_[0] + (scale_[1] - scale_[0]) * rng.uniform01());
    const double aspect = std::exp(log_ratio_[0] + (log_ratio_[1] - log_ratio_[0]) * rng.uniform01());
    // Python's round(): halves to even, as nearbyint in the default rounding mode.
    const auto cw = static_cast<int64_t>(std::nearbyint(std::sqrt(target * aspect)));
    const auto ch = static_cast<int64_t>(std::nearbyint(std::sqrt(target / aspect)));
    if (cw > 0 && cw <= w && ch > 0 && ch <= h) {
      const int64_t top = rng.uniform_int(h - ch + 1);
      const int64_t left = rng.uniform_int(w - cw + 1);
      return {top, left, ch, cw};
    }
  }
  // The fallback: the central crop, as wide (or high) as the ratio range allows.
  const double in_ratio = static_cast<double>(w) / static_cast<double>(h);
  int64_t cw = w, ch = h;
  if (in_ratio < ratio_[0]) ch = static_cast<int64_t>(std::nearbyint(static_cast<double>(w) / ratio_[0]));
  else if (in_ratio > ratio_[1]) cw = static_cast<int64_t>(std::nearbyint(static_cast<double>(h) * ratio_[1]));
  ch = std::clamp<int64_t>(ch, 1, h);
  cw = std::clamp<int64_t>(cw, 1, w);
  return {(h - ch) / 2, (w - cw) / 2, ch, cw};
}

void RandomResizedCrop::apply(const float* in, const Shape& in_shape, float* out, ExampleRng& rng) const {
  const image::Box box = sample(height_of(in_shape), width_of(in_shape), rng);
  image::resized_crop(in, in_shape, box, height_, width_, out);
}

// --- ColorJitter ---------------------------------------------------------------------------------------

ColorJitter::ColorJitter(float brightness, float contrast, float saturation, float hue)
    : brightness_{std::max(0.0f, 1.0f - brightness), 1.0f + brightness},
      contrast_{std::max(0.0f, 1.0f - contrast), 1.0f + contrast},
      saturation_{std::max(0.0f, 1.0f - saturation), 1.0f + saturation},
      hue_{-hue, hue} {
  EMBER_CHECK(brightness >= 0 && contrast >= 0 && saturation >= 0, "ColorJitter: brightness ", brightness,
              ", contrast ", contrast, ", saturation ", saturation, " must be >= 0 (0: left out)");
  EMBER_CHECK(hue >= 0 && hue <= 0.5f, "ColorJitter: hue ", hue, " is not in [0, 0.5] (0: left out)");
}

Shape ColorJitter::output_shape(const Shape& shape) const {
  check_color_image(shape, "ColorJitter");
  return shape;
}

ColorJitter::Draw ColorJitter::sample(ExampleRng& rng) const {
  Draw d;
  d.order = {0, 1, 2, 3};
  for (int i = 3; i > 0; --i) std::swap(d.order[i], d.order[rng.uniform_int(i + 1)]);  // Fisher-Yates
  const auto uniform = [&](const std::array<float, 2>& range) {
    return range[0] + (range[1] - range[0]) * rng.uniform01();
  };
  d.brightness = uniform(brightness_);
  d.contrast = uniform(contrast_);
  d.saturation = uniform(saturation_);
  d.hue = uniform(hue_);
  return d;
}

void ColorJitter::apply(const float* in, const Shape& in_shape, float* out, ExampleRng& rng) const {
  const Draw d = sample(rng);
  std::memcpy(out, in, static_cast<size_t>(in_shape.numel()) * sizeof(float));
  for (int which : d.order) {
    if (which == 0 && d.brightness != 1.0f) image::adjust_brightness(out, in_shape, d.brightness);
    if (which == 1 && d.contrast != 1.0f) image::adjust_contrast(out, in_shape, d.contrast);
    if (which == 2 && d.saturation != 1.0f) image::adjust_saturation(out, in_shape, d.saturation);
    if (which == 3 && d.hue != 0.0f) image::adjust_hue(out, in_shape, d.hue);
  }
}

// --- RandomRotation ------------------------------------------------------------------------------------

RandomRotation::RandomRotation(std::array<double, 2> degrees, std::vector<float> fill)
    : min_(degrees[0]), max_(degrees[1]), fill_(std::move(fill)) {
  EMBER_CHECK(std::isfinite(min_) && std::isfinite(max_) && min_ <= max_, "RandomRotation: degrees (", min_, ", ", max_,
              ") must be a finite range min <= max (one number d >= 0: (-d, d))");
  EMBER_CHECK(!fill_.empty(), "RandomRotation: fill is empty; give one value per channel, or one for all");
}

Shape RandomRotation::output_shape(const Shape& shape) const {
  check_image(shape, "RandomRotation");
  const int64_t planes = planes_of(shape);
  EMBER_CHECK(fill_.size() == 1 || static_cast<int64_t>(fill_.size()) == planes, "RandomRotation: ", fill_.size(),
              " fill values for inputs ", shape, " with ", planes, " channels; give one per channel, or one for all");
  return shape;
}

double RandomRotation::sample(ExampleRng& rng) const { return min_ + (max_ - min_) * rng.uniform01(); }

void RandomRotation::apply(const float* in, const Shape& in_shape, float* out, ExampleRng& rng) const {
  image::rotate(in, in_shape, sample(rng), fill_, out);
}

// --- Grayscale -----------------------------------------------------------------------------------------

Grayscale::Grayscale(int64_t num_output_channels) : channels_(num_output_channels) {
  EMBER_CHECK(channels_ == 1 || channels_ == 3, "Grayscale: num_output_channels ", channels_, " is not 1 or 3");
}

Shape Grayscale::output_shape(const Shape& shape) const {
  check_color_image(shape, "Grayscale");
  return Shape{channels_, shape[1], shape[2]};
}

void Grayscale::apply(const float* in, const Shape& in_shape, float* out, ExampleRng&) const {
  image::to_grayscale(in, in_shape, channels_, out);
}

}  // namespace ember::data
