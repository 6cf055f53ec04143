// Flatten layer: [batch, d1, d2, ...] → [batch, d1 * d2 * ...].
#pragma once

#include "nn/layer.h"

namespace mpipe::nn {

class Flatten : public Layer {
 public:
  Flatten(int global_index, const Shape& input_shape);

  std::string_view kind() const override { return "flatten"; }
  Shape output_shape() const override { return Shape{input_shape_.numel()}; }
  // x: [batch, ...input shape] → [batch, numel]; a copy, saves nothing.
  Forward forward(const Tensor& x, const LayerContext& ctx) override;
  // dy: [batch, numel] → dx: [batch, ...input shape].
  Tensor backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) override;
  LayerNeeds needs() const override;

 private:
  Shape input_shape_;
};

}  // namespace mpipe::nn
