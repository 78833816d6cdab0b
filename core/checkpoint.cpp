#include "core/checkpoint.h"

#include <charconv>

#include "core/safetensors.h"

namespace ember {

void Checkpoint::put(const std::string& prefix, const NamedTensors& tensors) {
  for (const auto& [name, t] : tensors) {
    const std::string key = prefix + name;
    for (const auto& [existing, unused] : tensors_)
      EMBER_CHECK(existing != key, "checkpoint: '", key, "' is added twice; give each part its own prefix");
    tensors_.emplace_back(key, t);
  }
}

NamedTensors Checkpoint::take(const std::string& prefix) const {
  NamedTensors out;
  for (const auto& [name, t] : tensors_)
    if (name.rfind(prefix, 0) == 0) out.emplace_back(name.substr(prefix.size()), t);
  return out;
}

const std::string& Checkpoint::get(const std::string& key) const {
  const auto it = metadata_.find(key);
  EMBER_CHECK(it != metadata_.end(), "checkpoint '", source_, "': no '", key,
              "' entry; it was written by another program or an older version");
  return it->second;
}

void Checkpoint::put_generator(const std::string& name, const Generator& gen) {
  const Generator::State s = gen.state();
  set("rng." + name, std::to_string(s.seed) + " " + std::to_string(s.offset));
}

void Checkpoint::restore_generator(const std::string& name, Generator& gen) const {
  const std::string& text = get("rng." + name);
  Generator::State s;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, s.seed);
  bool ok = ec == std::errc() && p != end && *p == ' ';
  if (ok) {
    auto [q, ec2] = std::from_chars(p + 1, end, s.offset);
    ok = ec2 == std::errc() && q == end;
  }
  EMBER_CHECK(ok, "checkpoint '", source_, "': 'rng.", name, "' is '", text, "', expected '<seed> <offset>'");
  gen.set_state(s);
}

void Checkpoint::save(const std::string& path) const { safetensors::save(path, tensors_, metadata_); }

Checkpoint Checkpoint::load(const std::string& path) {
  safetensors::Contents contents = safetensors::load(path);
  Checkpoint c;
  c.tensors_ = std::move(contents.tensors);
  c.metadata_ = std::move(contents.metadata);
  c.source_ = path;
  return c;
}

}  // namespace ember
