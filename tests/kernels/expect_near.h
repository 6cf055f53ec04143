// Test helper: element-wise comparison of a kernel's output with its reference.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace mpipe::kernels::testing {

// |actual - expected| <= tolerance * (1 + |expected|) for every element; stops at the first
// mismatch and names it as what[i].
inline void expect_near_all(const std::vector<float>& actual, const std::vector<float>& expected,
                            double tolerance, const char* what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i) {
    ASSERT_NEAR(actual[i], expected[i], tolerance * (1.0 + std::abs(expected[i])))
        << what << "[" << i << "]";
  }
}

}  // namespace mpipe::kernels::testing
