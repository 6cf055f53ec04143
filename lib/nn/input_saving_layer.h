// InputSavingLayer: a layer whose backward needs its input keeps it first among what it saves,
// as a copy (forward) or as the tensor it was handed (forward_consuming), in one place.
#pragma once

#include "nn/layer.h"

namespace mpipe::nn {

class InputSavingLayer : public Layer {
 public:
  using Layer::Layer;

  // forward_without_input, then, when training, x first among the saved tensors: a copy of x, or
  // x itself for a caller that has no further use for it.
  Forward forward(const Tensor& x, const LayerContext& ctx) final;
  Forward forward_consuming(Tensor x, const LayerContext& ctx) final;

 protected:
  // The output and, when training, what backward needs besides the input.
  virtual Forward forward_without_input(const Tensor& x, const LayerContext& ctx) const = 0;
};

}  // namespace mpipe::nn
