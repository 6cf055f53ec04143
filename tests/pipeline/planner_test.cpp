// Tests for the planner against a real Stage: the stash it predicts equals what a Stage stores
// under every schedule and recompute mode (the planner's pure tests: tests/plan/planner_test.cpp).
#include "plan/planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/rng.h"
#include "kernels/context.h"
#include "pipeline/stage.h"
#include "plan/program_memory.h"
#include "plan/schedule.h"
#include "support/random_tensor.h"
#include "support/small_models.h"

namespace mpipe::plan {
namespace {

using model::ModelSpec;
using testing::dense_model;
using testing::kDenseInput;
using testing::model_of;

constexpr ScheduleKind kSchedules[] = {ScheduleKind::kGpipe, ScheduleKind::kOneFOneB};
constexpr Recompute kModes[] = {Recompute::kAlways, Recompute::kExceptLast, Recompute::kNever,
                                Recompute::kPerLayer};

// Keeps less than its input: average pooling saves nothing, the linear layer a quarter of it.
ModelSpec pooling_model() {
  return model_of({{"avg_pool2d", {{"kernel", int64_t{2}}}},
                   {"flatten", {}},
                   {"linear", {{"units", int64_t{3}}}}});
}
const Shape kPoolingInput{1, 4, 4};

// Runs stage `stage`'s compute ops of one step on a real Stage holding all the model's layers and
// returns its peak stored bytes.
size_t measured_stash_peak(const ModelSpec& spec, const Shape& input, ScheduleKind schedule,
                           Recompute recompute, int num_stages, int num_micro_batches, int stage,
                           int64_t rows) {
  const auto num_layers = static_cast<int>(spec.layers.size());
  pipeline::Stage real(model::build_layers(spec, input, 0, num_layers), recompute,
                       num_micro_batches);
  real.params().initialize(3);
  const Shape output = real.layers().back()->output_shape();
  kernels::KernelContext kernels;
  const nn::LayerContext ctx{.kernels = kernels, .seed = 1, .step = 0, .first_example = 0};
  const CounterRng rng(5, RngPurpose::kData, 1, 0);
  for (const Op& op : make_program(schedule, num_stages, num_micro_batches, stage)) {
    if (op.kind == OpKind::kForward) {
      real.forward(op.micro_batch,
                   pipeline::bundle_of(testing::uniform_tensor(input.batched(rows), rng)), ctx);
    } else if (op.kind == OpKind::kBackward) {
      real.backward(op.micro_batch,
                    pipeline::bundle_of(testing::uniform_tensor(output.batched(rows), rng)), ctx);
    }
  }
  return real.peak_stored_bytes();
}

TEST(Planner, PredictedKeptActivationsEqualARealStagesPeakUnderEverySchedule) {
  constexpr int64_t kRows = 2;
  for (const auto& [spec, input] :
       {std::pair{dense_model(), kDenseInput}, std::pair{pooling_model(), kPoolingInput}}) {
    const model::ModelPlan plan = model::plan_model(spec, input);
    const plan::MemoryModel memory(plan::layer_costs(plan), kRows, 0);
    const int num_layers = static_cast<int>(plan.layers.size());
    for (ScheduleKind schedule : kSchedules) {
      for (Recompute recompute : kModes) {
        for (int k = 1; k <= 3; ++k) {
          for (int m : {1, 2, 3, 5}) {
            for (int s = 0; s < k; ++s) {
              double predicted = 0.0;
              std::vector<Program> programs;
              for (int t = 0; t < k; ++t) programs.push_back(make_program(schedule, k, m, t));
              const Placement placement{.num_ranks = k};
              for (const RankMoment& moment : rank_moments(
                       programs, s, placement, step_messages(programs, placement), recompute)) {
                const auto mem =
                    memory.stage(0, num_layers, moment.chunks.front(), s == 0, s == k - 1);
                predicted = std::max(predicted, mem.kept_activations);
              }
              EXPECT_EQ(predicted, static_cast<double>(measured_stash_peak(
                                       spec, input, schedule, recompute, k, m, s, kRows)))
                  << to_string(schedule) << " recompute " << static_cast<int>(recompute) << " K "
                  << k << " M " << m << " stage " << s << " input " << input.str();
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace mpipe::plan
