// Tests for the pairwise sum of per-micro-batch gradients (weight_grads: tree).
#include "plan/gradient_tree.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <random>
#include <vector>

namespace mpipe::plan {
namespace {

using Grads = std::vector<std::vector<float>>;  // [micro-batch][element]

// Runs the tree over `micro` (one layer), each micro-batch's gradients added into the layer's
// buffer as a layer's backward adds them.
std::vector<float> tree_sum(const Grads& micro) {
  GradientTree tree(static_cast<int>(micro.size()));
  std::vector<float> grads(micro[0].size(), 123.0f);  // whatever the buffer held before
  for (size_t j = 0; j < micro.size(); ++j) {
    tree.open(7, static_cast<int>(j), grads);
    for (size_t i = 0; i < grads.size(); ++i) grads[i] += micro[j][i];
    tree.close(7, static_cast<int>(j), grads);
  }
  return grads;
}

Grads slice(const Grads& micro, size_t begin, size_t end) {
  return {micro.begin() + static_cast<std::ptrdiff_t>(begin),
          micro.begin() + static_cast<std::ptrdiff_t>(end)};
}

std::vector<uint32_t> bits(const std::vector<float>& values) {
  std::vector<uint32_t> out;
  for (float v : values) out.push_back(std::bit_cast<uint32_t>(v));
  return out;
}

Grads random_grads(int micro_batches, int n) {
  std::mt19937 rng(5);
  std::lognormal_distribution<float> magnitude(0.0f, 6.0f);  // many orders of magnitude
  std::bernoulli_distribution negative(0.5);
  Grads out(static_cast<size_t>(micro_batches));
  for (auto& g : out) {
    for (int i = 0; i < n; ++i) g.push_back(negative(rng) ? -magnitude(rng) : magnitude(rng));
  }
  return out;
}

TEST(GradientTree, FourMicroBatchesAreSummedAsTwoPairs) {
  // In order, 1e8 + 1 + -1e8 + 1 is 1 in float; as (1e8 + 1) + (-1e8 + 1) it is 0.
  const Grads micro = {{1e8f}, {1.0f}, {-1e8f}, {1.0f}};
  EXPECT_EQ(tree_sum(micro), (std::vector<float>{(1e8f + 1.0f) + (-1e8f + 1.0f)}));
  EXPECT_EQ(tree_sum(micro), std::vector<float>{0.0f});
}

TEST(GradientTree, ReplicasSummingTheirHalvesOrQuartersApartGiveTheBitsOfTheWhole) {
  const Grads micro = random_grads(8, 1000);
  const std::vector<float> whole = tree_sum(micro);
  // D = 2: each replica's tree over its 4 micro-batches, then one addition (the allreduce).
  const std::vector<float> a = tree_sum(slice(micro, 0, 4)), b = tree_sum(slice(micro, 4, 8));
  std::vector<float> halves(a.size());
  for (size_t i = 0; i < a.size(); ++i) halves[i] = a[i] + b[i];
  EXPECT_EQ(bits(halves), bits(whole));
  // D = 4, summed as a tree of pairs.
  std::vector<float> quarters(a.size());
  std::vector<std::vector<float>> q;
  for (size_t r = 0; r < 4; ++r) q.push_back(tree_sum(slice(micro, 2 * r, 2 * r + 2)));
  for (size_t i = 0; i < a.size(); ++i) quarters[i] = (q[0][i] + q[1][i]) + (q[2][i] + q[3][i]);
  EXPECT_EQ(bits(quarters), bits(whole));
  // The sum in micro-batch order is another one (so the test can tell them apart).
  std::vector<float> in_order(a.size(), 0.0f);
  for (const auto& g : micro) {
    for (size_t i = 0; i < g.size(); ++i) in_order[i] += g[i];
  }
  EXPECT_NE(bits(in_order), bits(whole));
}

TEST(GradientTree, AnUnevenCountFoldsTheWaitingBlocksAtTheLastMicroBatch) {
  const Grads micro = random_grads(6, 100);
  const std::vector<float> four = tree_sum(slice(micro, 0, 4));
  const std::vector<float> got = tree_sum(micro);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(std::bit_cast<uint32_t>(got[i]),
              std::bit_cast<uint32_t>(four[i] + (micro[4][i] + micro[5][i])));
  }
}

TEST(GradientTree, LayersInterleavedKeepTheirOwnPartialSums) {
  const Grads first = random_grads(4, 50), second = random_grads(4, 70);
  GradientTree tree(4);
  std::vector<float> g1(50), g2(70);
  // Layer 2's micro-batch j runs before layer 1's j, and layer 1 lags a micro-batch behind.
  auto add = [](std::vector<float>& g, const std::vector<float>& d) {
    for (size_t i = 0; i < g.size(); ++i) g[i] += d[i];
  };
  for (int j = 0; j <= 4; ++j) {
    if (j < 4) {
      tree.open(2, j, g2);
      add(g2, second[static_cast<size_t>(j)]);
      tree.close(2, j, g2);
    }
    if (j > 0) {
      tree.open(1, j - 1, g1);
      add(g1, first[static_cast<size_t>(j - 1)]);
      tree.close(1, j - 1, g1);
    }
  }
  EXPECT_EQ(bits(g1), bits(tree_sum(first)));
  EXPECT_EQ(bits(g2), bits(tree_sum(second)));
}

TEST(GradientTree, HoldsAsideAtMostFloorLog2OfTheMicroBatches) {
  EXPECT_EQ(GradientTree::max_waiting(1), 0);
  EXPECT_EQ(GradientTree::max_waiting(2), 1);
  EXPECT_EQ(GradientTree::max_waiting(4), 2);
  EXPECT_EQ(GradientTree::max_waiting(7), 2);
  EXPECT_EQ(GradientTree::max_waiting(8), 3);
}

TEST(GradientTree, OneMicroBatchIsItsOwnSum) {
  const Grads micro = random_grads(1, 10);
  EXPECT_EQ(bits(tree_sum(micro)), bits(micro[0]));
}

}  // namespace
}  // namespace mpipe::plan
