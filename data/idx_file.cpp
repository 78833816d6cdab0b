// Reading IDX files: the file, gzip, and the header checks. The dataset built on them is in idx.cpp.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "base/log.h"
#include "core/atomic_file.h"
#include "data/idx.h"

namespace ember::data {
namespace {

// A decompressed file larger than this is refused (a "zip bomb" or a corrupt size), not allocated.
constexpr size_t kMaxDecompressedBytes = size_t{4} << 30;

size_t elem_size(IdxType type) {
  switch (type) {
    case IdxType::u8:
    case IdxType::i8: return 1;
    case IdxType::i16: return 2;
    case IdxType::i32:
    case IdxType::f32: return 4;
    case IdxType::f64: return 8;
  }
  return 0;
}

bool valid_type(uint8_t code) {
  return code == 0x08 || code == 0x09 || code == 0x0B || code == 0x0C || code == 0x0D || code == 0x0E;
}

uint32_t read_be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

std::string dims_str(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

}  // namespace

std::string idx_type_name(IdxType type) {
  char code[8];
  std::snprintf(code, sizeof code, "0x%02X", static_cast<unsigned>(type));
  const char* name = "?";
  switch (type) {
    case IdxType::u8: name = "unsigned byte"; break;
    case IdxType::i8: name = "signed byte"; break;
    case IdxType::i16: name = "int16"; break;
    case IdxType::i32: name = "int32"; break;
    case IdxType::f32: name = "float32"; break;
    case IdxType::f64: name = "float64"; break;
  }
  return std::string(name) + " (" + code + ")";
}

int64_t IdxArray::integer_at(int64_t i) const {
  const uint8_t* p = data() + static_cast<size_t>(i) * elem_size(type);
  switch (type) {
    case IdxType::u8: return p[0];
    case IdxType::i8: return static_cast<int8_t>(p[0]);
    case IdxType::i16: return static_cast<int16_t>((uint16_t{p[0]} << 8) | p[1]);
    case IdxType::i32: return static_cast<int32_t>(read_be32(p));
    default: break;
  }
  detail::throw_error(name, ": holds ", idx_type_name(type), " values where integers were expected");
}

std::vector<uint8_t> gunzip(std::span<const uint8_t> compressed, const std::string& name) {
  // The gzip trailer's ISIZE (size mod 2^32) is a hint only: a corrupt file may claim anything.
  size_t hint = compressed.size() * 4;
  if (compressed.size() >= 18) {
    const uint8_t* t = compressed.data() + compressed.size() - 4;
    const size_t isize = uint32_t{t[0]} | (uint32_t{t[1]} << 8) | (uint32_t{t[2]} << 16) | (uint32_t{t[3]} << 24);
    hint = std::min(isize, compressed.size() * 1032 + 1024);  // deflate's maximum ratio is ~1032:1
  }
  std::vector<uint8_t> out(std::max<size_t>(hint, 1024));
  z_stream zs{};
  EMBER_CHECK(inflateInit2(&zs, 16 + MAX_WBITS) == Z_OK, name, ": zlib could not start inflating (out of memory?)");
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&zs, inflateEnd);
  zs.next_in = const_cast<Bytef*>(compressed.data());
  size_t in_left = compressed.size(), produced = 0;
  while (true) {
    if (produced == out.size()) {
      EMBER_CHECK(out.size() < kMaxDecompressedBytes, name, ": decompresses to more than ",
                  kMaxDecompressedBytes >> 30, " GiB; this is not an IDX file Ember can load");
      out.resize(std::min(out.size() * 2, kMaxDecompressedBytes));
    }
    // zlib counts in uInt (32 bits): feed and drain in chunks of at most 1 GiB.
    const uInt in_chunk = static_cast<uInt>(std::min<size_t>(in_left, size_t{1} << 30));
    const uInt out_chunk = static_cast<uInt>(std::min<size_t>(out.size() - produced, size_t{1} << 30));
    zs.avail_in = in_chunk;
    zs.next_out = out.data() + produced;
    zs.avail_out = out_chunk;
    const int rc = inflate(&zs, Z_NO_FLUSH);
    in_left -= in_chunk - zs.avail_in;
    produced += out_chunk - zs.avail_out;
    if (rc == Z_STREAM_END) {
      if (in_left == 0) break;
      // Concatenated gzip members are one file (RFC 1952); anything else after the end is garbage.
      const uint8_t* rest = zs.next_in;
      EMBER_CHECK(in_left >= 2 && rest[0] == 0x1f && rest[1] == 0x8b, name, ": ", in_left,
                  " unexpected bytes after the end of the gzip stream; the file is corrupt — download it again");
      EMBER_CHECK(inflateReset(&zs) == Z_OK, name, ": zlib could not restart for the next gzip member");
      continue;
    }
    EMBER_CHECK(rc == Z_OK || rc == Z_BUF_ERROR, name, ": corrupt gzip data (zlib: ",
                zs.msg ? zs.msg : "error " + std::to_string(rc), "); the file is damaged — download it again");
    EMBER_CHECK(!(rc == Z_BUF_ERROR && in_left == 0 && zs.avail_out > 0), name,
                ": the gzip stream is truncated (ends after ", compressed.size(),
                " compressed bytes); the file is incomplete — download it again");
  }
  out.resize(produced);
  return out;
}

MappedFile::MappedFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  EMBER_CHECK(fd >= 0, path, ": cannot open (", std::strerror(errno), ")");
  struct stat st {};
  const bool ok = ::fstat(fd, &st) == 0;
  size_ = ok ? static_cast<size_t>(st.st_size) : 0;
  void* p = ok && size_ > 0 ? ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
  const int error = errno;
  ::close(fd);
  EMBER_CHECK(size_ == 0 || p != MAP_FAILED, path, ": cannot map (", std::strerror(error), ")");
  if (size_ > 0) data_ = static_cast<const uint8_t*>(p);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

std::vector<uint8_t> read_file_maybe_gzip(const std::string& path) {
  // Mapped, not copied: a compressed file is inflated straight from the page cache.
  const MappedFile file(path);
  const std::span<const uint8_t> bytes = file.bytes();
  if (bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) return gunzip(bytes, path);
  return {bytes.begin(), bytes.end()};
}

namespace {

// The header of an IDX file of `size` bytes starting at `bytes`: everything but the values. Throws as
// parse_idx describes.
IdxArray parse_idx_header(const uint8_t* bytes, size_t size, const std::string& name) {
  EMBER_CHECK(size >= 4, name, ": ", size, " bytes is too short for an IDX file (the header alone is at least 8); "
              "the file is empty or truncated");
  EMBER_CHECK(bytes[0] == 0 && bytes[1] == 0, name, ": not an IDX file (it starts with bytes ",
              int{bytes[0]}, " ", int{bytes[1]}, "; an IDX file starts with two zero bytes)");
  EMBER_CHECK(valid_type(bytes[2]), name, ": unknown IDX element type code ", int{bytes[2]},
              " (expected 0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32, 0x0D f32 or 0x0E f64)");
  IdxArray a;
  a.name = name;
  a.type = static_cast<IdxType>(bytes[2]);
  const int ndims = bytes[3];
  EMBER_CHECK(ndims >= 1 && ndims <= kMaxDims, name, ": the header declares ", ndims,
              " dims; an IDX file Ember reads has 1 to ", kMaxDims);
  const size_t header = 4 + 4 * static_cast<size_t>(ndims);
  EMBER_CHECK(size >= header, name, ": truncated header: ", ndims, " dims need ", header, " bytes, the file has ", size);
  const size_t esize = elem_size(a.type);
  // The product of the dims, saturated at UINT64_MAX: a hostile header must not overflow it.
  uint64_t numel = 1;
  bool saturated = false;
  for (int d = 0; d < ndims; ++d) {
    const uint32_t dim = read_be32(bytes + 4 + 4 * d);
    a.dims.push_back(dim);
    saturated = saturated || __builtin_mul_overflow(numel, uint64_t{dim}, &numel);
  }
  if (std::find(a.dims.begin(), a.dims.end(), 0) != a.dims.end()) {
    // No values, but the other dims still become a tensor's shape, whose strides multiply them: they must
    // fit in int64 (found by fuzz_idx: [49278, 16712456, 0, 4294836221, 4294901244] overflowed the strides).
    uint64_t others = 1;
    bool overflow = false;
    for (const int64_t dim : a.dims)
      overflow = overflow || (dim != 0 && __builtin_mul_overflow(others, static_cast<uint64_t>(dim), &others));
    EMBER_CHECK(!overflow && others <= static_cast<uint64_t>(INT64_MAX), name, ": dims ", dims_str(a.dims),
                ": the nonzero dims multiply to more than 2^63 - 1, which no tensor shape can hold; the header is "
                "wrong");
    numel = 0, saturated = false;
  }
  const uint64_t available = (size - header) / esize;  // whole elements present
  EMBER_CHECK(!saturated && numel <= available, name, ": truncated: dims ", dims_str(a.dims), " of ",
              idx_type_name(a.type), " need ",
              saturated || numel > (uint64_t{1} << 60) ? std::string("more") : std::to_string(header + numel * esize),
              " bytes, the file has ", size, "; the file is incomplete or its header is wrong");
  const size_t expected = header + numel * esize;
  EMBER_CHECK(size == expected, name, ": ", size - expected, " unexpected bytes after the data (dims ",
              dims_str(a.dims), " of ", idx_type_name(a.type), " take ", expected,
              " bytes); the header does not match the data");
  a.numel = static_cast<int64_t>(numel);
  a.data_offset = header;
  return a;
}

// Decompressed files at least this large are cached (smaller ones inflate in well under a millisecond).
constexpr size_t kCacheMinBytes = size_t{1} << 20;

uint64_t fnv1a(const std::string& text) {
  uint64_t h = 14695981039346656037ull;
  for (const char c : text) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return h;
}

std::string hex(uint64_t v) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
  return text;
}

// "<stem>.<hash of the absolute path>.", the prefix of every cache entry of `path` ("" when it cannot be
// stat'ed), and in `entry` the whole name, which adds a hash of the file's size and modification time.
std::string cache_prefix(const std::string& path, std::string& entry) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  std::string stem = std::filesystem::path(path).filename().string();
  if (stem.size() > 3 && stem.ends_with(".gz")) stem.resize(stem.size() - 3);
  const std::string prefix = stem + "." + hex(fnv1a(ec ? path : absolute.string())) + ".";
  entry = prefix + hex(fnv1a(std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
                             std::to_string(st.st_mtim.tv_nsec))) + ".idx";
  return prefix;
}

// Writes `bytes` as the cache entry `entry` under `dir`, removing the older entries of the same source.
void write_cache(const std::filesystem::path& dir, const std::string& prefix, const std::string& entry,
                 std::span<const uint8_t> bytes) {
  std::filesystem::create_directories(dir);
  for (const auto& old : std::filesystem::directory_iterator(dir)) {
    const std::string name = old.path().filename().string();
    if (name.starts_with(prefix) && name.ends_with(".idx") && name != entry) std::filesystem::remove(old.path());
  }
  write_file_atomic((dir / entry).string(),
                    std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

}  // namespace

IdxArray parse_idx(std::vector<uint8_t> bytes, const std::string& name) {
  IdxArray a = parse_idx_header(bytes.data(), bytes.size(), name);
  a.bytes = std::move(bytes);
  return a;
}

std::string idx_cache_dir() {
  if (const char* dir = std::getenv("EMBER_CACHE_DIR"))
    return std::string(dir).empty() || std::string(dir) == "off" ? "" : std::string(dir) + "/idx";
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0')
    return std::string(xdg) + "/ember/idx";
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0')
    return std::string(home) + "/.cache/ember/idx";
  return "";
}

IdxArray load_idx(const std::string& path) {
  const std::string dir = idx_cache_dir();
  std::string entry;
  const std::string prefix = dir.empty() ? "" : cache_prefix(path, entry);
  if (!prefix.empty()) {
    const std::filesystem::path cached = std::filesystem::path(dir) / entry;
    std::error_code ec;
    if (std::filesystem::exists(cached, ec)) {
      try {
        auto file = std::make_shared<const MappedFile>(cached.string());
        IdxArray a = parse_idx_header(file->bytes().data(), file->bytes().size(), path);
        a.mapped = std::move(file);
        return a;
      } catch (const Error& e) {
        logger().debug("load_idx: the cached copy of {} is unusable ({}); inflating the file again", path, e.what());
      }
    }
  }
  IdxArray a = parse_idx(read_file_maybe_gzip(path), path);
  const bool compressed = !prefix.empty() && path.ends_with(".gz");
  if (compressed && a.bytes.size() >= kCacheMinBytes) {
    try {
      write_cache(dir, prefix, entry, a.bytes);
      logger().debug("load_idx: cached {} decompressed as {}/{}", path, dir, entry);
    } catch (const std::exception& e) {  // a read-only or full disk: the next run inflates again
      logger().debug("load_idx: could not cache {} in {} ({})", path, dir, e.what());
    }
  }
  return a;
}

}  // namespace ember::data
