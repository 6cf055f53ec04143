// SeparableCell layer: ReLU → depthwise conv → pointwise conv → batch norm (+ residual), the
// separable-convolution unit of AmoebaNet/NASNet cells, as one pipeline-placeable layer.
#pragma once

#include <cstdint>
#include <span>

#include "nn/batch_norm2d.h"
#include "nn/conv2d.h"

namespace mpipe::nn {

// One example [C, H, W] → [out_channels, Ho, Wo], Ho = (H − 1) / stride + 1:
//   y = bn(pointwise(depthwise(ReLU(x)))) (+ x when the shapes match),
// depthwise: kernel × kernel, groups C, padding kernel / 2 (kernel odd), the given stride;
// pointwise: 1 × 1, C → out_channels. Convolutions have no bias. Params, in order:
// "depthwise.weight" [C, 1, k, k], "pointwise.weight" [out, C, 1, 1], "bn.weight", "bn.bias";
// buffers "bn.running_mean", "bn.running_var". Sub-layers share the cell's global index.
class SeparableCell : public Layer {
 public:
  SeparableCell(int global_index, const Shape& input_shape, int64_t out_channels,
                int64_t kernel = 3, int64_t stride = 1);

  std::string_view kind() const override { return "separable_cell"; }
  Shape output_shape() const override { return bn_.output_shape(); }
  std::vector<ParamSpec> param_specs() const override;
  std::vector<ParamSpec> buffer_specs() const override;
  void bind(std::vector<std::span<float>> params, std::vector<std::span<float>> grads,
            std::vector<std::span<float>> buffers) override;

  // x: [batch, C, H, W] → y: [batch, out_channels, Ho, Wo]. Saves x, the depthwise output and
  // the bn's saved tensors (the ReLU output is recomputed in backward).
  Forward forward(const Tensor& x, const LayerContext& ctx) override;
  Tensor backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) override;
  // Split: backward_input computes dx only (the batch norm's backward, which gives its parameter
  // gradients of the micro-batch in the same call, and both convolutions' data gradients) and
  // keeps, in place of what forward saved, the ReLU output (computed in place of x once dx is
  // done), the depthwise output, the pointwise and depthwise output gradients and the batch
  // norm's two parts; backward_weight adds every parameter gradient from those (not reading dy).
  bool splits_backward() const override { return true; }
  Tensor backward_input(const Tensor& dy, Saved& saved, const LayerContext& ctx) override;
  void backward_weight(const Tensor& dy, const Saved& saved, const LayerContext& ctx) override;
  // The batch norm's (its only sub-layer with buffers).
  int64_t buffer_update_size() const override { return bn_.buffer_update_size(); }
  void apply_buffer_update(std::span<const float> update) override {
    bn_.apply_buffer_update(update);
  }
  double forward_flops_per_example() const override;
  LayerNeeds needs() const override;

  bool has_residual() const { return residual_; }

 private:
  static constexpr size_t kSavedTensors = 2 + BatchNorm2d::kSavedTensors;
  static constexpr size_t kWeightKeptTensors = 4 + BatchNorm2d::kWeightKeptTensors;

  Conv2d depthwise_, pointwise_;
  BatchNorm2d bn_;
  bool residual_;
};

}  // namespace mpipe::nn
