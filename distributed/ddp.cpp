#include "distributed/ddp.h"

#include <map>

#include "autograd/grad_mode.h"
#include "base/error.h"

namespace ember::distributed {

// A flat buffer of gradients that are all-reduced together (PyTorch's Reducer bucket).
struct DistributedDataParallel::Bucket {
  Tensor flat;                   // [sum of the parameters' numel], the parameters' dtype and device
  std::vector<size_t> params;    // indices into params_
  std::vector<int64_t> offsets;  // of each parameter's gradient in flat
  std::vector<bool> ready;       // in the current backward
  size_t pending = 0;            // parameters not ready yet
  std::unique_ptr<Work> work;    // the all-reduce in flight
};

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<nn::Module> module, DdpOptions options,
                                                 ProcessGroup* group)
    : module_(std::move(module)), group_(group != nullptr ? group : &world()), options_(options) {
  EMBER_CHECK(module_ != nullptr, "DistributedDataParallel: the module is null");
  EMBER_CHECK(options_.bucket_cap_mb > 0, "DistributedDataParallel: bucket_cap_mb is ", options_.bucket_cap_mb,
              "; it must be > 0");
  register_module("module", module_);
  for (const Tensor& p : module_->parameters())
    if (p.requires_grad()) params_.push_back(p);
  if (group_->size() > 1) {
    NoGradGuard no_grad;  // PyTorch's _sync_module_states: rank 0's parameters and buffers everywhere
    for (const Tensor& p : module_->parameters()) group_->broadcast(p, 0);
    for (const Tensor& b : module_->buffers()) group_->broadcast(b, 0);
  }
  build_buckets(options_.bucket_cap_mb * 1024 * 1024);
  for (size_t i = 0; i < params_.size(); ++i)
    hooks_.push_back(autograd::add_grad_ready_hook(params_[i], [this, i](const Tensor&) { on_grad_ready(i); }));
}

DistributedDataParallel::~DistributedDataParallel() {
  hooks_.clear();
  for (auto& b : buckets_)
    if (b->work) b->work->wait();  // the transport may still write into the buffer
}

// Reverse registration order (the output layer's gradients arrive first), a bucket per dtype and device
// closed once it holds cap_bytes or more.
void DistributedDataParallel::build_buckets(double cap_bytes) {
  slot_.assign(params_.size(), {0, 0});
  std::map<std::pair<int, std::string>, size_t> open;  // (dtype, device) → its open bucket
  std::vector<int64_t> sizes;                           // numel per bucket
  for (size_t k = params_.size(); k-- > 0;) {
    const Tensor& p = params_[k];
    const auto key = std::make_pair(static_cast<int>(p.dtype()), p.device().str());
    auto it = open.find(key);
    if (it == open.end()) {
      it = open.emplace(key, buckets_.size()).first;
      buckets_.push_back(std::make_unique<Bucket>());
      sizes.push_back(0);
    }
    Bucket& b = *buckets_[it->second];
    slot_[k] = {it->second, b.params.size()};
    b.params.push_back(k);
    b.offsets.push_back(sizes[it->second]);
    sizes[it->second] += p.numel();
    if (static_cast<double>(sizes[it->second]) * static_cast<double>(p.element_size()) >= cap_bytes) open.erase(it);
  }
  for (size_t i = 0; i < buckets_.size(); ++i) {
    Bucket& b = *buckets_[i];
    const Tensor& first = params_[b.params[0]];
    b.flat = zeros({sizes[i]}, {.dtype = first.dtype(), .device = first.device()});
    b.ready.assign(b.params.size(), false);
  }
}

std::vector<std::vector<size_t>> DistributedDataParallel::bucket_layout() const {
  std::vector<std::vector<size_t>> out;
  for (const auto& b : buckets_) out.push_back(b->params);
  return out;
}

Tensor DistributedDataParallel::forward(const Tensor& x) {
  if (group_->size() > 1 && options_.broadcast_buffers) {
    NoGradGuard no_grad;
    for (const Tensor& b : module_->buffers()) group_->broadcast(b, 0);
  }
  return module_->forward(x);
}

// A parameter's gradient for this backward is complete: into its bucket; a complete bucket starts its
// all-reduce (in bucket order, so every rank issues the same collectives in the same order).
void DistributedDataParallel::on_grad_ready(size_t param) {
  if (!sync_) return;
  if (!in_backward_) {
    in_backward_ = true;
    next_launch_ = 0;
    for (auto& b : buckets_) {
      b->ready.assign(b->params.size(), false);
      b->pending = b->params.size();
    }
    autograd::queue_callback([this] { finish_backward(); });
  }
  const auto [bucket, index] = slot_[param];
  Bucket& b = *buckets_[bucket];
  if (b.ready[index]) return;
  const Tensor& p = params_[param];
  const Tensor grad = p.grad();
  Tensor dst = b.flat.narrow(0, b.offsets[index], p.numel());
  if (grad.defined()) dst.copy_(grad.reshape({p.numel()}));
  else dst.zero_();
  b.ready[index] = true;
  --b.pending;
  launch_ready_buckets();
  for (size_t i = 0; i < next_launch_; ++i) buckets_[i]->work->test();  // lets MPI move the earlier ones on
}

// A bucket with others after it starts without waiting, overlapping the rest of backward; the last one has
// nothing left to overlap with and is reduced on the spot, by the transport's blocking collective (MPI's
// MPI_Allreduce: 2.5x faster than its non-blocking one for a 2 MB bucket of two ranks, docs/benchmarks.md).
void DistributedDataParallel::launch_ready_buckets() {
  while (next_launch_ < buckets_.size() && buckets_[next_launch_]->pending == 0) {
    Bucket& b = *buckets_[next_launch_++];
    if (next_launch_ < buckets_.size()) {
      b.work = group_->all_reduce_async(b.flat, ReduceOp::avg);
    } else {
      group_->all_reduce(b.flat, ReduceOp::avg);
      b.work = std::make_unique<DoneWork>();
    }
    ++buckets_reduced_;
  }
}

// The end of a synchronised backward: parameters it did not reach count as zero, every bucket is started
// and finished, and the averages go back into .grad.
void DistributedDataParallel::finish_backward() {
  in_backward_ = false;
  for (size_t i = next_launch_; i < buckets_.size(); ++i) {
    Bucket& b = *buckets_[i];
    for (size_t j = 0; j < b.params.size(); ++j) {
      if (b.ready[j]) continue;
      Tensor slot = b.flat.narrow(0, b.offsets[j], params_[b.params[j]].numel());
      slot.zero_();
      b.ready[j] = true;
    }
    b.pending = 0;
  }
  launch_ready_buckets();
  for (auto& b : buckets_) {
    b->work->wait();
    b->work.reset();
    for (size_t j = 0; j < b->params.size(); ++j) {
      Tensor& p = params_[b->params[j]];
      const Tensor mean = b->flat.narrow(0, b->offsets[j], p.numel()).view(p.shape());
      Tensor grad = p.grad();
      if (grad.defined() && grad.is_contiguous()) grad.copy_(mean);
      else p.set_grad(mean.clone());
    }
  }
}

}  // namespace ember::distributed
