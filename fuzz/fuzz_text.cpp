// libFuzzer target for the text data layer (data/text.cpp): the strict UTF-8 decoder, the char and byte
// tokenizers and the vocab.json reader. Any input must end in a value or an ember::Error — never a crash
// or a sanitizer report — and whatever the char tokenizer accepts must decode back to the same bytes.
// The first input byte picks the mode: even, the rest is text to tokenize; odd, the rest is a vocabulary
// file (written to /dev/shm, as Tokenizer::load takes a path) to load, then to encode and decode with.
//
//   CXX=clang++ cmake -S . -B build-fuzz -DEMBER_FUZZ=ON -DEMBER_BUILD_TESTS=OFF -DEMBER_BUILD_BENCH=OFF
//   cmake --build build-fuzz -j2 --target fuzz_text
//   build-fuzz/fuzz/fuzz_text -max_total_time=300 -rss_limit_mb=2048 fuzz/corpus/text
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "data/text.h"

using namespace ember;

namespace {

void round_trip(const data::Tokenizer& tok, const std::string& text) {
  std::vector<int64_t> ids;
  try {
    ids = tok.encode(text, "fuzz input");
  } catch (const Error&) {
    return;  // invalid UTF-8 or a character outside the vocabulary
  }
  if (tok.decode(ids) != text) __builtin_trap();  // a lossless tokenizer lost something
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string rest(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] % 2 == 0) {
    round_trip(data::Tokenizer::bytes(), rest);
    try {
      const data::Tokenizer chars = data::Tokenizer::chars(rest, "fuzz input");
      round_trip(chars, rest);
      if (static_cast<size_t>(chars.vocab_size()) > rest.size()) __builtin_trap();  // more characters than bytes
    } catch (const Error&) {
    }
    return 0;
  }
  static const std::string path = "/dev/shm/ember_fuzz_text_" + std::to_string(::getpid()) + ".json";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return 0;
  std::fwrite(rest.data(), 1, rest.size(), f);
  std::fclose(f);
  try {
    const data::Tokenizer tok = data::Tokenizer::load(path);
    round_trip(tok, "hello, world\n");
  } catch (const Error&) {
  }
  return 0;
}
