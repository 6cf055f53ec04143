// Test helpers for bf16 kernels: rounding to bf16 and the error bound of a bf16 product sum.
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

namespace mpipe::kernels::testing {

// x rounded to bf16 (8 significant bits, round to nearest even), as a float; x finite.
inline float round_to_bf16(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u;
  return std::bit_cast<float>(rounded);
}

inline std::vector<float> rounded_to_bf16(std::vector<float> values) {
  for (float& v : values) v = round_to_bf16(v);
  return values;
}

inline std::vector<float> absolute(std::vector<float> values) {
  for (float& v : values) v = std::abs(v);
  return values;
}

// A sum of products whose operands are rounded to bf16 (relative error <= 2^-8 each, so <= 2^-7
// + 2^-16 per product) and accumulated in f32 differs from the exact sum by at most
// 2^-7 * 1.01 * sum |a| |b| (`abs_products`; the 1% covers the f32 rounding of the accumulation
// over up to ~10^4 terms), plus f32 rounding of the result.
inline void expect_within_bf16_bound(const std::vector<float>& actual,
                                     const std::vector<float>& exact,
                                     const std::vector<float>& abs_products, const char* what) {
  ASSERT_EQ(actual.size(), exact.size()) << what;
  ASSERT_EQ(actual.size(), abs_products.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double bound = std::ldexp(1.01, -7) * abs_products[i] + 1e-6 * (1 + std::abs(exact[i]));
    ASSERT_NEAR(actual[i], exact[i], bound) << what << "[" << i << "]";
  }
}

}  // namespace mpipe::kernels::testing
