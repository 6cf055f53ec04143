// Philox4x32-10 as published by Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"
// (SC 2011), and the streams built on it.
#include "core/rng.h"

#include <cmath>
#include <numbers>

namespace mpipe {
namespace {

constexpr uint32_t kMul0 = 0xD2511F53, kMul1 = 0xCD9E8D57;
constexpr uint32_t kWeyl0 = 0x9E3779B9, kWeyl1 = 0xBB67AE85;

void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  uint64_t product = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(product >> 32);
  lo = static_cast<uint32_t>(product);
}

float to_unit(uint32_t bits) { return static_cast<float>(bits >> 8) * 0x1.0p-24f; }

}  // namespace

std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 2> key, std::array<uint32_t, 4> ctr) {
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kMul0, ctr[0], hi0, lo0);
    mulhilo(kMul1, ctr[2], hi1, lo1);
    ctr = {hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0};
    key[0] += kWeyl0;
    key[1] += kWeyl1;
  }
  return ctr;
}

CounterRng::CounterRng(uint64_t seed, RngPurpose purpose, uint32_t a, uint64_t b)
    : key_{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)},
      purpose_and_a_((static_cast<uint32_t>(purpose) << 28) ^ a),
      b_(b) {}

std::array<uint32_t, 4> CounterRng::block(uint64_t block_index) const {
  // Counter: (block index low, purpose/a mixed with block index high, stream b low, b high).
  return philox4x32(key_, {static_cast<uint32_t>(block_index),
                           purpose_and_a_ ^ static_cast<uint32_t>(block_index >> 32),
                           static_cast<uint32_t>(b_), static_cast<uint32_t>(b_ >> 32)});
}

uint32_t CounterRng::bits(uint64_t index) const { return block(index / 4)[index % 4]; }

float CounterRng::uniform(uint64_t index) const { return to_unit(bits(index)); }

float CounterRng::normal(uint64_t index) const {
  // u1 in (0, 1] so the log is finite.
  float u1 = 1.0f - uniform(2 * index);
  float u2 = uniform(2 * index + 1);
  return std::sqrt(-2.0f * std::log(u1)) * std::cos(2.0f * std::numbers::pi_v<float> * u2);
}

void CounterRng::fill_uniform(std::span<float> out, uint64_t first) const {
  size_t i = 0;
  while (i < out.size() && (first + i) % 4 != 0) {
    out[i] = uniform(first + i);
    ++i;
  }
  for (; i + 4 <= out.size(); i += 4) {
    auto words = block((first + i) / 4);
    for (int lane = 0; lane < 4; ++lane) out[i + lane] = to_unit(words[lane]);
  }
  for (; i < out.size(); ++i) out[i] = uniform(first + i);
}

}  // namespace mpipe
