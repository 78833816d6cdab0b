#pragma once
// The one way Ember replaces a file: checkpoints, safetensors weights, the run directory's config.yaml and
// metrics files all go through write_file_atomic, so a crash, a kill -9 or a full disk never leaves a
// half-written file under the real name — readers see the old file or the new one, nothing in between.
//
//   write_file_atomic("run/config.yaml", text);
//   write_file_atomic(path, {header, json, data});   // pieces written in order, never concatenated
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace ember {

// The temporary file write_file_atomic(path, ...) writes first: "<path>.tmp.<pid>", in the same directory
// (a rename is atomic only within one filesystem).
std::string atomic_temporary_path(const std::string& path);

// The process id in the name of such a temporary file ("metrics.csv.tmp.4242" → 4242), or nullopt for any
// other name. Also accepts "<name>.tmp<pid>", the naming of Ember versions before this one, so that their
// leftovers are recognised too.
std::optional<long long> atomic_temporary_owner(std::string_view filename);

// Replaces `path` with the concatenation of `parts`: writes them to atomic_temporary_path(path), fsyncs it,
// renames it over `path` and fsyncs the directory so that the rename survives a power loss too.
// Throws ember::Error naming the file, the step that failed and the system's reason ("No space left on
// device"); the temporary file is then removed and the previous file at `path`, if any, is untouched.
void write_file_atomic(const std::string& path, std::span<const std::string_view> parts);
void write_file_atomic(const std::string& path, std::initializer_list<std::string_view> parts);
inline void write_file_atomic(const std::string& path, std::string_view text) {
  write_file_atomic(path, std::span<const std::string_view>(&text, 1));
}

}  // namespace ember
