// Tests for the layout the daemon gives an experiment that resumes a checkpoint on another world:
// its plan for the world when that keeps the bits, else supervise's re-plan on every rank, else
// one line.
#include "serve/resume_layout.h"

#include <gtest/gtest.h>

#include <fstream>

#include "checkpoint/checkpoint_store.h"
#include "checkpoint/resume_settings.h"
#include "supervise/planner_check.h"
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

  // Commits step 20 of the run, written with D replicas of M micro-batches each, with the
  // weight gradients `weight_grads` records (none: a checkpoint without the record).
  void checkpoint(int replicas, int micro_batches, const std::string& weight_grads = "") {
    checkpoint::CheckpointStore store(run_dir(), 1);
    const checkpoint::ShardRecord shard = store.write_shard(20, 0, {});
    nlohmann::json settings = {
        {"pipeline.micro_batches", std::to_string(micro_batches)},
        {checkpoint::kGlobalMicroBatchesKey, std::to_string(replicas * micro_batches)}};
    if (!weight_grads.empty()) settings[checkpoint::kResolvedWeightGradsKey] = weight_grads;
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

// weight_grads: auto keeps the checkpoint's choice on the resume, so the re-plan's memory check
// judges the layout under it, not under a new run's. 2 stages of this model peak at 6.8 KiB
// accumulating, 9.1 KiB in a group of the 4 micro-batches (auto's for a new run).
TEST_F(ResumeLayoutTest, ALayoutThatFitsTheCheckpointsAccumulatingIsNotRefused) {
  checkpoint(1, 4, "accumulate");
  const Args overrides = {"pipeline.stages=3", "pipeline.memory_limit=8KiB"};
  const supervise::Layout two{.stages = 2, .replicas = 1, .micro_batches = 4};
  ASSERT_TRUE(supervise::PlannerCheck(config::load_experiment(config(), overrides))(two));
  const std::optional<ResumeLayout> resume = resume_layout(config(), overrides, run_dir(), 2);
  ASSERT_TRUE(resume);
  EXPECT_EQ(resume->layout, two);
  EXPECT_TRUE(resume->bit_identical);
}

// The other way: micro-batches of 256 examples make a new run's auto accumulate (157.9 KiB at 2
// stages), but a checkpoint that batched keeps batching, which holds every micro-batch's operands
// (210.9 KiB): refused here rather than over its limit once started.
TEST_F(ResumeLayoutTest, ALayoutThatMissesTheLimitUnderTheCheckpointsBatchingIsRefused) {
  checkpoint(1, 4, "batched");
  const Args overrides = {"pipeline.stages=3", "train.batch_size=1024", "data.num_examples=1024",
                          "pipeline.memory_limit=160KiB"};
  const supervise::Layout two{.stages = 2, .replicas = 1, .micro_batches = 4};
  ASSERT_EQ(supervise::PlannerCheck(config::load_experiment(config(), overrides))(two),
            std::nullopt);
  EXPECT_EQ(input_error_of([&] { resume_layout(config(), overrides, run_dir(), 2); }),
            config() +
                ": cannot resume step 20 on 2 ranks: 2 slots left: no layout fits: 2 "
                "stages x 1 replica, 4 micro-batches each: --set pipeline.memory_limit: "
                "pipeline.weight_grads: auto (batched, kept from the checkpoint) needs "
                "210.9 KiB per rank with its weight-gradient operands, over the limit of "
                "160.0 KiB; set pipeline.weight_grads: accumulate, which needs 157.9 KiB "
                "(auto does not choose it for you: the weights' bits would then depend on "
                "the limit)");
}

// A checkpoint that summed in a fixed tree keeps doing so, so a change of D between powers of two
// keeps the bits: the plan for 4 ranks (1 stage fixed: 4 replicas of 1) stays; without the record
// it is re-planned to keep D (APlanThatChangesDIsReplannedToKeepTheBits).
TEST_F(ResumeLayoutTest, ACheckpointThatSummedInATreeKeepsTheBitsAcrossD) {
  checkpoint(2, 2, "tree");
  const std::optional<ResumeLayout> resume =
      resume_layout(config(), {"pipeline.stages=1"}, run_dir(), 4);
  ASSERT_TRUE(resume);
  EXPECT_EQ(resume->layout, (supervise::Layout{.stages = 1, .replicas = 4, .micro_batches = 1}));
  EXPECT_TRUE(resume->bit_identical);
  EXPECT_TRUE(resume->settings.empty());
}

TEST_F(ResumeLayoutTest, ARecordThatIsNoChoiceIsTheResumedRunsLine) {
  checkpoint(1, 4, "sideways");
  EXPECT_EQ(input_error_of([&] { resume_layout(config(), {"pipeline.stages=3"}, run_dir(), 2); }),
            run_dir() +
                ": the checkpoint of step 20: settings.pipeline.resolved_weight_grads: not a "
                "resolved weight_grads: 'sideways'");
}

}  // namespace
}  // namespace mpipe::serve
