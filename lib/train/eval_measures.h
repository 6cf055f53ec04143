// What an evaluation reports beside its loss and accuracy, in the units of the data: perplexity,
// bits per character or bits per byte.
#pragma once

#include <optional>

#include "data/dataset.h"
#include "train/trainer.h"

namespace mpipe::train {

struct EvalMeasures {
  std::optional<double> perplexity;     // exp(mean loss per token): targets are token sequences
  std::optional<double> bits_per_char;  // byte-level text: the loss over ln 2
  // Tokenized text with a tokenizer, on its held-out split: the loss's total in bits over the
  // bytes of text the evaluated targets stand for (comparable across tokenizers).
  std::optional<double> bits_per_byte;
};

// The measures of `eval` (an evaluation of `split`) that `dataset` has. Bits per byte reads the
// held-out text's bytes (token shards): one rank calls it.
EvalMeasures eval_measures(const data::Dataset& dataset, data::Split split, const EvalReport& eval);

}  // namespace mpipe::train
