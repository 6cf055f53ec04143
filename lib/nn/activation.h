// Activation layer: ReLU, GELU (tanh approximation) or tanh, element-wise.
#pragma once

#include "kernels/eltwise.h"
#include "nn/input_saving_layer.h"

namespace mpipe::nn {

class Activation : public InputSavingLayer {
 public:
  // kind() is "relu", "gelu" or "tanh" (kernels::parse_eltwise_kind turns a name into a kind).
  Activation(int global_index, const Shape& input_shape, kernels::EltwiseKind kind);

  std::string_view kind() const override { return kernels::eltwise_kind_name(kind_); }
  Shape output_shape() const override { return input_shape_; }
  Tensor backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) override;
  double forward_flops_per_example() const override;
  LayerNeeds needs() const override;

 protected:
  // x: [batch, ...] → y: [batch, ...]; saves nothing besides x.
  Forward forward_without_input(const Tensor& x, const LayerContext& ctx) const override;

 private:
  Shape input_shape_;
  kernels::EltwiseKind kind_;
};

}  // namespace mpipe::nn
