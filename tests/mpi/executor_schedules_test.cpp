// Multi-rank test of Executor::train_step on K = 4 ranks and on K = 2 (the 4 as two pairs): one
// training step of a chain of 8 layers under every schedule (gpipe, 1f1b and zb_h1 on K stages;
// interleaved and zbv on 2K, 2 chunks per rank) and recompute mode, and with batched weight
// gradients (WB ops) and grouped ones (groups of 3 of the 8 micro-batches, the last of 2: a WB op
// per group, in two recompute modes) under every schedule, leaves each rank's layers with
// gradients bit-identical to the same step run by one rank alone, and the rank of the last stage
// with the same loss: the executor, the link and the programs together, below the trainer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/tag_space.h"
#include "core/enum_names.h"
#include "kernels/context.h"
#include "kernels/eltwise.h"
#include "nn/activation.h"
#include "nn/linear.h"
#include "nn/loss.h"
#include "pipeline/executor.h"
#include "pipeline/link.h"
#include "pipeline/stage.h"
#include "plan/rank_messages.h"
#include "plan/schedule.h"

namespace mpipe::pipeline {
namespace {

constexpr int kRanks = 4;
constexpr int kLayers = 8;
constexpr int kMicroBatches = 8;  // a multiple of K, as interleaved needs
constexpr int64_t kRows = 2;      // per micro-batch
constexpr uint64_t kSeed = 3;
constexpr int kWeightGroup = 3;  // under weight_grads: grouped (not a divisor of M)

// Features into layer `layer` (and out of layer kLayers - 1: kFeatures[kLayers]).
constexpr int64_t kFeatures[kLayers + 1] = {6, 8, 8, 5, 5, 8, 8, 7, 3};

// Layers [begin, end) of the chain: linear layers, each followed by a tanh but the last.
std::vector<std::unique_ptr<nn::Layer>> chain(int begin, int end) {
  std::vector<std::unique_ptr<nn::Layer>> layers;
  for (int layer = begin; layer < end; ++layer) {
    const Shape input{kFeatures[layer]};
    if (layer % 2 == 0 || layer == kLayers - 1) {
      layers.push_back(std::make_unique<nn::Linear>(layer, input, kFeatures[layer + 1]));
    } else {
      layers.push_back(std::make_unique<nn::Activation>(layer, input, kernels::EltwiseKind::kTanh));
    }
  }
  return layers;
}

// Micro-batch m's inputs and targets: fixed values that differ from one micro-batch to the next.
MicroBatchData data() {
  auto filled = [](Shape shape, int m, float scale) {
    Tensor t(std::move(shape));
    float* values = t.data();
    for (int64_t i = 0; i < t.numel(); ++i) {
      values[i] = scale * static_cast<float>((i * 7 + m * 3) % 11 - 5);
    }
    return t;
  };
  return {.inputs =
              [filled](int m) {
                return bundle_of(filled(Shape{kRows, kFeatures[0]}, m, 0.3f));
              },
          .targets =
              [filled](int m) {
                return filled(Shape{kRows, kFeatures[kLayers]}, m, 0.1f);
              }};
}

// The round: kMicroBatches of kRows rows; each chunk's input and output-gradient shapes.
RoundPlan round_plan(const std::vector<int>& first_layers, const std::vector<int>& end_layers) {
  RoundPlan plan;
  plan.seed = kSeed;
  plan.grad_scale = 1.0f / (kRows * kMicroBatches);
  for (int m = 0; m < kMicroBatches; ++m) {
    plan.rows.push_back(kRows);
    plan.first_example.push_back(m * kRows);
  }
  for (size_t chunk = 0; chunk < first_layers.size(); ++chunk) {
    plan.stage_inputs.push_back({Shape{kFeatures[first_layers[chunk]]}});
    plan.stage_output_grads.push_back({Shape{kFeatures[end_layers[chunk]]}});
  }
  return plan;
}

// What one step left on a rank: its layers' gradients by global layer, and its loss totals.
struct StepResult {
  std::vector<std::vector<float>> grads = std::vector<std::vector<float>>(kLayers);
  LossTotals loss;
};

// One step of `kind` on the ranks of `pipeline` (v chunks each, the layers split evenly over
// the K·v stages), from the same initial weights on any number of ranks.
StepResult run_step(const comm::Communicator& pipeline, plan::ScheduleKind kind, int virtual_stages,
                    plan::Recompute recompute, plan::WeightGrads weight_grads) {
  const int ranks = pipeline.size();
  const plan::Placement placement = plan::placement_for(kind, ranks, virtual_stages);
  const int layers_per_stage = kLayers / placement.num_stages();
  std::vector<std::unique_ptr<Stage>> stages;
  std::vector<Stage*> chunks;
  std::vector<int> first_layers, end_layers;
  for (int chunk = 0; chunk < virtual_stages; ++chunk) {
    const int begin = placement.stage_of(pipeline.rank(), chunk) * layers_per_stage;
    first_layers.push_back(begin);
    end_layers.push_back(begin + layers_per_stage);
    auto& stage = *stages.emplace_back(
        std::make_unique<Stage>(chain(begin, begin + layers_per_stage), recompute, kMicroBatches,
                                weight_grads, nullptr, kWeightGroup));
    stage.params().initialize(kSeed);
    stage.zero_grads_for_step();
    chunks.push_back(&stage);
  }
  Link link(pipeline, pipeline.rank(), placement,
            comm::TagSpace(
                {.kinds = kDirections, .micro_batches = kMicroBatches, .chunks = virtual_stages}));
  kernels::KernelContext kernels;
  const auto loss = nn::make_loss("mse");
  Executor executor(chunks, link, pipeline.rank(), placement, *loss, kernels);
  std::vector<plan::Program> programs;
  for (int r = 0; r < ranks; ++r) {
    programs.push_back(plan::make_program(kind, ranks, kMicroBatches, r, virtual_stages,
                                          weight_grads, kWeightGroup));
  }
  StepResult result;
  result.loss = executor.train_step(programs.at(static_cast<size_t>(pipeline.rank())),
                                    plan::step_messages(programs, placement).at(pipeline.rank()),
                                    round_plan(first_layers, end_layers), data());
  // Each parameter's gradient, without the alignment padding after it (which depends on what
  // follows in the stage's buffer).
  for (const auto& stage : stages) {
    const nn::ParamBuffer& params = stage->params();
    for (const nn::ParamBuffer::Entry& entry : params.entries()) {
      if (!entry.trainable) continue;
      const auto grads = params.grads().subspan(static_cast<size_t>(entry.offset),
                                                static_cast<size_t>(entry.shape.numel()));
      auto& layer_grads = result.grads[static_cast<size_t>(entry.global_layer)];
      layer_grads.insert(layer_grads.end(), grads.begin(), grads.end());
    }
  }
  return result;
}

struct Case {
  plan::ScheduleKind kind;
  int virtual_stages;
  plan::Recompute recompute;
  plan::WeightGrads weight_grads = plan::WeightGrads::kAccumulate;
};

// One step of case `c` on the ranks of `pipeline` leaves each rank's layers with the gradients one
// rank alone computes, bit for bit, and the rank of the last stage with its loss.
void expect_the_bits_of_one_rank(const comm::Communicator& pipeline, const Case& c) {
  const comm::Communicator alone = pipeline.split(pipeline.rank(), 0, "one rank alone");
  // (Batched or grouped weight gradients sum each layer's in one GEMM per group: the reference
  // groups them too.)
  const StepResult reference =
      run_step(alone, plan::ScheduleKind::kGpipe, 1, plan::Recompute::kNever, c.weight_grads);
  const StepResult pipelined =
      run_step(pipeline, c.kind, c.virtual_stages, c.recompute, c.weight_grads);
  // Batched or not, the gradients agree to rounding (a WB op that computed nothing would not).
  const StepResult accumulated = run_step(alone, plan::ScheduleKind::kGpipe, 1,
                                          plan::Recompute::kNever, plan::WeightGrads::kAccumulate);

  const plan::Placement placement = plan::placement_for(c.kind, pipeline.size(), c.virtual_stages);
  int layers_held = 0;
  for (int layer = 0; layer < kLayers; ++layer) {
    const auto& grads = pipelined.grads[static_cast<size_t>(layer)];
    const auto& expected = reference.grads[static_cast<size_t>(layer)];
    if (expected.empty()) continue;  // a tanh: no weights
    const int stage = layer / (kLayers / placement.num_stages());
    if (placement.rank_of(stage) != pipeline.rank()) {
      EXPECT_TRUE(grads.empty()) << "layer " << layer << " is another rank's";
      continue;
    }
    ++layers_held;
    ASSERT_EQ(grads.size(), expected.size()) << "layer " << layer;
    EXPECT_EQ(std::memcmp(grads.data(), expected.data(), grads.size() * sizeof(float)), 0)
        << "layer " << layer << "'s gradients differ from one rank's";
    const auto& rounded = accumulated.grads[static_cast<size_t>(layer)];
    size_t far = 0;  // (counted, not asserted one by one: every rank must reach the allreduce)
    for (size_t i = 0; i < grads.size(); ++i) {
      if (!(std::abs(grads[i] - rounded[i]) <= 1e-5f * std::max(1.0f, std::abs(rounded[i])))) {
        ++far;
      }
    }
    EXPECT_EQ(far, 0u) << "layer " << layer << "'s gradients are far from accumulated ones";
  }
  if (placement.rank_of(placement.num_stages() - 1) == pipeline.rank()) {
    EXPECT_EQ(pipelined.loss.rows, reference.loss.rows);
    EXPECT_EQ(pipelined.loss.sum, reference.loss.sum);  // bit for bit
  } else {
    EXPECT_EQ(pipelined.loss.rows, 0);
  }
  std::vector<double> held{static_cast<double>(layers_held)};
  pipeline.allreduce_sum(held);
  const auto with_weights =
      std::ranges::count_if(reference.grads, [](const auto& grads) { return !grads.empty(); });
  EXPECT_EQ(held[0], static_cast<double>(with_weights)) << "each layer with weights is held once";
}

class ExecutorSchedules : public testing::TestWithParam<Case> {};

TEST_P(ExecutorSchedules, GiveEachRanksLayersTheGradientsOfOneRankBitForBit) {
  const comm::Communicator world = comm::Communicator::world();
  ASSERT_EQ(world.size(), kRanks);
  expect_the_bits_of_one_rank(world, GetParam());
}

// The same on 2 ranks: the 4 ranks as two pipelines of 2, each its own step.
TEST_P(ExecutorSchedules, GiveEachOfTwoRanksLayersTheGradientsOfOneRankBitForBit) {
  const comm::Communicator world = comm::Communicator::world();
  ASSERT_EQ(world.size(), kRanks);
  const comm::Communicator pair = world.split(world.rank() / 2, world.rank(), "pairs of ranks");
  ASSERT_EQ(pair.size(), 2);
  expect_the_bits_of_one_rank(pair, GetParam());
}

std::string case_name(const testing::TestParamInfo<Case>& info) {
  return std::string(name_of(plan::kScheduleNames, info.param.kind)) + "_" +
         std::string(name_of(plan::kRecomputeNames, info.param.recompute)) + "_" +
         std::string(name_of(plan::kWeightGradsNames, info.param.weight_grads));
}

std::vector<Case> every_case() {
  std::vector<Case> cases;
  for (plan::ScheduleKind kind :
       {plan::ScheduleKind::kGpipe, plan::ScheduleKind::kOneFOneB, plan::ScheduleKind::kZbH1,
        plan::ScheduleKind::kInterleaved, plan::ScheduleKind::kZbv}) {
    const int chunks =
        kind == plan::ScheduleKind::kInterleaved || kind == plan::ScheduleKind::kZbv ? 2 : 1;
    for (plan::Recompute recompute : {plan::Recompute::kAlways, plan::Recompute::kExceptLast,
                                      plan::Recompute::kNever, plan::Recompute::kPerLayer}) {
      cases.push_back({kind, chunks, recompute});
    }
    cases.push_back({kind, chunks, plan::Recompute::kNever, plan::WeightGrads::kBatched});
    // Grouped: the copies in B or W, each group's product after its last; two modes per schedule.
    cases.push_back({kind, chunks, plan::Recompute::kAlways, plan::WeightGrads::kGrouped});
    cases.push_back({kind, chunks, plan::Recompute::kPerLayer, plan::WeightGrads::kGrouped});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(EverySchedule, ExecutorSchedules, testing::ValuesIn(every_case()),
                         case_name);

}  // namespace
}  // namespace mpipe::pipeline
