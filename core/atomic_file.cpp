#include "core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

#include "base/error.h"

namespace ember {
namespace {

void write_all(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    EMBER_CHECK(n > 0, system_error_message("cannot write", path), " (disk full?)");
    data.remove_prefix(static_cast<size_t>(n));
  }
}

// Makes a rename in `path`'s directory durable. NOTE: best effort — the new file is already in place
// when this runs, and some filesystems refuse fsync on a directory (EINVAL); failing the write then
// would report a file that exists as not written.
void sync_directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

std::string atomic_temporary_path(const std::string& path) { return path + ".tmp." + std::to_string(::getpid()); }

std::optional<long long> atomic_temporary_owner(std::string_view name) {
  const size_t at = name.rfind(".tmp");
  if (at == std::string_view::npos || at == 0) return std::nullopt;
  size_t digits = at + 4;
  if (digits < name.size() && name[digits] == '.') ++digits;  // ".tmp.<pid>"; older versions wrote ".tmp<pid>"
  long long pid = 0;
  const auto r = std::from_chars(name.data() + digits, name.data() + name.size(), pid);
  if (r.ec != std::errc() || r.ptr != name.data() + name.size() || pid <= 0) return std::nullopt;
  return pid;
}

void write_file_atomic(const std::string& path, std::initializer_list<std::string_view> parts) {
  write_file_atomic(path, std::span<const std::string_view>(parts.begin(), parts.size()));
}

void write_file_atomic(const std::string& path, std::span<const std::string_view> parts) {
  const std::string tmp = atomic_temporary_path(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  EMBER_CHECK(fd >= 0, system_error_message("cannot create", tmp), "; check that the directory exists and is writable");
  try {
    for (std::string_view part : parts) write_all(fd, part, tmp);
    EMBER_CHECK(::fsync(fd) == 0, system_error_message("cannot flush", tmp), " to disk");
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  // NOTE: close can report a write error that fsync did not (NFS); the file is not trusted then. (EINTR
  // is not one: Linux has released the descriptor and the data is already flushed.)
  if (::close(fd) != 0 && errno != EINTR) {
    const std::string msg = system_error_message("cannot write", tmp);
    ::unlink(tmp.c_str());
    detail::throw_error(msg);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string msg = system_error_message("cannot rename '" + tmp + "' to", path);
    ::unlink(tmp.c_str());
    detail::throw_error(msg);
  }
  sync_directory_of(path);
}

}  // namespace ember
