// The module ember_sentencepiece: the only code that links libsentencepiece (data/sentencepiece.h says why).
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include "data/sentencepiece.h"

namespace {

using sentencepiece::SentencePieceProcessor;
using sentencepiece::util::Status;

// The lines of a text, each with its newline (the last one may have none): SentencePiece's sentences.
class LineIterator final : public sentencepiece::SentenceIterator {
 public:
  explicit LineIterator(std::string_view text) : text_(text) { advance(); }
  bool done() const override { return done_; }
  void Next() override { advance(); }
  const std::string& value() const override { return line_; }
  Status status() const override { return {}; }

 private:
  void advance() {
    done_ = pos_ >= text_.size();
    if (done_) return;
    const size_t end = text_.find('\n', pos_);
    const size_t next = end == std::string_view::npos ? text_.size() : end + 1;
    line_.assign(text_.substr(pos_, next - pos_));
    pos_ = next;
  }

  std::string_view text_;
  size_t pos_ = 0;
  bool done_ = false;
  std::string line_;
};

bool failed(const Status& status, std::string& error) {
  if (status.ok()) return false;
  error = status.message();
  return true;
}

bool train(std::string_view text, const std::unordered_map<std::string, std::string>& args, std::string& proto,
           std::string& error) {
  LineIterator lines(text);
  return !failed(sentencepiece::SentencePieceTrainer::Train(args, &lines, &proto), error);
}

void* load(const std::string& proto, std::string& error) {
  auto* p = new SentencePieceProcessor();
  if (failed(p->LoadFromSerializedProto(proto), error)) {
    delete p;
    return nullptr;
  }
  return p;
}

void release(void* p) { delete static_cast<SentencePieceProcessor*>(p); }

std::vector<std::string> token_texts(const void* processor) {
  const auto& p = *static_cast<const SentencePieceProcessor*>(processor);
  std::vector<std::string> out;
  for (int id = 0; id < p.GetPieceSize(); ++id) {
    const std::string& piece = p.IdToPiece(id);
    std::string text;
    if (p.IsByte(id)) {  // "<0x0A>"
      text = std::string(1, static_cast<char>(std::stoi(piece.substr(3, 2), nullptr, 16)));
    } else if (p.IsUnknown(id)) {
      text = p.DecodeIds({id});  // the model's unk_surface
    } else if (!p.IsControl(id) && !p.IsUnused(id)) {
      for (size_t pos = 0; pos < piece.size();) {
        if (piece.compare(pos, 3, "\xE2\x96\x81") == 0) {  // "▁", SentencePiece's space
          text += ' ';
          pos += 3;
        } else {
          text += piece[pos++];
        }
      }
    }
    out.push_back(std::move(text));
  }
  return out;
}

bool encode(const void* p, std::string_view text, std::vector<int>& ids, std::string& error) {
  return !failed(static_cast<const SentencePieceProcessor*>(p)->Encode(text, &ids), error);
}

bool decode(const void* p, const std::vector<int>& ids, std::string& text, std::string& error) {
  return !failed(static_cast<const SentencePieceProcessor*>(p)->Decode(ids, &text), error);
}

const ember::data::SentencePieceApi kApi{sizeof(ember::data::SentencePieceApi), train, load, release, token_texts,
                                         encode, decode};

}  // namespace

extern "C" __attribute__((visibility("default"))) const ember::data::SentencePieceApi* ember_sentencepiece_api() {
  return &kApi;
}
