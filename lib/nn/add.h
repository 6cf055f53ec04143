// Add layer: merges skips into the main stream, y = x + r0 + r1 + ... (the read values, in the
// order the layer lists them), all of one shape.
#pragma once

#include <vector>

#include "nn/layer.h"

namespace mpipe::nn {

class Add : public Layer {
 public:
  // `reads`: one example's shape of each read value; each must equal `input_shape`.
  Add(int global_index, const Shape& input_shape, const std::vector<Shape>& reads);

  std::string_view kind() const override { return "add"; }
  Shape output_shape() const override { return shape_; }
  int num_reads() const override { return num_reads_; }
  // x, reads: [batch, ...shape] → x + reads[0] + reads[1] + ..., added left to right; saves
  // nothing.
  Forward forward_reading(const Tensor& x, std::span<const Tensor* const> reads,
                          const LayerContext& ctx) override;
  // dy → dy for x and for every read (copies).
  std::vector<Tensor> backward_reading(const Tensor& dy, const Saved& saved,
                                       const LayerContext& ctx) override;
  // An add always reads (num_reads() >= 1): a stage never calls these.
  Forward forward(const Tensor& x, const LayerContext& ctx) override;
  Tensor backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) override;
  LayerNeeds needs() const override;
  double forward_flops_per_example() const override;

 private:
  Shape shape_;
  int num_reads_;
};

}  // namespace mpipe::nn
