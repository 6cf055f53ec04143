// Tests for the layout the daemon gives an experiment that resumes a checkpoint on another world:
// its plan for the world when that keeps the bits, else supervise's re-plan on every rank, else
// one line.
#include "serve/resume_layout.h"

#include <gtest/gtest.h>

#include <fstream>

#include "checkpoint/checkpoint_store.h"
#include "checkpoint/resume_settings.h"
#include "support/input_error_of.h"
#include "support/temp_dir.h"

namespace mpipe::serve {
namespace {

using testing::input_error_of;
using Args = std::vector<std::string>;

// A small MLP on synthetic data, 4 micro-batches of 8 examples, its layout left to the daemon.
constexpr const char* kExperiment = R"(model:
  loss: cross_entropy
  layers:
    - {type: linear, units: 16}
    - {type: relu}
    - {type: linear, units: 4}
data: {dataset: synthetic, num_examples: 64, features: 8, classes: 4}
train: {steps: 40, batch_size: 32, seed: 5}
pipeline: {micro_batches: 4}
)";

class ResumeLayoutTest : public ::testing::Test {
 protected:
  ResumeLayoutTest() { std::ofstream(config()) << kExperiment; }
  std::string config() const { return dir_.file("exp.yaml"); }
  std::string run_dir() const { return dir_.file("run"); }

  // Commits step 20 of the run, written with D replicas of M micro-batches each.
  void checkpoint(int replicas, int micro_batches) {
    checkpoint::CheckpointStore store(run_dir(), 1);
    const checkpoint::ShardRecord shard = store.write_shard(20, 0, {});
    nlohmann::json settings = {
        {"pipeline.micro_batches", std::to_string(micro_batches)},
        {checkpoint::kGlobalMicroBatchesKey, std::to_string(replicas * micro_batches)}};
    store.write_commit(20, {{"num_stages", 1}, {"settings", settings}}, {shard});
  }

 private:
  mpipe::testing::TempDir dir_;
};

TEST_F(ResumeLayoutTest, WithoutACheckpointThePlanForTheWorldApplies) {
  EXPECT_FALSE(resume_layout(config(), {}, run_dir(), 2));
  EXPECT_EQ(world_layout(config::load_experiment(config(), {}), 2),
            (supervise::Layout{.stages = 2, .replicas = 1, .micro_batches = 4}));
}

TEST_F(ResumeLayoutTest, ThePlanForTheWorldStaysWhenItKeepsTheBits) {
  checkpoint(1, 4);  // 3 stages x 1 replica; the experiment fixes no stages: 2 on 2 ranks
  const std::optional<ResumeLayout> resume = resume_layout(config(), {}, run_dir(), 2);
  ASSERT_TRUE(resume);
  EXPECT_EQ(resume->step, 20);
  EXPECT_EQ(resume->layout, (supervise::Layout{.stages = 2, .replicas = 1, .micro_batches = 4}));
  EXPECT_TRUE(resume->bit_identical);
  EXPECT_TRUE(resume->settings.empty());
}

TEST_F(ResumeLayoutTest, AFixedStageCountIsReplannedOnTheRanksLeft) {
  checkpoint(1, 4);  // pipeline.stages: 3 on 3 ranks, now 2: no plan for the world
  const std::optional<ResumeLayout> resume =
      resume_layout(config(), {"pipeline.stages=3"}, run_dir(), 2);
  ASSERT_TRUE(resume);
  EXPECT_EQ(resume->layout, (supervise::Layout{.stages = 2, .replicas = 1, .micro_batches = 4}));
  EXPECT_TRUE(resume->bit_identical);
  EXPECT_EQ(resume->settings,
            (Args{"pipeline.stages=2", "pipeline.data_parallel=1", "pipeline.micro_batches=4"}));
  EXPECT_EQ(describe(*resume, 2),
            "resuming step 20 on 2 ranks as 2 stages x 1 replica, 4 micro-batches each, "
            "re-planned from the checkpoint's 1 replica x 4 micro-batches (bit-identical)");
}

TEST_F(ResumeLayoutTest, APlanThatChangesDIsReplannedToKeepTheBits) {
  // 1 stage x 2 replicas of 2 micro-batches on 2 ranks, now 4 ranks: the plan for the world (1
  // stage fixed) would be 4 replicas of 1, another D; 2 stages x 2 replicas keep D.
  checkpoint(2, 2);
  const std::optional<ResumeLayout> resume =
      resume_layout(config(), {"pipeline.stages=1"}, run_dir(), 4);
  ASSERT_TRUE(resume);
  EXPECT_EQ(resume->layout, (supervise::Layout{.stages = 2, .replicas = 2, .micro_batches = 2}));
  EXPECT_TRUE(resume->bit_identical);
  EXPECT_FALSE(resume->settings.empty());
}

TEST_F(ResumeLayoutTest, NoLayoutThatFitsIsOneLine) {
  checkpoint(1, 4);
  const std::string error = input_error_of([&] {
    resume_layout(config(), {"pipeline.stages=3", "pipeline.memory_limit=1KiB"}, run_dir(), 2);
  });
  EXPECT_EQ(error.rfind(config() + ": cannot resume step 20 on 2 ranks: 2 slots left: no layout "
                                   "fits: 2 stages x 1 replica, 4 micro-batches each: ",
                        0),
            0u)
      << error;
}

}  // namespace
}  // namespace mpipe::serve
