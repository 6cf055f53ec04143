// Tests for the planner's verdict on a re-planned layout: the stages the model has, the batch
// split and pipeline.memory_limit, each one line naming the experiment's key.
#include "supervise/planner_check.h"

#include <gtest/gtest.h>

#include "checkpoint/checkpoint_store.h"
#include "checkpoint/resume_settings.h"
#include "config/experiment.h"
#include "core/error.h"
#include "supervise/replan.h"
#include "support/input_error_of.h"
#include "support/temp_dir.h"

namespace mpipe::supervise {
namespace {

const std::string kConfig = std::string(MPIPE_TEST_DATA_DIR) + "/mlp.yaml";

TEST(PlannerCheck, TheExperimentsLayoutResolvesAutoFromTheWorld) {
  const config::Experiment experiment = config::load_experiment(kConfig, {});
  EXPECT_EQ(experiment_layout(experiment, 3),
            (Layout{.stages = 3, .replicas = 1, .micro_batches = 4}));
  const config::Experiment replicas =
      config::load_experiment(kConfig, {"pipeline.stages=1", "pipeline.data_parallel=auto"});
  EXPECT_EQ(experiment_layout(replicas, 2),
            (Layout{.stages = 1, .replicas = 2, .micro_batches = 4}));
  EXPECT_FALSE(tree_weight_grads(experiment));
  EXPECT_TRUE(tree_weight_grads(config::load_experiment(kConfig, {"pipeline.weight_grads=tree"})));
}

TEST(PlannerCheck, AcceptsWhatFitsAndNamesTheKeyOfWhatDoesNot) {
  const PlannerCheck check(config::load_experiment(kConfig, {}));
  EXPECT_EQ(check({.stages = 3, .replicas = 1, .micro_batches = 4}), std::nullopt);
  EXPECT_EQ(check({.stages = 2, .replicas = 2, .micro_batches = 2}), std::nullopt);
  const auto too_many = check({.stages = 7, .replicas = 1, .micro_batches = 4});
  ASSERT_TRUE(too_many.has_value());
  EXPECT_EQ(*too_many,
            kConfig +
                ": pipeline.partition: the model has 6 layers, fewer than the 7 pipeline "
                "stages");
  // 32 examples in 5 micro-batches do not split.
  const auto split = check({.stages = 1, .replicas = 1, .micro_batches = 5});
  ASSERT_TRUE(split.has_value());
  EXPECT_EQ(*split, kConfig +
                        ":12: train.batch_size: must be divisible by pipeline.micro_batches x "
                        "data-parallel replicas = 5 x 1 = 5, got 32");
}

TEST(PlannerCheck, AManualPartitionForAnotherStageCountBecomesAuto) {
  const config::Experiment experiment =
      config::load_experiment(kConfig, {"pipeline.stages=2", "pipeline.partition=[3,3]"});
  const Layout two{.stages = 2, .replicas = 1, .micro_batches = 4};
  const Layout three{.stages = 3, .replicas = 1, .micro_batches = 4};
  EXPECT_FALSE(needs_auto_partition(experiment, two));
  EXPECT_TRUE(needs_auto_partition(experiment, three));
  EXPECT_EQ(with_layout(experiment, two).pipeline.partition, (std::vector<int>{3, 3}));
  EXPECT_EQ(with_layout(experiment, three).pipeline.partition_mode, plan::PartitionMode::kAuto);
  const PlannerCheck check(experiment);
  EXPECT_EQ(check(two), std::nullopt);
  EXPECT_EQ(check(three), std::nullopt);
}

TEST(PlannerCheck, AModelOverTheMemoryLimitOnFewerRanksStopsTheReplanWithTheLimitsLine) {
  // The planner predicts 51 and 70 KiB for the stages of K=2, 102 KiB for K=1: under 80 KiB the
  // model no longer fits once one of K=2's two slots is lost. (Accumulating: weight_grads: auto's
  // group operands would not fit K=2 either, 90.2 KiB.)
  const PlannerCheck check(config::load_experiment(
      kConfig, {"pipeline.memory_limit=80KiB", "pipeline.weight_grads=accumulate"}));
  const Layout two{.stages = 2, .replicas = 1, .micro_batches = 4};
  ASSERT_EQ(check(two), std::nullopt);
  try {
    replan(two, 1, false, check);
    FAIL() << "the re-plan on 1 slot fits under 80 KiB";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "1 slot left: no layout fits: 1 stage x 1 replica, 4 micro-batches each: --set "
              "pipeline.memory_limit: no partition of 6 layers into 1 stage fits 80.0 KiB per "
              "rank; the smallest limit that fits is 102.1 KiB");
  }
}

// Commits step 8 of a run in `run_dir` whose checkpoint records `weight_grads`.
void commit_checkpoint(const std::string& run_dir, const std::string& weight_grads) {
  checkpoint::CheckpointStore store(run_dir, 1);
  const checkpoint::ShardRecord shard = store.write_shard(8, 0, {});
  const nlohmann::json settings = {{"pipeline.micro_batches", "4"},
                                   {checkpoint::kGlobalMicroBatchesKey, "4"},
                                   {checkpoint::kResolvedWeightGradsKey, weight_grads}};
  store.write_commit(8, {{"num_stages", 1}, {"settings", settings}}, {shard});
}

// A relaunch resumes the newest checkpoint, whose weight gradients weight_grads: auto keeps: the
// layouts are judged under them. K=2 fits 80 KiB accumulating (70 KiB), not in auto's group of 4
// (90.2 KiB); a run directory without a checkpoint is a new run.
TEST(PlannerCheck, AResumeIsJudgedUnderTheWeightGradsItsCheckpointRecords) {
  const mpipe::testing::TempDir dir;
  PlannerCheck check(config::load_experiment(kConfig, {"pipeline.memory_limit=80KiB"}));
  const Layout two{.stages = 2, .replicas = 1, .micro_batches = 4};
  check.resume_from(dir.file("run"));
  ASSERT_TRUE(check(two));
  commit_checkpoint(dir.file("run"), "accumulate");
  check.resume_from(dir.file("run"));
  EXPECT_EQ(check(two), std::nullopt);
  EXPECT_EQ(check.experiment().pipeline.resumed_weight_grads, plan::WeightGrads::kAccumulate);
  EXPECT_FALSE(tree_weight_grads(check.experiment()));
  check.resume_from(dir.file("new_run"));
  EXPECT_TRUE(check(two));

  commit_checkpoint(dir.file("tree_run"), "tree");  // a change of D between powers of two keeps
  check.resume_from(dir.file("tree_run"));          // the bits
  EXPECT_TRUE(tree_weight_grads(check.experiment()));
}

TEST(PlannerCheck, ARecordThatIsNoChoiceIsTheResumedRunsLine) {
  const mpipe::testing::TempDir dir;
  commit_checkpoint(dir.file("run"), "auto");
  PlannerCheck check(config::load_experiment(kConfig, {}));
  EXPECT_EQ(mpipe::testing::input_error_of([&] { check.resume_from(dir.file("run")); }),
            dir.file("run") +
                ": the checkpoint of step 8: settings.pipeline.resolved_weight_grads: not a "
                "resolved weight_grads: 'auto'");
}

}  // namespace
}  // namespace mpipe::supervise
