// Counter-based RNG (Philox4x32-10): every draw is a pure function of (seed, stream ids, index),
// so any rank can reproduce any draw, whatever the partition or the order of evaluation.
#pragma once

#include <array>
#include <cstdint>
#include <span>

namespace mpipe {

// What a stream of random numbers is used for; part of the stream id so uses never collide.
enum class RngPurpose : uint32_t { kInit = 1, kDropout = 2, kShuffle = 3, kAugment = 4, kData = 5 };

// One Philox4x32-10 block: 4 random 32-bit words from a 64-bit key and a 128-bit counter.
std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 2> key, std::array<uint32_t, 4> counter);

// A stream of draws addressed by index. The stream is (seed, purpose, a, b); e.g. dropout uses
// a = global layer index, b = (step, example) packed by the caller.
class CounterRng {
 public:
  CounterRng(uint64_t seed, RngPurpose purpose, uint32_t a, uint64_t b);

  uint32_t bits(uint64_t index) const;
  // Uniform in [0, 1), 24 random bits.
  float uniform(uint64_t index) const;
  // Standard normal (Box-Muller on draws 2*index and 2*index+1).
  float normal(uint64_t index) const;
  // out[i] = uniform(first + i), computed four draws per Philox block.
  void fill_uniform(std::span<float> out, uint64_t first = 0) const;

 private:
  std::array<uint32_t, 4> block(uint64_t block_index) const;

  std::array<uint32_t, 2> key_;
  uint32_t purpose_and_a_;
  uint64_t b_;
};

}  // namespace mpipe
