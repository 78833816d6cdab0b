#pragma once
// safetensors files: an 8-byte little-endian header length, a JSON header
//   {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ..., "__metadata__": {...}}
// and the raw little-endian data, so PyTorch (safetensors.torch.load_file) and Python's safetensors read
// what Ember writes, and Ember reads theirs.
//
// dtypes: F32, F64, I64 and BOOL round-trip; BF16 and F16 files load (converted to f32, since Ember has no
// 16-bit dtypes yet). Writing is atomic (core/atomic_file.h): a temporary file in the same directory,
// fsync'd, then renamed over the target — a crash never leaves a half-written file under the real name.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/named_tensors.h"
#include "core/tensor.h"

namespace ember::safetensors {

struct Contents {
  NamedTensors tensors;                         // in file order (sorted by data offset); CPU
  std::map<std::string, std::string> metadata;  // the "__metadata__" object
  const Tensor* find(const std::string& name) const;
};

// Writes `tensors` (any device, any layout: they are made contiguous on the host) and `metadata`.
// Throws ember::Error naming the path and the system's reason when the file cannot be written; the
// previous file at `path`, if any, is then left untouched.
void save(const std::string& path, const NamedTensors& tensors,
          const std::map<std::string, std::string>& metadata = {});

// Reads and validates a file: header length, JSON syntax, each entry's dtype/shape/offsets, offsets that
// tile the data exactly. Every problem is an ember::Error naming the file and what is wrong.
Contents load(const std::string& path);
// The same from bytes in memory (`name` is used in messages); what load() and the fuzzer call.
Contents parse(const char* data, size_t size, const std::string& name);

}  // namespace ember::safetensors
