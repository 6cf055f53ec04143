// Linear (fully connected) layer over the last axis: y = x · W^T + b.
#pragma once

#include <cstdint>
#include <span>

#include "nn/layer.h"

namespace mpipe::nn {

// Acts on the last axis; every leading dimension is a row, so one example may be [in] or
// [tokens, in]. Params: "weight" [units, in], "bias" [units] (when bias is true).
class Linear : public Layer {
 public:
  Linear(int global_index, const Shape& input_shape, int64_t units, bool bias = true,
         Init init = Init::kKaimingUniform);

  std::string_view kind() const override { return "linear"; }
  Shape output_shape() const override { return output_shape_; }
  std::vector<ParamSpec> param_specs() const override;
  void bind(std::vector<std::span<float>> params, std::vector<std::span<float>> grads,
            std::vector<std::span<float>> buffers) override;

  // x: [batch, ..., in] → y: [batch, ..., units]. Saves x when training.
  Forward forward(const Tensor& x, const LayerContext& ctx) override;
  // dy: [batch, ..., units] → dx: [batch, ..., in]; adds dW and db into the grad views.
  Tensor backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) override;
  double forward_flops_per_example() const override;

  int64_t in_features() const { return in_; }
  int64_t units() const { return units_; }

 private:
  Shape input_shape_, output_shape_;
  int64_t in_, units_;
  bool has_bias_;
  Init init_;
  std::span<float> weight_, bias_, weight_grad_, bias_grad_;
};

}  // namespace mpipe::nn
