#include "data/prefetch.h"

#include <string>

#include "base/parallel.h"

namespace ember::data {

void rethrow_batch_error(std::exception_ptr error, int64_t batch, int64_t epoch, int worker) {
  std::string where = "DataLoader: batch " + std::to_string(batch) + " of epoch " + std::to_string(epoch) + " failed";
  if (worker >= 0) where += " in worker " + std::to_string(worker);
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    throw Error(where + ": " + e.what());
  } catch (...) {
    throw Error(where + ": an exception that is not a std::exception");
  }
}

PrefetchRun::PrefetchRun(int64_t first, int64_t end, int64_t epoch, int num_workers, int window, Produce produce)
    : end_(end), epoch_(epoch), window_(window), produce_(std::move(produce)), next_claim_(first),
      next_deliver_(first), slots_(window) {
  threads_.reserve(num_workers);
  for (int w = 0; w < num_workers; ++w) threads_.emplace_back([this, w] { work(w); });
}

PrefetchRun::~PrefetchRun() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void PrefetchRun::work(int worker) {
  // A worker's ops (decoding, transforms, collation) run on the worker alone: the CPU pool belongs to the
  // training thread, which a worker's region would otherwise take from it.
  const cpu::SerialThisThread serial;
  while (true) {
    int64_t batch = 0;
    {
      std::unique_lock lock(mutex_);
      work_cv_.wait(lock, [&] { return stop_ || next_claim_ >= end_ || next_claim_ < next_deliver_ + window_; });
      if (stop_ || next_claim_ >= end_) return;
      batch = next_claim_++;
    }
    Result result;
    result.worker = worker;
    try {
      result.batch = produce_(batch, worker);
    } catch (...) {
      result.error = std::current_exception();
    }
    {
      std::lock_guard lock(mutex_);
      slots_[batch % window_] = std::move(result);
    }
    ready_cv_.notify_one();  // one consumer
  }
}

bool PrefetchRun::next(Batch& out) {
  std::unique_lock lock(mutex_);
  if (next_deliver_ >= end_) return false;
  const int64_t batch = next_deliver_;
  std::optional<Result>& slot = slots_[batch % window_];
  ready_cv_.wait(lock, [&] { return slot.has_value(); });
  Result result = std::move(*slot);
  slot.reset();
  ++next_deliver_;
  lock.unlock();
  work_cv_.notify_all();  // the window moved: a waiting worker may claim the next batch
  if (result.error) rethrow_batch_error(result.error, batch, epoch_, result.worker);
  out = std::move(result.batch);
  return true;
}

}  // namespace ember::data
