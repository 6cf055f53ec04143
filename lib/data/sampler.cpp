// Seeded epoch permutations and the batches cut from them.
#include "data/sampler.h"

#include <cstdint>
#include <numeric>
#include <utility>

#include "core/error.h"
#include "core/rng.h"
#include "data/dataset.h"
#include "data/keyed_permutation.h"

namespace mpipe::data {
namespace {

// Uniform in [0, range) from the stream's draws starting at `draw` (advanced past those used):
// Lemire's multiply-shift with rejection, so the result is exactly uniform.
uint32_t uniform_below(const CounterRng& rng, uint32_t range, uint64_t& draw) {
  uint64_t product = uint64_t{rng.bits(draw++)} * range;
  if (static_cast<uint32_t>(product) < range) {
    const uint32_t threshold = static_cast<uint32_t>(-range) % range;
    while (static_cast<uint32_t>(product) < threshold) product = uint64_t{rng.bits(draw++)} * range;
  }
  return static_cast<uint32_t>(product >> 32);
}

}  // namespace

std::vector<int64_t> epoch_permutation(uint64_t seed, int64_t epoch, int64_t dataset_size) {
  check(dataset_size >= 1 && dataset_size <= int64_t{UINT32_MAX} && epoch >= 0,
        "epoch_permutation: bad epoch {} or dataset size {}", epoch, dataset_size);
  std::vector<int64_t> order(static_cast<size_t>(dataset_size));
  std::iota(order.begin(), order.end(), int64_t{0});
  const CounterRng rng(seed, RngPurpose::kShuffle, 0, static_cast<uint64_t>(epoch));
  uint64_t draw = 0;
  for (int64_t i = dataset_size - 1; i > 0; --i) {
    const uint32_t j = uniform_below(rng, static_cast<uint32_t>(i + 1), draw);
    std::swap(order[static_cast<size_t>(i)], order[j]);
  }
  return order;
}

EpochSampler::EpochSampler(uint64_t seed, int64_t dataset_size, ExampleOrder order,
                           std::vector<MixPart> mix)
    : seed_(seed), dataset_size_(dataset_size), order_(order) {
  check(dataset_size >= 1, "EpochSampler: dataset size must be >= 1, got {}", dataset_size);
  if (!mix.empty()) {
    int64_t covered = 0;
    for (const MixPart& part : mix) covered += part.size;
    check(covered == dataset_size, "EpochSampler: the mix covers {} of {} examples", covered,
          dataset_size);
    mixed_.emplace(seed, std::move(mix));
  }
}

const std::vector<int64_t>& EpochSampler::permutation(int64_t epoch) {
  if (epoch != cached_epoch_) {
    cached_ = epoch_permutation(seed_, epoch, dataset_size_);
    cached_epoch_ = epoch;
  }
  return cached_;
}

std::vector<int64_t> EpochSampler::batch(int64_t step, int64_t batch_size) {
  check(step >= 0 && batch_size >= 1, "batch: bad step {} or batch size {}", step, batch_size);
  std::vector<int64_t> indices;
  indices.reserve(static_cast<size_t>(batch_size));
  for (int64_t k = 0; k < batch_size; ++k) {
    const int64_t position = step * batch_size + k;
    if (mixed_) {
      indices.push_back((*mixed_)(position));
      continue;
    }
    const int64_t epoch = position / dataset_size_;
    const int64_t in_epoch = position % dataset_size_;
    if (order_ == ExampleOrder::kKeyed) {
      indices.push_back(KeyedPermutation(seed_, epoch, dataset_size_)(in_epoch));
    } else {
      indices.push_back(permutation(epoch)[static_cast<size_t>(in_epoch)]);
    }
  }
  return indices;
}

std::vector<int64_t> batch_indices(uint64_t seed, int64_t step, int64_t batch_size,
                                   int64_t dataset_size) {
  return EpochSampler(seed, dataset_size).batch(step, batch_size);
}

}  // namespace mpipe::data
