#pragma once
// What ember-train prints while training. On a terminal: one line rewritten in place
//   epoch 2/10 [=========>          ] 234/469  loss 0.4123  lr 0.001  5210 samples/s  ETA 0:04  mem 41.2 MiB
// otherwise (a pipe, a log file): one plain line every `log_every` steps. Both: one summary line per epoch.
#include <cstdint>
#include <cstdio>
#include <string>

#include "apps/run_dir.h"
#include "base/device.h"

namespace ember::app {

class ProgressDisplay {
 public:
  ProgressDisplay(std::FILE* out, bool bar, int64_t log_every, int64_t steps_per_epoch, int64_t epochs, Device device)
      : out_(out), bar_(bar), log_every_(log_every), steps_per_epoch_(steps_per_epoch), epochs_(epochs), device_(device) {}

  // After each step: `in_epoch` steps of epoch `epoch` (from 1) done, `step` in all; `seen` examples in
  // `seconds` this epoch.
  void step(int64_t epoch, int64_t in_epoch, int64_t step, double loss, double lr, int64_t seen, double seconds);
  // Erases the bar (before other output); nothing for plain lines.
  void clear();
  // classification: losses and accuracies; language_model (`bits_unit` "bits/char"): val loss in nats/token,
  // bits, perplexity and next-token accuracy; regression: train and test loss.
  void epoch_summary(const MetricsRow& row, const std::string& task = "classification",
                     const std::string& bits_unit = "bits/token");

 private:
  std::FILE* out_;
  bool bar_;
  int64_t log_every_, steps_per_epoch_, epochs_;
  Device device_;
  double last_draw_ = -1;
  bool drawn_ = false;
};

}  // namespace ember::app
