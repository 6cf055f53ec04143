// Embedding layer: token embedding plus learned position embedding for a sequence of token ids.
#pragma once

#include <span>

#include "nn/layer.h"

namespace mpipe::nn {

// Input: one example is [T] token ids stored as floats (T <= max_len). Output: [T, dim].
// Params: "token" [vocab, dim] and "position" [max_len, dim], both N(0, 0.02^2).
class Embedding : public Layer {
 public:
  Embedding(int global_index, const Shape& input_shape, int64_t vocab, int64_t dim,
            int64_t max_len);

  std::string_view kind() const override { return "embedding"; }
  Shape output_shape() const override { return {seq_, dim_}; }
  std::vector<ParamSpec> param_specs() const override;
  void bind(std::vector<std::span<float>> params, std::vector<std::span<float>> grads,
            std::vector<std::span<float>> buffers) override;

  // ids: [batch, T] → y: [batch, T, dim], y[b, t] = token[ids[b, t]] + position[t]. Throws
  // InputError for an id that is not an integer in [0, vocab). Saves the ids when training.
  Forward forward(const Tensor& ids, const LayerContext& ctx) override;
  // Adds dy into the rows of "token" named by the ids and into "position". Token ids have no
  // gradient: returns an empty tensor.
  Tensor backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) override;
  // Split: backward_input computes nothing (token ids have no gradient), backward_weight the
  // scatter-adds.
  bool splits_backward() const override { return true; }
  Tensor backward_input(const Tensor& dy, Saved& saved, const LayerContext& ctx) override;
  void backward_weight(const Tensor& dy, const Saved& saved, const LayerContext& ctx) override;
  double forward_flops_per_example() const override;
  LayerNeeds needs() const override;

 private:
  int64_t seq_, vocab_, dim_, max_len_;
  std::span<float> token_, position_, token_grad_, position_grad_;
};

}  // namespace mpipe::nn
