// Multi-rank tests of train::TiedCopies (run with 4 ranks): an encoder-decoder's three uses of one
// matrix (source embedding, target embedding, head) on different ranks sum their gradients in use
// order, ((g0 + g1) + g2) bit for bit on every rank that holds a use, with the uses on three of
// four ranks (one between them holding none) and in a V (rank 0 holding the first and the third);
// summed on the shards of 2 replicas of 2 ranks, with the same bits as summed whole.
#include "train/tied_copies.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "comm/tag_space.h"
#include "core/error.h"
#include "model/model_builder.h"
#include "optim/replica_shard.h"
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

// The sum on shards: 2 replicas of a 2-rank pipeline (world rank w is pipeline rank w % 2 of
// replica w / 2), each replica holding the reduced gradient only in its shard of each buffer
// (elsewhere values of its own, which no sum may read). Each part of a copy a replica's shard holds
// ends with the bits that the whole exchange of the whole reduced copies gives it, with the uses on
// two ranks (the two embeddings on rank 0, the head on rank 1) and in a V.
void expect_whole_sum_on_shards(const plan::Placement& placement,
                                const std::vector<plan::LayerRange>& ranges) {
  const comm::Communicator world = comm::Communicator::world();
  ASSERT_EQ(world.size(), 4);
  const int replica = world.rank() / 2, rank = world.rank() % 2;
  const comm::Communicator pipeline = world.split(replica, rank, "a pipeline");
  const model::ModelSpec spec = testing::three_uses_model(kVocab, kDim);
  const auto tied = model::find_tied_weights(spec, model::build_layers(spec, kInputs, 0, 4));
  ASSERT_TRUE(tied.has_value());
  const std::vector<model::TiedUse> uses = tied->uses();
  // Two copies of this rank's stages: one summed whole, one on shards.
  std::vector<std::unique_ptr<pipeline::Stage>> stages;
  std::vector<pipeline::Stage*> whole, sharded;
  for (int copy = 0; copy < 2; ++copy) {
    for (int chunk = 0; chunk < placement.virtual_stages; ++chunk) {
      const plan::LayerRange range = ranges[static_cast<size_t>(placement.stage_of(rank, chunk))];
      stages.push_back(std::make_unique<pipeline::Stage>(
          model::build_layers(spec, kInputs, range.begin, range.end), plan::Recompute::kNever, 1));
      (copy == 0 ? whole : sharded).push_back(stages.back().get());
    }
  }
  std::mt19937 generator(static_cast<unsigned>(world.rank()) + 100u);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<std::pair<std::span<float>, std::span<float>>> held;  // (whole, sharded) per use
  std::vector<std::pair<int64_t, int64_t>> owned;  // this replica's part of each held copy
  for (size_t chunk = 0; chunk < sharded.size(); ++chunk) {
    auto& params = sharded[chunk]->params();
    for (float& g : params.grads()) g = uniform(generator);  // partial sums nobody reads
    const std::vector<int64_t> begins =
        optim::shard_begins(params.norm_block_begins(), params.num_params(), 2);
    const auto shard = static_cast<size_t>(optim::shard_index(replica, 2));
    for (size_t u = 0; u < uses.size(); ++u) {
      for (const auto& entry : params.entries()) {
        if (entry.global_layer != uses[u].layer || entry.name != uses[u].param) continue;
        const std::vector<float> g = use_gradient(static_cast<int>(u));
        const std::span<float> into = grad_of(*sharded[chunk], uses[u].layer, uses[u].param);
        const int64_t begin = std::clamp<int64_t>(begins[shard] - entry.offset, 0, kVocab * kDim);
        const int64_t end = std::clamp<int64_t>(begins[shard + 1] - entry.offset, 0, kVocab * kDim);
        std::copy(g.begin() + begin, g.begin() + end, into.begin() + begin);
        const std::span<float> all = grad_of(*whole[chunk], uses[u].layer, uses[u].param);
        std::ranges::copy(g, all.begin());
        held.emplace_back(all, into);
        owned.emplace_back(begin, end);
      }
    }
  }
  TiedCopies(tied, ranges, placement, rank, &pipeline, whole).sum_gradients();
  const comm::TagSpace tags({.tied_uses = static_cast<int>(uses.size())});
  TiedCopies(
      tied, ranges, placement, rank, &pipeline, sharded,
      ReplicaShards{
          .world = &world, .replica = replica, .replicas = 2, .pipeline_ranks = 2, .tags = &tags})
      .sum_gradients();
  int64_t compared = 0;
  for (size_t h = 0; h < held.size(); ++h) {
    const auto [begin, end] = owned[h];
    const auto length = static_cast<size_t>(end - begin);
    compared += end - begin;
    EXPECT_EQ(std::memcmp(held[h].first.data() + begin, held[h].second.data() + begin,
                          length * sizeof(float)),
              0)
        << "world rank " << world.rank() << ", copy " << h << " [" << begin << ", " << end << ")";
  }
  // Every element of every copy is compared on one replica or the other.
  std::vector<double> counts = {static_cast<double>(compared)};
  world.allreduce_sum(std::span<double>(counts));
  EXPECT_EQ(counts[0], static_cast<double>(uses.size() * kVocab * kDim));
}

TEST(TiedCopies, TheSumOnShardsHasTheWholeSumsBits) {
  expect_whole_sum_on_shards(plan::Placement{.num_ranks = 2}, {{0, 2}, {2, 4}});
}

TEST(TiedCopies, TheSumOnShardsInAVHasTheWholeSumsBits) {
  expect_whole_sum_on_shards(
      plan::Placement{.num_ranks = 2, .virtual_stages = 2, .kind = plan::PlacementKind::kV},
      kRanges);
}

}  // namespace
}  // namespace mpipe::train
