// LayerNorm layer: normalizes the last axis of every row, then scales and shifts it.
#pragma once

#include <span>

#include "nn/row_norm.h"

namespace mpipe::nn {

// Params: "weight" [dim] (ones), "bias" [dim] (zeros), dim = the last input axis.
class LayerNorm : public RowNorm {
 public:
  LayerNorm(int global_index, const Shape& input_shape, double eps = 1e-5);

  std::string_view kind() const override { return "layer_norm"; }
  Shape output_shape() const override { return input_shape_; }
  std::vector<ParamSpec> param_specs() const override;
  void bind(std::vector<std::span<float>> params, std::vector<std::span<float>> grads,
            std::vector<std::span<float>> buffers) override;

  Tensor backward_from(const Tensor& dy, std::span<const Tensor> saved,
                       const LayerContext& ctx) const override;
  // Split: backward_input computes dx and, in the same oneDNN call, the
  // micro-batch's dweight and dbias, which replace what it saved; backward_weight adds those to the
  // gradients.
  bool splits_backward() const override { return true; }
  Tensor backward_input(const Tensor& dy, Saved& saved, const LayerContext& ctx) override;
  void backward_weight_from(const Tensor& dy, std::span<const Tensor> kept,
                            const LayerContext& ctx) const override;
  size_t weight_kept_tensors() const override { return 2; }
  bool weight_reads_output_grad() const override { return false; }
  size_t saved_tensors() const override { return kSavedTensors; }
  double forward_flops_per_example() const override;
  LayerNeeds needs() const override;

  static constexpr size_t kSavedTensors = 3;

 protected:
  // x: [batch, ..., dim] → y: same shape; saves mean and variance ([rows]) besides x.
  Forward forward_without_input(const Tensor& x, const LayerContext& ctx) const override;

 private:
  Shape input_shape_;
  int64_t dim_;
  float eps_;
  std::span<float> weight_, bias_, weight_grad_, bias_grad_;
};

}  // namespace mpipe::nn
