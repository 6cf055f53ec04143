// TransformerBlock layer: one pre-LN GPT block, a single pipeline-placeable layer.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "core/enum_names.h"
#include "nn/attention.h"
#include "nn/row_norm.h"

namespace mpipe::nn {

enum class MlpKind {
  kGelu,    // fc2(GELU(fc1(x)))
  kSwiglu,  // down(silu(gate(x)) · up(x)): fc1 holds gate and up, fc2 is down
};
inline constexpr EnumNames<MlpKind, 2> kMlpNames{
    {{"gelu", MlpKind::kGelu}, {"swiglu", MlpKind::kSwiglu}}};

// The block's choices beyond heads, MLP width and dropout; the defaults are GPT-2's block.
struct TransformerBlockVariant {
  NormKind norm = NormKind::kLayerNorm;
  MlpKind mlp = MlpKind::kGelu;
  RotaryOptions rotary = {};
  // The attention's key/value heads (grouped-query attention); 0 means heads.
  int64_t kv_heads = 0;
  // The std of the residual stream's output projections, attn.proj.weight and mlp.fc2.weight.
  float residual_std = 0.02f;
};

// y = x1 + Dropout(MLP(LN2(x1))) with x1 = x + Dropout(Attn(LN1(x))), where LN1 and LN2 are
// layer norms or RMS norms (variant.norm), MLP (hidden width h = mlp_ratio·d) is
//   gelu:   Linear(d, h) → GELU (tanh) → Linear(h, d)
//   swiglu: Linear(d, 2h) → silu(first h) · (last h) → Linear(h, d)
// and Attn is causal SelfAttention with the same dropout rate on its probabilities (and rotary
// position embeddings with variant.rotary, variant.kv_heads key/value heads). Input and output one
// example [T, d]. Params in order: "ln1.weight", "ln1.bias" (layer norm only), "attn.qkv.weight",
// "attn.qkv.bias", "attn.proj.weight", "attn.proj.bias", "ln2.weight", "ln2.bias" (layer norm
// only), "mlp.fc1.weight" [h, d] (gelu) or [2h, d] (swiglu: the gate's rows, then up's),
// "mlp.fc1.bias", "mlp.fc2.weight" [d, h], "mlp.fc2.bias". The three dropout masks are drawn
// from the block's counter stream at separate sites (see DropoutSite).
class TransformerBlock : public Layer {
 public:
  TransformerBlock(int global_index, const Shape& input_shape, int64_t heads, int64_t mlp_ratio = 4,
                   double dropout = 0.0, TransformerBlockVariant variant = {});

  std::string_view kind() const override { return "transformer_block"; }
  Shape output_shape() const override { return {seq_, dim_}; }
  std::vector<ParamSpec> param_specs() const override;
  void bind(std::vector<std::span<float>> params, std::vector<std::span<float>> grads,
            std::vector<std::span<float>> buffers) override;

  // x: [batch, T, d] → y: [batch, T, d].
  Forward forward(const Tensor& x, const LayerContext& ctx) override;
  Tensor backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) override;
  // Split: backward_input computes dx only (the MLP's and attention's input gradients, the norms'
  // backward_input) and keeps, in place of what forward saved, what each sub-layer's
  // backward_weight needs: the norms' and attention's own kept tensors, the output gradients of
  // attention (and of an RMS norm), and the MLP's LN2 output, fc1 output gradient, activation
  // output (and, with dropout, the masked output gradient); backward_weight adds every parameter
  // gradient from those.
  bool splits_backward() const override { return true; }
  Tensor backward_input(const Tensor& dy, Saved& saved, const LayerContext& ctx) override;
  void backward_weight(const Tensor& dy, const Saved& saved, const LayerContext& ctx) override;
  // Matrix products of the attention and the MLP.
  double forward_flops_per_example() const override;
  LayerNeeds needs() const override;

 private:
  // The MLP's saved tensors after ln1, attn and ln2's: LN2 output, fc1 output, activation output.
  static constexpr size_t kMlpSavedTensors = 3;
  size_t num_saved() const;
  // How many tensors backward_input leaves for backward_weight.
  size_t num_weight_kept() const;
  // fc1's output width: h (gelu) or 2h (swiglu).
  int64_t fc1_width() const;

  // branch *= dropout mask of `site` (training with dropout > 0 only). branch: [batch, T, d].
  void apply_dropout(Tensor& branch, DropoutSite site, const LayerContext& ctx) const;
  // The MLP's activation of fc1's output and its backward (dhidden: the gradient of fc1's
  // output, from that of the activation's; the latter is freed as soon as it is used up).
  Tensor activate(const Tensor& hidden, const LayerContext& ctx) const;
  Tensor activation_backward(const Tensor& hidden, Tensor dactivated,
                             const LayerContext& ctx) const;

  int64_t seq_, dim_, hidden_;
  double dropout_;
  TransformerBlockVariant variant_;
  std::unique_ptr<RowNorm> ln1_, ln2_;
  SelfAttention attn_;
  std::span<float> fc1_weight_, fc1_bias_, fc2_weight_, fc2_bias_;
  std::span<float> fc1_weight_grad_, fc1_bias_grad_, fc2_weight_grad_, fc2_bias_grad_;
};

}  // namespace mpipe::nn
