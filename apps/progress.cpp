#include "apps/progress.h"

#include <string>

#include <ember/ember.h>

#include "base/format.h"

namespace ember::app {

void ProgressDisplay::step(int64_t epoch, int64_t in_epoch, int64_t step, double loss, double lr, int64_t seen,
                           double seconds) {
  const double rate = seen / std::max(seconds, 1e-9);
  if (!bar_) {
    if (step % log_every_ != 0) return;
    std::fprintf(out_, "epoch %lld/%lld step %lld/%lld (total %lld): loss %.4f, lr %.3g, %.0f samples/s\n",
                 static_cast<long long>(epoch), static_cast<long long>(epochs_), static_cast<long long>(in_epoch),
                 static_cast<long long>(steps_per_epoch_), static_cast<long long>(step), loss, lr, rate);
    std::fflush(out_);
    return;
  }
  // At most ~10 redraws a second: printing must not cost more than the steps.
  if (in_epoch != steps_per_epoch_ && seconds - last_draw_ < 0.1 && last_draw_ >= 0 && seconds >= last_draw_) return;
  last_draw_ = seconds;
  constexpr int kWidth = 24;
  const int filled = static_cast<int>(kWidth * in_epoch / std::max<int64_t>(steps_per_epoch_, 1));
  std::string bar(static_cast<size_t>(filled), '=');
  if (filled < kWidth) bar += '>';
  bar.resize(kWidth, ' ');
  const double per_step = seconds / std::max<int64_t>(in_epoch, 1);
  const int eta = static_cast<int>(per_step * static_cast<double>(steps_per_epoch_ - in_epoch));
  const std::string mem = format_mib(static_cast<double>(memory_stats(device_).allocated));
  std::fprintf(out_, "\r\033[Kepoch %lld/%lld [%s] %lld/%lld  loss %.4f  lr %.3g  %.0f samples/s  ETA %d:%02d  mem %s",
               static_cast<long long>(epoch), static_cast<long long>(epochs_), bar.c_str(),
               static_cast<long long>(in_epoch), static_cast<long long>(steps_per_epoch_), loss, lr, rate, eta / 60,
               eta % 60, mem.c_str());
  std::fflush(out_);
  drawn_ = true;
}

void ProgressDisplay::clear() {
  if (bar_ && drawn_) std::fprintf(out_, "\r\033[K");
  drawn_ = false;
  last_draw_ = -1;
}

void ProgressDisplay::epoch_summary(const MetricsRow& r, const std::string& task, const std::string& bits_unit) {
  char buf[256];
  std::string train, test = "no evaluation";
  if (task == "language_model") {
    std::snprintf(buf, sizeof buf, "train loss %.4f, next-token accuracy %.2f%%", r.train_loss,
                  100 * r.train_accuracy.value_or(0));
    train = buf;
    if (r.test_loss) {
      std::snprintf(buf, sizeof buf, "val loss %.4f nats/token (%.4f %s, perplexity %.3f), val accuracy %.2f%%",
                    *r.test_loss, r.test_bits.value_or(0), bits_unit.c_str(), r.test_perplexity.value_or(0),
                    100 * r.test_accuracy.value_or(0));
      test = buf;
    }
  } else if (task == "regression") {
    std::snprintf(buf, sizeof buf, "train loss %.6g", r.train_loss);
    train = buf;
    if (r.test_loss) {
      std::snprintf(buf, sizeof buf, "test loss %.6g", *r.test_loss);
      test = buf;
    }
  } else {
    std::snprintf(buf, sizeof buf, "train loss %.4f, train accuracy %.2f%%", r.train_loss,
                  100 * r.train_accuracy.value_or(0));
    train = buf;
    if (r.test_loss) {
      std::snprintf(buf, sizeof buf, "test loss %.4f, test accuracy %.2f%%", *r.test_loss,
                    100 * r.test_accuracy.value_or(0));
      test = buf;
    }
  }
  std::fprintf(out_, "epoch %lld/%lld: %s, %s, lr %.3g, %.0f samples/s, %.1f s\n", static_cast<long long>(r.epoch),
               static_cast<long long>(epochs_), train.c_str(), test.c_str(), r.lr, r.samples_per_sec, r.seconds);
  std::fflush(out_);
}

}  // namespace ember::app
