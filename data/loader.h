#pragma once
// DataLoader: batches of a Dataset, epoch after epoch.
//
//   auto train = data::fashion_mnist(data::Split::Train);
//   data::DataLoader loader(train, {.batch_size = 64, .shuffle = true, .num_workers = 2, .seed = 0});
//   for (int epoch = 0; epoch < 5; ++epoch)
//     for (auto& batch : loader) { ... batch.input [64, 1, 28, 28] f32, batch.target [64] i64 ... }
//
// Each `for` over the loader (each begin()) is one epoch. With shuffle, every epoch draws a new
// permutation from the loader's Generator (seeded with `seed`), so a seed fixes every epoch's order.
// The batch sequence — order, contents and transform randomness — is the same for any num_workers:
// workers only decide *who* builds batch b, never what it holds, and batches reach the loop in order.
//
// Resume: state() is the position (epoch, batches delivered, generator state at the epoch's start);
// load_state() on a fresh loader built the same way makes the next `for` continue exactly where the
// saved run was, so a resumed run sees the same batches an uninterrupted one would.
//
// Threads: num_workers threads build batches ahead of the loop, at most prefetch × num_workers of them
// in flight. Destroying the loader, starting a new epoch, or load_state() mid-epoch stops and joins
// them. An exception in a worker reaches the loop, at the batch it was building, as an ember::Error
// that carries its message. A loader is used from one thread (the training loop).
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/collate.h"
#include "data/dataset.h"

namespace ember::data {

class PrefetchRun;

// Field order matters for designated initializers: {.batch_size, .shuffle, .num_workers, .seed, ...}.
struct DataLoaderOptions {
  int64_t batch_size = 1;
  bool shuffle = false;
  int num_workers = 0;   // 0: batches are built on the calling thread, when asked for
  uint64_t seed = 0;     // shuffle order and transform randomness
  bool drop_last = false;  // drop the last batch of an epoch when it is smaller than batch_size
  int prefetch = 2;        // batches each worker may have ready ahead of the loop
  std::vector<AnyTransform> transforms{};  // applied per example, in order (data/transforms.h)
  BatchAllocator allocator{};            // null: Ember's CPU caching allocator, or pinned memory (below)
  // Batches in page-locked memory, so that batch.input.to(cuda) does not wait for the GPU (PyTorch's
  // pin_memory). Used when `allocator` is null and CUDA is usable; ignored otherwise.
  bool pin_memory = false;
  // Data-parallel training (data/shard.h): this process reads shard `shard` of `num_shards` of every epoch
  // (its rank and the world size); num_batches() and state() then count this shard's batches.
  int64_t num_shards = 1;
  int64_t shard = 0;
};

// Where a loader stands: the next `for` yields batches `batch`, `batch`+1, ... of epoch `epoch`, whose
// order is drawn from the generator state `rng` (the state at that epoch's start).
struct LoaderState {
  int64_t epoch = 0;
  int64_t batch = 0;
  Generator::State rng{};

  // "epoch=3 batch=17 seed=0 offset=180000", for checkpoint metadata; parse() reads it back and throws
  // ember::Error on anything else.
  std::string str() const;
  static LoaderState parse(const std::string& text);
  friend bool operator==(const LoaderState&, const LoaderState&) = default;
};

class DataLoader {
 public:
  // Throws ember::Error for a null or empty dataset, batch_size < 1, num_workers < 0, prefetch < 1, or
  // transforms that do not fit the dataset's examples (collate.h).
  DataLoader(DatasetPtr dataset, DataLoaderOptions options = {});
  ~DataLoader();  // joins the workers (mid-epoch too)
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    using pointer = Batch*;
    using reference = Batch&;

    Iterator() = default;
    Batch& operator*() const;
    Batch* operator->() const { return &**this; }
    // Fetches the next batch; throws what building it threw (as described above).
    Iterator& operator++();
    void operator++(int) { ++*this; }
    friend bool operator==(const Iterator& it, std::default_sentinel_t) { return it.at_end(); }

   private:
    friend class DataLoader;
    explicit Iterator(DataLoader* loader) : loader_(loader) {}
    bool at_end() const;
    DataLoader* loader_ = nullptr;
  };

  // Starts the next epoch (or continues a load_state() position) and fetches its first batch. A
  // previous epoch still in progress is abandoned. Throws what building the first batch threw.
  Iterator begin();
  std::default_sentinel_t end() const { return {}; }

  int64_t num_batches() const;  // per epoch
  int64_t epoch_size() const;   // examples per epoch: the dataset's, or its shard's
  int64_t batch_size() const { return options_.batch_size; }
  const Dataset& dataset() const { return *dataset_; }
  const DataLoaderOptions& options() const { return options_; }
  // One example's input shape after the transforms (the batch input is [B, ...this]).
  const Shape& input_shape() const { return collator_.input_shape(); }

  LoaderState state() const;
  // The dataset indices of the batch the iterator points at (the last one fetched), in batch order — for
  // logs that record which examples a step trained on. Empty between epochs.
  std::vector<int64_t> batch_indices() const;
  // Throws ember::Error when epoch < 0 or batch is not in [0, num_batches()].
  void load_state(const LoaderState& state);

 private:
  struct Epoch;
  void start_epoch();
  void stop();
  void fetch();  // current_ ← the next batch, or ends the epoch
  Batch produce(const Epoch& epoch, int64_t batch, int workspace) const;

  DatasetPtr dataset_;
  DataLoaderOptions options_;
  Collator collator_;
  Generator gen_;
  int64_t next_epoch_ = 0;
  std::optional<LoaderState> resume_;
  std::shared_ptr<const Epoch> epoch_;  // the epoch being iterated; null between epochs
  int64_t delivered_ = 0;               // batches of epoch_ handed out (current_ included)
  bool has_current_ = false;
  Batch current_;
  mutable std::vector<Workspace> workspaces_;  // one per worker, plus one for the calling thread
  std::unique_ptr<PrefetchRun> run_;
};

}  // namespace ember::data
