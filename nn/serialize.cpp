#include "nn/serialize.h"

#include "core/safetensors.h"

namespace ember {

void save(const nn::Module& module, const std::string& path, const std::map<std::string, std::string>& metadata) {
  safetensors::save(path, module.state_dict(), metadata);
}

void load(nn::Module& module, const std::string& path, bool strict) {
  const safetensors::Contents file = safetensors::load(path);
  try {
    module.load_state_dict(file.tensors, strict);
  } catch (const Error& e) {
    detail::throw_error("load '", path, "': ", e.what());
  }
}

}  // namespace ember
