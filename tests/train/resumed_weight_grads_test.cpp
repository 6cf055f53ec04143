// Tests of the weight-gradient choice a checkpoint records and what a resume reads back of it.
#include "train/resumed_weight_grads.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "support/input_error_of.h"
#include "train/run_checkpoint.h"

namespace mpipe::train {
namespace {

using plan::WeightGrads;

std::string error_of(const checkpoint::Settings& saved) {
  try {
    stored_weight_grads(saved, "runs/x: the checkpoint of step 4");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ResumedWeightGrads, ReadsBackWhatIsRecorded) {
  for (WeightGrads weight_grads : {WeightGrads::kAccumulate, WeightGrads::kBatched,
                                   WeightGrads::kGrouped, WeightGrads::kTree}) {
    const int group = weight_grads == WeightGrads::kGrouped ? 4 : 0;
    checkpoint::Settings settings = {{"pipeline.weight_grads", "auto"}};
    record_weight_grads(weight_grads, group, settings);
    EXPECT_EQ(settings.contains(checkpoint::kResolvedWeightGroupKey), group > 0);
    const std::optional<ResumedWeightGrads> read = stored_weight_grads(settings, "meta.json");
    ASSERT_TRUE(read);
    EXPECT_EQ(read->weight_grads, weight_grads);
    EXPECT_EQ(read->weight_group, group);
  }
}

// A checkpoint saved before the choice was recorded: auto as it resolved then (batched under gpipe
// with recompute never as configured, else accumulate); any other setting is left to the config.
TEST(ResumedWeightGrads, AutoOfACheckpointWithoutTheChoiceIsAsItThenResolved) {
  const auto read = [](const std::string& weight_grads, const std::string& schedule,
                       const std::string& recompute) {
    return stored_weight_grads({{"pipeline.weight_grads", weight_grads},
                                {"pipeline.schedule", schedule},
                                {"pipeline.recompute", recompute}},
                               "meta.json");
  };
  EXPECT_EQ(read("auto", "gpipe", "never")->weight_grads, WeightGrads::kBatched);
  EXPECT_EQ(read("auto", "gpipe", "auto")->weight_grads, WeightGrads::kAccumulate);
  EXPECT_EQ(read("auto", "zb_h1", "never")->weight_grads, WeightGrads::kAccumulate);
  EXPECT_EQ(read("auto", "1f1b", "always")->weight_group, 0);
  EXPECT_FALSE(read("grouped", "zb_h1", "always"));
}

TEST(ResumedWeightGrads, RefusesARecordThatIsNoChoice) {
  EXPECT_EQ(error_of({{checkpoint::kResolvedWeightGradsKey, "auto"}}),
            "runs/x: the checkpoint of step 4: settings.pipeline.resolved_weight_grads: not a "
            "resolved weight_grads: 'auto'");
  EXPECT_EQ(error_of({{checkpoint::kResolvedWeightGradsKey, "grouped"},
                      {checkpoint::kResolvedWeightGroupKey, "0"}}),
            "runs/x: the checkpoint of step 4: settings.pipeline.resolved_weight_group: must be a "
            "group of at least 1 micro-batch, got '0'");
  EXPECT_EQ(error_of({{checkpoint::kResolvedWeightGradsKey, "grouped"}}),
            "runs/x: the checkpoint of step 4: settings.pipeline.resolved_weight_group: must be a "
            "group of at least 1 micro-batch, got ''");
}

// What a resume reads of a run's checkpoint names it as "<run dir>: the checkpoint of step N"
// wherever the resume is planned, and sets the pipeline's resumed choice (nullopt: a new run's).
TEST(ResumedWeightGrads, ACheckpointsChoiceGoesIntoThePipelineItResumes) {
  const StoredSettings stored{.step = 4,
                              .settings = {{checkpoint::kResolvedWeightGradsKey, "grouped"},
                                           {checkpoint::kResolvedWeightGroupKey, "2"}}};
  plan::PipelineConfig pipeline;
  keep_weight_grads(checkpoint_weight_grads("runs/x", stored), pipeline);
  EXPECT_EQ(pipeline.resumed_weight_grads, WeightGrads::kGrouped);
  EXPECT_EQ(pipeline.resumed_weight_group, 2);
  keep_weight_grads(std::nullopt, pipeline);
  EXPECT_EQ(pipeline.resumed_weight_grads, WeightGrads::kAuto);
  EXPECT_EQ(pipeline.resumed_weight_group, 0);
  const StoredSettings bad{.step = 4, .settings = {{checkpoint::kResolvedWeightGradsKey, "x"}}};
  EXPECT_EQ(mpipe::testing::input_error_of([&] { checkpoint_weight_grads("runs/x", bad); }),
            "runs/x: the checkpoint of step 4: settings.pipeline.resolved_weight_grads: not a "
            "resolved weight_grads: 'x'");
}

}  // namespace
}  // namespace mpipe::train
