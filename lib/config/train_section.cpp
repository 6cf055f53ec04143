// The `train:` section: steps, batch size, seed, evaluation cadence, non-finite policy, precision.
#include "config/bounded.h"
#include "config/map_reader.h"
#include "config/sections.h"

namespace mpipe::config {

train::TrainConfig parse_train(const Field& section) {
  const MapReader map(
      section, {"steps", "batch_size", "seed", "eval_every", "eval_batches", "eval_batch_size",
                "eval_bleu_sentences", "on_nonfinite", "max_skips_in_a_row", "precision"});
  train::TrainConfig config;
  if (auto f = map.get("steps")) config.steps = read_int(*f, at_least(0));
  if (auto f = map.get("batch_size")) config.batch_size = read_int(*f, at_least(1));
  if (auto f = map.get("seed")) config.seed = f->as_uint();
  if (auto f = map.get("eval_every")) config.eval_every = read_int(*f, at_least(0));
  if (auto f = map.get("eval_batches")) config.eval_batches = read_int(*f, at_least(0));
  if (auto f = map.get("eval_batch_size")) config.eval_batch_size = read_int(*f, at_least(0));
  if (auto f = map.get("eval_bleu_sentences")) {
    config.eval_bleu_sentences = read_int(*f, at_least(0));
  }
  if (auto f = map.get("on_nonfinite")) {
    config.on_nonfinite = f->as_choice(train::kOnNonFiniteNames);
  }
  if (auto f = map.get("max_skips_in_a_row")) config.max_skips_in_a_row = read_int(*f, at_least(1));
  if (auto f = map.get("precision")) {
    config.precision = f->as_choice(kernels::kPrecisionNames);
  }
  return config;
}

}  // namespace mpipe::config
