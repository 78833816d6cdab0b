#include "data/sentencepiece.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>

#include "base/error.h"
#include "base/parallel.h"

namespace ember::data {
namespace {

// The module's table, loaded once (data/sentencepiece.h): $EMBER_SENTENCEPIECE_MODULE, else where
// `cmake --install` puts it, else where the build wrote it.
const SentencePieceApi& api() {
  static const SentencePieceApi* const table = [] {
    std::vector<std::string> paths;
    if (const char* env = std::getenv("EMBER_SENTENCEPIECE_MODULE")) paths.emplace_back(env);
    paths.emplace_back(EMBER_SENTENCEPIECE_INSTALLED);
    paths.emplace_back(EMBER_SENTENCEPIECE_BUILT);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    // The sanitizers' runtimes refuse RTLD_DEEPBIND: the module's protobuf then binds to the program's, if
    // it has one, which sentencepiece's cannot use (it fails its version check).
    constexpr int kFlags = RTLD_NOW | RTLD_LOCAL;
    EMBER_CHECK(::dlsym(RTLD_DEFAULT, "_ZN6google8protobuf8internal13VerifyVersionEiiPKc") == nullptr,
                "SentencePiece tokenizer: in a sanitizer build it cannot be kept apart from the protobuf this "
                "program links (the sanitizer runtime refuses RTLD_DEEPBIND); use it in a normal build, or in a "
                "program without the TensorBoard and ONNX writers");
#else
    constexpr int kFlags = RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND;
#endif
    std::string tried;
    for (const std::string& path : paths) {
      void* handle = ::dlopen(path.c_str(), kFlags);
      if (handle == nullptr) {
        tried += "\n  " + path + ": " + ::dlerror();
        continue;
      }
      using Entry = const SentencePieceApi* (*)();
      const auto entry = reinterpret_cast<Entry>(::dlsym(handle, "ember_sentencepiece_api"));
      const SentencePieceApi* found = entry != nullptr ? entry() : nullptr;
      if (found != nullptr && found->size == sizeof(SentencePieceApi)) return found;
      tried += "\n  " + path + ": not this Ember's SentencePiece module (rebuild or reinstall Ember)";
    }
    detail::throw_error("SentencePiece tokenizer: cannot load Ember's module ember_sentencepiece, which links "
                        "libsentencepiece (install libsentencepiece-dev, as scripts/setup.sh does, and build Ember; "
                        "or point EMBER_SENTENCEPIECE_MODULE at libember_sentencepiece.so). Tried:",
                        tried);
  }();
  return *table;
}

// The longest line, newline included: sentencepiece skips longer sentences (4192 bytes by default).
size_t longest_line(std::string_view text) {
  size_t longest = 0;
  for (size_t pos = 0; pos < text.size();) {
    const size_t end = std::min(text.find('\n', pos), text.size());
    longest = std::max(longest, end + 1 - pos);
    pos = end + 1;
  }
  return longest;
}

}  // namespace

std::shared_ptr<const SentencePieceModel> train_sentencepiece(std::string_view text, const SentencePieceOptions& o) {
  EMBER_CHECK(!text.empty(), "SentencePiece: the text is empty, so there is nothing to train a model on; give the "
                             "training text");
  EMBER_CHECK(o.model_type == "bpe" || o.model_type == "unigram", "SentencePiece: model_type is '", o.model_type,
              "'; expected bpe or unigram");
  // Every byte of the text is kept (identity normalization, no dummy prefix, spaces as they are), all of it
  // is read in order (no sampling or shuffling), and nothing but the text's pieces and <unk> is added.
  const std::unordered_map<std::string, std::string> args = {
      {"vocab_size", std::to_string(o.vocab_size)},
      {"model_type", o.model_type},
      {"character_coverage", std::to_string(o.character_coverage)},
      {"byte_fallback", o.byte_fallback ? "true" : "false"},
      {"num_threads", std::to_string(o.model_type == "bpe" ? cpu::num_threads() : 1)},
      {"input_sentence_size", "0"},
      {"shuffle_input_sentence", "false"},
      {"max_sentence_length", std::to_string(std::max<size_t>(4192, longest_line(text)))},
      {"normalization_rule_name", "identity"},
      {"add_dummy_prefix", "false"},
      {"remove_extra_whitespaces", "false"},
      {"allow_whitespace_only_pieces", "true"},
      {"unk_id", "0"},
      {"bos_id", "-1"},
      {"eos_id", "-1"},
      {"pad_id", "-1"},
      {"minloglevel", "2"},  // its progress lines (INFO) and warnings stay off the console
  };
  std::string proto, error;
  if (!api().train(text, args, proto, error))
    throw SentencePieceTrainingError("SentencePiece cannot train a " + o.model_type + " model of vocab_size " +
                                     std::to_string(o.vocab_size) + " on this text (" + std::to_string(text.size()) +
                                     " bytes): " + error);
  return sentencepiece_from_bytes(std::move(proto), "the SentencePiece model trained here");
}

std::shared_ptr<const SentencePieceModel> sentencepiece_from_bytes(std::string bytes, const std::string& source) {
  const SentencePieceApi& spm = api();
  std::string error;
  auto model = std::make_shared<SentencePieceModel>();
  model->processor = std::shared_ptr<void>(spm.load(bytes, error), spm.release);
  if (model->processor != nullptr) model->token_text = spm.token_texts(model->processor.get());
  if (model->token_text.empty())
    detail::throw_error(source, ": not a SentencePiece model (sentencepiece: ", error.empty() ? "no pieces" : error,
                        "); give a .model file written by spm_train or SentencePieceTrainer (e.g. a Llama-2 or T5 "
                        "tokenizer.model)");
  model->proto = std::move(bytes);
  model->source = source;
  return model;
}

std::vector<int64_t> sentencepiece_encode(const SentencePieceModel& model, std::string_view text) {
  std::vector<int> ids;
  std::string error;
  EMBER_CHECK(api().encode(model.processor.get(), text, ids, error), "SentencePiece: encoding failed (", model.source,
              "): ", error);
  return {ids.begin(), ids.end()};
}

std::string sentencepiece_decode(const SentencePieceModel& model, std::span<const int64_t> ids) {
  const std::vector<int> narrow(ids.begin(), ids.end());
  std::string text, error;
  EMBER_CHECK(api().decode(model.processor.get(), narrow, text, error), "SentencePiece: decoding failed (",
              model.source, "): ", error);
  return text;
}

}  // namespace ember::data
