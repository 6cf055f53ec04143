// Concat layer: joins the main input and the read values along the first axis of an example
// (channels of [C, H, W], features of [F]): a U-Net's skip.
#pragma once

#include <cstdint>
#include <vector>

#include "nn/layer.h"

namespace mpipe::nn {

class Concat : public Layer {
 public:
  // `reads`: one example's shape of each read value; each must equal `input_shape` past the first
  // axis. Output: [C + C_0 + C_1 + ..., ...], the input's first, then each read's in order.
  Concat(int global_index, const Shape& input_shape, const std::vector<Shape>& reads);

  std::string_view kind() const override { return "concat"; }
  Shape output_shape() const override { return output_shape_; }
  int num_reads() const override { return static_cast<int>(reads_.size()); }
  // Copies; saves nothing.
  Forward forward_reading(const Tensor& x, std::span<const Tensor* const> reads,
                          const LayerContext& ctx) override;
  // dy → its slices: the input's (empty when !ctx.need_input_grad), then each read's.
  std::vector<Tensor> backward_reading(const Tensor& dy, const Saved& saved,
                                       const LayerContext& ctx) override;
  // A concat always reads (num_reads() >= 1): a stage never calls these.
  Forward forward(const Tensor& x, const LayerContext& ctx) override;
  Tensor backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) override;
  LayerNeeds needs() const override;

 private:
  // Each input's shape (the main one first) and floats per example.
  std::vector<Shape> parts_;
  std::vector<int64_t> part_sizes_;
  std::vector<Shape> reads_;
  Shape output_shape_;
};

}  // namespace mpipe::nn
