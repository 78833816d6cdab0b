#pragma once
// A base for RAII classes that own something a copy must not duplicate (a mapping, an open file, a mode
// to restore at scope exit): `class Guard : NonCopyable { ... };` makes Guard neither copyable nor
// movable, as the pair of deleted copy operations each such class would otherwise spell out.

namespace ember {

class NonCopyable {
 protected:
  NonCopyable() = default;
  ~NonCopyable() = default;

 public:
  NonCopyable(const NonCopyable&) = delete;
  NonCopyable& operator=(const NonCopyable&) = delete;
};

}  // namespace ember
