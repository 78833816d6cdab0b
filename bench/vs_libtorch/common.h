#pragma once
// Shared by the Ember and LibTorch sides of the comparison (plain C++ only): options, timing, peak RSS,
// and the one JSON line each program prints.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace vs {

struct Options {
  std::string model = "mlp";      // mlp (784-256-128-10), cnn (the configs/fashion_cnn.yaml shape), tiny (10-10-10)
  std::string optimizer = "sgd";  // sgd (momentum 0.9) or adam
  int batch = 64, steps = 300, warmup = 30, threads = 2;
};

inline Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--model") o.model = v;
    else if (k == "--optimizer") o.optimizer = v;
    else if (k == "--batch") o.batch = std::stoi(v);
    else if (k == "--steps") o.steps = std::stoi(v);
    else if (k == "--warmup") o.warmup = std::stoi(v);
    else if (k == "--threads") o.threads = std::stoi(v);
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      std::exit(2);
    }
  }
  if (o.model == "tiny") o.batch = 1;
  return o;
}

using Clock = std::chrono::steady_clock;

inline double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

// Runs step() warmup + steps times; prints {"samples_per_sec", "us_per_step_median", ...} as one line.
template <typename Step>
void run(const char* name, const Options& o, Clock::time_point process_start, Step&& step) {
  step();  // the first step: process start → first step done
  const double first = std::chrono::duration<double>(Clock::now() - process_start).count();
  for (int i = 1; i < o.warmup; ++i) step();
  std::vector<double> us;
  us.reserve(o.steps);
  const auto start = Clock::now();
  for (int i = 0; i < o.steps; ++i) {
    const auto t0 = Clock::now();
    step();
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  const double total = std::chrono::duration<double>(Clock::now() - start).count();
  std::sort(us.begin(), us.end());
  std::printf("{\"framework\": \"%s\", \"model\": \"%s\", \"optimizer\": \"%s\", \"batch\": %d, \"threads\": %d, "
              "\"samples_per_sec\": %.1f, \"us_per_step_median\": %.2f, \"first_step_seconds\": %.3f, "
              "\"peak_rss_mib\": %.1f}\n",
              name, o.model.c_str(), o.optimizer.c_str(), o.batch, o.threads, o.steps * o.batch / total,
              us[us.size() / 2], first, peak_rss_mib());
}

}  // namespace vs
