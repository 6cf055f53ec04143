// Tests for Optimizer: SGD, Adam and AdamW updates against hand-computed values, state slots
// checkpoint restore and replica shards.
#include "optim/optimizer.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"
#include "optim/replica_shard.h"

namespace mpipe::optim {
namespace {

constexpr double kTolerance = 2e-6;

const std::vector<std::vector<float>> kGrads = {
    {0.5f, -1.0f, 2.0f}, {0.25f, 0.5f, -1.0f}, {1.0f, 0.0f, 0.5f}};

OptimizerConfig config_of(OptimizerKind kind, double momentum = 0.0, bool nesterov = false,
                          double weight_decay = 0.0) {
  OptimizerConfig config;
  config.kind = kind;
  config.lr = 0.1;
  config.momentum = momentum;
  config.nesterov = nesterov;
  config.weight_decay = weight_decay;
  return config;
}

// Runs one step per expected row from p = [1, 2, -3] with kGrads and lr 0.1; checks each row.
void expect_trajectory(const OptimizerConfig& config,
                       const std::vector<std::vector<double>>& expected) {
  std::vector<float> params = {1.0f, 2.0f, -3.0f};
  auto optimizer = Optimizer::make(config, 3);
  for (size_t s = 0; s < expected.size(); ++s) {
    optimizer->step(params, kGrads[s], 0.1);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_NEAR(params[i], expected[s][i], kTolerance) << "step " << s << " element " << i;
    }
  }
  EXPECT_EQ(optimizer->steps_taken(), static_cast<int64_t>(expected.size()));
}

TEST(Sgd, PlainStepSubtractsLearningRateTimesGradient) {
  // p - 0.1 g, twice.
  expect_trajectory(config_of(OptimizerKind::kSgd), {{0.95, 2.1, -3.2}, {0.925, 2.05, -3.1}});
}

TEST(Sgd, MomentumAccumulatesBufferStartingWithTheFirstGradient) {
  // buf1 = g1; buf2 = 0.9 g1 + g2 = [0.7, -0.4, 0.8]; buf3 = 0.9 buf2 + g3 = [1.63, -0.36, 1.22].
  expect_trajectory(config_of(OptimizerKind::kSgd, 0.9),
                    {{0.95, 2.1, -3.2}, {0.88, 2.14, -3.28}, {0.717, 2.176, -3.402}});
}

TEST(Sgd, NesterovStepsAlongGradientPlusMomentumTimesBuffer) {
  // step 1: g + 0.9 g = 1.9 g; step 2: g2 + 0.9 buf2 = [0.88, 0.14, -0.28].
  expect_trajectory(config_of(OptimizerKind::kSgd, 0.9, /*nesterov=*/true),
                    {{0.905, 2.19, -3.38}, {0.817, 2.176, -3.352}, {0.5703, 2.2084, -3.5118}});
}

TEST(Sgd, WeightDecayAddsL2TermToGradient) {
  // step 1: g + 0.5 p = [1, 0, 0.5].
  expect_trajectory(config_of(OptimizerKind::kSgd, 0.0, false, 0.5),
                    {{0.9, 2.0, -3.05}, {0.83, 1.85, -2.7975}});
}

TEST(Sgd, WithoutMomentumHasNoState) {
  auto optimizer = Optimizer::make(config_of(OptimizerKind::kSgd), 3);
  EXPECT_TRUE(optimizer->state().empty());
}

TEST(Sgd, WithMomentumExposesMomentumSlot) {
  auto optimizer = Optimizer::make(config_of(OptimizerKind::kSgd, 0.9), 3);
  auto state = optimizer->state();
  ASSERT_EQ(state.size(), 1u);
  EXPECT_EQ(state[0].first, "momentum");
  EXPECT_EQ(state[0].second.size(), 3u);
}

TEST(Adam, FirstStepMovesEachParameterByLearningRateAgainstGradientSign) {
  // Bias correction makes m/sqrt(v) = g/|g| on step 1; later steps hand-computed, e.g. element 0
  // of step 2: m = 0.07, v = 3.1225e-4, bc1 = 0.19, bc2 = 0.001999 -> 0.9 - 0.1 * 0.932178.
  expect_trajectory(config_of(OptimizerKind::kAdam), {{0.9, 2.1, -3.1},
                                                      {0.80678204, 2.1266337, -3.1266337},
                                                      {0.715873406, 2.14722163, -3.16067662}});
}

TEST(Adam, WeightDecayIsAddedToGradient) {
  // step 1: g + 0.5 p = [1, 0, 0.5]: element 1 has zero gradient and does not move.
  expect_trajectory(config_of(OptimizerKind::kAdam, 0.0, false, 0.5),
                    {{0.9, 2.0, -3.1}, {0.802427952, 1.92558632, -3.03986216}});
}

TEST(AdamW, WeightDecayShrinksParametersBeforeTheAdamStep) {
  // step 1: p * (1 - 0.1 * 0.5) = [0.95, 1.9, -2.85], then -0.1 * sign(g).
  expect_trajectory(config_of(OptimizerKind::kAdamW, 0.0, false, 0.5),
                    {{0.85, 2.0, -2.95}, {0.71428204, 1.9266337, -2.8291337}});
}

TEST(Adam, ExposesExpAvgAndExpAvgSqSlots) {
  auto optimizer = Optimizer::make(config_of(OptimizerKind::kAdamW), 3);
  auto state = optimizer->state();
  ASSERT_EQ(state.size(), 2u);
  EXPECT_EQ(state[0].first, "exp_avg");
  EXPECT_EQ(state[1].first, "exp_avg_sq");
  EXPECT_EQ(state[1].second.size(), 3u);
}

TEST(Optimizer, RestoredStateAndStepCountContinueTheSameTrajectory) {
  for (OptimizerKind kind : {OptimizerKind::kSgd, OptimizerKind::kAdam, OptimizerKind::kAdamW}) {
    const OptimizerConfig config = config_of(kind, kind == OptimizerKind::kSgd ? 0.9 : 0.0);
    std::vector<float> params = {1.0f, 2.0f, -3.0f};
    auto original = Optimizer::make(config, 3);
    original->step(params, kGrads[0], 0.1);
    original->step(params, kGrads[1], 0.1);

    std::vector<float> restored_params = params;
    auto restored = Optimizer::make(config, 3);
    auto from = original->state();
    auto to = restored->state();
    ASSERT_EQ(from.size(), to.size());
    for (size_t s = 0; s < from.size(); ++s) {
      std::copy(from[s].second.begin(), from[s].second.end(), to[s].second.begin());
    }
    restored->set_steps_taken(original->steps_taken());

    original->step(params, kGrads[2], 0.1);
    restored->step(restored_params, kGrads[2], 0.1);
    EXPECT_EQ(params, restored_params);
  }
}

TEST(Optimizer, UpdateOfEachElementDoesNotDependOnHowParametersAreSplit) {
  const OptimizerConfig config = config_of(OptimizerKind::kAdamW, 0.0, false, 0.1);
  std::vector<float> whole = {1.0f, 2.0f, -3.0f};
  auto one = Optimizer::make(config, 3);
  std::vector<float> head = {1.0f}, tail = {2.0f, -3.0f};
  auto first = Optimizer::make(config, 1);
  auto second = Optimizer::make(config, 2);
  for (const auto& g : kGrads) {
    one->step(whole, g, 0.1);
    first->step(head, std::span<const float>(g).subspan(0, 1), 0.1);
    second->step(tail, std::span<const float>(g).subspan(1, 2), 0.1);
  }
  EXPECT_EQ(whole[0], head[0]);
  EXPECT_EQ(whole[1], tail[0]);
  EXPECT_EQ(whole[2], tail[1]);
}

// optimizer.shard_across_replicas: two optimizers owning [0, 2) and [2, 6) of a buffer, each with
// the decay-exempt ranges of the whole, give every element the whole optimizer's bits, leave the
// other elements alone and hold state for their own elements only.
TEST(Optimizer, OwnedShardsStepTheirElementsAsTheWholeBufferDoes) {
  const std::vector<ParamRange> exempt = {{1, 3}};
  const std::vector<float> start = {1.0f, 2.0f, -3.0f, 0.5f, -0.25f, 4.0f};
  for (const OptimizerKind kind :
       {OptimizerKind::kSgd, OptimizerKind::kAdam, OptimizerKind::kAdamW}) {
    const OptimizerConfig config = config_of(kind, 0.9, false, 0.1);
    auto whole = Optimizer::make(config, 6, exempt);
    auto first = Optimizer::make(config, 6, exempt, ParamRange{0, 2});
    auto second = Optimizer::make(config, 6, exempt, ParamRange{2, 6});
    EXPECT_EQ(first->state().front().second.size(), 2u);
    EXPECT_EQ(second->state().front().second.size(), 4u);
    std::vector<float> expected = start, a = start, b = start;
    for (int step = 0; step < 3; ++step) {
      std::vector<float> grads(6);
      for (size_t i = 0; i < 6; ++i) grads[i] = kGrads[static_cast<size_t>(step)][i % 3];
      whole->step(expected, grads, 0.1);
      first->step(a, grads, 0.1);
      second->step(b, grads, 0.1);
    }
    for (size_t i = 0; i < 6; ++i) {
      EXPECT_EQ(i < 2 ? a[i] : b[i], expected[i]) << "kind " << static_cast<int>(kind) << " " << i;
      EXPECT_EQ(i < 2 ? b[i] : a[i], start[i]) << "not owned, element " << i;
    }
  }
  EXPECT_THROW(Optimizer::make(config_of(OptimizerKind::kAdam), 6, {}, ParamRange{4, 7}), Error);
}

TEST(ReplicaShard, ShardIndexIsTheReplicasBitsReversedForAPowerOfTwo) {
  EXPECT_EQ(shard_index(0, 1), 0);
  EXPECT_EQ(shard_index(1, 2), 1);
  const int four[] = {0, 2, 1, 3};
  for (int r = 0; r < 4; ++r) EXPECT_EQ(shard_index(r, 4), four[r]) << r;
  EXPECT_EQ(shard_index(1, 8), 4);
  EXPECT_EQ(shard_index(6, 8), 3);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(shard_index(r, 3), r);  // no tree: replica order
  try {
    shard_index(4, 4);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "shard_index: replica 4 of 4");
  }
}

TEST(ReplicaShard, ShardsAreCutAtTheLastCutNotAfterAnEvenShare) {
  // Two layers' norm blocks: [0, 4096, 8192) and a layer from 10000 on.
  const std::vector<int64_t> cuts = {0, 4096, 8192, 10000, 14096};
  EXPECT_EQ(shard_begins(cuts, 20000, 2), (std::vector<int64_t>{0, 10000, 20000}));
  EXPECT_EQ(shard_begins(cuts, 20000, 4), (std::vector<int64_t>{0, 4096, 10000, 14096, 20000}));
  // Fewer cuts than replicas: shards are empty.
  EXPECT_EQ(shard_begins(std::vector<int64_t>{0}, 20, 4), (std::vector<int64_t>{0, 0, 0, 0, 20}));
  EXPECT_EQ(shard_begins({}, 0, 2), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(shard_begins(cuts, 20000, 1), (std::vector<int64_t>{0, 20000}));
  // Replica 1 of 4 holds shard 2: [10000, 14096).
  const std::vector<int64_t> four = shard_begins(cuts, 20000, 4);
  const auto shard = static_cast<size_t>(shard_index(1, 4));
  EXPECT_EQ(four[shard], 10000);
  EXPECT_EQ(four[shard + 1], 14096);
  try {
    shard_begins(std::vector<int64_t>{0, 8, 4}, 20, 2);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "shard_begins: the cuts must ascend within [0, 20]");
  }
  EXPECT_THROW(shard_begins(std::vector<int64_t>{0, 21}, 20, 2), Error);
}

TEST(DecaySegments, CutTheBufferIntoAlternatingRunsInOrder) {
  EXPECT_EQ(decay_segments(6, {}), (std::vector<DecaySegment>{{{0, 6}, true}}));
  // Unsorted, touching and overlapping ranges merge; an empty one changes nothing.
  EXPECT_EQ(
      decay_segments(10, {{6, 8}, {1, 2}, {2, 3}, {7, 9}, {4, 4}}),
      (std::vector<DecaySegment>{
          {{0, 1}, true}, {{1, 3}, false}, {{3, 6}, true}, {{6, 9}, false}, {{9, 10}, true}}));
  EXPECT_EQ(decay_segments(4, {{0, 4}}), (std::vector<DecaySegment>{{{0, 4}, false}}));
  EXPECT_THROW(decay_segments(4, {{3, 5}}), Error);
}

// Exempt parameters follow the trajectory of an optimizer without weight decay exactly, the
// others that of one with it, for every kind.
TEST(Optimizer, DecayExemptParametersStepExactlyAsWithoutWeightDecay) {
  const std::vector<ParamRange> exempt = {{1, 2}, {4, 6}};
  const std::vector<float> start = {1.0f, 2.0f, -3.0f, 0.5f, -0.25f, 4.0f};
  for (const OptimizerKind kind :
       {OptimizerKind::kSgd, OptimizerKind::kAdam, OptimizerKind::kAdamW}) {
    const OptimizerConfig decayed = config_of(kind, 0.9, false, 0.1);
    OptimizerConfig plain = decayed;
    plain.weight_decay = 0.0;
    std::vector<float> with_exempt = start, with_decay = start, without_decay = start;
    auto a = Optimizer::make(decayed, 6, exempt);
    auto b = Optimizer::make(decayed, 6);
    auto c = Optimizer::make(plain, 6);
    for (int step = 0; step < 3; ++step) {
      std::vector<float> grads(6);
      for (size_t i = 0; i < 6; ++i) grads[i] = kGrads[static_cast<size_t>(step)][i % 3];
      a->step(with_exempt, grads, 0.1);
      b->step(with_decay, grads, 0.1);
      c->step(without_decay, grads, 0.1);
    }
    for (size_t i = 0; i < 6; ++i) {
      const bool is_exempt = i == 1 || i == 4 || i == 5;
      ASSERT_NE(with_decay[i], without_decay[i]) << "decay must matter, element " << i;
      EXPECT_EQ(with_exempt[i], is_exempt ? without_decay[i] : with_decay[i])
          << "kind " << static_cast<int>(kind) << " element " << i;
    }
  }
}

TEST(Optimizer, StepRejectsSpansOfTheWrongSize) {
  auto optimizer = Optimizer::make(config_of(OptimizerKind::kSgd), 3);
  std::vector<float> params = {1.0f, 2.0f};
  EXPECT_THROW(optimizer->step(params, kGrads[0], 0.1), Error);
}

}  // namespace
}  // namespace mpipe::optim
