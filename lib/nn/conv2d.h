// Conv2d layer: 2-D convolution with stride, padding, dilation and groups over [C, H, W] inputs.
#pragma once

#include <cstdint>
#include <span>

#include "kernels/conv.h"
#include "nn/input_saving_layer.h"

namespace mpipe::nn {

// One example: [in_channels, H, W] → [out_channels, Ho, Wo] with square kernel, stride, padding
// (both sides) and dilation. Params: "weight" [out_channels, in_channels / groups, kernel,
// kernel] (Kaiming uniform, fan_in = in_channels / groups · kernel²), "bias" [out_channels]
// (zeros; only when bias is true).
class Conv2d : public InputSavingLayer {
 public:
  Conv2d(int global_index, const Shape& input_shape, int64_t out_channels, int64_t kernel,
         int64_t stride = 1, int64_t padding = 0, int64_t dilation = 1, int64_t groups = 1,
         bool bias = true);

  std::string_view kind() const override { return "conv2d"; }
  Shape output_shape() const override { return output_shape_; }
  const Shape& input_shape() const { return input_shape_; }
  std::vector<ParamSpec> param_specs() const override;
  void bind(std::vector<std::span<float>> params, std::vector<std::span<float>> grads,
            std::vector<std::span<float>> buffers) override;

  // dy: [batch, O, Ho, Wo] → dx: [batch, C, H, W]; adds dweight (and dbias) into the grad views.
  Tensor backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) override;
  // Split: backward_input computes dx only (keeps x), backward_weight adds dweight and dbias.
  bool splits_backward() const override { return true; }
  Tensor backward_input(const Tensor& dy, Saved& saved, const LayerContext& ctx) override;
  void backward_weight(const Tensor& dy, const Saved& saved, const LayerContext& ctx) override;
  double forward_flops_per_example() const override;
  LayerNeeds needs() const override;

  // For composite layers that keep the input themselves: forward without saving anything, and
  // backward() with the saved tensors (just x) given as a span.
  Tensor apply(const Tensor& x, const LayerContext& ctx) const;
  Tensor backward_from(const Tensor& dy, std::span<const Tensor> saved,
                       const LayerContext& ctx) const;
  // The split backward for composite layers: dx alone (reads no saved tensor; empty when
  // !ctx.need_input_grad), and backward_weight() with the saved tensors (just x) as a span.
  Tensor backward_data(const Tensor& dy, const LayerContext& ctx) const;
  void backward_weight_from(const Tensor& dy, std::span<const Tensor> saved,
                            const LayerContext& ctx) const;
  static constexpr size_t kSavedTensors = 1;

 protected:
  // x: [batch, C, H, W] → y: [batch, O, Ho, Wo]; saves nothing besides x.
  Forward forward_without_input(const Tensor& x, const LayerContext& ctx) const override;

 private:
  kernels::Conv2dShape kernel_shape(int64_t batch) const;
  // The saved input, checked against dy.
  const Tensor& saved_input(const Tensor& dy, std::span<const Tensor> saved) const;
  // dweight (and dbias) += their gradients for x and dy.
  void add_weight_grads(const Tensor& x, const Tensor& dy, const LayerContext& ctx) const;

  Shape input_shape_, output_shape_;
  int64_t out_channels_, kernel_, stride_, padding_, dilation_, groups_;
  bool has_bias_;
  std::span<float> weight_, bias_, weight_grad_, bias_grad_;
};

}  // namespace mpipe::nn
