#pragma once
// Internal (not installed): the SentencePiece kind of data::Tokenizer, through the sentencepiece library
// (libsentencepiece-dev), which only data/sentencepiece.cpp includes. data/text.h says what it does.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data/text.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace ember::data {

struct SentencePieceModel {
  std::string proto;                            // the model file's bytes
  std::string source;                           // the file it was read from, or "a model trained here"
  std::shared_ptr<sentencepiece::SentencePieceProcessor> processor;
  std::vector<std::string> token_text;          // by id: Tokenizer::token_text
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
