// The keyed Feistel permutation with cycle walking behind KeyedPermutation.
#include "data/keyed_permutation.h"

#include "core/error.h"

namespace mpipe::data {
namespace {

// Luby and Rackoff: four rounds of a pseudo-random function make a pseudo-random permutation;
// two more cost little and mix small domains better.
constexpr int kRounds = 6;

// The smallest h >= 1 with 2^(2h) >= n.
int half_bits_for(int64_t n) {
  int half = 1;
  while ((uint64_t{1} << (2 * half)) < static_cast<uint64_t>(n)) ++half;
  return half;
}

}  // namespace

KeyedPermutation::KeyedPermutation(uint64_t seed, int64_t epoch, int64_t n, uint32_t stream)
    : n_(n),
      half_bits_(half_bits_for(n)),
      half_mask_((uint64_t{1} << half_bits_) - 1),
      rounds_(seed, RngPurpose::kShuffle, stream, static_cast<uint64_t>(epoch)) {
  check(n >= 1 && n <= (int64_t{1} << 62) && epoch >= 0,
        "KeyedPermutation: bad size {} or epoch {}", n, epoch);
}

uint64_t KeyedPermutation::encrypt(uint64_t value) const {
  uint64_t left = value >> half_bits_;
  uint64_t right = value & half_mask_;
  for (uint64_t round = 0; round < kRounds; ++round) {
    // A half has at most 31 bits, so (round, right) is a unique draw index of the stream.
    const uint64_t mixed = left ^ (rounds_.bits(round << 32 | right) & half_mask_);
    left = right;
    right = mixed;
  }
  return left << half_bits_ | right;
}

int64_t KeyedPermutation::operator()(int64_t position) const {
  check(position >= 0 && position < n_, "KeyedPermutation: position {} out of range [0, {})",
        position, n_);
  // Cycle walking: the domain holds at most 4n values, so about 4 passes at worst on average;
  // the walk ends because the cycle through `position` (< n) returns to it.
  auto value = static_cast<uint64_t>(position);
  do {
    value = encrypt(value);
  } while (value >= static_cast<uint64_t>(n_));
  return static_cast<int64_t>(value);
}

}  // namespace mpipe::data
