// BatchNorm2d layer: per-channel normalization over batch, height and width of [C, H, W] inputs.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "nn/input_saving_layer.h"

namespace mpipe::nn {

// Training: normalizes with the statistics of this micro-batch (GPipe). A first forward
// (ctx.training && !ctx.recompute) returns them as its buffer update; applying it updates the
// running statistics PyTorch's way: running = (1 - momentum) · running + momentum · batch
// statistic, with the unbiased variance. Eval: normalizes with the running statistics. Params:
// "weight" [C] (ones), "bias" [C] (zeros). Buffers: "running_mean" [C] (zeros), "running_var" [C]
// (ones).
class BatchNorm2d : public InputSavingLayer {
 public:
  BatchNorm2d(int global_index, const Shape& input_shape, double momentum = 0.1, double eps = 1e-5);

  std::string_view kind() const override { return "batch_norm2d"; }
  Shape output_shape() const override { return input_shape_; }
  std::vector<ParamSpec> param_specs() const override;
  std::vector<ParamSpec> buffer_specs() const override;
  void bind(std::vector<std::span<float>> params, std::vector<std::span<float>> grads,
            std::vector<std::span<float>> buffers) override;

  // One update: the micro-batch's mean [C], biased variance [C], then the factor
  // count / (count - 1) that makes the variance unbiased.
  int64_t buffer_update_size() const override { return 2 * channels_ + 1; }
  void apply_buffer_update(std::span<const float> update) override;
  // Backward of the training-mode forward: dx, and dweight, dbias added into the grad views.
  Tensor backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) override;
  // Split: backward_input computes dx and, in the same oneDNN call, the micro-batch's dweight
  // and dbias, which replace what it saved; backward_weight adds those to the gradients.
  bool splits_backward() const override { return true; }
  Tensor backward_input(const Tensor& dy, Saved& saved, const LayerContext& ctx) override;
  void backward_weight(const Tensor& dy, const Saved& saved, const LayerContext& ctx) override;
  double forward_flops_per_example() const override;
  LayerNeeds needs() const override;

  // backward() with the saved tensors given as a span, for composite layers.
  Tensor backward_from(const Tensor& dy, std::span<const Tensor> saved,
                       const LayerContext& ctx) const;
  // The split backward for composite layers: backward_input() with the saved tensors as a span,
  // appending the micro-batch's dweight and dbias (kWeightKeptTensors) to `kept` instead of
  // replacing them; backward_weight() with those two as a span.
  Tensor backward_input_from(const Tensor& dy, std::span<const Tensor> saved,
                             const LayerContext& ctx, std::vector<Tensor>& kept) const;
  void backward_weight_from(std::span<const Tensor> kept) const;
  static constexpr size_t kSavedTensors = 3;
  static constexpr size_t kWeightKeptTensors = 2;

 protected:
  // x: [batch, C, H, W] → y: same shape; saves the batch mean and the biased batch variance
  // ([C] each) besides x.
  Forward forward_without_input(const Tensor& x, const LayerContext& ctx) const override;

 private:
  std::vector<float> make_buffer_update(const Tensor& mean, const Tensor& variance,
                                        int64_t count) const;

  Shape input_shape_;
  int64_t channels_;
  float momentum_, eps_;
  std::span<float> weight_, bias_, weight_grad_, bias_grad_, running_mean_, running_var_;
};

}  // namespace mpipe::nn
