#pragma once
// Generator: a seed and a counter for Philox4x32-10, a counter-based generator. Element i of a draw of n
// numbers is computed from the Philox block at counter offset + i alone; the draw advances the offset by
// n. So a seed gives the same numbers on every device and for any number of threads.
// Not thread-safe: give each thread its own Generator.
#include <cstdint>

namespace ember {

class Generator {
 public:
  struct State {
    uint64_t seed = 0;
    uint64_t offset = 0;
    friend bool operator==(const State&, const State&) = default;
  };

  explicit Generator(uint64_t seed = kDefaultSeed) : state_{seed, 0} {}

  void manual_seed(uint64_t seed) { state_ = {seed, 0}; }
  uint64_t seed() const { return state_.seed; }
  State state() const { return state_; }
  void set_state(State s) { state_ = s; }

  // Reserves `n` counters and returns the first.
  uint64_t advance(uint64_t n) {
    uint64_t first = state_.offset;
    state_.offset += n;
    return first;
  }

  static constexpr uint64_t kDefaultSeed = 67280421310721ULL;  // PyTorch's default seed

 private:
  State state_;
};

// The process-wide generator used when a factory is given none. Seed it with manual_seed().
Generator& default_generator();
void manual_seed(uint64_t seed);

}  // namespace ember
