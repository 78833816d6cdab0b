#include "data/shard.h"

#include "base/error.h"

namespace ember::data {

int64_t shard_size(int64_t examples, int64_t num_shards) { return (examples + num_shards - 1) / num_shards; }

std::vector<int64_t> shard_order(const std::vector<int64_t>& order, int64_t shard, int64_t num_shards) {
  EMBER_CHECK(num_shards >= 1 && shard >= 0 && shard < num_shards, "DataLoader: shard ", shard, " of ", num_shards,
              " shards; use 0 <= shard < num_shards (the process's rank and the world size)");
  EMBER_CHECK(!order.empty(), "DataLoader: cannot shard an empty epoch");
  const auto n = static_cast<int64_t>(order.size());
  const int64_t per_shard = shard_size(n, num_shards);
  std::vector<int64_t> out(static_cast<size_t>(per_shard));
  for (int64_t i = 0; i < per_shard; ++i) out[i] = order[(shard + i * num_shards) % n];  // past the end: padding
  return out;
}

}  // namespace ember::data
