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
  // The ids of the reserved pieces, -1 for one the model has not (a model of train_model has
  // bos and eos; pad only when trained with TrainOptions::pad_piece).
  int pad_id() const;
  int bos_id() const;
  int eos_id() const;
  // The id of the piece spelled `piece` ("<2en>"), -1 when the model has none.
  int piece_id(std::string_view piece) const;
  // The user-defined pieces (TrainOptions::user_symbols: a translation corpus's tags), by id: the
  // pieces of score 0 after the reserved ones, before the first byte or learned piece.
  std::vector<std::string> user_pieces() const;
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

// How train_model trains. The defaults suit running text for a language model.
struct TrainOptions {
  int64_t vocab_size = 0;
  ModelType type = ModelType::kBpe;
  // Sentences rather than running text: each line's first word gets the word-boundary mark "▁"
  // as every other word does (SentencePiece's dummy prefix, which decoding drops again).
  bool sentences = false;
  // Reserve id 0 for a padding piece "<pad>", before unk (1), bos (2) and eos (3); without it
  // there is no pad and unk, bos, eos are 0, 1, 2.
  bool pad_piece = false;
  // Pieces of their own, never split and never merged into others, with the ids after the
  // reserved ones in this order: the target-language tags of a translation corpus ("<2en>").
  std::vector<std::string> user_symbols = {};
};

// Trains a model on the lines of `text` and returns it serialized (the bytes of a .model file).
// Pieces are learned on the text as it is (no Unicode normalization, whitespace kept) with byte
// fallback, so that every byte, newlines included, encodes and decodes back exactly. Throws
// InputError naming the option at fault ("--vocab-size 50: ...") when SentencePiece refuses.
std::string train_model(std::string_view text, const TrainOptions& options);

}  // namespace mpipe::tokenize
