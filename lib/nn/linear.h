// Linear (fully connected) layer over the last axis: y = x · W^T + b.
#pragma once

#include <cstdint>
#include <span>

#include "nn/input_saving_layer.h"

namespace mpipe::nn {

// Acts on the last axis; every leading dimension is a row, so one example may be [in] or
// [tokens, in]. Params: "weight" [units, in], "bias" [units] (when bias is true).
class Linear : public InputSavingLayer {
 public:
  Linear(int global_index, const Shape& input_shape, int64_t units, bool bias = true,
         Init init = Init::kKaimingUniform);

  std::string_view kind() const override { return "linear"; }
  Shape output_shape() const override { return output_shape_; }
  std::vector<ParamSpec> param_specs() const override;
  void bind(std::vector<std::span<float>> params, std::vector<std::span<float>> grads,
            std::vector<std::span<float>> buffers) override;

  // dy: [batch, ..., units] → dx: [batch, ..., in]; adds dW and db into the grad views. With
  // ctx.batch_weight_grads, it copies x and dy into its group's operands instead, and
  // finish_step_grads adds dW and db over all of their rows in one GEMM.
  Tensor backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) override;
  // Split: backward_input computes dx only, backward_weight dW and db (added, written or deferred
  // as backward does).
  bool splits_backward() const override { return true; }
  Tensor backward_input(const Tensor& dy, Saved& saved, const LayerContext& ctx) override;
  void backward_weight(const Tensor& dy, const Saved& saved, const LayerContext& ctx) override;
  void finish_step_grads(const LayerContext& ctx) override;
  bool writes_grads_first() const override { return true; }
  double forward_flops_per_example() const override;
  LayerNeeds needs() const override;

  int64_t in_features() const { return in_; }
  int64_t units() const { return units_; }

 protected:
  // x: [batch, ..., in] → y: [batch, ..., units]; saves nothing besides x.
  Forward forward_without_input(const Tensor& x, const LayerContext& ctx) const override;

 private:
  // The saved input, checked against dy; its rows.
  const Tensor& saved_input(const Tensor& dy, const Saved& saved, int64_t& rows) const;
  // The rows of x and dy of micro-batch ctx.micro_batch, copied into its group's operands.
  void defer_weight_grad(const Tensor& x, const Tensor& dy, int64_t rows, const LayerContext& ctx);

  // One group's weight-gradient operands under batched or grouped weight gradients: [group
  // micro-batches x rows, in] and [group micro-batches x rows, units], the group's i-th
  // micro-batch at rows [i x rows, (i + 1) x rows). One group at a time: each group's product
  // runs before the next group's first copy.
  struct StepOperands {
    Tensor x, dy;
    int64_t step = -1;
    int first = 0;   // the group's first micro-batch
    int filled = 0;  // micro-batches copied in so far
  };

  Shape input_shape_, output_shape_;
  int64_t in_, units_;
  bool has_bias_;
  Init init_;
  std::span<float> weight_, bias_, weight_grad_, bias_grad_;
  StepOperands operands_;
};

}  // namespace mpipe::nn
