// Training-loop settings (the `train:` section of an experiment).
#pragma once

#include <cstdint>

namespace mpipe::train {

struct TrainConfig {
  int64_t steps = 100;          // optimizer steps
  int64_t batch_size = 64;      // global mini-batch: all micro-batches of all replicas
  uint64_t seed = 1;            // init, data order, dropout
  int64_t eval_every = 0;       // 0 = evaluate at the end only
  int64_t eval_batches = 0;     // 0 = the whole evaluation split
  int64_t eval_batch_size = 0;  // 0 = batch_size
};

}  // namespace mpipe::train
