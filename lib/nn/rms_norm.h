// RmsNorm layer: scales every row of the last axis to unit root mean square, then by a learned
// weight (no mean taken out, no bias).
#pragma once

#include <span>

#include "nn/row_norm.h"

namespace mpipe::nn {

// y = x / sqrt(mean(x^2) + eps) * weight over the last axis. Params: "weight" [dim] (ones),
// dim = the last input axis.
class RmsNorm : public RowNorm {
 public:
  RmsNorm(int global_index, const Shape& input_shape, double eps = 1e-5);

  std::string_view kind() const override { return "rms_norm"; }
  Shape output_shape() const override { return input_shape_; }
  std::vector<ParamSpec> param_specs() const override;
  void bind(std::vector<std::span<float>> params, std::vector<std::span<float>> grads,
            std::vector<std::span<float>> buffers) override;

  Tensor backward_from(const Tensor& dy, std::span<const Tensor> saved,
                       const LayerContext& ctx) const override;
  // Split: backward_input computes dx only (keeps x and the reciprocal RMS); backward_weight adds
  // dweight.
  bool splits_backward() const override { return true; }
  Tensor backward_input(const Tensor& dy, Saved& saved, const LayerContext& ctx) override;
  void backward_weight_from(const Tensor& dy, std::span<const Tensor> kept,
                            const LayerContext& ctx) const override;
  size_t weight_kept_tensors() const override { return kSavedTensors; }
  bool weight_reads_output_grad() const override { return true; }
  size_t saved_tensors() const override { return kSavedTensors; }
  double forward_flops_per_example() const override;
  LayerNeeds needs() const override;

  static constexpr size_t kSavedTensors = 2;

 protected:
  // x: [batch, ..., dim] → y: same shape; saves the reciprocal RMS of each row ([rows]) besides x.
  Forward forward_without_input(const Tensor& x, const LayerContext& ctx) const override;

 private:
  Shape input_shape_;
  int64_t dim_;
  float eps_;
  std::span<float> weight_, weight_grad_;
};

}  // namespace mpipe::nn
