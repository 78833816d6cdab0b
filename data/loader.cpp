#include "data/loader.h"

#include <cinttypes>
#include <cstdio>
#include <numeric>

#include "backends/cuda_info.h"
#include "core/raw.h"
#include "data/prefetch.h"
#include "data/random.h"
#include "data/shard.h"

namespace ember::data {
namespace {

BatchAllocator batch_allocator(const DataLoaderOptions& o) {
  if (o.allocator || !o.pin_memory || !cuda::is_available()) return o.allocator;
  return [](const Shape& shape, DType dtype) { return raw::empty_pinned(shape, dtype); };
}

}  // namespace

// What every batch of one epoch is built from. Shared read-only with the workers.
struct DataLoader::Epoch {
  int64_t number = 0;
  Generator::State rng;        // generator state at the epoch's start
  std::vector<int64_t> order;  // dataset indices in epoch order
  uint64_t transform_key = 0;  // (seed, epoch) → the key of every example's transform stream
};

std::string LoaderState::str() const {
  char text[128];
  std::snprintf(text, sizeof text, "epoch=%" PRId64 " batch=%" PRId64 " seed=%" PRIu64 " offset=%" PRIu64, epoch,
                batch, rng.seed, rng.offset);
  return text;
}

LoaderState LoaderState::parse(const std::string& text) {
  LoaderState s;
  int consumed = 0;
  const int n = std::sscanf(text.c_str(), "epoch=%" SCNd64 " batch=%" SCNd64 " seed=%" SCNu64 " offset=%" SCNu64 "%n",
                            &s.epoch, &s.batch, &s.rng.seed, &s.rng.offset, &consumed);
  EMBER_CHECK(n == 4 && consumed == static_cast<int>(text.size()), "LoaderState::parse: '", text,
              "' is not a loader position; expected 'epoch=E batch=B seed=S offset=O' as LoaderState::str() writes");
  return s;
}

DataLoader::DataLoader(DatasetPtr dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)),
      options_(std::move(options)),
      collator_(dataset_, options_.transforms, batch_allocator(options_)),
      gen_(options_.seed) {
  EMBER_CHECK(options_.batch_size >= 1, "DataLoader: batch_size is ", options_.batch_size, "; it must be >= 1");
  EMBER_CHECK(options_.num_workers >= 0, "DataLoader: num_workers is ", options_.num_workers,
              "; use 0 (build batches on the calling thread) or more");
  EMBER_CHECK(options_.prefetch >= 1, "DataLoader: prefetch is ", options_.prefetch, "; it must be >= 1");
  EMBER_CHECK(options_.num_shards >= 1 && options_.shard >= 0 && options_.shard < options_.num_shards,
              "DataLoader: shard ", options_.shard, " of num_shards ", options_.num_shards,
              "; use 0 <= shard < num_shards (the process's rank and the world size)");
  workspaces_.resize(options_.num_workers + 1);
}

DataLoader::~DataLoader() { stop(); }

int64_t DataLoader::epoch_size() const { return shard_size(dataset_->size(), options_.num_shards); }

int64_t DataLoader::num_batches() const {
  const int64_t n = epoch_size(), b = options_.batch_size;
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

void DataLoader::stop() {
  run_.reset();  // joins the workers before the epoch they read goes away
  epoch_.reset();
  has_current_ = false;
  current_ = {};
}

LoaderState DataLoader::state() const {
  if (resume_) return *resume_;
  if (epoch_) return {epoch_->number, delivered_, epoch_->rng};
  return {next_epoch_, 0, gen_.state()};
}

void DataLoader::load_state(const LoaderState& state) {
  EMBER_CHECK(state.epoch >= 0 && state.batch >= 0 && state.batch <= num_batches(), "DataLoader::load_state: ",
              state.str(), " is not a position of this loader (", num_batches(),
              " batches per epoch); was it saved with another batch size, dataset or drop_last?");
  stop();
  resume_ = state;
}

void DataLoader::start_epoch() {
  stop();
  const LoaderState start = resume_ ? *resume_ : LoaderState{next_epoch_, 0, gen_.state()};
  resume_.reset();
  auto epoch = std::make_shared<Epoch>();
  epoch->number = start.epoch;
  epoch->rng = start.rng;
  gen_.set_state(start.rng);
  if (options_.shuffle) {
    epoch->order = random_permutation(dataset_->size(), gen_);
  } else {
    epoch->order.resize(dataset_->size());
    std::iota(epoch->order.begin(), epoch->order.end(), int64_t{0});
  }
  if (options_.num_shards > 1) epoch->order = shard_order(epoch->order, options_.shard, options_.num_shards);
  epoch->transform_key = mix_key(start.rng.seed, static_cast<uint64_t>(start.epoch));
  next_epoch_ = start.epoch + 1;
  epoch_ = epoch;
  delivered_ = start.batch;
  if (options_.num_workers > 0) {
    run_ = std::make_unique<PrefetchRun>(start.batch, num_batches(), start.epoch, options_.num_workers,
                                         options_.num_workers * options_.prefetch,
                                         [this, epoch](int64_t b, int worker) { return produce(*epoch, b, worker); });
  }
}

Batch DataLoader::produce(const Epoch& epoch, int64_t batch, int workspace) const {
  const auto n = static_cast<int64_t>(epoch.order.size()), first = batch * options_.batch_size;
  const int64_t count = std::min(options_.batch_size, n - first);
  const std::span<const int64_t> indices(epoch.order.data() + first, static_cast<size_t>(count));
  return collator_.make(indices, epoch.transform_key, workspaces_[workspace]);
}

std::vector<int64_t> DataLoader::batch_indices() const {
  if (!epoch_ || !has_current_ || delivered_ < 1) return {};
  const auto n = static_cast<int64_t>(epoch_->order.size()), first = (delivered_ - 1) * options_.batch_size;
  const int64_t count = std::min(options_.batch_size, n - first);
  return {epoch_->order.begin() + first, epoch_->order.begin() + first + count};
}

void DataLoader::fetch() {
  has_current_ = false;
  if (!epoch_) return;
  try {
    if (run_) {
      has_current_ = run_->next(current_);
    } else if (delivered_ < num_batches()) {
      try {
        current_ = produce(*epoch_, delivered_, options_.num_workers);
      } catch (...) {
        rethrow_batch_error(std::current_exception(), delivered_, epoch_->number, -1);
      }
      has_current_ = true;
    }
  } catch (...) {
    stop();  // the epoch cannot continue past a failed batch
    throw;
  }
  if (has_current_) {
    ++delivered_;
  } else {
    stop();  // epoch done: workers joined; state() now points at the next epoch
  }
}

DataLoader::Iterator DataLoader::begin() {
  start_epoch();
  fetch();
  return Iterator(this);
}

Batch& DataLoader::Iterator::operator*() const {
  EMBER_CHECK(!at_end(), "DataLoader: dereferencing an iterator past the end of the epoch");
  return loader_->current_;
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  EMBER_CHECK(loader_ != nullptr, "DataLoader: incrementing a default-constructed iterator");
  loader_->fetch();
  return *this;
}

bool DataLoader::Iterator::at_end() const { return loader_ == nullptr || !loader_->has_current_; }

}  // namespace ember::data
