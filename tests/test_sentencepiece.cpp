// The SentencePiece tokenizer (data/text.h, through libsentencepiece): training is reproducible, text
// round-trips exactly (newlines, runs of spaces, characters the model has no piece for), the byte count
// behind bits per byte, vocab.json with its tokenizer.model, a model file made by spm_train used exactly as
// spm_encode uses it (tests/data/spm_llama_style.*, tools/make_spm_model.sh), and the errors.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "data_test_util.h"

using namespace ember;
using namespace ember::testing;

namespace {

namespace fs = std::filesystem;

// About 20 kB of words from a little grammar (an LCG: the same text everywhere), with newlines, runs of
// spaces, tabs and a few non-ASCII characters: 30 distinct characters.
std::string make_corpus(uint32_t seed = 3, size_t words = 4000) {
  static const char* const kWords[] = {"the", "cat", "sat", "on", "a", "mat", "café", "naïve", "dog", "ran",
                                       "to", "Σίσυφος", "house", "and", "then", "slept"};
  uint32_t state = seed;
  std::string text;
  for (size_t i = 0; i < words; ++i) {
    state = state * 1664525u + 1013904223u;
    text += kWords[(state >> 16) % 16];
    text += i % 12 == 11 ? "\n" : i % 17 == 5 ? "  " : i % 31 == 7 ? "\t" : " ";
  }
  return text;
}

data::TextCorpus corpus_of(const std::string& text) {
  data::TextCorpus c;
  c.text = text;
  c.files.push_back({"corpus.txt", 0, text.size()});
  return c;
}

// With byte_fallback: 256 byte pieces, <unk>, the 30 characters, and longer pieces: bpe finds 100 at
// most in this corpus of 16 words (pieces do not cross spaces), unigram 30.
const data::SentencePieceOptions kSmall{.vocab_size = 360, .model_type = "bpe"};
data::SentencePieceOptions small(const std::string& type) {
  return {.vocab_size = type == "bpe" ? 360 : 310, .model_type = type};
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string data_file(const char* name) { return std::string(EMBER_TEST_DATA_DIR) + "/" + name; }

}  // namespace

TEST(SentencePiece, TrainingIsReproducible) {
  const data::TextCorpus corpus = corpus_of(make_corpus());
  for (const char* type : {"bpe", "unigram"}) {
    const data::Tokenizer a = data::Tokenizer::sentencepiece(corpus, small(type));
    const data::Tokenizer b = data::Tokenizer::sentencepiece(corpus, small(type));
    EXPECT_EQ(a.type(), data::Tokenizer::Type::SentencePiece);
    EXPECT_STREQ(a.type_name(), "sentencepiece");
    EXPECT_EQ(a.vocab_size(), small(type).vocab_size) << type;
    EXPECT_FALSE(a.sentencepiece_model().empty());
    EXPECT_EQ(a.sentencepiece_model(), b.sentencepiece_model()) << type << ": two trainings gave other models";
    EXPECT_EQ(a, b);
    const std::vector<int64_t> ids = a.encode(corpus);
    EXPECT_EQ(ids, b.encode(corpus));
    EXPECT_LT(ids.size(), corpus.text.size() / 2) << type << ": subword pieces should be several bytes long";
  }
  // Other options, another model.
  data::SentencePieceOptions bigger = kSmall;
  bigger.vocab_size = 370;
  EXPECT_NE(data::Tokenizer::sentencepiece(corpus, bigger), data::Tokenizer::sentencepiece(corpus, kSmall));
  EXPECT_NE(data::Tokenizer::sentencepiece(corpus, kSmall), data::Tokenizer::chars(corpus));
}

TEST(SentencePiece, TextRoundTripsExactly) {
  const data::TextCorpus corpus = corpus_of(make_corpus());
  for (const char* type : {"bpe", "unigram"}) {
    const data::Tokenizer tok = data::Tokenizer::sentencepiece(corpus, small(type));
    const std::vector<int64_t> ids = tok.encode(corpus);
    EXPECT_EQ(tok.decode(ids), corpus.text) << type;
    // Text it never saw: leading and trailing spaces, blank lines, CRLF, characters without a piece (byte
    // fallback: their UTF-8 bytes), an emoji.
    const std::string unseen = "  leading\n\n\nzebra QUIZ 42\r\n日本語 \xF0\x9F\x8E\x89 end  \n";
    const std::vector<int64_t> unseen_ids = tok.encode(unseen);
    EXPECT_EQ(tok.decode(unseen_ids), unseen) << type;
    // The pieces' text, one token at a time (ember-generate's stream), is the decoded text, and its size
    // is the bytes behind bits per byte.
    for (const auto* part : {&ids, &unseen_ids}) {
      std::string streamed;
      for (const int64_t id : *part) streamed += tok.token_text(id);
      EXPECT_EQ(streamed, tok.decode(*part)) << type;
      EXPECT_EQ(tok.text_bytes(*part), static_cast<int64_t>(streamed.size())) << type;
    }
    EXPECT_EQ(tok.text_bytes(ids), static_cast<int64_t>(corpus.text.size()));
  }
  // The byte and char tokenizers count bytes too.
  const std::string text = "é\n🎉a";
  EXPECT_EQ(data::Tokenizer::chars(text).text_bytes(data::Tokenizer::chars(text).encode(text)), 8);
  EXPECT_EQ(data::Tokenizer::bytes().text_bytes(data::Tokenizer::bytes().encode(text)), 8);
}

TEST(SentencePiece, WithoutByteFallbackUnknownCharactersBecomeUnk) {
  const data::TextCorpus corpus = corpus_of(make_corpus());
  data::SentencePieceOptions o{.vocab_size = 120, .model_type = "bpe", .byte_fallback = false};
  const data::Tokenizer tok = data::Tokenizer::sentencepiece(corpus, o);
  EXPECT_EQ(tok.vocab_size(), 120);  // no 256 byte pieces: a small vocabulary fits
  const std::string words = "the cat sat on a mat\nthen  café naïve Σίσυφος slept\n";
  EXPECT_EQ(tok.decode(tok.encode(words)), words);
  const std::vector<int64_t> ids = tok.encode("cat 🎉");
  EXPECT_EQ(ids.back(), 0) << "the emoji has no piece: <unk> (id 0)";
  EXPECT_EQ(tok.token_text(0), " \xE2\x81\x87 ");  // " ⁇ ": what sentencepiece decodes <unk> to
}

TEST(SentencePiece, VocabularySavesWithItsModelAndLoads) {
  TempDir dir;
  const data::Tokenizer tok = data::Tokenizer::sentencepiece(corpus_of(make_corpus()), kSmall);
  tok.save(dir.file("vocab.json"));
  const nlohmann::json j = nlohmann::json::parse(read_bytes(dir.file("vocab.json")));
  EXPECT_EQ(j.at("type"), "sentencepiece");
  EXPECT_EQ(j.at("vocab_size"), 360);
  EXPECT_EQ(j.at("model"), "tokenizer.model");
  EXPECT_FALSE(j.contains("tokens"));
  EXPECT_EQ(read_bytes(dir.file("tokenizer.model")), tok.sentencepiece_model());
  const data::Tokenizer loaded = data::Tokenizer::load(dir.file("vocab.json"));
  EXPECT_EQ(loaded, tok);
  const std::string text = make_corpus(11, 300);
  EXPECT_EQ(loaded.encode(text), tok.encode(text));
  // The model file alone is a SentencePiece model, as spm_train writes them.
  EXPECT_EQ(data::Tokenizer::sentencepiece_file(dir.file("tokenizer.model")), tok);
  // A folder moved elsewhere keeps working: vocab.json names the model relative to itself.
  const fs::path moved = fs::path(dir.file("moved"));
  fs::create_directory(moved);
  fs::copy_file(dir.file("vocab.json"), moved / "vocab.json");
  fs::copy_file(dir.file("tokenizer.model"), moved / "tokenizer.model");
  EXPECT_EQ(data::Tokenizer::load((moved / "vocab.json").string()), tok);
}

// tests/data/spm_llama_style.model was trained by spm_train with Llama-2's settings (a dummy prefix space,
// digits split, byte fallback, <s> and </s>); spm_llama_style.ids is spm_encode's output for each line of
// spm_sample.txt. Ember uses the given model as it is: the same ids, and the text back.
TEST(SentencePiece, GivenModelFileEncodesAsSpmEncode) {
  const data::Tokenizer tok = data::Tokenizer::sentencepiece_file(data_file("spm_llama_style.model"));
  EXPECT_EQ(tok.vocab_size(), 400);
  EXPECT_EQ(tok.token_text(1), "");  // <s>: a control token stands for no text
  std::istringstream samples(read_bytes(data_file("spm_sample.txt")));
  std::istringstream expected(read_bytes(data_file("spm_llama_style.ids")));
  std::string line, ids_line;
  int lines = 0;
  while (std::getline(samples, line)) {
    ASSERT_TRUE(std::getline(expected, ids_line)) << "spm_llama_style.ids has fewer lines than spm_sample.txt";
    std::vector<int64_t> want;
    std::istringstream ids(ids_line);
    for (int64_t id; ids >> id;) want.push_back(id);
    EXPECT_EQ(tok.encode(line), want) << "line " << lines << ": " << line;
    EXPECT_EQ(tok.decode(want), line);
    ++lines;
  }
  EXPECT_EQ(lines, 5);
  // Saved with a run, it is the same file.
  TempDir dir;
  tok.save(dir.file("vocab.json"));
  EXPECT_EQ(read_bytes(dir.file("tokenizer.model")), read_bytes(data_file("spm_llama_style.model")));
}

TEST(SentencePiece, ErrorsNameTheFileOrTheProblem) {
  TempDir dir;
  expect_error([&] { data::Tokenizer::sentencepiece_file(dir.file("missing.model")); },
               {"missing.model", "cannot open the SentencePiece model file", "no such file"});
  write_text(dir.file("garbage.model"), "this is not a protobuf \xff\xfe\x01 at all");
  expect_error([&] { data::Tokenizer::sentencepiece_file(dir.file("garbage.model")); },
               {"garbage.model", "not a SentencePiece model", "spm_train"});
  write_text(dir.file("empty.model"), "");
  expect_error([&] { data::Tokenizer::sentencepiece_file(dir.file("empty.model")); },
               {"empty.model", "not a SentencePiece model"});

  // Too small a vocabulary: sentencepiece's own message, as a SentencePieceTrainingError.
  const data::TextCorpus corpus = corpus_of(make_corpus());
  try {
    data::Tokenizer::sentencepiece(corpus, {.vocab_size = 50});
    ADD_FAILURE() << "vocab_size 50 cannot hold the byte pieces";
  } catch (const data::SentencePieceTrainingError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("vocab_size 50"), std::string::npos) << m;
    EXPECT_NE(m.find("Vocabulary size is smaller than required_chars"), std::string::npos) << m;
  }
  // Too large: more pieces than the corpus holds.
  for (const char* type : {"bpe", "unigram"})
    EXPECT_THROW(data::Tokenizer::sentencepiece(corpus, {.vocab_size = 1000, .model_type = type}),
                 data::SentencePieceTrainingError) << type;
  expect_error([&] { data::Tokenizer::sentencepiece(corpus, {.model_type = "word"}); }, {"model_type", "'word'"});
  expect_error([&] { data::Tokenizer::sentencepiece(corpus_of(""), kSmall); }, {"the text is empty"});
  // Invalid UTF-8: named by file and offset, before any training; encoding checks it too.
  data::TextCorpus bad = corpus_of("good text\nthen \xff bad");
  bad.files[0].path = "bad.txt";
  expect_error([&] { data::Tokenizer::sentencepiece(bad, kSmall); }, {"bad.txt: invalid UTF-8 at byte 15"});
  const data::Tokenizer tok = data::Tokenizer::sentencepiece(corpus, kSmall);
  expect_error([&] { tok.encode("a\xC3", "--prompt"); }, {"--prompt: invalid UTF-8 at byte 1"});
  expect_error([&] { tok.decode(std::vector<int64_t>{5, 360}); }, {"id 360 at position 1", "ids 0..359"});
  expect_error([&] { tok.token_text(-1); }, {"id -1"});

  // vocab.json: its model missing, another model in its place, no "model" key.
  tok.save(dir.file("vocab.json"));
  const std::string model = dir.file("tokenizer.model");
  const std::string saved = read_bytes(model);
  data::Tokenizer::sentencepiece(corpus, {.vocab_size = 350}).save(dir.file("other.json"));  // rewrites tokenizer.model
  expect_error([&] { data::Tokenizer::load(dir.file("vocab.json")); },
               {dir.file("vocab.json"), "\"vocab_size\" is 360 but", "has 350 pieces"});
  fs::remove(model);
  expect_error([&] { data::Tokenizer::load(dir.file("vocab.json")); },
               {model, "the SentencePiece model that", "is missing", "copy it with the run"});
  write_text(model, "garbage");
  expect_error([&] { data::Tokenizer::load(dir.file("vocab.json")); }, {model, "not a SentencePiece model"});
  write_text(model, saved);
  EXPECT_EQ(data::Tokenizer::load(dir.file("vocab.json")), tok);
  write_text(dir.file("nomodel.json"), R"({"format": "ember.vocab", "version": 1, "type": "sentencepiece", "vocab_size": 360})");
  expect_error([&] { data::Tokenizer::load(dir.file("nomodel.json")); },
               {"nomodel.json", "not a valid vocabulary file", "needs \"model\""});
}
