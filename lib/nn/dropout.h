// Dropout layer: inverted dropout whose mask is a pure function of (seed, step, global example,
// layer, element), so it is identical across micro-batch splits, partitions and recomputes.
#pragma once

#include <span>

#include "nn/layer.h"

namespace mpipe::nn {

class Dropout : public Layer {
 public:
  // rate in [0, 1): the probability of zeroing an element.
  Dropout(int global_index, const Shape& input_shape, double rate);

  std::string_view kind() const override { return "dropout"; }
  Shape output_shape() const override { return input_shape_; }
  // Training: y = x * keep / (1 - rate); evaluation: y = x. Saves nothing: backward regenerates
  // the mask from the same counters.
  Forward forward(const Tensor& x, const LayerContext& ctx) override;
  Tensor backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) override;
  double forward_flops_per_example() const override;
  LayerNeeds needs() const override;

  double rate() const { return rate_; }

 private:
  // out = in * mask / (1 - rate) for every example of the micro-batch. in, out: [batch, ...].
  void apply_mask(const Tensor& in, Tensor& out, const LayerContext& ctx) const;

  Shape input_shape_;
  double rate_;
};

}  // namespace mpipe::nn
