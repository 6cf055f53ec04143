// ResidualBlock layer: a ResNet basic or bottleneck block, one pipeline-placeable layer.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "nn/batch_norm2d.h"
#include "nn/conv2d.h"

namespace mpipe::nn {

// y = ReLU(main(x) + shortcut(x)), one example [C, H, W] → [out_channels, Ho, Wo] with
// Ho = (H − 1) / stride + 1.
//   basic:      conv1 3×3 stride s → bn1 → ReLU → conv2 3×3 → bn2
//   bottleneck: conv1 1×1 → bn1 → ReLU → conv2 3×3 stride s → bn2 → ReLU → conv3 1×1 → bn3,
//               with width out_channels / 4 inside (out_channels must divide by 4)
//   shortcut:   identity when the shape is unchanged, else shortcut.conv 1×1 stride s →
//               shortcut.bn
// Convolutions have no bias. Params, in order: "conv1.weight", "bn1.weight", "bn1.bias",
// "conv2.weight", ..., then "shortcut.conv.weight", "shortcut.bn.weight", "shortcut.bn.bias";
// buffers: "bn1.running_mean", "bn1.running_var", ..., "shortcut.bn.running_var". The
// sub-layers share the block's global index.
class ResidualBlock : public Layer {
 public:
  ResidualBlock(int global_index, const Shape& input_shape, int64_t out_channels,
                int64_t stride = 1, bool bottleneck = false);

  std::string_view kind() const override { return "residual_block"; }
  Shape output_shape() const override;
  std::vector<ParamSpec> param_specs() const override;
  std::vector<ParamSpec> buffer_specs() const override;
  void bind(std::vector<std::span<float>> params, std::vector<std::span<float>> grads,
            std::vector<std::span<float>> buffers) override;

  // x: [batch, C, H, W] → y: [batch, out_channels, Ho, Wo]. Saves, per conv-bn pair of the
  // main path, the conv input and the bn's saved tensors; then the shortcut bn's; then y.
  Forward forward(const Tensor& x, const LayerContext& ctx) override;
  Tensor backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) override;
  // Split: backward_input computes dx only (the batch norms' backward, which gives each batch
  // norm's parameter gradients of the micro-batch in the same call, and the convolutions' data
  // gradients) and keeps, in place of what forward saved, per conv-bn pair of the main path the
  // conv's input, its output gradient and the batch norm's two parameter-gradient parts, then the
  // shortcut's conv output gradient and parts (its conv's input is x, the first pair's);
  // backward_weight adds every parameter gradient from those (it does not read dy).
  bool splits_backward() const override { return true; }
  Tensor backward_input(const Tensor& dy, Saved& saved, const LayerContext& ctx) override;
  void backward_weight(const Tensor& dy, const Saved& saved, const LayerContext& ctx) override;
  // One update: the batch norms' updates in sub-layer order (bn1, bn2, ..., shortcut.bn), the
  // order in which forward meets them.
  int64_t buffer_update_size() const override;
  void apply_buffer_update(std::span<const float> update) override;
  double forward_flops_per_example() const override;
  LayerNeeds needs() const override;

  bool has_projection() const { return shortcut_.conv != nullptr; }

 private:
  // A convolution followed by batch norm, named "<conv_name>." and "<bn_name>." in the specs.
  struct ConvBn {
    std::unique_ptr<Conv2d> conv;
    std::unique_ptr<BatchNorm2d> bn;
    std::string conv_name, bn_name;
  };
  static constexpr size_t kSavedPerConvBn = Conv2d::kSavedTensors + BatchNorm2d::kSavedTensors;
  // What backward_input keeps per pair of the main path (the conv's input and output gradient,
  // the batch norm's parts) and for the shortcut (its conv's output gradient and its parts).
  static constexpr size_t kWeightKeptPerConvBn =
      Conv2d::kSavedTensors + 1 + BatchNorm2d::kWeightKeptTensors;
  static constexpr size_t kWeightKeptShortcut = 1 + BatchNorm2d::kWeightKeptTensors;

  ConvBn make_conv_bn(const Shape& input, int64_t out_channels, int64_t kernel, int64_t stride,
                      std::string conv_name, std::string bn_name) const;
  // Every sub-layer with its name prefix, in spec and bind order.
  std::vector<std::pair<std::string, Layer*>> sub_layers() const;
  size_t num_saved() const;
  size_t num_weight_kept() const;

  std::vector<ConvBn> path_;  // ReLU after each pair but the last
  ConvBn shortcut_;           // empty for the identity shortcut
};

}  // namespace mpipe::nn
