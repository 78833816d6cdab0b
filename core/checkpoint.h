#pragma once
// Checkpoint: everything a resumed run needs, in one safetensors file (so PyTorch reads the weights too).
// Layer-neutral: each part contributes named tensors under a prefix and strings in the metadata, e.g.
//
//   Checkpoint ckpt;
//   ckpt.put("model.", model.state_dict());
//   ckpt.put("optimizer.", optimizer.state_dict());
//   ckpt.put_generator("global", default_generator());
//   ckpt.set("loader", loader.state().str());
//   ckpt.set("epoch", std::to_string(epoch));
//   ckpt.save("run/checkpoint-000100.safetensors");       // atomic: temporary file, fsync, rename
//
//   Checkpoint back = Checkpoint::load(path);
//   model.load_state_dict(back.take("model."));           // ...and so on for each part
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/generator.h"
#include "core/named_tensors.h"
#include "core/tensor.h"

namespace ember {

class Checkpoint {
 public:
  // Adds `tensors` with `prefix` prepended to each name. Throws on a name already present.
  void put(const std::string& prefix, const NamedTensors& tensors);
  // The tensors whose names start with `prefix`, with the prefix removed, in file order (CPU tensors).
  NamedTensors take(const std::string& prefix) const;

  // String metadata (safetensors' __metadata__). get() throws naming the key and the file when absent.
  void set(const std::string& key, const std::string& value) { metadata_[key] = value; }
  const std::string& get(const std::string& key) const;
  bool has(const std::string& key) const { return metadata_.count(key) != 0; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  // A Generator's seed and offset, under "rng.<name>".
  void put_generator(const std::string& name, const Generator& gen);
  void restore_generator(const std::string& name, Generator& gen) const;

  void save(const std::string& path) const;
  // Reads and validates a file (every problem an ember::Error naming it).
  static Checkpoint load(const std::string& path);
  const std::string& source() const { return source_; }  // the path it was loaded from

 private:
  NamedTensors tensors_;
  std::map<std::string, std::string> metadata_;
  std::string source_ = "<checkpoint being built>";
};

}  // namespace ember
