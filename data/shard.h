#pragma once
// The split of an epoch's order among the processes of a data-parallel job (PyTorch's DistributedSampler,
// drop_last=False): the order is padded to a multiple of num_shards by repeating its first indices, then
// shard s takes positions s, s + num_shards, s + 2·num_shards, ... So every shard has the same number of
// examples (ceil(N / num_shards)), the shards together cover the epoch, and batch b of every shard together
// is batch b of one process with num_shards × the batch size (the same examples, interleaved).
// The order is the same on every process (the same seed gives the same permutation), so nothing is sent.
#include <cstdint>
#include <vector>

namespace ember::data {

// Throws ember::Error unless 0 <= shard < num_shards and the order is not empty.
std::vector<int64_t> shard_order(const std::vector<int64_t>& order, int64_t shard, int64_t num_shards);
// Examples per shard of an epoch of `examples`: ceil(examples / num_shards).
int64_t shard_size(int64_t examples, int64_t num_shards);

}  // namespace ember::data
