#pragma once
// Text for language modelling: a corpus read from a file or a folder, a byte-, character- or subword
// (SentencePiece) tokenizer whose vocabulary travels with a checkpoint (vocab.json), and the token stream
// split by position into a train part (random windows) and a validation part (consecutive windows).
//
//   data::TextCorpus corpus = data::read_fortunes();                     // or data::read_text(path)
//   data::Tokenizer tok = data::Tokenizer::chars(corpus);                // vocab: the characters seen
//   data::TextSplits splits = data::text_splits(corpus, tok, {.context = 128, .seed = 0});
//   data::DataLoader loader(splits.train, {.batch_size = 32, .shuffle = true, .seed = 0});
//   for (auto& batch : loader) { ... batch.input, batch.target: i64 [32, 128], target = input shifted by 1 ... }
//   tok.save(run_dir + "/vocab.json");                                   // Tokenizer::load reads it back
//
// Shapes: T is the context (tokens per window), B the batch. An example is input i64 [T] and target
// i64 [T] with target[t] = input[t + 1] in the token stream: the window holds T + 1 tokens.
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data/dataset.h"

namespace ember::data {

// --- Reading text ----------------------------------------------------------------------------------------

// Where one file's bytes lie in TextCorpus::text.
struct TextFile {
  std::string path;
  size_t offset = 0;  // first byte in `text`
  size_t size = 0;    // bytes
};

// The bytes of one file, or of a folder's files concatenated (each followed by the separator but the last).
struct TextCorpus {
  std::string text;
  std::vector<TextFile> files;  // in reading order; the separators lie between them
};

struct TextReadOptions {
  std::string separator = "\n";  // between two files of a folder
  // In a folder, files whose name ends with one of these are not read (e.g. ".dat" for fortune indexes).
  std::vector<std::string> skip_extensions{};
};

// `path` is a file: its bytes. `path` is a folder: its regular files, in sorted (byte-wise) name order,
// joined with options.separator; symlinks, subfolders, hidden files (".name") and skip_extensions are
// not read (symlinks are skipped so that an alias of a file is not read twice). The bytes are not
// checked here: the char tokenizer checks that they are UTF-8 (naming the file), the byte tokenizer
// takes anything. Throws ember::Error naming the path when it does not exist, cannot be read, or is a
// folder with no file to read.
TextCorpus read_text(const std::string& path, const TextReadOptions& options = {});

// Where Debian's `fortunes` package (scripts/setup.sh installs it) puts its English text: one plain text
// file per topic, plus `.dat` index files and `.u8` symlinks that read_fortunes skips.
inline constexpr const char* kFortunesDir = "/usr/share/games/fortunes";

// read_text(dir) without the `.dat` and `.u8` files. Measured on Debian 12's fortunes 1:1.99.1-7.3:
// 43 files, 2,576,716 bytes with the separators, 113 distinct characters. Throws naming the folder and
// the package to install when it is missing.
TextCorpus read_fortunes(const std::string& dir = kFortunesDir);

// --- Tokenizers ------------------------------------------------------------------------------------------

// SentencePiece training (Tokenizer::sentencepiece), with sentencepiece's option names.
struct SentencePieceOptions {
  int64_t vocab_size = 4096;        // pieces, including <unk> and, with byte_fallback, the 256 byte pieces
  std::string model_type = "bpe";   // bpe | unigram
  double character_coverage = 1.0;  // the share of the corpus's characters that get a piece of their own
  bool byte_fallback = true;        // a character without a piece is encoded as its UTF-8 bytes (<0xNN>)
};

// What Tokenizer::sentencepiece throws when sentencepiece cannot train a model of these options on this
// text (its own message): a choice of the options, apart from errors in the text itself (ember::Error).
class SentencePieceTrainingError : public Error {
 public:
  using Error::Error;
};

struct SentencePieceModel;  // the library's processor and the model's bytes (data/sentencepiece.cpp)

// Text ↔ token ids.
//   Byte:  vocab 256, id = the byte; encodes any bytes, decodes to the bytes (not necessarily UTF-8).
//   Char:  vocab = the sorted set of Unicode code points seen in the text it was fitted on, nothing else
//          (no unknown/padding token): id = the code point's rank. Text must be valid UTF-8, and a
//          character outside the vocabulary is an error naming it.
//   SentencePiece: subword pieces through the sentencepiece library (Debian's libsentencepiece-dev), a
//          model trained here on the corpus or read from a .model file (Llama-2, T5). Text must be valid
//          UTF-8. A model trained here keeps every byte of the text (no normalization, no dummy prefix
//          space, newlines are pieces; with byte_fallback, characters it has no piece for become byte
//          pieces), so decode(encode(text)) == text. A given model does what it was trained to do (e.g.
//          NFKC normalization; without byte_fallback, unknown characters become <unk>).
class Tokenizer {
 public:
  enum class Type { Byte, Char, SentencePiece };

  static Tokenizer bytes();
  // The characters of `text` (`name` names it in errors). Throws on invalid UTF-8 (with the byte offset)
  // and on empty text.
  static Tokenizer chars(std::string_view text, std::string_view name = "text");
  // The characters of every file of the corpus; invalid UTF-8 is reported with the file and its offset
  // in that file.
  static Tokenizer chars(const TextCorpus& corpus);
  // A SentencePiece model trained on the corpus's lines (each with its newline), in order, on all of them
  // (no sampling, no shuffling): the same corpus and options give the same pieces. bpe trains on
  // cpu::num_threads() threads (its pieces do not depend on them, though the model file records the
  // count); unigram on one, since its EM sums would depend on the thread count. Throws ember::Error on invalid UTF-8 (naming the file), and
  // SentencePieceTrainingError with sentencepiece's own message when it cannot train a model of these
  // options (e.g. a vocab_size below the corpus's characters, or above what it can find in it).
  static Tokenizer sentencepiece(const TextCorpus& corpus, const SentencePieceOptions& options = {});
  // A trained SentencePiece model file (e.g. a Llama-2 or T5 tokenizer.model). Throws ember::Error naming
  // the file when it is missing or not a SentencePiece model.
  static Tokenizer sentencepiece_file(const std::string& model_file);
  // A vocabulary file written by save(). Throws ember::Error naming the file when it is missing, not
  // JSON, or not a vocabulary (unknown type, tokens that are not single characters in increasing order,
  // a vocab_size that does not match, a SentencePiece model file that is missing or does not match).
  static Tokenizer load(const std::string& path);

  // Writes {"format": "ember.vocab", "version": 1, "type": "char"|"byte"|"sentencepiece", "vocab_size": V,
  // "tokens": ["\n", " ", "!", ...]} (tokens for char only) atomically to `path` (e.g. "<run>/vocab.json").
  // SentencePiece: first the model, atomically, as "tokenizer.model" in the same folder, which vocab.json
  // names ("model": "tokenizer.model"); so one SentencePiece vocabulary per folder.
  void save(const std::string& path) const;

  Type type() const { return type_; }
  const char* type_name() const;
  int64_t vocab_size() const;
  // Char: the code points in id order.
  const std::vector<char32_t>& code_points() const { return code_points_; }
  // SentencePiece: the model file's bytes (a serialized sentencepiece ModelProto); empty for the others.
  const std::string& sentencepiece_model() const;

  // The ids of `text`. Char: throws naming `name` and the byte offset on invalid UTF-8, and naming the
  // character (and its code point) when it is not in the vocabulary. SentencePiece: throws on invalid UTF-8.
  std::vector<int64_t> encode(std::string_view text, std::string_view name = "text") const;
  // Every file of the corpus and the separators between them: the token stream of corpus.text. Errors
  // name the file and the offset in it.
  std::vector<int64_t> encode(const TextCorpus& corpus) const;
  // The text of `ids`. Throws when an id is not in [0, vocab_size).
  std::string decode(std::span<const int64_t> ids) const;
  // The bytes token `id` stands for inside a text, so that a stream of tokens can be written out one at a
  // time: byte: the byte; char: its UTF-8; SentencePiece: the piece with "▁" as a space, a byte piece's
  // byte, nothing for control tokens (<s>, </s>), <unk> as " ⁇ ". Throws when id is not in the vocabulary.
  std::string token_text(int64_t id) const;
  // The bytes of text `ids` stand for: the sum of their token_text sizes. For a stream encoded from a text
  // by a model trained here it is that text's size, so bits per byte = bits per token × ids / text_bytes
  // compares models with different tokenizers on one scale.
  int64_t text_bytes(std::span<const int64_t> ids) const;

  // The same vocabulary: type, characters, or SentencePiece model bytes (two bpe trainings on different
  // thread counts differ there only, so compare their encodings).
  friend bool operator==(const Tokenizer& a, const Tokenizer& b);

 private:
  Tokenizer() = default;
  int64_t id_of(char32_t c) const;  // -1 when not in the vocabulary
  void check_id(int64_t id, size_t position) const;  // throws unless id is in [0, vocab_size)

  Type type_ = Type::Byte;
  std::vector<char32_t> code_points_;  // Char: sorted, distinct
  std::shared_ptr<const SentencePieceModel> spm_;  // SentencePiece
};

// The code points of `text` (validated strictly: no overlong forms, surrogates or values past U+10FFFF).
// Throws "<name>: invalid UTF-8 at byte N ..." otherwise.
std::vector<char32_t> decode_utf8(std::string_view text, std::string_view name = "text");
// The UTF-8 bytes of code point `c` appended to `out`.
void append_utf8(std::string& out, char32_t c);

// --- Windows of a token stream ---------------------------------------------------------------------------

using TokenStream = std::shared_ptr<const std::vector<int64_t>>;

// A Dataset of windows of T + 1 tokens out of tokens [begin, end): example i is input = tokens[s, s + T)
// and target = tokens[s + 1, s + T] (i64 [T] each) for the window's start s. No window reads a token
// outside [begin, end).
class TokenWindows : public Dataset {
 public:
  // `samples` windows whose starts are uniform in [begin, end - T - 1], drawn from Philox keyed by
  // `seed` and the epoch (set_epoch): start(i) is a pure function of (seed, epoch, i), so a DataLoader's
  // order, workers and resume see the same windows. The loader's shuffle reorders them each epoch.
  static std::shared_ptr<TokenWindows> random(TokenStream tokens, int64_t begin, int64_t end, int64_t context,
                                              int64_t samples, uint64_t seed);
  // floor((end - begin - 1) / T) consecutive windows: start(i) = begin + i·T, so the targets cover tokens
  // begin + 1 .. begin + size()·T exactly once (the last < T tokens of the range are left out: a window
  // needs T + 1 tokens). No randomness.
  static std::shared_ptr<TokenWindows> sequential(TokenStream tokens, int64_t begin, int64_t end, int64_t context);

  int64_t size() const override { return size_; }
  Example get(int64_t index) const override;
  ExampleSpec spec() const override { return {Shape{context_}, DType::i64, Shape{context_}, DType::i64}; }
  void get_batch(std::span<const int64_t> indices, const Tensor& input, const Tensor& target) const override;

  int64_t start(int64_t index) const;  // the window's first token (an index into the stream)
  // Random windows: draw epoch `epoch`'s set of windows (epoch 0 is the set random() starts with), so that
  // every epoch trains on new text. Call it between epochs, before the loader's begin() (ember-train uses
  // the loader's LoaderState::epoch, so a resumed run draws the same windows). Sequential windows: no effect.
  void set_epoch(int64_t epoch);
  int64_t context() const { return context_; }
  int64_t begin() const { return begin_; }
  int64_t end() const { return end_; }
  const TokenStream& tokens() const { return tokens_; }

 private:
  TokenWindows(TokenStream tokens, int64_t begin, int64_t end, int64_t context, const char* op);
  TokenStream tokens_;
  int64_t begin_ = 0, end_ = 0, context_ = 0, size_ = 0;
  bool random_ = false;
  uint64_t key_ = 0;  // Philox key of the starts (random only), epoch 0
  std::atomic<uint64_t> epoch_key_{0};  // the key of the current epoch's starts (read by loader workers)
};

// --- Train / validation ----------------------------------------------------------------------------------

struct TextSplitOptions {
  int64_t context = 128;        // T: tokens per example
  double val_fraction = 0.1;    // the last fraction of the token stream is validation; 0: no validation
  int64_t samples_per_epoch = 0;  // train windows; 0: train tokens / T
  uint64_t seed = 0;            // the train windows' starts
};

struct TextSplits {
  TokenStream tokens;
  int64_t train_end = 0;  // tokens [0, train_end) are train, [train_end, size) validation
  std::shared_ptr<TokenWindows> train;       // random windows inside [0, train_end)
  std::shared_ptr<TokenWindows> validation;  // consecutive windows inside [train_end, size); null without
};

// Splits `tokens` by position: train_end = round((1 - val_fraction) · N). No window crosses train_end.
// Throws when T < 1, val_fraction is not in [0, 1), samples_per_epoch < 0, or a part has fewer than
// T + 1 tokens (saying how many it has and what to lower).
TextSplits text_splits(TokenStream tokens, const TextSplitOptions& options = {});
// tokenizer.encode(corpus), then the above.
TextSplits text_splits(const TextCorpus& corpus, const Tokenizer& tokenizer, const TextSplitOptions& options = {});

// The cross entropy (nats per token) of a bigram model with add-one smoothing fitted on the pairs of
// tokens [0, train_end) and evaluated on every pair whose second token lies in [train_end, N):
// p(b | a) = (count(a, b) + 1) / (count(a) + V). The bar a trained language model must beat on the same
// split (2.612 nats/char on the fortunes corpus with the char tokenizer and val_fraction 0.1).
double bigram_cross_entropy(std::span<const int64_t> tokens, int64_t train_end, int64_t vocab_size);

}  // namespace ember::data
