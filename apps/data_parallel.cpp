#include "apps/data_parallel.h"

#include "apps/config.h"
#include "base/log.h"

namespace ember::app {

DataParallel::DataParallel(Session& s) : model_(s.model) {
  distributed::init();
  rank_ = distributed::rank();
  world_ = distributed::world_size();
  if (world_ > 1) ddp_ = std::make_shared<distributed::DistributedDataParallel>(s.model);
}

std::optional<distributed::DistributedDataParallel::NoSync> DataParallel::no_sync() {
  if (!ddp_) return std::nullopt;
  return ddp_->no_sync();
}

bool DataParallel::any(bool flag) const {
  if (world_ == 1) return flag;
  return distributed::world().all_reduce(std::vector<double>{flag ? 1.0 : 0.0}, distributed::ReduceOp::max)[0] > 0;
}

std::vector<double> DataParallel::sum(std::vector<double> values) const {
  if (world_ == 1) return values;
  return distributed::world().all_reduce(std::move(values), distributed::ReduceOp::sum);
}

double DataParallel::from_root(double value) const {
  if (world_ == 1) return value;
  const Tensor t = from_vector(std::vector<double>{value}, {1}, {.dtype = DType::f64});
  distributed::world().broadcast(t, 0);
  return t.item<double>();
}

void DataParallel::check_same_config(const std::string& hash) const {
  if (world_ == 1) return;
  const std::vector<std::string> hashes = distributed::world().all_gather(hash);
  std::string differing;
  for (int r = 1; r < world_; ++r)
    if (hashes[r] != hashes[0]) differing += (differing.empty() ? "" : ", ") + std::to_string(r) + " (" + hashes[r] + ")";
  if (!differing.empty())
    throw ConfigError("the processes were started with different configs: rank 0's hash is " + hashes[0] +
                      ", rank(s) " + differing + " differ; give every process the same --config and --set "
                      "(a launcher runs one command line on every rank: check files that differ between machines)");
}

std::string DataParallel::describe(int64_t batch_size) const {
  if (world_ == 1) return "";
  return std::to_string(world_) + " processes × batch " + std::to_string(batch_size) + " = global batch " +
         std::to_string(world_ * batch_size) + " (" + distributed::init().launcher + " launcher; " +
         distributed::describe_backends() + ")";
}

}  // namespace ember::app
