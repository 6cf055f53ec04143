// Multi-rank tests of train::TiedCopies (run with 4 ranks): an encoder-decoder's three uses of one
// matrix (source embedding, target embedding, head) on different ranks sum their gradients in use
// order, ((g0 + g1) + g2) bit for bit on every rank that holds a use, with the uses on three of
// four ranks (one between them holding none) and in a V (rank 0 holding the first and the third).
#include "train/tied_copies.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "model/model_builder.h"
#include "support/tied_models.h"

namespace mpipe::train {
namespace {

constexpr int64_t kVocab = 300, kDim = 250, kSeq = 3;  // 75000 values: two exchange chunks

const model::ModelInputs kInputs = {{.name = "source", .shape = Shape{kSeq}},
                                    {.name = "target_in", .shape = Shape{kSeq}}};
const std::vector<plan::LayerRange> kRanges = {{0, 1}, {1, 2}, {2, 3}, {3, 4}};
const char* const kParams[] = {"token", "token", "", "weight"};  // each stage's use, if any
constexpr int kUseOfStage[] = {0, 1, -1, 2};

// Use u's gradient: values of magnitudes far apart, so another order of additions rounds
// differently.
std::vector<float> use_gradient(int use) {
  std::mt19937 generator(static_cast<unsigned>(use) * 7919u + 3u);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const float scale[] = {1.0f, 3e4f, 7e-3f};
  std::vector<float> values(static_cast<size_t>(kVocab * kDim));
  for (float& v : values) v = uniform(generator) * scale[use];
  return values;
}

std::span<float> grad_of(pipeline::Stage& stage, int layer, const std::string& name) {
  for (const auto& entry : stage.params().entries()) {
    if (entry.global_layer == layer && entry.name == name) {
      return stage.params().grads().subspan(static_cast<size_t>(entry.offset),
                                            static_cast<size_t>(entry.shape.numel()));
    }
  }
  throw Error("no such parameter");
}

// Runs the sum on `pipeline` (rank r holding the stages `placement` gives it) and checks each
// held use's gradient against ((g0 + g1) + g2) computed here.
void expect_use_order(const comm::Communicator& pipeline, const plan::Placement& placement) {
  const model::ModelSpec spec = testing::three_uses_model(kVocab, kDim);
  const auto tied = model::find_tied_weights(spec, model::build_layers(spec, kInputs, 0, 4));
  ASSERT_TRUE(tied.has_value());
  const int rank = pipeline.rank();
  std::vector<std::unique_ptr<pipeline::Stage>> stages;
  std::vector<pipeline::Stage*> chunks;
  for (int chunk = 0; chunk < placement.virtual_stages; ++chunk) {
    const plan::LayerRange range = kRanges[static_cast<size_t>(placement.stage_of(rank, chunk))];
    stages.push_back(std::make_unique<pipeline::Stage>(
        model::build_layers(spec, kInputs, range.begin, range.end), plan::Recompute::kNever, 1));
    chunks.push_back(stages.back().get());
  }
  TiedCopies copies(tied, kRanges, placement, rank, &pipeline, chunks);
  std::vector<int> held;  // (stage) of each use held here
  for (int chunk = 0; chunk < placement.virtual_stages; ++chunk) {
    const int stage = placement.stage_of(rank, chunk);
    if (kUseOfStage[stage] < 0) continue;
    const std::vector<float> g = use_gradient(kUseOfStage[stage]);
    std::ranges::copy(g,
                      grad_of(*chunks[static_cast<size_t>(chunk)], stage, kParams[stage]).begin());
    held.push_back(stage);
  }
  copies.sum_gradients();
  const std::vector<float> g0 = use_gradient(0), g1 = use_gradient(1), g2 = use_gradient(2);
  std::vector<float> expected(g0.size()), other_order(g0.size());
  for (size_t i = 0; i < g0.size(); ++i) {
    expected[i] = (g0[i] + g1[i]) + g2[i];
    other_order[i] = (g0[i] + g2[i]) + g1[i];
  }
  // The check can fail: another order gives other bits.
  ASSERT_NE(std::memcmp(expected.data(), other_order.data(), expected.size() * sizeof(float)), 0);
  for (int chunk = 0; chunk < placement.virtual_stages; ++chunk) {
    const int stage = placement.stage_of(rank, chunk);
    if (kUseOfStage[stage] < 0) continue;
    const std::span<float> got =
        grad_of(*chunks[static_cast<size_t>(chunk)], stage, kParams[stage]);
    EXPECT_EQ(std::memcmp(got.data(), expected.data(), expected.size() * sizeof(float)), 0)
        << "rank " << rank << ", stage " << stage;
  }
}

TEST(TiedCopies, ThreeUsesOnThreeOfFourRanksSumInUseOrder) {
  expect_use_order(comm::Communicator::world(), plan::Placement{.num_ranks = 4});
}

TEST(TiedCopies, ThreeUsesInAVSumInUseOrder) {
  const comm::Communicator world = comm::Communicator::world();
  const comm::Communicator pair = world.split(world.rank() / 2, world.rank(), "a pair");
  expect_use_order(
      pair, plan::Placement{.num_ranks = 2, .virtual_stages = 2, .kind = plan::PlacementKind::kV});
}

}  // namespace
}  // namespace mpipe::train
