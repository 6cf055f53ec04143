// Tests for the executor's hooks into a stage: Stage::set_layer_hook is called after each layer's
// forward (recomputes included) and backward, and gradient_buckets gives one data-parallel bucket
// per layer with parameters.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "kernels/context.h"
#include "kernels/eltwise.h"
#include "nn/activation.h"
#include "nn/linear.h"
#include "pipeline/executor.h"
#include "pipeline/stage.h"

namespace mpipe::pipeline {
namespace {

// Linear(4 → 3) → ReLU → Linear(3 → 2) as global layers 5, 6, 7.
std::unique_ptr<Stage> make_stage(plan::Recompute recompute) {
  std::vector<std::unique_ptr<nn::Layer>> layers;
  layers.push_back(std::make_unique<nn::Linear>(5, Shape{4}, 3));
  layers.push_back(std::make_unique<nn::Activation>(6, Shape{3}, kernels::EltwiseKind::kRelu));
  layers.push_back(std::make_unique<nn::Linear>(7, Shape{3}, 2));
  auto stage = std::make_unique<Stage>(std::move(layers), recompute, 1);
  stage->params().initialize(3);
  return stage;
}

using Calls = std::vector<std::pair<int, bool>>;

Calls run_step(Stage& stage) {
  kernels::KernelContext kernels;
  const nn::LayerContext ctx{.kernels = kernels};
  Calls calls;
  stage.set_layer_hook([&calls](int layer, bool backward) { calls.emplace_back(layer, backward); });
  Tensor x(Shape{2, 4});
  x.fill(0.5f);
  Tensor dy(Shape{2, 2});
  dy.fill(0.1f);
  (void)stage.forward(0, bundle_of(x), ctx);
  (void)stage.backward(0, bundle_of(dy), ctx);
  return calls;
}

TEST(LayerHook, IsCalledAfterEachLayersForwardAndBackward) {
  auto stage = make_stage(plan::Recompute::kNever);
  const Calls expected = {{5, false}, {6, false}, {7, false}, {7, true}, {6, true}, {5, true}};
  EXPECT_EQ(run_step(*stage), expected);
}

TEST(LayerHook, IsAlsoCalledForTheForwardOfARecompute) {
  auto stage = make_stage(plan::Recompute::kAlways);
  const Calls expected = {{5, false}, {6, false}, {7, false}, {5, false}, {6, false},
                          {7, false}, {7, true},  {6, true},  {5, true}};
  EXPECT_EQ(run_step(*stage), expected);
}

TEST(LayerHook, IsCalledAroundEachLayerOfAPerLayerRecompute) {
  auto stage = make_stage(plan::Recompute::kPerLayer);
  const Calls expected = {{5, false}, {6, false}, {7, false}, {7, false}, {7, true},
                          {6, false}, {6, true},  {5, false}, {5, true}};
  EXPECT_EQ(run_step(*stage), expected);
}

TEST(GradientBuckets, OneBucketPerLayerWithParametersBeginningAtItsFirstParameter) {
  auto stage = make_stage(plan::Recompute::kNever);
  std::vector<size_t> expected = {0};  // layer 5 (weight, bias); the ReLU has none
  for (const nn::ParamBuffer::Entry& entry : stage->params().entries()) {
    if (entry.global_layer == 7 && expected.size() == 1) {
      expected.push_back(static_cast<size_t>(entry.offset));
    }
  }
  ASSERT_EQ(expected.size(), 2u);
  EXPECT_GT(expected[1], 0u);
  EXPECT_EQ(gradient_buckets(stage->params()), expected);
}

TEST(GradientBuckets, CutALayerIntoPiecesCountedFromItsOwnBeginning) {
  // Linear(2 → 3) then Linear(1024 → 1024): the big layer's pieces are at the same offsets from
  // its beginning whatever comes before it, so its sums do not depend on the partition.
  std::vector<std::unique_ptr<nn::Layer>> layers;
  layers.push_back(std::make_unique<nn::Linear>(0, Shape{2}, 3));
  layers.push_back(std::make_unique<nn::Linear>(1, Shape{3}, 1024));
  layers.push_back(std::make_unique<nn::Linear>(2, Shape{1024}, 1024));
  Stage stage(std::move(layers), plan::Recompute::kNever, 1);
  const std::map<int, size_t> begins = layer_gradient_begins(stage.params());
  ASSERT_EQ(begins.size(), 3u);
  const size_t big = begins.at(2);
  const std::vector<size_t> expected = {0,
                                        begins.at(1),
                                        big,
                                        big + kMaxBucketFloats,
                                        big + 2 * kMaxBucketFloats,
                                        big + 3 * kMaxBucketFloats,
                                        big + 4 * kMaxBucketFloats};  // the weights, then the bias
  EXPECT_EQ(gradient_buckets(stage.params()), expected);
  EXPECT_LT(expected.back(), stage.params().grads().size());
}

// A rank's buckets are its chunks' in chunk order, each layer's first one found by its global
// layer: chunk 0 holds layer 0, chunk 1 layers 1 and 2 (the big one in 5 pieces).
TEST(GradientBuckets, ARanksChunksBucketsFollowEachOtherInChunkOrder) {
  std::vector<std::unique_ptr<nn::Layer>> first_layers, second_layers;
  first_layers.push_back(std::make_unique<nn::Linear>(0, Shape{2}, 3));
  second_layers.push_back(std::make_unique<nn::Linear>(1, Shape{3}, 1024));
  second_layers.push_back(std::make_unique<nn::Linear>(2, Shape{1024}, 1024));
  Stage first(std::move(first_layers), plan::Recompute::kNever, 1);
  Stage second(std::move(second_layers), plan::Recompute::kNever, 1);
  const RankBuckets rank = rank_gradient_buckets({&first.params(), &second.params()});
  ASSERT_EQ(rank.buckets.size(), 7u);
  EXPECT_EQ(rank.first_of_layer, (std::map<int, size_t>{{0, 0}, {1, 1}, {2, 2}}));
  EXPECT_EQ(rank.buckets[0].data(), first.params().grads().data());
  EXPECT_EQ(rank.buckets[0].size(), first.params().grads().size());
  EXPECT_EQ(rank.buckets[1].data(), second.params().grads().data());
  EXPECT_EQ(rank.buckets[2].size(), kMaxBucketFloats);
  EXPECT_EQ(rank.buckets.back().data() + rank.buckets.back().size(),
            second.params().grads().data() + second.params().grads().size());
}

}  // namespace
}  // namespace mpipe::pipeline
