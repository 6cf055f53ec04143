// Example order for training: an endless sequence of seeded epoch permutations.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "data/dataset.h"
#include "data/mixed_order.h"

namespace mpipe::data {

// The permutation of [0, dataset_size) used in epoch `epoch`: Fisher-Yates driven by
// CounterRng(seed, RngPurpose::kShuffle, 0, epoch) (exactly uniform draws by rejection), so
// every rank computes the same one. dataset_size must be below 2^32.
std::vector<int64_t> epoch_permutation(uint64_t seed, int64_t epoch, int64_t dataset_size);

// The training order of a dataset's examples. kShuffledEpochs: batch_indices (dataset.h) with
// the last epoch's permutation cached, so a training loop pays for one shuffle per epoch instead
// of one per step (returns exactly what batch_indices returns). kKeyed: epoch e is
// KeyedPermutation(seed, e, dataset_size), computed position by position. With `mix` (parts
// covering the dataset, Dataset::train_mix) the positions follow MixedOrder instead.
class EpochSampler {
 public:
  EpochSampler(uint64_t seed, int64_t dataset_size,
               ExampleOrder order = ExampleOrder::kShuffledEpochs, std::vector<MixPart> mix = {});

  // Positions [step*batch_size, (step+1)*batch_size) of the epoch sequence.
  std::vector<int64_t> batch(int64_t step, int64_t batch_size);
  int64_t dataset_size() const { return dataset_size_; }

 private:
  const std::vector<int64_t>& permutation(int64_t epoch);

  uint64_t seed_;
  int64_t dataset_size_;
  ExampleOrder order_;
  int64_t cached_epoch_ = -1;
  std::vector<int64_t> cached_;
  std::optional<MixedOrder> mixed_;
};

}  // namespace mpipe::data
