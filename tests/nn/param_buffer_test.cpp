// Tests for ParamBuffer: contiguous layout, bound views, buffers, zeroing and gradient sums (with
// elements left out).
#include "nn/param_buffer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "core/error.h"

namespace mpipe::nn {
namespace {

// A layer that only records the views it is bound to.
class RecordingLayer : public Layer {
 public:
  RecordingLayer(int global_index, std::vector<ParamSpec> params, std::vector<ParamSpec> buffers)
      : Layer(global_index), params_(std::move(params)), buffers_(std::move(buffers)) {}
  std::string_view kind() const override { return "recording"; }
  Shape output_shape() const override { return {1}; }
  std::vector<ParamSpec> param_specs() const override { return params_; }
  std::vector<ParamSpec> buffer_specs() const override { return buffers_; }
  void bind(std::vector<std::span<float>> params, std::vector<std::span<float>> grads,
            std::vector<std::span<float>> buffers) override {
    bound_params = std::move(params);
    bound_grads = std::move(grads);
    bound_buffers = std::move(buffers);
  }
  Forward forward(const Tensor& x, const LayerContext&) override { return {x, {}}; }
  Tensor backward(const Tensor& dy, const Saved&, const LayerContext&) override { return dy; }
  LayerNeeds needs() const override { return {}; }  // saves and allocates nothing

  std::vector<std::span<float>> bound_params, bound_grads, bound_buffers;

 private:
  std::vector<ParamSpec> params_, buffers_;
};

TEST(ParamBuffer, LaysOutParamsInLayerOrderEachOnA64ByteBoundaryAndBindsViews) {
  RecordingLayer first(2, {{.name = "weight", .shape = {2, 3}}, {.name = "bias", .shape = {2}}},
                       {});
  RecordingLayer empty(3, {}, {});
  RecordingLayer last(5, {{.name = "gamma", .shape = {4}, .init = Init::kOnes}},
                      {{.name = "running_var", .shape = {4}, .init = Init::kOnes},
                       {.name = "running_mean", .shape = {4}}});
  Layer* layers[] = {&first, &empty, &last};
  ParamBuffer buffer(layers);

  // Offsets are rounded up to 16 floats (64 bytes); the padding stays zero.
  EXPECT_EQ(buffer.num_params(), 36);
  EXPECT_EQ(buffer.values().size(), 36u);
  EXPECT_EQ(buffer.grads().size(), 36u);
  EXPECT_EQ(buffer.buffers().size(), 20u);
  const auto& entries = buffer.entries();
  ASSERT_EQ(entries.size(), 5u);
  EXPECT_EQ(entries[0].global_layer, 2);
  EXPECT_EQ(entries[0].name, "weight");
  EXPECT_EQ(entries[0].offset, 0);
  EXPECT_EQ(entries[1].name, "bias");
  EXPECT_EQ(entries[1].offset, 16);
  EXPECT_EQ(entries[2].global_layer, 5);
  EXPECT_EQ(entries[2].offset, 32);
  EXPECT_TRUE(entries[2].trainable);
  EXPECT_EQ(entries[3].name, "running_var");
  EXPECT_FALSE(entries[3].trainable);
  EXPECT_EQ(entries[3].offset, 0);
  EXPECT_EQ(entries[4].offset, 16);

  ASSERT_EQ(first.bound_params.size(), 2u);
  EXPECT_EQ(first.bound_params[1].data(), buffer.values().data() + 16);
  EXPECT_EQ(first.bound_grads[1].data(), buffer.grads().data() + 16);
  EXPECT_EQ(first.bound_params[1].size(), 2u);
  EXPECT_EQ(last.bound_params[0].data(), buffer.values().data() + 32);
  ASSERT_EQ(last.bound_buffers.size(), 2u);
  EXPECT_EQ(last.bound_buffers[1].data(), buffer.buffers().data() + 16);
  EXPECT_TRUE(empty.bound_params.empty());
}

TEST(ParamBuffer, InitializesParamsAndBuffersPerSpec) {
  RecordingLayer layer(0, {{.name = "gamma", .shape = {3}, .init = Init::kOnes}},
                       {{.name = "running_var", .shape = {3}, .init = Init::kOnes},
                        {.name = "running_mean", .shape = {3}}});
  Layer* layers[] = {&layer};
  ParamBuffer buffer(layers);
  buffer.initialize(1);
  EXPECT_EQ(std::vector<float>(buffer.values().begin(), buffer.values().end()),
            std::vector<float>(3, 1.0f));
  ASSERT_EQ(layer.bound_buffers.size(), 2u);
  EXPECT_EQ(std::vector<float>(layer.bound_buffers[0].begin(), layer.bound_buffers[0].end()),
            std::vector<float>(3, 1.0f));
  EXPECT_EQ(std::vector<float>(layer.bound_buffers[1].begin(), layer.bound_buffers[1].end()),
            std::vector<float>(3, 0.0f));
}

TEST(ParamBuffer, ZeroGradsClearsEveryGradient) {
  RecordingLayer layer(0, {{.name = "w", .shape = {5}}}, {});
  Layer* layers[] = {&layer};
  ParamBuffer buffer(layers);
  for (float& g : layer.bound_grads[0]) g = 3.0f;
  buffer.zero_grads();
  for (float g : buffer.grads()) EXPECT_EQ(g, 0.0f);
}

TEST(ParamBuffer, ZeroGradsOfClearsOnlyTheNamedLayers) {
  RecordingLayer a(1, {{.name = "w", .shape = {2}}}, {});
  RecordingLayer b(4, {{.name = "w", .shape = {1}}, {.name = "b", .shape = {2}}}, {});
  RecordingLayer c(6, {{.name = "w", .shape = {3}}}, {});
  Layer* layers[] = {&a, &b, &c};
  ParamBuffer buffer(layers);
  for (RecordingLayer* layer : {&a, &b, &c}) {
    for (auto& grad : layer->bound_grads) std::ranges::fill(grad, 3.0f);
  }
  const int named[] = {1, 6};
  buffer.zero_grads_of(named);
  for (float g : a.bound_grads[0]) EXPECT_EQ(g, 0.0f);
  for (const auto& grad : b.bound_grads) {
    for (float g : grad) EXPECT_EQ(g, 3.0f);
  }
  for (float g : c.bound_grads[0]) EXPECT_EQ(g, 0.0f);
}

TEST(ParamBuffer, SumsSquaredGradientsPerLayerInGlobalOrder) {
  RecordingLayer a(1, {{.name = "w", .shape = {2}}}, {});
  RecordingLayer b(4, {{.name = "w", .shape = {1}}, {.name = "b", .shape = {2}}}, {});
  Layer* layers[] = {&a, &b};
  ParamBuffer buffer(layers);
  a.bound_grads[0][0] = 1, a.bound_grads[0][1] = 2;
  b.bound_grads[0][0] = 3;
  b.bound_grads[1][0] = 4, b.bound_grads[1][1] = 5;
  const auto sums = buffer.grad_square_sums_per_layer();
  ASSERT_EQ(sums.size(), 2u);
  EXPECT_EQ(sums[0], (std::pair<int, double>{1, 5.0}));
  EXPECT_EQ(sums[1], (std::pair<int, double>{4, 50.0}));
}

TEST(ParamBuffer, ANormBlocksSumsAreTheSameForAnyCutAtTheirBoundaries) {
  // Layer 1: 5000 + 3 values (two tensors), layer 2: none, layer 3: 9000 (three blocks).
  RecordingLayer a(1, {{.name = "w", .shape = {5000}}, {.name = "b", .shape = {3}}}, {});
  RecordingLayer b(2, {}, {});
  RecordingLayer c(3, {{.name = "w", .shape = {9000}}}, {});
  Layer* layers[] = {&a, &b, &c};
  ParamBuffer buffer(layers);
  std::mt19937 generator(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (float& g : buffer.grads()) g = uniform(generator);
  // Blocks begin at each layer's first (aligned) tensor: layer 3's after layer 1's padding.
  const int64_t third = c.bound_grads[0].data() - buffer.grads().data();
  EXPECT_EQ(third % 16, 0);
  const std::vector<int64_t> begins = buffer.norm_block_begins();
  EXPECT_EQ(begins, (std::vector<int64_t>{0, ParamBuffer::kNormBlock, third,
                                          third + ParamBuffer::kNormBlock,
                                          third + 2 * ParamBuffer::kNormBlock}));
  const auto sums = buffer.grad_square_sums_per_layer();
  ASSERT_EQ(sums.size(), 3u);
  EXPECT_EQ(sums[1], (std::pair<int, double>{2, 0.0}));
  // Every way of cutting the buffer at block begins, folded in order, gives the same bits.
  for (size_t cut = 0; cut < begins.size(); ++cut) {
    std::map<int, double> folded;
    for (const auto& [from, to] :
         {std::pair{int64_t{0}, begins[cut]}, std::pair{begins[cut], buffer.num_params()}}) {
      for (const auto& [layer, block] : buffer.grad_square_block_sums(from, to)) {
        folded[layer] += block;
      }
    }
    EXPECT_EQ(folded[1], sums[0].second) << "cut at " << begins[cut];
    EXPECT_EQ(folded[3], sums[2].second) << "cut at " << begins[cut];
  }
  try {
    buffer.grad_square_block_sums(0, 100);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "grad_square_block_sums: [0, 100) cuts a norm block");
  }
}

TEST(ParamBuffer, UncountedElementsAddAsZerosDo) {
  // Layer 1: 5000 + 3000 values (two blocks); the first tensor's tail and the second's head, across
  // the block boundary, and a range inside the second block are left out.
  RecordingLayer a(1, {{.name = "w", .shape = {5000}}, {.name = "b", .shape = {3000}}}, {});
  Layer* layers[] = {&a};
  ParamBuffer buffer(layers);
  std::mt19937 generator(11);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (float& g : buffer.grads()) g = uniform(generator);
  const std::vector<ParamBuffer::Elements> uncounted = {{3000, 5200}, {6000, 6001}};
  const auto left_out = buffer.grad_square_block_sums(0, buffer.num_params(), uncounted);
  const auto per_layer = buffer.grad_square_sums_per_layer(uncounted);
  const auto whole = buffer.grad_square_sums_per_layer();
  for (const ParamBuffer::Elements& out : uncounted) {
    std::fill(buffer.grads().begin() + out.begin, buffer.grads().begin() + out.end, 0.0f);
  }
  EXPECT_EQ(left_out, buffer.grad_square_block_sums(0, buffer.num_params()));
  EXPECT_EQ(per_layer, buffer.grad_square_sums_per_layer());
  EXPECT_NE(per_layer, whole);
}

TEST(ParamBuffer, RejectsLayersOutOfGlobalOrder) {
  RecordingLayer a(3, {}, {}), b(1, {}, {});
  Layer* layers[] = {&a, &b};
  EXPECT_THROW(ParamBuffer buffer(layers), Error);
}

}  // namespace
}  // namespace mpipe::nn
