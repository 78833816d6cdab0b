#pragma once
// Storage: one allocation on one device, shared by every tensor that views it.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "backends/backend.h"
#include "base/device.h"

namespace ember {

class Backend;

class Storage {
 public:
  // Allocates `bytes` on `device` through its Backend (cached: no system call per tensor).
  Storage(size_t bytes, Device device);
  // Memory on `device` served by another backend: `allocator.allocate(bytes, allocator_index)`. Page-locked
  // host memory is CPU storage that the CUDA backend allocates (index kPinnedHostIndex).
  Storage(size_t bytes, Device device, Backend& allocator, int allocator_index);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return bytes_; }
  Device device() const { return device_; }
  bool pinned() const { return allocator_index_ == kPinnedHostIndex && device_.is_cpu(); }

  // Bumped by every in-place write; shared by all views. Autograd compares it against the value saved
  // with a tensor to detect a modification that would make a backward pass silently wrong.
  uint64_t version() const { return version_; }
  void bump_version() { ++version_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
  Device device_;
  // NOTE: the backend that allocated data_ frees it. Looking it up again in the destructor could throw
  // (a destructor that throws terminates) or reach a different backend after set_backend_override.
  Backend* backend_ = nullptr;
  int allocator_index_ = 0;
  uint64_t version_ = 0;
};

}  // namespace ember
