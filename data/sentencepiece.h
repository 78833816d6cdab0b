#pragma once
// Internal (not installed): the SentencePiece kind of data::Tokenizer. The sentencepiece library
// (libsentencepiece-dev) carries its own copy of protobuf-lite and exports its symbols, which would take the
// place of the protobuf that Ember's TensorBoard and ONNX writers use (and crash them) if it were linked into
// the program. So only the module ember_sentencepiece (data/sentencepiece_module.cpp) links it, and
// data/sentencepiece.cpp loads that module on first use with dlopen(RTLD_LOCAL | RTLD_DEEPBIND): both
// protobuf copies then keep to their own callers. data/text.h says what the tokenizer does.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "data/text.h"

namespace ember::data {

// What the module exports: ember_sentencepiece_api() returns its table (extern "C", so dlsym finds it).
struct SentencePieceApi {
  size_t size;  // sizeof(SentencePieceApi) when the module was built: a stale module is refused
  // SentencePieceTrainer::Train on the lines of `text` (each with its newline) with sentencepiece's `args`:
  // the model file's bytes in `proto`, or false with sentencepiece's message in `error`.
  bool (*train)(std::string_view text, const std::unordered_map<std::string, std::string>& args, std::string& proto,
                std::string& error);
  // A SentencePieceProcessor for the model file's bytes, or null with the message in `error`.
  void* (*load)(const std::string& proto, std::string& error);
  void (*release)(void* processor);
  // By id, the text each piece stands for inside a text (Tokenizer::token_text).
  std::vector<std::string> (*token_texts)(const void* processor);
  bool (*encode)(const void* processor, std::string_view text, std::vector<int>& ids, std::string& error);
  bool (*decode)(const void* processor, const std::vector<int>& ids, std::string& text, std::string& error);
};

struct SentencePieceModel {
  std::string proto;                   // the model file's bytes
  std::string source;                  // the file it was read from, or "the SentencePiece model trained here"
  std::shared_ptr<void> processor;     // the module's SentencePieceProcessor
  std::vector<std::string> token_text;  // by id: Tokenizer::token_text
};

// Trains on `text` (valid UTF-8, not empty): its lines, each with its newline, are the sentences.
std::shared_ptr<const SentencePieceModel> train_sentencepiece(std::string_view text, const SentencePieceOptions& options);
// `bytes`: a model file's contents; `source` names it in errors.
std::shared_ptr<const SentencePieceModel> sentencepiece_from_bytes(std::string bytes, const std::string& source);
// `text` is valid UTF-8 (Tokenizer::encode checks it).
std::vector<int64_t> sentencepiece_encode(const SentencePieceModel& model, std::string_view text);
// The ids must be in range (Tokenizer::decode checks them).
std::string sentencepiece_decode(const SentencePieceModel& model, std::span<const int64_t> ids);

}  // namespace ember::data

extern "C" const ember::data::SentencePieceApi* ember_sentencepiece_api();
