// Perplexity, bits per character and bits per byte of an evaluation's loss.
#include "train/eval_measures.h"

#include <cmath>
#include <numbers>

namespace mpipe::train {

EvalMeasures eval_measures(const data::Dataset& dataset, data::Split split,
                           const EvalReport& eval) {
  EvalMeasures measures;
  const data::DataSchema schema = dataset.schema();
  if (schema.target.rank() == 1 && schema.classes > 0) measures.perplexity = std::exp(eval.loss);
  if (dataset.text_baseline_bits()) measures.bits_per_char = eval.loss / std::numbers::ln2;
  if (split == data::Split::kTest) {
    const std::optional<int64_t> bytes = dataset.test_target_bytes(eval.examples);
    if (bytes && *bytes > 0) {
      measures.bits_per_byte = eval.loss * static_cast<double>(eval.rows) / std::numbers::ln2 /
                               static_cast<double>(*bytes);
    }
  }
  return measures;
}

}  // namespace mpipe::train
