// TransformerBlock layer: one pre-LN GPT block, a single pipeline-placeable layer.
#pragma once

#include <cstdint>
#include <span>

#include "nn/attention.h"
#include "nn/layer_norm.h"

namespace mpipe::nn {

// y = x1 + Dropout(MLP(LN2(x1))) with x1 = x + Dropout(Attn(LN1(x))), where
// MLP = Linear(d, mlp_ratio·d) → GELU (tanh) → Linear(mlp_ratio·d, d), and Attn is
// CausalSelfAttention with the same dropout rate on its probabilities. Input and output one
// example [T, d]. Params in order: "ln1.weight", "ln1.bias", "attn.qkv.weight", "attn.qkv.bias",
// "attn.proj.weight", "attn.proj.bias", "ln2.weight", "ln2.bias", "mlp.fc1.weight" [r·d, d],
// "mlp.fc1.bias", "mlp.fc2.weight" [d, r·d], "mlp.fc2.bias". The three dropout masks are drawn
// from the block's counter stream at separate sites (see DropoutSite).
class TransformerBlock : public Layer {
 public:
  TransformerBlock(int global_index, const Shape& input_shape, int64_t heads, int64_t mlp_ratio = 4,
                   double dropout = 0.0);

  std::string_view kind() const override { return "transformer_block"; }
  Shape output_shape() const override { return {seq_, dim_}; }
  std::vector<ParamSpec> param_specs() const override;
  void bind(std::vector<std::span<float>> params, std::vector<std::span<float>> grads,
            std::vector<std::span<float>> buffers) override;

  // x: [batch, T, d] → y: [batch, T, d].
  Forward forward(const Tensor& x, const LayerContext& ctx) override;
  Tensor backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) override;
  // Matrix products of the attention and the MLP.
  double forward_flops_per_example() const override;

 private:
  // The MLP's saved tensors after ln1, attn and ln2's: LN2 output, fc1 output, GELU output.
  static constexpr size_t kSavedTensors =
      2 * LayerNorm::kSavedTensors + CausalSelfAttention::kSavedTensors + 3;

  // branch *= dropout mask of `site` (training with dropout > 0 only). branch: [batch, T, d].
  void apply_dropout(Tensor& branch, DropoutSite site, const LayerContext& ctx) const;

  int64_t seq_, dim_, hidden_;
  double dropout_;
  LayerNorm ln1_, ln2_;
  CausalSelfAttention attn_;
  std::span<float> fc1_weight_, fc1_bias_, fc2_weight_, fc2_bias_;
  std::span<float> fc1_weight_grad_, fc1_bias_grad_, fc2_weight_grad_, fc2_bias_grad_;
};

}  // namespace mpipe::nn
