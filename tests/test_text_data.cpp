// Text data for language modelling: reading files and folders, the byte and char tokenizers, vocab.json,
// the split by position, the windows and their determinism through the DataLoader, the bigram baseline.
#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>
#include <set>

#include <nlohmann/json.hpp>

#include "data_test_util.h"

using namespace ember;
using namespace ember::testing;

namespace {

// Tokens whose value is their position, so a window's values say where it was cut from.
data::TokenStream positions(int64_t n) {
  auto v = std::make_shared<std::vector<int64_t>>(n);
  std::iota(v->begin(), v->end(), int64_t{0});
  return v;
}

std::vector<int64_t> values(const Tensor& t) { return t.to_vector<int64_t>(); }

// Every batch of one epoch, inputs then targets.
std::vector<std::vector<int64_t>> run_epoch(data::DataLoader& loader) {
  std::vector<std::vector<int64_t>> out;
  for (auto& batch : loader) {
    out.push_back(values(batch.input));
    out.push_back(values(batch.target));
  }
  return out;
}

}  // namespace

// --- Tokenizers --------------------------------------------------------------------------------------------

TEST(TextTokenizer, ByteIdsAreTheBytesOfAnyText) {
  const std::string text("a\0\xff\xc3(\x80 z", 8);  // a NUL and invalid UTF-8: the byte tokenizer takes them
  const data::Tokenizer tok = data::Tokenizer::bytes();
  EXPECT_EQ(tok.vocab_size(), 256);
  const std::vector<int64_t> ids = tok.encode(text);
  EXPECT_EQ(ids, (std::vector<int64_t>{'a', 0, 255, 0xc3, '(', 0x80, ' ', 'z'}));
  EXPECT_EQ(tok.decode(ids), text);
  expect_error([&] { tok.decode(std::vector<int64_t>{1, 256}); }, {"id 256", "position 1", "byte vocabulary"});
}

TEST(TextTokenizer, CharVocabIsTheSortedCodePointsAndRoundTrips) {
  // 1-, 2-, 3- and 4-byte characters: e-acute, em dash, a CJK ideograph, an emoji.
  const std::string text = "h\xc3\xa9llo \xe2\x80\x94 \xe6\x97\xa5\xf0\x9f\x8e\x89\nh\xc3\xa9";
  const data::Tokenizer tok = data::Tokenizer::chars(text);
  EXPECT_EQ(tok.type(), data::Tokenizer::Type::Char);
  const std::vector<char32_t> expected = {U'\n', U' ', U'h', U'l', U'o', 0xE9, 0x2014, 0x65E5, 0x1F389};
  EXPECT_EQ(tok.code_points(), expected);
  EXPECT_EQ(tok.vocab_size(), 9);
  const std::vector<int64_t> ids = tok.encode(text);
  EXPECT_EQ(ids, (std::vector<int64_t>{2, 5, 3, 3, 4, 1, 6, 1, 7, 8, 0, 2, 5}));
  EXPECT_EQ(tok.decode(ids), text);
  expect_error([&] { tok.decode(std::vector<int64_t>{-1}); }, {"id -1", "char vocabulary", "ids 0..8"});
}

TEST(TextTokenizer, InvalidUtf8NamesTheOffsetAndWhy) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"ab\xc3(", {"byte 2", "0x28, not a continuation byte"}},
      {"abc\x80", {"byte 3", "continuation byte without a lead byte"}},
      {"\xc0\xaf", {"byte 0", "never occurs in UTF-8"}},          // C0: only ever an overlong lead
      {"x\xe0\x80\xaf", {"byte 1", "overlong 3-byte encoding"}},   // '/' in 3 bytes
      {"xy\xed\xa0\x80", {"byte 2", "surrogate"}},                 // U+D800
      {"\xf4\x90\x80\x80", {"byte 0", "past U+10FFFF"}},
      {"abcd\xe6\x97", {"byte 4", "ends inside a 3-byte character"}},
  };
  for (const auto& [text, pieces] : cases) {
    std::vector<std::string> all = pieces;
    all.push_back("snippet.txt: invalid UTF-8");
    all.push_back("byte tokenizer");  // the advice
    expect_error([&] { data::Tokenizer::chars(text, "snippet.txt"); }, all);
    expect_error([&] { data::decode_utf8(text, "snippet.txt"); }, all);
    EXPECT_EQ(data::Tokenizer::bytes().encode(text).size(), text.size());
  }
  // Encoding with a fitted vocabulary validates too.
  expect_error([&] { data::Tokenizer::chars("ab").encode("a\xff", "input"); }, {"input: invalid UTF-8 at byte 1"});
}

TEST(TextTokenizer, UnknownCharacterIsNamed) {
  const data::Tokenizer tok = data::Tokenizer::chars("abc\n");
  expect_error([&] { tok.encode("abd", "prompt"); }, {"prompt", "'d' (U+0064)", "at byte 2", "4 characters"});
  expect_error([&] { tok.encode("a\xc3\xa9", "prompt"); }, {"'\xc3\xa9' (U+00E9)", "at byte 1"});
  expect_error([&] { tok.encode("a\t"); }, {"U+0009", "at byte 1"});  // a control character: its code only
}

TEST(TextTokenizer, VocabularySavesAndLoads) {
  TempDir dir;
  const data::Tokenizer chars = data::Tokenizer::chars("z\"\\ \xc3\xa9\n\xf0\x9f\x8e\x89");
  chars.save(dir.file("vocab.json"));
  const data::Tokenizer loaded = data::Tokenizer::load(dir.file("vocab.json"));
  EXPECT_EQ(loaded, chars);
  EXPECT_EQ(loaded.code_points(), chars.code_points());

  std::ifstream in(dir.file("vocab.json"));
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["type"].get<std::string>(), "char");
  EXPECT_EQ(j["vocab_size"].get<int64_t>(), 7);
  EXPECT_EQ(j["tokens"][0].get<std::string>(), "\n");
  EXPECT_EQ(j["tokens"][6].get<std::string>(), "\xf0\x9f\x8e\x89");

  data::Tokenizer::bytes().save(dir.file("bytes.json"));
  EXPECT_EQ(data::Tokenizer::load(dir.file("bytes.json")), data::Tokenizer::bytes());
  EXPECT_NE(data::Tokenizer::load(dir.file("bytes.json")), chars);
}

TEST(TextTokenizer, CorruptVocabularyIsAClearError) {
  TempDir dir;
  const auto head = std::string(R"({"format": "ember.vocab", "version": 1, )");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "it is not JSON"},
      {R"({"format": "ember.vocab", "version": 1, "type": "char", "tokens": ["a", )", "it is not JSON"},  // truncated
      {"[1, 2]", "not an object"},
      {R"({"type": "char", "vocab_size": 1, "tokens": ["a"]})", "\"format\" is not \"ember.vocab\""},
      {head + R"("type": "word", "vocab_size": 1, "tokens": ["a"]})", "unknown tokenizer type \"word\""},
      {head + R"("vocab_size": 1, "tokens": ["a"]})", "\"type\" is missing"},
      {head + R"("type": "char", "vocab_size": "2", "tokens": ["a", "b"]})", "\"vocab_size\" is missing or not an integer"},
      {head + R"("type": "char", "vocab_size": 2, "tokens": ["b", "a"]})", "token 1 'a' (U+0061) is not after"},
      {head + R"("type": "char", "vocab_size": 2, "tokens": ["a", "a"]})", "token 1 'a' (U+0061) is not after"},
      {head + R"("type": "char", "vocab_size": 2, "tokens": ["a", "bc"]})", "token 1 is \"bc\", not one character"},
      {head + R"("type": "char", "vocab_size": 2, "tokens": ["a", 7]})", "token 1 is not a string"},
      {head + R"("type": "char", "vocab_size": 3, "tokens": ["a", "b"]})", "\"vocab_size\" is 3 but there are 2 tokens"},
      {head + R"("type": "char", "vocab_size": 0, "tokens": []})", "\"tokens\" is empty"},
      {head + R"("type": "char", "vocab_size": 1})", "\"tokens\" is missing"},
      {head + R"("type": "byte", "vocab_size": 300})", "a byte vocabulary has 256 tokens, not 300"},
  };
  for (const auto& [text, piece] : cases) {
    const std::string path = dir.write("vocab.json", text);
    expect_error([&] { data::Tokenizer::load(path); }, {path, "not a valid vocabulary file", piece, "Tokenizer::save"});
  }
  const std::string newer =
      dir.write("newer.json", R"({"format": "ember.vocab", "version": 2, "type": "byte", "vocab_size": 256})");
  expect_error([&] { data::Tokenizer::load(newer); }, {newer, "format version 2", "newer Ember"});
  expect_error([&] { data::Tokenizer::load(dir.file("missing.json")); }, {"missing.json", "cannot open"});
}

// --- Reading files and folders -----------------------------------------------------------------------------

TEST(TextRead, FolderFilesInSortedOrderWithSeparator) {
  TempDir dir;
  dir.write("b.txt", "bee\n");
  dir.write("a.txt", "\xc3\xa4pfel");
  dir.write("c", "sea");
  dir.write("c.dat", std::string("\x00\x01\xff", 3));  // an index file, skipped by extension
  dir.write(".hidden", "never read");
  std::filesystem::create_directory(dir.dir() / "sub");
  dir.write("sub/d.txt", "never read");
  std::filesystem::create_symlink(dir.dir() / "a.txt", dir.dir() / "a.u8");  // an alias: not read twice

  const data::TextCorpus corpus = data::read_text(dir.dir().string(), {.separator = "|", .skip_extensions = {".dat"}});
  EXPECT_EQ(corpus.text, "\xc3\xa4pfel|bee\n|sea");
  ASSERT_EQ(corpus.files.size(), 3u);
  EXPECT_EQ(std::filesystem::path(corpus.files[0].path).filename(), "a.txt");
  EXPECT_EQ(std::filesystem::path(corpus.files[1].path).filename(), "b.txt");
  EXPECT_EQ(std::filesystem::path(corpus.files[2].path).filename(), "c");
  EXPECT_EQ(corpus.files[1].offset, 7u);
  EXPECT_EQ(corpus.files[1].size, 4u);
  EXPECT_EQ(corpus.files[2].offset, 12u);

  // The char tokenizer encodes the whole stream, separators included; decoding gives the text back.
  const data::Tokenizer tok = data::Tokenizer::chars(corpus);
  EXPECT_EQ(tok.decode(tok.encode(corpus)), corpus.text);
  EXPECT_NE(std::find(tok.code_points().begin(), tok.code_points().end(), U'|'), tok.code_points().end());

  // Without skip_extensions the binary index is read, and the char tokenizer names it and the offset.
  const data::TextCorpus all = data::read_text(dir.dir().string());
  EXPECT_EQ(all.files.size(), 4u);
  expect_error([&] { data::Tokenizer::chars(all); }, {"c.dat: invalid UTF-8 at byte 2", "0xFF"});
  EXPECT_EQ(data::Tokenizer::bytes().encode(all).size(), all.text.size());

  // A single file is read as it is.
  const data::TextCorpus one = data::read_text(dir.file("b.txt"));
  EXPECT_EQ(one.text, "bee\n");
  ASSERT_EQ(one.files.size(), 1u);
}

TEST(TextRead, InvalidUtf8InAFolderNamesTheFileAndItsOffset) {
  TempDir dir;
  dir.write("1.txt", "good text\n");
  dir.write("2.txt", "also good\nbut \xe9 is latin-1\n");
  const data::TextCorpus corpus = data::read_text(dir.dir().string());
  expect_error([&] { data::Tokenizer::chars(corpus); }, {"2.txt: invalid UTF-8 at byte 14", "iconv"});
  const data::Tokenizer ok = data::Tokenizer::chars("good text\nalsbu");
  expect_error([&] { ok.encode(corpus); }, {"2.txt: invalid UTF-8 at byte 14"});
}

TEST(TextRead, MissingOrEmptyIsAClearError) {
  TempDir dir;
  expect_error([&] { data::read_text(dir.file("nope")); }, {"nope", "no such file or folder"});
  std::filesystem::create_directory(dir.dir() / "empty");
  dir.write("empty/.keep", "");
  expect_error([&] { data::read_text(dir.file("empty")); }, {"empty", "no text file to read", "1 entries skipped"});
  expect_error([&] { data::read_fortunes(dir.file("no-fortunes")); }, {"no-fortunes", "apt-get install fortunes"});
  expect_error([&] { data::Tokenizer::chars(""); }, {"the text is empty"});
}

// --- Split and windows -------------------------------------------------------------------------------------

TEST(TextSplit, ByPositionAndNoWindowCrossesIt) {
  const data::TextSplits s = data::text_splits(positions(1000), {.context = 16, .val_fraction = 0.1, .seed = 3});
  EXPECT_EQ(s.train_end, 900);
  EXPECT_EQ(s.train->size(), 900 / 16);  // samples_per_epoch's default: train tokens / context
  EXPECT_EQ(s.train->begin(), 0);
  EXPECT_EQ(s.train->end(), 900);
  ASSERT_NE(s.validation, nullptr);
  EXPECT_EQ(s.validation->begin(), 900);
  for (int64_t i = 0; i < s.train->size(); ++i) {
    const data::Example e = s.train->get(i);
    for (int64_t v : values(e.target)) EXPECT_LT(v, 900);  // targets are the last tokens a window reads
  }
  for (int64_t i = 0; i < s.validation->size(); ++i)
    for (int64_t v : values(s.validation->get(i).input)) EXPECT_GE(v, 900);

  const data::TextSplits more = data::text_splits(positions(1000), {.context = 8, .samples_per_epoch = 5000});
  EXPECT_EQ(more.train->size(), 5000);
  const data::TextSplits none = data::text_splits(positions(100), {.context = 8, .val_fraction = 0.0});
  EXPECT_EQ(none.train_end, 100);
  EXPECT_EQ(none.validation, nullptr);

  expect_error([&] { data::text_splits(positions(100), {.context = 10, .val_fraction = 0.1}); },
               {"validation part", "holds 10 of the 100 tokens", "context + 1 = 11"});
  expect_error([&] { data::text_splits(positions(10), {.context = 10, .val_fraction = 0.0}); },
               {"train part holds 10", "context + 1 = 11"});
  expect_error([&] { data::text_splits(positions(100), {.context = 4, .val_fraction = 1.0}); }, {"val_fraction is 1"});
  expect_error([&] { data::text_splits(positions(100), {.context = 0}); }, {"context is 0"});
}

TEST(TextSplit, WindowTargetIsTheInputShiftedByOne) {
  const data::TokenStream tokens = positions(500);
  const auto w = data::TokenWindows::random(tokens, 100, 400, 12, 300, 7);
  EXPECT_EQ(w->spec().input_shape, Shape({12}));
  EXPECT_EQ(w->spec().target_dtype, DType::i64);
  const std::vector<int64_t> idx = {5, 0, 299, 5};
  Tensor in = empty({4, 12}, {.dtype = DType::i64}), tg = empty({4, 12}, {.dtype = DType::i64});
  w->get_batch(idx, in, tg);
  const std::vector<int64_t> bin = values(in), btg = values(tg);
  for (size_t b = 0; b < idx.size(); ++b) {
    const int64_t s = w->start(idx[b]);
    EXPECT_GE(s, 100);
    EXPECT_LE(s + 12, 399);  // the target's last token is inside [100, 400)
    const data::Example e = w->get(idx[b]);
    const std::vector<int64_t> x = values(e.input), y = values(e.target);
    for (int64_t k = 0; k < 12; ++k) {
      EXPECT_EQ(x[k], s + k);
      EXPECT_EQ(y[k], s + k + 1);
      EXPECT_EQ(bin[b * 12 + k], x[k]);
      EXPECT_EQ(btg[b * 12 + k], y[k]);
    }
  }
  expect_error([&] { w->get(300); }, {"index 300 is out of range"});
  expect_error([&] { w->get_batch(idx, empty({4, 12}), tg); }, {"input buffer", "i64"});
}

TEST(TextSplit, RandomStartsArePureInTheSeedAndReachEveryPosition) {
  const data::TokenStream tokens = positions(60);
  // [0, 60) with T = 9: starts 0..50, 51 of them.
  const auto a = data::TokenWindows::random(tokens, 0, 60, 9, 5000, 1);
  const auto b = data::TokenWindows::random(tokens, 0, 60, 9, 5000, 1);
  const auto c = data::TokenWindows::random(tokens, 0, 60, 9, 5000, 2);
  std::map<int64_t, int> hits;
  int same_as_other_seed = 0;
  for (int64_t i = 0; i < 5000; ++i) {
    EXPECT_EQ(a->start(i), b->start(i));
    same_as_other_seed += a->start(i) == c->start(i);
    ++hits[a->start(i)];
  }
  EXPECT_LT(same_as_other_seed, 500);  // independent seeds agree ~1/51 of the time
  ASSERT_EQ(hits.size(), 51u);
  EXPECT_EQ(hits.begin()->first, 0);
  EXPECT_EQ(hits.rbegin()->first, 50);
  for (const auto& [start, n] : hits) EXPECT_GT(n, 40) << "start " << start;  // ~98 each
}

// set_epoch draws another set of windows per epoch, a pure function of (seed, epoch, index): epoch 0 is the
// set random() starts with, and going back to an epoch gives its windows again. Sequential windows ignore it.
TEST(TextSplit, EveryEpochDrawsItsOwnWindows) {
  const data::TokenStream tokens = positions(1000);
  const auto a = data::TokenWindows::random(tokens, 0, 1000, 9, 200, 3);
  const auto fresh = data::TokenWindows::random(tokens, 0, 1000, 9, 200, 3);
  std::vector<int64_t> epoch0, epoch1, again0, epoch1_other;
  for (int64_t i = 0; i < 200; ++i) epoch0.push_back(a->start(i));
  a->set_epoch(1);
  for (int64_t i = 0; i < 200; ++i) epoch1.push_back(a->start(i));
  fresh->set_epoch(1);
  for (int64_t i = 0; i < 200; ++i) epoch1_other.push_back(fresh->start(i));
  a->set_epoch(0);
  for (int64_t i = 0; i < 200; ++i) again0.push_back(a->start(i));
  EXPECT_EQ(again0, epoch0);
  EXPECT_EQ(epoch1_other, epoch1);
  int same = 0;
  for (size_t i = 0; i < 200; ++i) same += epoch0[i] == epoch1[i];
  EXPECT_LT(same, 10);  // independent draws agree ~1/991 of the time
  const auto seq = data::TokenWindows::sequential(tokens, 0, 1000, 9);
  seq->set_epoch(5);
  EXPECT_EQ(seq->start(3), 27);
  expect_error([&] { a->set_epoch(-1); }, {"set_epoch", "-1"});
}

TEST(TextSplit, LoaderBatchesAreTheSameForAnyWorkerCountAndResumeExactly) {
  const data::TextSplits s = data::text_splits(positions(3000), {.context = 10, .seed = 11});
  auto loader_with = [&](int workers) {
    return std::make_unique<data::DataLoader>(
        s.train, data::DataLoaderOptions{.batch_size = 8, .shuffle = true, .num_workers = workers, .seed = 5});
  };
  auto reference = loader_with(0);
  const auto epoch0 = run_epoch(*reference), epoch1 = run_epoch(*reference);
  EXPECT_NE(epoch0, epoch1);  // a new order each epoch
  for (int workers : {1, 3}) {
    auto loader = loader_with(workers);
    EXPECT_EQ(run_epoch(*loader), epoch0) << workers << " workers";
    EXPECT_EQ(run_epoch(*loader), epoch1) << workers << " workers";
  }
  // Targets are the inputs shifted by one in every batch.
  for (size_t k = 0; k < epoch0.size(); k += 2)
    for (size_t j = 0; j < epoch0[k].size(); ++j) EXPECT_EQ(epoch0[k + 1][j], epoch0[k][j] + 1);

  // Stop in epoch 1 after 7 batches; a fresh loader resumed from there yields the rest of epoch 1.
  auto first = loader_with(2);
  run_epoch(*first);
  int seen = 0;
  for (auto& batch : *first) {
    (void)batch;
    if (++seen == 7) break;
  }
  const data::LoaderState saved = data::LoaderState::parse(first->state().str());
  auto resumed = loader_with(3);
  resumed->load_state(saved);
  const auto rest = run_epoch(*resumed);
  EXPECT_EQ(rest, std::vector<std::vector<int64_t>>(epoch1.begin() + 2 * 7, epoch1.end()));
}

TEST(TextSplit, ValidationWindowsCoverTheSplitExactlyOnce) {
  for (int64_t n : {1037, 1000, 1100}) {
    const data::TextSplits s = data::text_splits(positions(n), {.context = 16, .val_fraction = 0.2});
    const int64_t first = s.train_end, tokens = n - first;
    std::map<int64_t, int> predicted;
    for (int64_t i = 0; i < s.validation->size(); ++i)
      for (int64_t v : values(s.validation->get(i).target)) ++predicted[v];
    const int64_t covered = s.validation->size() * 16;
    EXPECT_LT(tokens - 1 - covered, 16) << "more than a window's worth of validation text left out";
    ASSERT_EQ(static_cast<int64_t>(predicted.size()), covered);
    EXPECT_EQ(predicted.begin()->first, first + 1);  // the first validation token is only an input
    EXPECT_EQ(predicted.rbegin()->first, first + covered);
    for (const auto& [token, count] : predicted) EXPECT_EQ(count, 1) << "token " << token;
    // Deterministic: no seed involved.
    const data::TextSplits again = data::text_splits(positions(n), {.context = 16, .val_fraction = 0.2, .seed = 99});
    for (int64_t i = 0; i < s.validation->size(); ++i) EXPECT_EQ(again.validation->start(i), s.validation->start(i));
  }
}

// --- The bigram baseline -----------------------------------------------------------------------------------

TEST(TextBaseline, BigramCrossEntropyByHand) {
  // Train pairs of 0 1 0 1 0 1: (0,1) ×3, (1,0) ×2. Evaluated: (1,0) → (2+1)/(2+2), (0,1) → (3+1)/(3+2).
  const std::vector<int64_t> tokens = {0, 1, 0, 1, 0, 1, 0, 1};
  EXPECT_NEAR(data::bigram_cross_entropy(tokens, 6, 2), -(std::log(0.75) + std::log(0.8)) / 2, 1e-12);
  // With a vocabulary of 4 the unseen ids take their add-one share: (2+1)/(2+4), (3+1)/(3+4).
  EXPECT_NEAR(data::bigram_cross_entropy(tokens, 6, 4), -(std::log(0.5) + std::log(4.0 / 7.0)) / 2, 1e-12);
  expect_error([&] { data::bigram_cross_entropy(tokens, 8, 2); }, {"train_end is 8"});
  expect_error([&] { data::bigram_cross_entropy(tokens, 4, 1); }, {"token 1 is 1"});
}

// The default corpus, when Debian's fortunes package is installed (scripts/setup.sh): it reads, encodes
// and decodes losslessly with the char tokenizer, and its bigram baseline is the bar a model must beat.
TEST(TextBaseline, FortunesCorpus) {
  if (!std::filesystem::is_directory(data::kFortunesDir)) GTEST_SKIP() << "no " << data::kFortunesDir << " (apt-get install fortunes)";
  const data::TextCorpus corpus = data::read_fortunes();
  for (const data::TextFile& f : corpus.files) {
    EXPECT_FALSE(f.path.ends_with(".dat")) << f.path;
    EXPECT_FALSE(f.path.ends_with(".u8")) << f.path;
  }
  const data::Tokenizer tok = data::Tokenizer::chars(corpus);
  const std::vector<int64_t> ids = tok.encode(corpus);
  EXPECT_EQ(tok.decode(ids), corpus.text);
  const auto train_end = static_cast<int64_t>(std::llround(0.9 * static_cast<double>(ids.size())));
  const double nats = data::bigram_cross_entropy(ids, train_end, tok.vocab_size());
  std::printf("fortunes: %zu files, %zu bytes, %zu chars, char vocab %lld, bigram baseline %.4f nats/char\n",
              corpus.files.size(), corpus.text.size(), ids.size(), static_cast<long long>(tok.vocab_size()), nats);
  EXPECT_LT(nats, std::log(static_cast<double>(tok.vocab_size())) - 1.0);  // far better than uniform
  EXPECT_GT(nats, 1.5);                                                    // a bigram model is not that good
}
