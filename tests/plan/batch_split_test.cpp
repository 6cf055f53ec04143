// Tests for the one batch-size divisibility rule and its one wording.
#include "plan/batch_split.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace mpipe::plan {
namespace {

TEST(BatchSplit, SplitsWhenDivisibleByMicroBatchesTimesReplicas) {
  EXPECT_EQ(batch_split_problem(64, 4, 2), std::nullopt);
  EXPECT_EQ(batch_split_problem(8, 4, 2), std::nullopt);
  EXPECT_EQ(batch_split_problem(12, 4, 0), std::nullopt);  // replicas not known yet
}

TEST(BatchSplit, ProblemNamesBothFactorsAndTheirProduct) {
  EXPECT_EQ(batch_split_problem(100, 4, 2),
            "must be divisible by pipeline.micro_batches x data-parallel replicas = 4 x 2 = 8, "
            "got 100");
  // Smaller than one example per micro-batch on each replica: 0 is divisible but splits nothing.
  EXPECT_EQ(batch_split_problem(0, 4, 1),
            "must be divisible by pipeline.micro_batches x data-parallel replicas = 4 x 1 = 4, "
            "got 0");
}

TEST(BatchSplit, ReplicasNotKnownYetAreShownAsAuto) {
  EXPECT_EQ(batch_split_problem(10, 4, 0),
            "must be divisible by pipeline.micro_batches x data-parallel replicas = 4 x (auto), "
            "got 10");
}

TEST(BatchSplit, CheckPrefixesTheKeysPosition) {
  try {
    check_batch_split(30, 4, 2, "exp.yaml:9: train.batch_size");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "exp.yaml:9: train.batch_size: must be divisible by pipeline.micro_batches x "
                 "data-parallel replicas = 4 x 2 = 8, got 30");
  }
  EXPECT_NO_THROW(check_batch_split(32, 4, 2, "exp.yaml:9: train.batch_size"));
}

}  // namespace
}  // namespace mpipe::plan
