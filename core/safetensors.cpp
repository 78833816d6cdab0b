#include "core/safetensors.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/raw.h"

namespace ember::safetensors {
namespace {

constexpr uint64_t kMaxHeader = 100'000'000;  // as Python's safetensors

const char* file_dtype(DType t) {
  switch (t) {
    case DType::b8: return "BOOL";
    case DType::i64: return "I64";
    case DType::f32: return "F32";
    case DType::f64: return "F64";
  }
  return "?";
}

float half_to_float(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      uint32_t m = mant;
      do {
        ++e;
        m <<= 1;
      } while ((m & 0x400u) == 0);
      bits = sign | ((127 - 15 - e) << 23) | ((m & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float bf16_to_float(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

[[noreturn]] void fail(const std::string& name, const std::string& what) {
  detail::throw_error("safetensors '", name, "': ", what);
}

}  // namespace

const Tensor* Contents::find(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return &t;
  return nullptr;
}

void save(const std::string& path, const NamedTensors& tensors,
          const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<Tensor> host;
  host.reserve(tensors.size());
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    EMBER_CHECK(name != "__metadata__" && !name.empty(), "safetensors: invalid tensor name '", name, "'");
    EMBER_CHECK(!header.contains(name), "safetensors: tensor name '", name, "' appears twice");
    host.push_back(raw::contiguous(raw::to(t, kCPU)));
    const uint64_t bytes = static_cast<uint64_t>(t.numel()) * t.element_size();
    header[name] = {{"dtype", file_dtype(t.dtype())}, {"shape", t.shape().vec()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');  // align the data to 8 bytes, as the Python writer does
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(static_cast<uint64_t>(json.size()) >> (8 * i));

  std::vector<std::string_view> parts{std::string_view(reinterpret_cast<const char*>(len), 8), json};
  for (const Tensor& t : host)  // x86-64 and aarch64 are little-endian, as the format
    parts.emplace_back(static_cast<const char*>(t.data_ptr()), static_cast<size_t>(t.numel()) * t.element_size());
  write_file_atomic(path, parts);
}

Contents parse(const char* data, size_t size, const std::string& name) {
  if (size < 8) fail(name, "the file has " + std::to_string(size) + " bytes, less than the 8-byte header length; it is truncated or not a safetensors file");
  uint64_t header_len = 0;
  for (int i = 0; i < 8; ++i) header_len |= static_cast<uint64_t>(static_cast<uint8_t>(data[i])) << (8 * i);
  if (header_len > kMaxHeader || header_len > size - 8)
    fail(name, "the header length " + std::to_string(header_len) + " exceeds the file size (" + std::to_string(size) +
                   " bytes); the file is truncated or not a safetensors file");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(data + 8, data + 8 + header_len);
  } catch (const nlohmann::json::exception& e) {
    fail(name, std::string("the header is not valid JSON (") + e.what() + ")");
  }
  if (!header.is_object()) fail(name, "the header is not a JSON object");
  const char* buffer = data + 8 + header_len;
  const uint64_t buffer_size = size - 8 - header_len;

  Contents out;
  struct Entry {
    std::string name;
    std::string dtype;
    Shape shape;
    uint64_t begin, end;
  };
  std::vector<Entry> entries;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) fail(name, "__metadata__ must be an object of strings");
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) fail(name, "__metadata__ value of '" + mk + "' is not a string");
        out.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    const std::string where = "tensor '" + key + "'";
    if (!value.is_object() || !value.contains("dtype") || !value.contains("shape") || !value.contains("data_offsets"))
      fail(name, where + " needs dtype, shape and data_offsets");
    const auto& dt = value["dtype"];
    const auto& sh = value["shape"];
    const auto& off = value["data_offsets"];
    if (!dt.is_string()) fail(name, where + ": dtype is not a string");
    if (!sh.is_array() || sh.size() > static_cast<size_t>(kMaxDims))
      fail(name, where + ": shape must be an array of at most " + std::to_string(kMaxDims) + " sizes");
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      fail(name, where + ": data_offsets must be two non-negative integers");
    Entry e{key, dt.get<std::string>(), {}, off[0].get<uint64_t>(), off[1].get<uint64_t>()};
    uint64_t numel = 1;
    for (const auto& s : sh) {
      if (!s.is_number_unsigned() || s.get<uint64_t>() > (uint64_t{1} << 40))
        fail(name, where + ": shape entries must be non-negative integers");
      const uint64_t v = s.get<uint64_t>();
      e.shape.push_back(static_cast<int64_t>(v));
      if (v != 0 && numel > (uint64_t{1} << 50) / v) fail(name, where + ": shape is too large");
      numel *= v;
    }
    size_t item;
    if (e.dtype == "F32") item = 4;
    else if (e.dtype == "F64" || e.dtype == "I64") item = 8;
    else if (e.dtype == "BOOL") item = 1;
    else if (e.dtype == "F16" || e.dtype == "BF16") item = 2;
    else fail(name, where + ": dtype " + e.dtype + " is not supported (F32, F64, I64, BOOL, F16, BF16)");
    if (e.begin > e.end || e.end > buffer_size)
      fail(name, where + ": data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                     ") lie outside the data (" + std::to_string(buffer_size) + " bytes); the file is truncated or corrupt");
    if (e.end - e.begin != numel * item)
      fail(name, where + ": data_offsets span " + std::to_string(e.end - e.begin) + " bytes but " + e.dtype + " " +
                     e.shape.str() + " needs " + std::to_string(numel * item));
    entries.push_back(std::move(e));
  }
  // By start, then end: an empty tensor may share its start with the next one (safetensors.torch writes that).
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  uint64_t expected = 0;
  for (const Entry& e : entries) {
    if (e.begin != expected)
      fail(name, "tensor '" + e.name + "' starts at byte " + std::to_string(e.begin) + ", expected " +
                     std::to_string(expected) + " (tensors overlap or leave a gap)");
    expected = e.end;
  }
  if (expected != buffer_size)
    fail(name, "the data section has " + std::to_string(buffer_size) + " bytes but the tensors cover " +
                   std::to_string(expected) + "; the file is corrupt");

  for (const Entry& e : entries) {
    const char* src = buffer + e.begin;
    Tensor t;
    if (e.dtype == "F16" || e.dtype == "BF16") {
      t = raw::empty(e.shape, DType::f32, kCPU);
      float* dst = static_cast<float*>(t.data_ptr());
      for (int64_t i = 0; i < t.numel(); ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        dst[i] = e.dtype == "F16" ? half_to_float(h) : bf16_to_float(h);
      }
    } else {
      const DType dt = e.dtype == "F32" ? DType::f32 : e.dtype == "F64" ? DType::f64 : e.dtype == "I64" ? DType::i64 : DType::b8;
      t = raw::empty(e.shape, dt, kCPU);
      if (e.end > e.begin) std::memcpy(t.data_ptr(), src, e.end - e.begin);
      if (dt == DType::b8) {  // normalise: any nonzero byte is true
        auto* p = static_cast<uint8_t*>(t.data_ptr());
        for (int64_t i = 0; i < t.numel(); ++i) p[i] = p[i] != 0;
      }
    }
    out.tensors.emplace_back(e.name, std::move(t));
  }
  return out;
}

Contents load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EMBER_CHECK(in.good(), "safetensors: ", system_error_message("cannot open", path));
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EMBER_CHECK(!in.bad(), "safetensors: ", system_error_message("cannot read", path));
  return parse(bytes.data(), bytes.size(), path);
}

}  // namespace ember::safetensors
