// CrossAttention layer: a decoder's queries attend to an encoder's output (the memory), with the
// memory's padded positions masked by their token ids.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "nn/key_padding.h"
#include "nn/layer.h"

namespace mpipe::nn {

// Input one example x [T, d] (the queries), output [T, d]; reads the memory [S, d] and, with
// `padding`, the memory's token ids [S], whose pad-id positions get no attention (a query whose
// example has no key left gets a zero output). Not causal. heads divides d. Params: "q.weight"
// [d, d], "q.bias" [d], "kv.weight" [2d, d] (rows: k, then v; head h uses rows
// h*d/heads .. (h+1)*d/heads - 1 of each), "kv.bias" [2d], "proj.weight" [d, d], "proj.bias"
// [d]. Weights N(0, 0.02^2) (proj.weight N(0, proj_std^2)), biases zero. Dropout (rate
// `dropout`, training only) applies to the attention probabilities, drawn as SelfAttention's
// (fill_dropout_mask at DropoutSite::kAttentionProbs, on this layer's counter stream).
class CrossAttention : public Layer {
 public:
  // memory: one example's shape of the memory read, [S, d].
  CrossAttention(int global_index, const Shape& input_shape, const Shape& memory, int64_t heads,
                 double dropout = 0.0, float proj_std = 0.02f,
                 std::optional<KeyPadding> padding = std::nullopt);

  std::string_view kind() const override { return "cross_attention"; }
  Shape output_shape() const override { return {seq_, dim_}; }
  std::vector<ParamSpec> param_specs() const override;
  void bind(std::vector<std::span<float>> params, std::vector<std::span<float>> grads,
            std::vector<std::span<float>> buffers) override;

  int num_reads() const override { return padding_ ? 2 : 1; }
  // x: [batch, T, d]; reads: the memory [batch, S, d], then (with padding) its token ids
  // [batch, S] → y: [batch, T, d]. Saves x, the memory, q [batch, heads, T, d / heads], k and v
  // [batch, heads, S, d / heads], the probabilities [batch, heads, T, S] and the merged head
  // outputs [batch, T, d].
  Forward forward_reading(const Tensor& x, std::span<const Tensor* const> reads,
                          const LayerContext& ctx) override;
  // dy → {dx (empty when !ctx.need_input_grad), dmemory, and for the ids an empty tensor}.
  std::vector<Tensor> backward_reading(const Tensor& dy, const Saved& saved,
                                       const LayerContext& ctx) override;
  // A cross-attention always reads: a stage never calls these.
  Forward forward(const Tensor& x, const LayerContext& ctx) override;
  Tensor backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) override;

  // Matrix products: the q, kv and output projections, q·k^T and probs·v (all T x S entries).
  double forward_flops_per_example() const override;
  LayerNeeds needs() const override;

  static constexpr size_t kSavedTensors = 7;

 private:
  // The gradients of q [batch, T, d] and of the kv projection's output [batch, S, 2d] from the
  // merged heads' gradient (freed as soon as it is used up) and the saved q, k, v and
  // probabilities.
  std::pair<Tensor, Tensor> projection_grads(int64_t batch, Tensor dmerged,
                                             std::span<const Tensor> saved,
                                             const LayerContext& ctx) const;
  // The dropout mask of the probabilities [batch, heads, T, S], or an empty tensor.
  Tensor dropout_mask(int64_t batch, const LayerContext& ctx) const;

  int64_t seq_, memory_seq_, dim_, heads_;
  double dropout_;
  float proj_std_;
  std::optional<KeyPadding> padding_;
  std::span<float> q_weight_, q_bias_, kv_weight_, kv_bias_, proj_weight_, proj_bias_;
  std::span<float> q_weight_grad_, q_bias_grad_, kv_weight_grad_, kv_bias_grad_, proj_weight_grad_,
      proj_bias_grad_;
};

}  // namespace mpipe::nn
