#pragma once
// Grad mode: whether ops record the autograd graph. Thread-local, on by default; each thread starts on.
//
//   {
//     ember::NoGradGuard no_grad;   // nothing below records a graph (evaluation, optimizer steps)
//     ...
//   }                               // the previous mode is back
namespace ember {

class GradMode {
 public:
  static bool is_enabled() { return enabled_; }
  static void set_enabled(bool on) { enabled_ = on; }

 private:
  static inline thread_local bool enabled_ = true;
};

// Turns grad mode off for its scope (RAII), restoring the previous mode when it ends.
class NoGradGuard {
 public:
  NoGradGuard() : previous_(GradMode::is_enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// Sets grad mode to `on` for its scope (RAII); the engine uses it to run backward formulas untracked.
class AutoGradMode {
 public:
  explicit AutoGradMode(bool on) : previous_(GradMode::is_enabled()) { GradMode::set_enabled(on); }
  ~AutoGradMode() { GradMode::set_enabled(previous_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool previous_;
};

}  // namespace ember
