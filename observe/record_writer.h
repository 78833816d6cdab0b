#pragma once
// TFRecord framing, the container of TensorBoard's events files. Each record is
//   uint64 length (little-endian) | uint32 masked CRC-32C of those 8 bytes | data | uint32 masked CRC-32C of data
// (observe/crc32c.h). Records are buffered; flush() hands them to the operating system.
#include <cstdio>
#include <string>
#include <string_view>

#include "base/non_copyable.h"

namespace ember::observe {

// The 12 + n + 4 bytes of one record holding `data`.
std::string frame_record(std::string_view data);

class RecordWriter : NonCopyable {
 public:
  // Creates (truncates) `path`. Throws ember::Error naming the file and the reason when it cannot.
  explicit RecordWriter(const std::string& path);
  ~RecordWriter();

  void write(std::string_view data);  // throws ember::Error when the write fails (disk full...)
  void flush();                       // likewise
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace ember::observe
