#include "data/text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/raw.h"
#include "data/random.h"
#include "data/sentencepiece.h"

namespace ember::data {
namespace fs = std::filesystem;

namespace {

constexpr const char* kUtf8Advice = "; the char and sentencepiece tokenizers need UTF-8 text: convert it (e.g. iconv "
                                    "-f latin1 -t utf-8) or use the byte tokenizer";
constexpr const char* kVocabFormat = "ember.vocab";
constexpr int kVocabVersion = 1;
constexpr uint64_t kWindowStream = 0x74657874'77696e64ULL;  // "textwind": the random windows' Philox stream

std::string hex_byte(uint8_t b) {
  char s[8];
  std::snprintf(s, sizeof s, "0x%02X", b);
  return s;
}

// "'é' (U+00E9)", or "U+000A" for a control character.
std::string describe_char(char32_t c) {
  char code[16];
  std::snprintf(code, sizeof code, "U+%04X", static_cast<unsigned>(c));
  if (c < 0x20 || (c >= 0x7F && c < 0xA0)) return code;
  std::string s = "'";
  append_utf8(s, c);
  return s + "' (" + code + ")";
}

// The code point starting at text[pos]; advances pos past it. Throws naming `name` and the byte offset.
char32_t next_code_point(std::string_view text, size_t& pos, std::string_view name) {
  const size_t at = pos;
  const auto b0 = static_cast<uint8_t>(text[at]);
  auto fail = [&](const std::string& why) {
    detail::throw_error(name, ": invalid UTF-8 at byte ", at, ": ", why, kUtf8Advice);
  };
  if (b0 < 0x80) {
    ++pos;
    return b0;
  }
  int len = 0;
  char32_t cp = 0, min = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2, cp = b0 & 0x1F, min = 0x80;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3, cp = b0 & 0x0F, min = 0x800;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4, cp = b0 & 0x07, min = 0x10000;
  } else if (b0 >= 0x80 && b0 <= 0xBF) {
    fail("byte " + hex_byte(b0) + " is a continuation byte without a lead byte");
  } else {
    fail("byte " + hex_byte(b0) + " never occurs in UTF-8");
  }
  if (at + len > text.size())
    fail("the text ends inside a " + std::to_string(len) + "-byte character (lead byte " + hex_byte(b0) + ")");
  for (int k = 1; k < len; ++k) {
    const auto b = static_cast<uint8_t>(text[at + k]);
    if ((b & 0xC0) != 0x80)
      fail("byte " + std::to_string(k + 1) + " of a " + std::to_string(len) + "-byte character (lead byte " +
           hex_byte(b0) + ") is " + hex_byte(b) + ", not a continuation byte");
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min) fail("an overlong " + std::to_string(len) + "-byte encoding of a character that needs fewer bytes");
  if (cp >= 0xD800 && cp <= 0xDFFF) fail("an encoded UTF-16 surrogate, which is not a character");
  if (cp > 0x10FFFF) fail("a code point past U+10FFFF");
  pos = at + len;
  return cp;
}

// Throws as next_code_point does unless `text` is valid UTF-8.
void check_utf8(std::string_view text, std::string_view name) {
  for (size_t pos = 0; pos < text.size();) next_code_point(text, pos, name);
}

// Calls fn(bytes, name) for each file of the corpus (named by its path) and each piece of text between
// them (the separators), in order, so that errors name the file and an offset inside it.
void for_each_piece(const TextCorpus& corpus, const std::function<void(std::string_view, std::string_view)>& fn) {
  const std::string_view text = corpus.text;
  if (corpus.files.empty()) {
    fn(text, "text");
    return;
  }
  size_t pos = 0;
  for (const TextFile& f : corpus.files) {
    EMBER_CHECK(f.offset >= pos && f.offset <= text.size() && f.size <= text.size() - f.offset, "TextCorpus: file ",
                f.path, " at bytes [", f.offset, ", ", f.offset + f.size, ") is not inside the text (", text.size(),
                " bytes) after the previous file; the files must be in order, as read_text lists them");
    if (f.offset > pos) fn(text.substr(pos, f.offset - pos), "the separator before " + f.path);
    fn(text.substr(f.offset, f.size), f.path);
    pos = f.offset + f.size;
  }
  if (pos < text.size()) fn(text.substr(pos), "the text after " + corpus.files.back().path);
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  EMBER_CHECK(in.good(), path.string(), ": cannot open the text file; check its permissions");
  std::ostringstream text;
  text << in.rdbuf();
  EMBER_CHECK(!in.bad(), path.string(), ": reading the text file failed");
  return std::move(text).str();
}

[[noreturn]] void corrupt_vocab(const std::string& path, const std::string& what) {
  detail::throw_error(path, ": not a valid vocabulary file: ", what,
                      "; vocab.json is written by Tokenizer::save next to a model's checkpoint: copy the one the "
                      "model was trained with, or rebuild the tokenizer from the training text");
}

// The vocabulary's SentencePiece model file, named by vocab.json's "model" (a file in the same folder).
Tokenizer load_sentencepiece_vocab(const std::string& path, const nlohmann::json& j, int64_t vocab_size) {
  if (!j.contains("model") || !j["model"].is_string() || j["model"].get<std::string>().empty())
    corrupt_vocab(path, "a sentencepiece vocabulary needs \"model\": the name of its .model file");
  const fs::path model = fs::path(path).parent_path() / j["model"].get<std::string>();
  EMBER_CHECK(fs::is_regular_file(model), model.string(), ": the SentencePiece model that ", path,
              " names is missing; it is written next to vocab.json by ember-train: copy it with the run");
  Tokenizer t = Tokenizer::sentencepiece_file(model.string());
  if (t.vocab_size() != vocab_size)
    corrupt_vocab(path, "\"vocab_size\" is " + std::to_string(vocab_size) + " but " + model.string() + " has " +
                            std::to_string(t.vocab_size()) + " pieces (was it replaced by another model?)");
  return t;
}

void check_buffer(const Tensor& t, int64_t batch, int64_t context, const char* what) {
  EMBER_CHECK(t.defined() && t.device().is_cpu() && t.is_contiguous() && t.dtype() == DType::i64 && t.dim() == 2 &&
                  t.size(0) == batch && t.size(1) == context,
              "TokenWindows::get_batch: the ", what, " buffer must be a contiguous cpu i64 tensor of shape [", batch,
              ", ", context, "]; got ",
              t.defined() ? t.shape().str() + " " + std::string(dtype_name(t.dtype())) : "undefined");
}

}  // namespace

// --- UTF-8 -----------------------------------------------------------------------------------------------

std::vector<char32_t> decode_utf8(std::string_view text, std::string_view name) {
  std::vector<char32_t> out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) out.push_back(next_code_point(text, pos, name));
  return out;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

// --- Reading ---------------------------------------------------------------------------------------------

TextCorpus read_text(const std::string& path, const TextReadOptions& options) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  EMBER_CHECK(fs::exists(status), path, ": no such file or folder; give a UTF-8 text file or a folder of them");
  TextCorpus corpus;
  if (!fs::is_directory(status)) {
    corpus.text = read_file(path);
    corpus.files.push_back({path, 0, corpus.text.size()});
    return corpus;
  }

  std::vector<fs::path> files;
  int64_t skipped = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(path, ec)) {
    const std::string name = entry.path().filename().string();
    bool skip = entry.is_symlink() || !entry.is_regular_file() || name.starts_with('.');
    for (const std::string& ext : options.skip_extensions) skip = skip || name.ends_with(ext);
    if (skip) {
      ++skipped;
      continue;
    }
    files.push_back(entry.path());
  }
  EMBER_CHECK(!ec, path, ": cannot list the folder (", ec.message(), ")");
  EMBER_CHECK(!files.empty(), path, ": no text file to read in this folder (", skipped,
              " entries skipped: symlinks, subfolders, hidden files and names ending in a skipped extension)");
  std::sort(files.begin(), files.end(),
            [](const fs::path& a, const fs::path& b) { return a.filename().string() < b.filename().string(); });
  for (const fs::path& file : files) {
    if (!corpus.files.empty()) corpus.text += options.separator;
    const std::string bytes = read_file(file);
    corpus.files.push_back({file.string(), corpus.text.size(), bytes.size()});
    corpus.text += bytes;
  }
  return corpus;
}

TextCorpus read_fortunes(const std::string& dir) {
  EMBER_CHECK(fs::is_directory(dir), dir,
              ": not found; it is where Debian's fortunes package puts its text: apt-get install fortunes "
              "(scripts/setup.sh installs it), or give the folder it is in");
  return read_text(dir, {.separator = "\n", .skip_extensions = {".dat", ".u8"}});
}

// --- Tokenizer -------------------------------------------------------------------------------------------

Tokenizer Tokenizer::bytes() { return Tokenizer(); }

Tokenizer Tokenizer::chars(std::string_view text, std::string_view name) {
  TextCorpus corpus;
  corpus.text = std::string(text);
  corpus.files.push_back({std::string(name), 0, text.size()});
  return chars(corpus);
}

Tokenizer Tokenizer::chars(const TextCorpus& corpus) {
  std::vector<bool> seen(0x110000, false);  // NOTE: only looked up; the vocabulary is the short list below
  Tokenizer t;
  t.type_ = Type::Char;
  for_each_piece(corpus, [&](std::string_view piece, std::string_view name) {
    for (size_t pos = 0; pos < piece.size();) {
      const char32_t c = next_code_point(piece, pos, name);
      if (!seen[c]) t.code_points_.push_back(c);
      seen[c] = true;
    }
  });
  std::sort(t.code_points_.begin(), t.code_points_.end());
  EMBER_CHECK(!t.code_points_.empty(), "Tokenizer::chars: the text is empty, so there is no character to build a "
                                       "vocabulary from; give the training text");
  return t;
}

Tokenizer Tokenizer::sentencepiece(const TextCorpus& corpus, const SentencePieceOptions& options) {
  for_each_piece(corpus, check_utf8);
  Tokenizer t;
  t.type_ = Type::SentencePiece;
  t.spm_ = train_sentencepiece(corpus.text, options);
  return t;
}

Tokenizer Tokenizer::sentencepiece_file(const std::string& model_file) {
  std::ifstream in(model_file, std::ios::binary);
  EMBER_CHECK(in.good(), model_file, ": cannot open the SentencePiece model file",
              fs::exists(model_file) ? "; check its permissions" : "; no such file");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  EMBER_CHECK(!in.bad(), model_file, ": reading the SentencePiece model file failed");
  Tokenizer t;
  t.type_ = Type::SentencePiece;
  t.spm_ = sentencepiece_from_bytes(std::move(bytes).str(), model_file);
  return t;
}

const char* Tokenizer::type_name() const {
  switch (type_) {
    case Type::Byte: return "byte";
    case Type::Char: return "char";
    case Type::SentencePiece: return "sentencepiece";
  }
  return "";
}

int64_t Tokenizer::vocab_size() const {
  switch (type_) {
    case Type::Byte: return 256;
    case Type::Char: return static_cast<int64_t>(code_points_.size());
    case Type::SentencePiece: return static_cast<int64_t>(spm_->token_text.size());
  }
  return 0;
}

const std::string& Tokenizer::sentencepiece_model() const {
  static const std::string none;
  return spm_ ? spm_->proto : none;
}

bool operator==(const Tokenizer& a, const Tokenizer& b) {
  return a.type_ == b.type_ && a.code_points_ == b.code_points_ &&
         a.sentencepiece_model() == b.sentencepiece_model();
}

int64_t Tokenizer::id_of(char32_t c) const {
  const auto it = std::lower_bound(code_points_.begin(), code_points_.end(), c);
  return it != code_points_.end() && *it == c ? it - code_points_.begin() : -1;
}

std::vector<int64_t> Tokenizer::encode(std::string_view text, std::string_view name) const {
  std::vector<int64_t> ids;
  ids.reserve(text.size());
  if (type_ == Type::Byte) {
    for (char c : text) ids.push_back(static_cast<uint8_t>(c));
    return ids;
  }
  if (type_ == Type::SentencePiece) {
    check_utf8(text, name);
    return sentencepiece_encode(*spm_, text);
  }
  for (size_t pos = 0; pos < text.size();) {
    const size_t at = pos;
    const char32_t c = next_code_point(text, pos, name);
    const int64_t id = id_of(c);
    if (id < 0)
      detail::throw_error(name, ": the character ", describe_char(c), " at byte ", at,
                          " is not in the char vocabulary (", code_points_.size(),
                          " characters: those of the text it was built from); rebuild the vocabulary from text "
                          "that contains it, or use the byte tokenizer");
    ids.push_back(id);
  }
  return ids;
}

std::vector<int64_t> Tokenizer::encode(const TextCorpus& corpus) const {
  std::vector<int64_t> ids;
  ids.reserve(corpus.text.size());
  for_each_piece(corpus, [&](std::string_view piece, std::string_view name) {
    const std::vector<int64_t> part = encode(piece, name);
    ids.insert(ids.end(), part.begin(), part.end());
  });
  return ids;
}

void Tokenizer::check_id(int64_t id, size_t position) const {
  const int64_t v = vocab_size();
  EMBER_CHECK(id >= 0 && id < v, "Tokenizer::decode: id ", id, " at position ", position, " is not in the ",
              type_name(), " vocabulary (ids 0..", v - 1, "); were the ids made with another tokenizer?");
}

std::string Tokenizer::decode(std::span<const int64_t> ids) const {
  for (size_t k = 0; k < ids.size(); ++k) check_id(ids[k], k);
  if (type_ == Type::SentencePiece) return sentencepiece_decode(*spm_, ids);
  std::string out;
  out.reserve(ids.size());
  for (const int64_t id : ids) {
    if (type_ == Type::Byte) {
      out += static_cast<char>(static_cast<uint8_t>(id));
    } else {
      append_utf8(out, code_points_[id]);
    }
  }
  return out;
}

std::string Tokenizer::token_text(int64_t id) const {
  check_id(id, 0);
  if (type_ == Type::SentencePiece) return spm_->token_text[static_cast<size_t>(id)];
  const int64_t one[] = {id};
  return decode(one);
}

int64_t Tokenizer::text_bytes(std::span<const int64_t> ids) const {
  if (type_ == Type::Byte) return static_cast<int64_t>(ids.size());
  int64_t bytes = 0;
  for (size_t k = 0; k < ids.size(); ++k) {
    check_id(ids[k], k);
    const auto id = static_cast<size_t>(ids[k]);
    if (type_ == Type::SentencePiece) {
      bytes += static_cast<int64_t>(spm_->token_text[id].size());
    } else {
      const char32_t c = code_points_[id];
      bytes += c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
    }
  }
  return bytes;
}

void Tokenizer::save(const std::string& path) const {
  nlohmann::ordered_json j;
  j["format"] = kVocabFormat;
  j["version"] = kVocabVersion;
  j["type"] = type_name();
  j["vocab_size"] = vocab_size();
  if (type_ == Type::SentencePiece) {
    const std::string model = "tokenizer.model";
    write_file_atomic((fs::path(path).parent_path() / model).string(), spm_->proto);  // before the file naming it
    j["model"] = model;
  }
  if (type_ == Type::Char) {
    nlohmann::ordered_json tokens = nlohmann::ordered_json::array();
    for (char32_t c : code_points_) {
      std::string s;
      append_utf8(s, c);
      tokens.push_back(s);
    }
    j["tokens"] = std::move(tokens);
  }
  write_file_atomic(path, j.dump(1) + "\n");
}

Tokenizer Tokenizer::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EMBER_CHECK(in.good(), path, ": cannot open the vocabulary file; it is written by Tokenizer::save (vocab.json "
                               "next to a model's checkpoint): check the path");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(buffer.str());
  } catch (const nlohmann::json::exception& e) {
    corrupt_vocab(path, std::string("it is not JSON (") + e.what() + ")");
  }
  if (!j.is_object()) corrupt_vocab(path, "the JSON is not an object");
  if (!j.contains("format") || j["format"] != kVocabFormat)
    corrupt_vocab(path, std::string("\"format\" is not \"") + kVocabFormat + "\"");
  if (!j.contains("version") || !j["version"].is_number_integer())
    corrupt_vocab(path, "\"version\" is missing or not an integer");
  EMBER_CHECK(j["version"].get<int64_t>() == kVocabVersion, path, ": vocabulary format version ",
              j["version"].get<int64_t>(), ", but this Ember reads version ", kVocabVersion,
              "; was it written by a newer Ember?");
  if (!j.contains("type") || !j["type"].is_string()) corrupt_vocab(path, "\"type\" is missing or not a string");
  if (!j.contains("vocab_size") || !j["vocab_size"].is_number_integer())
    corrupt_vocab(path, "\"vocab_size\" is missing or not an integer");
  const std::string type = j["type"].get<std::string>();
  const auto vocab_size = j["vocab_size"].get<int64_t>();

  Tokenizer t;
  if (type == "byte") {
    if (vocab_size != 256) corrupt_vocab(path, "a byte vocabulary has 256 tokens, not " + std::to_string(vocab_size));
    return t;
  }
  if (type == "sentencepiece") return load_sentencepiece_vocab(path, j, vocab_size);
  if (type != "char")
    corrupt_vocab(path, "unknown tokenizer type \"" + type + "\" (known: \"byte\", \"char\", \"sentencepiece\")");
  if (!j.contains("tokens") || !j["tokens"].is_array()) corrupt_vocab(path, "\"tokens\" is missing or not a list");
  t.type_ = Type::Char;
  const nlohmann::json& tokens = j["tokens"];
  for (size_t k = 0; k < tokens.size(); ++k) {
    const std::string where = "token " + std::to_string(k);
    if (!tokens[k].is_string()) corrupt_vocab(path, where + " is not a string");
    const auto& s = tokens[k].get_ref<const std::string&>();
    std::vector<char32_t> cps;
    try {
      cps = decode_utf8(s, where);
    } catch (const Error& e) {
      corrupt_vocab(path, e.what());
    }
    if (cps.size() != 1) corrupt_vocab(path, where + " is \"" + s + "\", not one character");
    if (!t.code_points_.empty() && cps[0] <= t.code_points_.back())
      corrupt_vocab(path, where + " " + describe_char(cps[0]) + " is not after the one before it " +
                              describe_char(t.code_points_.back()) + " (the tokens are sorted and distinct)");
    t.code_points_.push_back(cps[0]);
  }
  if (t.code_points_.empty()) corrupt_vocab(path, "\"tokens\" is empty");
  if (static_cast<int64_t>(t.code_points_.size()) != vocab_size)
    corrupt_vocab(path, "\"vocab_size\" is " + std::to_string(vocab_size) + " but there are " +
                            std::to_string(t.code_points_.size()) + " tokens");
  return t;
}

// --- TokenWindows ----------------------------------------------------------------------------------------

TokenWindows::TokenWindows(TokenStream tokens, int64_t begin, int64_t end, int64_t context, const char* op)
    : tokens_(std::move(tokens)), begin_(begin), end_(end), context_(context) {
  EMBER_CHECK(tokens_ != nullptr, op, ": the token stream is null");
  const auto n = static_cast<int64_t>(tokens_->size());
  EMBER_CHECK(context >= 1, op, ": context is ", context, "; it must be >= 1 token");
  EMBER_CHECK(0 <= begin && begin <= end && end <= n, op, ": the range [", begin, ", ", end,
              ") is not inside the token stream [0, ", n, ")");
  EMBER_CHECK(end - begin >= context + 1, op, ": the range [", begin, ", ", end, ") holds ", end - begin,
              " tokens, but a window needs context + 1 = ", context + 1, "; lower the context or give more text");
}

std::shared_ptr<TokenWindows> TokenWindows::random(TokenStream tokens, int64_t begin, int64_t end, int64_t context,
                                                   int64_t samples, uint64_t seed) {
  std::shared_ptr<TokenWindows> w(new TokenWindows(std::move(tokens), begin, end, context, "TokenWindows::random"));
  EMBER_CHECK(samples >= 1, "TokenWindows::random: samples is ", samples, "; it must be >= 1");
  w->random_ = true;
  w->size_ = samples;
  w->key_ = mix_key(seed, kWindowStream);
  w->epoch_key_.store(w->key_);
  return w;
}

std::shared_ptr<TokenWindows> TokenWindows::sequential(TokenStream tokens, int64_t begin, int64_t end,
                                                       int64_t context) {
  std::shared_ptr<TokenWindows> w(
      new TokenWindows(std::move(tokens), begin, end, context, "TokenWindows::sequential"));
  w->size_ = (end - begin - 1) / context;
  return w;
}

int64_t TokenWindows::start(int64_t index) const {
  check_index(index, size_, "TokenWindows");
  if (!random_) return begin_ + index * context_;
  // Starts in [begin, end - T - 1]: end - begin - T of them.
  return begin_ + ExampleRng(epoch_key_.load(std::memory_order_relaxed), static_cast<uint64_t>(index))
                      .uniform_int(end_ - begin_ - context_);
}

void TokenWindows::set_epoch(int64_t epoch) {
  EMBER_CHECK(epoch >= 0, "TokenWindows::set_epoch: epoch is ", epoch, "; it must be >= 0");
  epoch_key_.store(epoch == 0 ? key_ : mix_key(key_, static_cast<uint64_t>(epoch)));
}

Example TokenWindows::get(int64_t index) const {
  const int64_t s = start(index);
  Tensor input = raw::empty(Shape{context_}, DType::i64, kCPU);
  Tensor target = raw::empty(Shape{context_}, DType::i64, kCPU);
  const int64_t* src = tokens_->data() + s;
  std::memcpy(input.data_ptr(), src, static_cast<size_t>(context_) * sizeof(int64_t));
  std::memcpy(target.data_ptr(), src + 1, static_cast<size_t>(context_) * sizeof(int64_t));
  return {input, target};
}

void TokenWindows::get_batch(std::span<const int64_t> indices, const Tensor& input, const Tensor& target) const {
  const auto batch = static_cast<int64_t>(indices.size());
  check_buffer(input, batch, context_, "input");
  check_buffer(target, batch, context_, "target");
  auto* in = static_cast<int64_t*>(input.data_ptr());
  auto* tg = static_cast<int64_t*>(target.data_ptr());
  const size_t row = static_cast<size_t>(context_) * sizeof(int64_t);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t* src = tokens_->data() + start(indices[b]);
    std::memcpy(in + b * context_, src, row);
    std::memcpy(tg + b * context_, src + 1, row);
  }
}

// --- Splits ----------------------------------------------------------------------------------------------

TextSplits text_splits(TokenStream tokens, const TextSplitOptions& options) {
  EMBER_CHECK(tokens != nullptr, "text_splits: the token stream is null");
  const auto n = static_cast<int64_t>(tokens->size());
  const int64_t t = options.context;
  const double f = options.val_fraction;
  EMBER_CHECK(t >= 1, "text_splits: context is ", t, "; it must be >= 1 token");
  EMBER_CHECK(f >= 0.0 && f < 1.0, "text_splits: val_fraction is ", f,
              "; it must be in [0, 1) (0.1: the last 10% of the text is validation)");
  EMBER_CHECK(options.samples_per_epoch >= 0, "text_splits: samples_per_epoch is ", options.samples_per_epoch,
              "; use 0 (train tokens / context) or a positive count");
  TextSplits s;
  s.tokens = tokens;
  s.train_end = std::llround((1.0 - f) * static_cast<double>(n));
  EMBER_CHECK(s.train_end >= t + 1, "text_splits: the train part holds ", s.train_end, " of the ", n,
              " tokens, but a window needs context + 1 = ", t + 1,
              " tokens; lower the context or val_fraction, or give more text");
  if (f > 0.0) {
    EMBER_CHECK(n - s.train_end >= t + 1, "text_splits: the validation part (val_fraction ", f, ") holds ",
                n - s.train_end, " of the ", n, " tokens, but a window needs context + 1 = ", t + 1,
                " tokens; raise val_fraction, lower the context, or give more text");
    s.validation = TokenWindows::sequential(tokens, s.train_end, n, t);
  }
  const int64_t samples = options.samples_per_epoch > 0 ? options.samples_per_epoch : std::max<int64_t>(1, s.train_end / t);
  s.train = TokenWindows::random(tokens, 0, s.train_end, t, samples, options.seed);
  return s;
}

TextSplits text_splits(const TextCorpus& corpus, const Tokenizer& tokenizer, const TextSplitOptions& options) {
  return text_splits(std::make_shared<const std::vector<int64_t>>(tokenizer.encode(corpus)), options);
}

double bigram_cross_entropy(std::span<const int64_t> tokens, int64_t train_end, int64_t vocab_size) {
  const auto n = static_cast<int64_t>(tokens.size());
  EMBER_CHECK(vocab_size >= 1, "bigram_cross_entropy: vocab_size is ", vocab_size, "; it must be >= 1");
  EMBER_CHECK(train_end >= 2 && train_end < n, "bigram_cross_entropy: train_end is ", train_end, " for ", n,
              " tokens; the train part needs a pair of tokens and the evaluated part at least one token");
  for (int64_t i = 0; i < n; ++i)
    EMBER_CHECK(tokens[i] >= 0 && tokens[i] < vocab_size, "bigram_cross_entropy: token ", i, " is ", tokens[i],
                ", not an id of a vocabulary of ", vocab_size);
  const auto v = static_cast<uint64_t>(vocab_size);
  std::unordered_map<uint64_t, int64_t> pairs;  // a·V + b → count(a, b)
  std::vector<int64_t> rows(vocab_size, 0);     // count(a): pairs starting with a
  for (int64_t i = 1; i < train_end; ++i) {
    ++pairs[static_cast<uint64_t>(tokens[i - 1]) * v + static_cast<uint64_t>(tokens[i])];
    ++rows[tokens[i - 1]];
  }
  double nats = 0.0;
  for (int64_t i = train_end; i < n; ++i) {
    const auto it = pairs.find(static_cast<uint64_t>(tokens[i - 1]) * v + static_cast<uint64_t>(tokens[i]));
    const double count = it == pairs.end() ? 0.0 : static_cast<double>(it->second);
    nats -= std::log((count + 1.0) / (static_cast<double>(rows[tokens[i - 1]]) + static_cast<double>(vocab_size)));
  }
  return nats / static_cast<double>(n - train_end);
}

}  // namespace ember::data
