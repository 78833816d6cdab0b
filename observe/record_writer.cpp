#include "observe/record_writer.h"

#include <cerrno>
#include <cstring>

#include "base/error.h"
#include "observe/crc32c.h"

namespace ember::observe {
namespace {
void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
}  // namespace

std::string frame_record(std::string_view data) {
  std::string out;
  out.reserve(data.size() + 16);
  put_le(out, data.size(), 8);
  put_le(out, mask_crc(crc32c(out.data(), 8)), 4);
  out.append(data);
  put_le(out, mask_crc(crc32c(data)), 4);
  return out;
}

RecordWriter::RecordWriter(const std::string& path) : path_(path), file_(std::fopen(path.c_str(), "wb")) {
  EMBER_CHECK(file_ != nullptr, "cannot create the TensorBoard events file '", path, "' (", std::strerror(errno),
              "): check that its directory exists and is writable");
}

RecordWriter::~RecordWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void RecordWriter::write(std::string_view data) {
  const std::string record = frame_record(data);
  EMBER_CHECK(std::fwrite(record.data(), 1, record.size(), file_) == record.size(),
              "cannot write to the TensorBoard events file '", path_, "' (", std::strerror(errno),
              "): disk full or no permission?");
}

void RecordWriter::flush() {
  EMBER_CHECK(std::fflush(file_) == 0, "cannot write to the TensorBoard events file '", path_, "' (",
              std::strerror(errno), "): disk full or no permission?");
}

}  // namespace ember::observe
