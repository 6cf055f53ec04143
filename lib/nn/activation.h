// Activation layer: ReLU, GELU (tanh approximation) or tanh, element-wise.
#pragma once

#include "kernels/eltwise.h"
#include "nn/layer.h"

namespace mpipe::nn {

class Activation : public Layer {
 public:
  // kind() is "relu", "gelu" or "tanh" (kernels::parse_eltwise_kind turns a name into a kind).
  Activation(int global_index, const Shape& input_shape, kernels::EltwiseKind kind);

  std::string_view kind() const override { return kernels::eltwise_kind_name(kind_); }
  Shape output_shape() const override { return input_shape_; }
  // x: [batch, ...] → y: [batch, ...]. Saves x when training.
  Forward forward(const Tensor& x, const LayerContext& ctx) override;
  Forward forward_consuming(Tensor x, const LayerContext& ctx) override;
  Tensor backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) override;
  double forward_flops_per_example() const override;

 private:
  Tensor output(const Tensor& x, const LayerContext& ctx) const;

  Shape input_shape_;
  kernels::EltwiseKind kind_;
};

}  // namespace mpipe::nn
