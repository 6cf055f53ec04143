// A permutation of [0, n) computed one position at a time from a key, with no table: a
// Feistel network over the smallest even-width bit domain that holds n, with cycle walking.
#pragma once

#include <cstdint>

#include "core/rng.h"

namespace mpipe::data {

// The stream id (`a`) of the training order's round function, apart from EpochSampler's
// Fisher-Yates (0); a weighted mix's parts use streams 2 and up (data/mixed_order.h).
inline constexpr uint32_t kKeyedOrderStream = 1;

// position -> example: a bijection on [0, n) that is a pure function of (seed, stream, epoch, n),
// for any n in [1, 2^62]. Costs a few Philox blocks per position and no memory, so datasets of
// 10^10 examples are shuffled without a permutation vector.
class KeyedPermutation {
 public:
  KeyedPermutation(uint64_t seed, int64_t epoch, int64_t n, uint32_t stream = kKeyedOrderStream);

  // The example at `position` in [0, n).
  int64_t operator()(int64_t position) const;
  int64_t size() const { return n_; }

 private:
  // One pass of the Feistel network over [0, 2^(2 * half_bits_)).
  uint64_t encrypt(uint64_t value) const;

  int64_t n_;
  int half_bits_;  // each Feistel half has this many bits, >= 1
  uint64_t half_mask_;
  CounterRng rounds_;  // the round function: bits(round << 32 | right half)
};

}  // namespace mpipe::data
