// oneDNN nearest-neighbour upsampling against the naive reference.
#include "kernels/resampling.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"
#include "expect_near.h"
#include "kernels/conv_reference.h"
#include "random_values.h"

namespace mpipe::kernels {
namespace {

using testing::random_values;

TEST(UpsampleKernel, MatchesReference) {
  KernelContext ctx;
  for (const Upsample2dShape& s :
       {Upsample2dShape{.batch = 2, .channels = 3, .height = 4, .width = 5},
        Upsample2dShape{.batch = 1, .channels = 2, .height = 3, .width = 2, .scale = 3},
        Upsample2dShape{.batch = 3, .channels = 1, .height = 1, .width = 1, .scale = 1}}) {
    SCOPED_TRACE(s.key());
    const int64_t x_count = s.batch * s.channels * s.height * s.width;
    const int64_t y_count = x_count * s.scale * s.scale;
    const auto x = random_values(x_count, 41);
    const auto dy = random_values(y_count, 42);
    std::vector<float> y(static_cast<size_t>(y_count), 9.0f), y_ref(y.size());
    upsample2d_forward(ctx, s, x.data(), y.data());
    reference::upsample2d_forward(s, x.data(), y_ref.data());
    EXPECT_EQ(y, y_ref);  // copies
    std::vector<float> dx(x.size(), 9.0f), dx_ref(x.size());
    upsample2d_backward(ctx, s, dy.data(), dx.data());
    reference::upsample2d_backward(s, dy.data(), dx_ref.data());
    testing::expect_near_all(dx, dx_ref, 1e-6, "dx");
  }
}

TEST(UpsampleKernel, RejectsAnEmptyShape) {
  EXPECT_THROW((Upsample2dShape{.batch = 1, .channels = 0, .height = 2, .width = 2}.validate()),
               Error);
  EXPECT_THROW(
      (Upsample2dShape{.batch = 1, .channels = 1, .height = 2, .width = 2, .scale = 0}.validate()),
      Error);
}

}  // namespace
}  // namespace mpipe::kernels
