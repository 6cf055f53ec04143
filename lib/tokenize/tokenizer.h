// Tokenizer: a SentencePiece model (Debian's libsentencepiece) for encoding, decoding and
// training; the only code that includes SentencePiece.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/enum_names.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace mpipe::tokenize {

enum class ModelType { kBpe, kUnigram };
inline constexpr EnumNames<ModelType, 2> kModelTypeNames{
    {{"bpe", ModelType::kBpe}, {"unigram", ModelType::kUnigram}}};

class Tokenizer {
 public:
  // Loads a .model file; throws InputError naming the path when it cannot be read or is not a
  // model: "m.model: not a SentencePiece model (its bytes do not parse as one)".
  static Tokenizer load(const std::string& path);
  // A model from its serialized bytes (what train_model returns); `name` names it in errors.
  static Tokenizer from_bytes(std::string_view model, const std::string& name);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  int64_t vocab_size() const;
  std::vector<int> encode(std::string_view text) const;
  std::string decode(std::span<const int> ids) const;
  // The bytes of text each id stands for: a piece's UTF-8 bytes (its word-boundary mark "▁"
  // counts as the one space it decodes to), 1 for a byte piece (<0x0A>), 0 for control and
  // unknown pieces.
  std::vector<int64_t> piece_bytes() const;

 private:
  Tokenizer(std::unique_ptr<sentencepiece::SentencePieceProcessor> processor, std::string name);

  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
  std::string name_;
};

// Trains a model of `vocab_size` pieces on the lines of `text` and returns it serialized (the
// bytes of a .model file). Pieces are learned on the text as it is (no Unicode normalization,
// whitespace kept) with byte fallback, so that every byte, newlines included, encodes and
// decodes back exactly; no dummy space is added at the start of a text. Throws InputError
// naming the option at fault ("--vocab-size 50: ...") when SentencePiece refuses.
std::string train_model(std::string_view text, int64_t vocab_size, ModelType type);

}  // namespace mpipe::tokenize
