#pragma once
// PrefetchRun: worker threads producing the batches [first, end) of one epoch ahead of the consumer,
// handed over strictly in batch order. Internal to the DataLoader.
//
// Workers claim the next unclaimed batch number from a shared counter, but only while it lies within
// `window` batches of the next one the consumer will take — that bounds memory to `window` batches in
// flight. Finished batches wait in a ring of `window` slots (slot = batch % window) until their turn, so
// the order the consumer sees never depends on thread timing: batch b is always produce(b).
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "data/collate.h"

namespace ember::data {

// Throws ember::Error "DataLoader: batch <b> of epoch <e> failed[ in worker <w>]: <what>" for `error`.
[[noreturn]] void rethrow_batch_error(std::exception_ptr error, int64_t batch, int64_t epoch, int worker);

class PrefetchRun {
 public:
  // produce(b, worker) builds batch b on worker thread `worker` (0 .. num_workers-1).
  using Produce = std::function<Batch(int64_t batch, int worker)>;

  PrefetchRun(int64_t first, int64_t end, int64_t epoch, int num_workers, int window, Produce produce);
  // Stops the workers (each finishes the batch it is building) and joins them.
  ~PrefetchRun();
  PrefetchRun(const PrefetchRun&) = delete;
  PrefetchRun& operator=(const PrefetchRun&) = delete;

  // The next batch in order, waiting for it if needed; false when all are taken. Rethrows a worker's
  // exception for that batch through rethrow_batch_error.
  bool next(Batch& out);

 private:
  struct Result {
    Batch batch;
    std::exception_ptr error;
    int worker = 0;
  };
  void work(int worker);

  const int64_t end_, epoch_;
  const int window_;
  const Produce produce_;
  std::mutex mutex_;
  std::condition_variable work_cv_, ready_cv_;
  int64_t next_claim_, next_deliver_;   // guarded by mutex_
  std::vector<std::optional<Result>> slots_;  // guarded by mutex_
  bool stop_ = false;                   // guarded by mutex_
  std::vector<std::thread> threads_;
};

}  // namespace ember::data
