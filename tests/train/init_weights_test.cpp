// Tests of which tensors --init-skip leaves at their initialisation: a name, or a prefix that ends
// where a part of the name does.
#include "train/init_weights.h"

#include <gtest/gtest.h>

namespace mpipe::train {
namespace {

TEST(KeepsInitialisation, AWholeNameKeepsThatTensorOnly) {
  EXPECT_TRUE(keeps_initialisation("layers.5.weight", {"layers.5.weight"}));
  EXPECT_FALSE(keeps_initialisation("layers.5.bias", {"layers.5.weight"}));
}

TEST(KeepsInitialisation, APrefixKeepsTheTensorsBelowItNotThoseThatMerelyStartAlike) {
  EXPECT_TRUE(keeps_initialisation("layers.5.weight", {"layers.5"}));
  EXPECT_TRUE(keeps_initialisation("layers.5.bias", {"layers.5."}));
  EXPECT_FALSE(keeps_initialisation("layers.50.weight", {"layers.5"}));
  EXPECT_FALSE(keeps_initialisation("layers.5.weight_extra", {"layers.5.weight"}));
}

TEST(KeepsInitialisation, AnyOfSeveralPatternsKeepsATensor) {
  const std::vector<std::string> skip = {"layers.7", "layers.2.bias"};
  EXPECT_TRUE(keeps_initialisation("layers.7.weight", skip));
  EXPECT_TRUE(keeps_initialisation("layers.2.bias", skip));
  EXPECT_FALSE(keeps_initialisation("layers.2.weight", skip));
  EXPECT_FALSE(keeps_initialisation("layers.2.weight", {}));
}

}  // namespace
}  // namespace mpipe::train
