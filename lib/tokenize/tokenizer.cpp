// The SentencePiece calls behind Tokenizer and train_model.
#include "tokenize/tokenizer.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <algorithm>
#include <string>
#include <unordered_map>
#include <utility>

#include "core/error.h"
#include "core/regular_file.h"

namespace mpipe::tokenize {
namespace {

// SentencePiece's word-boundary mark, U+2581, which decodes to one space.
constexpr std::string_view kSpaceMark = "\xe2\x96\x81";

// The reason a status gives, on one line: its message without the "file.cc(580) [condition] "
// that SentencePiece's checks put before it.
std::string reason(const sentencepiece::util::Status& status) {
  std::string text = status.message();
  if (const size_t end = text.rfind("] "); end != std::string::npos) text.erase(0, end + 2);
  for (char& c : text) {
    if (c == '\n') c = ' ';
  }
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

// The lines of a text (without their newlines), as SentencePiece's trainer reads them.
class LineIterator : public sentencepiece::SentenceIterator {
 public:
  explicit LineIterator(std::string_view text) : rest_(text) { Next(); }
  bool done() const override { return done_; }
  void Next() override {
    done_ = rest_.empty();
    const size_t end = std::min(rest_.find('\n'), rest_.size());
    line_.assign(rest_.substr(0, end));
    rest_.remove_prefix(std::min(end + 1, rest_.size()));
  }
  const std::string& value() const override { return line_; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  std::string_view rest_;
  std::string line_;
  bool done_ = false;
};

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<sentencepiece::SentencePieceProcessor> processor,
                     std::string name)
    : processor_(std::move(processor)), name_(std::move(name)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::load(const std::string& path) {
  // Read here rather than by SentencePiece, whose errors name its own source lines (and which
  // aborts on a folder).
  return from_bytes(read_regular_file(path, "a SentencePiece model must be a regular file"), path);
}

Tokenizer Tokenizer::from_bytes(std::string_view model, const std::string& name) {
  auto processor = std::make_unique<sentencepiece::SentencePieceProcessor>();
  check_input(processor->LoadFromSerializedProto(model).ok(),
              "{}: not a SentencePiece model (its bytes do not parse as one)", name);
  return Tokenizer(std::move(processor), name);
}

int64_t Tokenizer::vocab_size() const { return processor_->GetPieceSize(); }
int Tokenizer::pad_id() const { return processor_->pad_id(); }
int Tokenizer::bos_id() const { return processor_->bos_id(); }
int Tokenizer::eos_id() const { return processor_->eos_id(); }

int Tokenizer::piece_id(std::string_view piece) const {
  const int id = processor_->PieceToId(piece);  // unk's id for a piece it does not have
  return processor_->IdToPiece(id) == piece ? id : -1;
}

std::vector<std::string> Tokenizer::user_pieces() const {
  // SentencePiece's trainer places them after the reserved pieces, before the byte pieces and the
  // learned ones (negative scores; this API does not tell piece types apart otherwise).
  std::vector<std::string> pieces;
  int id = 0;
  while (id < processor_->GetPieceSize() &&
         (processor_->IsControl(id) || processor_->IsUnknown(id))) {
    ++id;
  }
  for (; id < processor_->GetPieceSize() && !processor_->IsByte(id) && !processor_->IsControl(id) &&
         !processor_->IsUnused(id) && processor_->GetScore(id) == 0;
       ++id) {
    pieces.push_back(processor_->IdToPiece(id));
  }
  return pieces;
}

std::vector<int> Tokenizer::encode(std::string_view text) const {
  std::vector<int> ids;
  const auto status = processor_->Encode(text, &ids);
  check(status.ok(), "{}: cannot encode: {}", name_, reason(status));
  return ids;
}

std::string Tokenizer::decode(std::span<const int> ids) const {
  const int size = processor_->GetPieceSize();
  for (int id : ids) check(id >= 0 && id < size, "{}: token id {} not in [0, {})", name_, id, size);
  std::string text;
  const auto status = processor_->Decode(std::vector<int>(ids.begin(), ids.end()), &text);
  check(status.ok(), "{}: cannot decode: {}", name_, reason(status));
  return text;
}

std::vector<int64_t> Tokenizer::piece_bytes() const {
  std::vector<int64_t> bytes(static_cast<size_t>(vocab_size()));
  for (int id = 0; id < static_cast<int>(bytes.size()); ++id) {
    int64_t count = 0;
    if (processor_->IsByte(id)) {
      count = 1;
    } else if (!processor_->IsControl(id) && !processor_->IsUnknown(id)) {
      std::string_view piece = processor_->IdToPiece(id);
      for (size_t at = piece.find(kSpaceMark); at != std::string_view::npos;
           at = piece.find(kSpaceMark)) {
        count += 1;
        piece.remove_prefix(at + kSpaceMark.size());
        count += static_cast<int64_t>(at);
      }
      count += static_cast<int64_t>(piece.size());
    }
    bytes[static_cast<size_t>(id)] = count;
  }
  return bytes;
}

std::string train_model(std::string_view text, const TrainOptions& options) {
  const std::string type(name_of(kModelTypeNames, options.type));
  std::unordered_map<std::string, std::string> settings{
      {"model_type", type},
      {"vocab_size", std::to_string(options.vocab_size)},
      {"byte_fallback", "true"},
      {"normalization_rule_name", "identity"},
      {"remove_extra_whitespaces", "false"},
      {"add_dummy_prefix", options.sentences ? "true" : "false"},
      {"minloglevel", "2"},
  };
  if (options.pad_piece) {
    settings.insert({{"pad_id", "0"}, {"unk_id", "1"}, {"bos_id", "2"}, {"eos_id", "3"}});
  }
  if (!options.user_symbols.empty()) {
    std::string symbols;
    for (const std::string& symbol : options.user_symbols) {
      check_input(!symbol.empty() && symbol.find_first_of(", \t\n") == std::string::npos,
                  "--tags '{}': a tag is one piece of text without spaces or commas", symbol);
      symbols += (symbols.empty() ? "" : ",") + symbol;
    }
    settings["user_defined_symbols"] = symbols;
  }
  std::string model;
  LineIterator lines(text);
  const auto status = sentencepiece::SentencePieceTrainer::Train(settings, &lines, &model);
  check_input(status.ok(), "--vocab-size {}: SentencePiece cannot train a {} model of it: {}",
              options.vocab_size, type, reason(status));
  return model;
}

}  // namespace mpipe::tokenize
