#include "data/sentencepiece.h"

#include <algorithm>
#include <unordered_map>

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include "base/error.h"
#include "base/parallel.h"

namespace ember::data {
namespace {

// The lines of a text, each with its newline (the last one may have none): SentencePiece's sentences.
class LineIterator : public sentencepiece::SentenceIterator {
 public:
  explicit LineIterator(std::string_view text) : text_(text) { Next(); }
  bool done() const override { return done_; }
  void Next() override {
    done_ = pos_ >= text_.size();
    if (done_) return;
    const size_t end = text_.find('\n', pos_);
    const size_t next = end == std::string_view::npos ? text_.size() : end + 1;
    line_.assign(text_.substr(pos_, next - pos_));
    pos_ = next;
  }
  const std::string& value() const override { return line_; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  bool done_ = false;
  std::string line_;
};

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

// "<0x0A>" → "\n": the byte a byte-fallback piece stands for.
std::string byte_of_piece(const std::string& piece) {
  return std::string(1, static_cast<char>(std::stoi(piece.substr(3, 2), nullptr, 16)));
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
  LineIterator lines(text);
  std::string proto;
  const sentencepiece::util::Status status = sentencepiece::SentencePieceTrainer::Train(args, &lines, &proto);
  if (!status.ok())
    throw SentencePieceTrainingError("SentencePiece cannot train a " + o.model_type + " model of vocab_size " +
                                     std::to_string(o.vocab_size) + " on this text (" + std::to_string(text.size()) +
                                     " bytes): " + status.message());
  return sentencepiece_from_bytes(std::move(proto), "the SentencePiece model trained here");
}

std::shared_ptr<const SentencePieceModel> sentencepiece_from_bytes(std::string bytes, const std::string& source) {
  auto model = std::make_shared<SentencePieceModel>();
  model->processor = std::make_shared<sentencepiece::SentencePieceProcessor>();
  const sentencepiece::util::Status status = model->processor->LoadFromSerializedProto(bytes);
  if (!status.ok() || model->processor->GetPieceSize() < 1)
    detail::throw_error(source, ": not a SentencePiece model (sentencepiece: ",
                        status.ok() ? std::string("no pieces") : std::string(status.message()),
                        "); give a .model file written by spm_train or SentencePieceTrainer (e.g. a Llama-2 or T5 "
                        "tokenizer.model)");
  model->proto = std::move(bytes);
  model->source = source;
  const sentencepiece::SentencePieceProcessor& p = *model->processor;
  const int n = p.GetPieceSize();
  model->token_text.reserve(static_cast<size_t>(n));
  for (int id = 0; id < n; ++id) {
    const std::string& piece = p.IdToPiece(id);
    if (p.IsByte(id)) {
      model->token_text.push_back(byte_of_piece(piece));
    } else if (p.IsControl(id) || p.IsUnused(id)) {
      model->token_text.emplace_back();
    } else if (p.IsUnknown(id)) {
      model->token_text.push_back(p.DecodeIds({id}));  // the model's unk_surface
    } else {
      std::string text;
      for (size_t pos = 0; pos < piece.size();) {
        if (piece.compare(pos, 3, "\xE2\x96\x81") == 0) {  // "▁", SentencePiece's space
          text += ' ';
          pos += 3;
        } else {
          text += piece[pos++];
        }
      }
      model->token_text.push_back(std::move(text));
    }
  }
  return model;
}

std::vector<int64_t> sentencepiece_encode(const SentencePieceModel& model, std::string_view text) {
  std::vector<int> ids;
  const sentencepiece::util::Status status = model.processor->Encode(text, &ids);
  EMBER_CHECK(status.ok(), "SentencePiece: encoding failed (", model.source, "): ", status.message());
  return {ids.begin(), ids.end()};
}

std::string sentencepiece_decode(const SentencePieceModel& model, std::span<const int64_t> ids) {
  const std::vector<int> narrow(ids.begin(), ids.end());
  std::string text;
  const sentencepiece::util::Status status = model.processor->Decode(narrow, &text);
  EMBER_CHECK(status.ok(), "SentencePiece: decoding failed (", model.source, "): ", status.message());
  return text;
}

}  // namespace ember::data
