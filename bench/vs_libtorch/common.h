#pragma once
// Shared by the Ember and LibTorch sides of the comparison (plain C++ only, compiled into both programs
// with the same flags): options, the Fashion-MNIST data and its batch order, timing, peak RSS, and the one
// JSON line each program prints. tools/vs_libtorch.py runs the two programs.
//
// What one step is, on both sides (the same work):
//   - zero_grad with set-to-none semantics (Ember's Optimizer::zero_grad() default; LibTorch 1.13's C++
//     Optimizer::zero_grad() zeroes the gradients in place instead, so torch_train.cpp resets them to
//     undefined tensors itself; --zero-grad zero switches both sides to zeroing in place);
//   - the next batch of the training set: indices from one shuffled order (a fixed seed, the same
//     permutation on both sides, a new one per epoch), gathered from the u8 images into a freshly allocated
//     f32 tensor and normalised ((x / 255 - 0.2860) / 0.3530) by gather_batch below, labels into an i64
//     tensor; the tiny model instead reuses one fixed batch of 1 (it measures framework overhead);
//   - forward, cross entropy, backward, optimizer step, and the loss read back as a float (.item()).
#include <sys/resource.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <numeric>
#include <string>
#include <vector>

namespace vs {

struct Options {
  std::string model = "mlp";      // mlp (784-256-128-10), cnn (the configs/fashion_cnn.yaml shape), tiny (10-10-10)
  std::string optimizer = "sgd";  // sgd (momentum 0.9) or adam
  std::string zero_grad = "none";  // none (set to none: both sides) or zero (zeroed in place: both sides)
  std::string data = "/usr/share/datasets/fashion-mnist";  // Debian's dataset-fashion-mnist
  int batch = 64, steps = 300, warmup = 30, threads = 2;
  double max_seconds = 0;  // > 0: stop the timed steps early once they took this long (a loaded machine)
  uint64_t seed = 0;
};

[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "error: %s\n", what.c_str());
  std::exit(2);
}

inline Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i += 2) {
    const std::string k = argv[i];
    if (i + 1 >= argc) fail("option " + k + " needs a value");
    const std::string v = argv[i + 1];
    if (k == "--model") o.model = v;
    else if (k == "--optimizer") o.optimizer = v;
    else if (k == "--zero-grad") o.zero_grad = v;
    else if (k == "--data") o.data = v;
    else if (k == "--batch") o.batch = std::stoi(v);
    else if (k == "--steps") o.steps = std::stoi(v);
    else if (k == "--warmup") o.warmup = std::stoi(v);
    else if (k == "--threads") o.threads = std::stoi(v);
    else if (k == "--seed") o.seed = std::stoull(v);
    else if (k == "--max-seconds") o.max_seconds = std::stod(v);
    else fail("unknown option " + k + " (known: --model --optimizer --zero-grad --data --batch --steps --warmup "
              "--threads --seed --max-seconds)");
  }
  if (o.model != "mlp" && o.model != "cnn" && o.model != "tiny") fail("--model must be mlp, cnn or tiny, got " + o.model);
  if (o.optimizer != "sgd" && o.optimizer != "adam") fail("--optimizer must be sgd or adam, got " + o.optimizer);
  if (o.zero_grad != "none" && o.zero_grad != "zero") fail("--zero-grad must be none or zero, got " + o.zero_grad);
  if (o.batch < 1 || o.steps < 1 || o.warmup < 1 || o.threads < 1) fail("--batch, --steps, --warmup, --threads must be >= 1");
  if (o.model == "tiny") o.batch = 1;
  return o;
}

// Wall-clock nanoseconds (CLOCK_REALTIME): comparable with the parent's time.time_ns() taken before exec.
inline int64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// --- Fashion-MNIST (IDX files, gzip-compressed as Debian ships them) -------------------------------------

// Reads one gzip-compressed IDX file of u8 items into `out` (no header): its magic must be `magic`, its dims
// after the first must be `inner` (e.g. {28, 28}); returns the first dim. Allocates exactly once.
inline int64_t read_idx(const std::string& path, uint32_t magic, const std::vector<uint32_t>& inner,
                        std::vector<uint8_t>& out) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) fail("cannot open " + path + " (install Debian's dataset-fashion-mnist or pass --data DIR)");
  gzbuffer(f, 1 << 20);
  const auto read = [&](void* dst, size_t n) {
    auto* p = static_cast<uint8_t*>(dst);
    while (n > 0) {
      const int got = gzread(f, p, static_cast<unsigned>(std::min<size_t>(n, size_t{1} << 30)));
      if (got <= 0) {
        gzclose(f);
        fail(path + ": truncated or corrupt gzip data; reinstall dataset-fashion-mnist");
      }
      p += got;
      n -= static_cast<size_t>(got);
    }
  };
  const auto be32 = [](const uint8_t* p) {
    return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
  };
  uint8_t head[16];
  read(head, 4 * (1 + 1 + inner.size()));
  if (be32(head) != magic) fail(path + ": not an IDX file of the expected kind (magic " + std::to_string(be32(head)) + ")");
  size_t item = 1;
  for (size_t i = 0; i < inner.size(); ++i) {
    if (be32(head + 8 + 4 * i) != inner[i]) fail(path + ": unexpected item shape; expected 28x28 images");
    item *= inner[i];
  }
  const int64_t n = be32(head + 4);
  out.resize(static_cast<size_t>(n) * item);
  read(out.data(), out.size());
  gzclose(f);
  return n;
}

struct Dataset {
  std::vector<uint8_t> images;  // [n, 28, 28], u8 as stored
  std::vector<uint8_t> labels;  // [n]
  int64_t n = 0;
};

inline Dataset load_train(const std::string& dir) {
  const std::string ip = dir + "/train-images-idx3-ubyte.gz", lp = dir + "/train-labels-idx1-ubyte.gz";
  Dataset d;
  d.n = read_idx(ip, 0x803, {28, 28}, d.images);
  if (read_idx(lp, 0x801, {}, d.labels) != d.n) fail(ip + " and " + lp + " disagree on the number of examples");
  return d;
}

// The batch order: a Fisher-Yates permutation per epoch drawn from splitmix64 (seeded), identical on both
// sides; the last partial batch of an epoch is dropped.
class Order {
 public:
  Order(int64_t n, int64_t batch, uint64_t seed) : perm_(n), batch_(batch), state_(seed) { shuffle(); }
  const int64_t* next() {
    if (pos_ + batch_ > static_cast<int64_t>(perm_.size())) shuffle();
    const int64_t* p = perm_.data() + pos_;
    pos_ += batch_;
    return p;
  }

 private:
  uint64_t draw() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  void shuffle() {
    std::iota(perm_.begin(), perm_.end(), int64_t{0});
    for (int64_t i = static_cast<int64_t>(perm_.size()) - 1; i > 0; --i)
      std::swap(perm_[i], perm_[static_cast<int64_t>(draw() % static_cast<uint64_t>(i + 1))]);
    pos_ = 0;
  }
  std::vector<int64_t> perm_;
  int64_t batch_, pos_ = 0;
  uint64_t state_;
};

// Gathers one batch into the framework's freshly allocated tensors: x [batch, 784] f32, normalised; y [batch]
// i64.
inline void gather_batch(const Dataset& d, const int64_t* idx, int64_t batch, float* x, int64_t* y) {
  constexpr float kScale = 1.0f / (255.0f * 0.3530f), kShift = -0.2860f / 0.3530f;
  for (int64_t b = 0; b < batch; ++b) {
    const uint8_t* src = d.images.data() + idx[b] * 784;
    float* dst = x + b * 784;
    for (int i = 0; i < 784; ++i) dst[i] = static_cast<float>(src[i]) * kScale + kShift;
    y[b] = d.labels[idx[b]];
  }
}

// --- timing and the report ------------------------------------------------------------------------------

using Clock = std::chrono::steady_clock;

inline double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

// Runs step() warmup + steps times (step returns the loss it read back; the timed steps stop early after
// --max-seconds); prints one JSON line: the timed steps and samples/s over them, the median step, the wall-clock (CLOCK_REALTIME ns) at main's entry, when
// the data was ready and when the first step was done, peak RSS so far, the mean loss of the timed steps.
template <typename Step>
void run(const char* name, const Options& o, int64_t main_ns, int64_t data_ns, Step&& step) {
  double loss = step();  // the first step
  const int64_t first_ns = realtime_ns();
  for (int i = 1; i < o.warmup; ++i) loss = step();
  std::vector<double> us;
  us.reserve(o.steps);
  double loss_sum = 0;
  const auto start = Clock::now();
  for (int i = 0; i < o.steps; ++i) {
    const auto t0 = Clock::now();
    loss = step();
    const auto t1 = Clock::now();
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    loss_sum += loss;
    if (o.max_seconds > 0 && std::chrono::duration<double>(t1 - start).count() > o.max_seconds) break;
  }
  const int done = static_cast<int>(us.size());
  const double total = std::chrono::duration<double>(Clock::now() - start).count();
  std::sort(us.begin(), us.end());
  std::printf("{\"framework\": \"%s\", \"model\": \"%s\", \"optimizer\": \"%s\", \"batch\": %d, \"threads\": %d, "
              "\"zero_grad\": \"%s\", \"steps\": %d, \"samples_per_sec\": %.1f, \"us_per_step_median\": %.2f, "
              "\"main_ns\": %lld, \"data_ns\": %lld, \"first_step_ns\": %lld, \"peak_rss_mib\": %.1f, "
              "\"mean_loss\": %.5f, \"last_loss\": %.5f}\n",
              name, o.model.c_str(), o.optimizer.c_str(), o.batch, o.threads, o.zero_grad.c_str(), done,
              double(done) * o.batch / total, us[us.size() / 2], static_cast<long long>(main_ns),
              static_cast<long long>(data_ns), static_cast<long long>(first_ns), peak_rss_mib(), loss_sum / done,
              loss);
  std::fflush(stdout);
}

}  // namespace vs
