// The `train:` section: steps, batch size, seed and evaluation cadence.
#include "config/bounded.h"
#include "config/map_reader.h"
#include "config/sections.h"

namespace mpipe::config {

train::TrainConfig parse_train(const Field& section) {
  const MapReader map(
      section, {"steps", "batch_size", "seed", "eval_every", "eval_batches", "eval_batch_size"});
  train::TrainConfig config;
  if (auto f = map.get("steps")) config.steps = read_int(*f, at_least(1));
  if (auto f = map.get("batch_size")) config.batch_size = read_int(*f, at_least(1));
  if (auto f = map.get("seed")) config.seed = f->as_uint();
  if (auto f = map.get("eval_every")) config.eval_every = read_int(*f, at_least(0));
  if (auto f = map.get("eval_batches")) config.eval_batches = read_int(*f, at_least(0));
  if (auto f = map.get("eval_batch_size")) config.eval_batch_size = read_int(*f, at_least(0));
  return config;
}

}  // namespace mpipe::config
