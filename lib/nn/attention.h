// SelfAttention layer: fused q/k/v projection, multi-head attention (causal or not, with padded
// keys when it reads token ids), output projection; and the dropout masks of the attention and
// transformer-block dropout sites.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "kernels/rotary.h"
#include "nn/attention_heads.h"
#include "nn/input_saving_layer.h"
#include "nn/key_padding.h"

namespace mpipe::nn {

// Where in a layer a dropout mask is applied. Each site draws from its own part of the counter
// stream of (seed, step, global example, global layer), so a layer may hold several sites.
enum class DropoutSite : uint32_t {
  kAttentionProbs = 0,   // attention probabilities (the same draws as a Dropout layer's)
  kAttentionOutput = 1,  // transformer block: attention branch before the residual add
  kMlpOutput = 2,        // transformer block: MLP branch before the residual add
};

// mask: [batch, per_example], mask[e, j] = 0 with probability `rate`, else 1 / (1 - rate), drawn
// from CounterRng(seed, kDropout, global_index, (step << 32) | (first_example + e)) at index
// (site << 58) + j. A pure function of the counters: recomputes and any micro-batch split give
// the same mask for the same global example.
void fill_dropout_mask(const LayerContext& ctx, int global_index, DropoutSite site, double rate,
                       int64_t batch, int64_t per_example, float* mask);

// Rotary position embeddings on q and k (kernels/rotary.h: the "rotate half" pairing within
// each head, angle t · base^(-2i/head_dim) at position t).
struct RotaryOptions {
  bool enabled = false;
  double base = 10000.0;
};

// Input one example [T, d], output [T, d]; heads divides d, and kv_heads (grouped-query
// attention; 0 means heads) divides heads. With e = d / heads and c = kv_heads · e, params:
// "qkv.weight" [d + 2c, d] (rows: q's d, then k's c, then v's c; query head h uses rows
// h·e .. (h+1)·e - 1 of q, key/value head g those of k and v, and query head h attends with
// key/value head h / (heads / kv_heads)), "qkv.bias" [d + 2c], "proj.weight" [d, d], "proj.bias"
// [d]. Weights N(0, 0.02^2) (proj.weight N(0, proj_std^2)), biases zero. Query i attends to keys
// j <= i when `causal`, else to all;
// with `padding`, the layer reads the sequence's token ids [T] and keys whose id is the pad id
// get no attention (a query with no key left gets a zero output). Dropout (rate `dropout`,
// training only) applies to the attention probabilities; rotary position embeddings (an even
// d / heads) rotate each head's q and k by their position before the scores.
class SelfAttention : public InputSavingLayer {
 public:
  SelfAttention(int global_index, const Shape& input_shape, int64_t heads, double dropout = 0.0,
                RotaryOptions rotary = {}, float proj_std = 0.02f, bool causal = true,
                std::optional<KeyPadding> padding = std::nullopt, int64_t kv_heads = 0);

  std::string_view kind() const override { return "attention"; }
  Shape output_shape() const override { return {seq_, dim_}; }
  std::vector<ParamSpec> param_specs() const override;
  void bind(std::vector<std::span<float>> params, std::vector<std::span<float>> grads,
            std::vector<std::span<float>> buffers) override;

  // With padding: reads the token ids [batch, T] (no gradient: an empty tensor in
  // backward_reading's answer); saves what forward saves.
  int num_reads() const override { return padding_ ? 1 : 0; }
  Forward forward_reading(const Tensor& x, std::span<const Tensor* const> reads,
                          const LayerContext& ctx) override;
  std::vector<Tensor> backward_reading(const Tensor& dy, const Saved& saved,
                                       const LayerContext& ctx) override;

  Tensor backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) override;
  // backward() with the saved tensors given as a span, for composite layers that keep several
  // sub-layers' tensors in one Saved.
  Tensor backward_from(const Tensor& dy, std::span<const Tensor> saved,
                       const LayerContext& ctx) const;
  // Split: backward_input computes dx and keeps x, the merged heads and the q/k/v projection's
  // output gradient [batch, T, d + 2c] (in place of what forward saved); backward_weight adds both
  // projections' weight and bias gradients from those. A stage runs a reading layer's backward
  // whole (backward_reading), so the form with padding does not split.
  bool splits_backward() const override { return !padding_; }
  Tensor backward_input(const Tensor& dy, Saved& saved, const LayerContext& ctx) override;
  void backward_weight(const Tensor& dy, const Saved& saved, const LayerContext& ctx) override;
  // backward_weight() with what backward_input left (kWeightKeptTensors) given as a span.
  void backward_weight_from(const Tensor& dy, std::span<const Tensor> kept,
                            const LayerContext& ctx) const;
  // Matrix products: q/k/v and output projections, q·k^T and probs·v (all T x T entries); the
  // rotation of q and k (k: c columns).
  double forward_flops_per_example() const override;
  LayerNeeds needs() const override;

  static constexpr size_t kSavedTensors = 6;
  static constexpr size_t kWeightKeptTensors = 3;

 protected:
  // x: [batch, T, d] → y: [batch, T, d]; saves q (rotated, [batch, heads, T, e]), k (rotated)
  // and v ([batch, kv_heads, T, e]), the probabilities [batch, heads, T, T] and the merged head
  // outputs [batch, T, d] besides x.
  // The form with padding runs through forward_reading only.
  Forward forward_without_input(const Tensor& x, const LayerContext& ctx) const override;

 private:
  // forward_without_input with the keys' keep mask [batch, T] (nullptr: no padding).
  Forward attend(const Tensor& x, const uint8_t* key_keep, const LayerContext& ctx) const;
  // The q/k/v projection's output gradient [rows, d + 2c] from the merged heads' gradient (freed as
  // soon as it is used up) and the saved q, k, v and probabilities.
  Tensor qkv_grad(int64_t batch, Tensor dmerged, std::span<const Tensor> saved,
                  const LayerContext& ctx) const;

  // The sizes of the layout of q (and of the merged heads), and of k and v.
  HeadLayout query_layout(int64_t batch) const;
  HeadLayout key_value_layout(int64_t batch) const;
  // The q/k/v projection's output width d + 2c.
  int64_t qkv_width() const { return dim_ + 2 * kv_dim_; }

  int64_t seq_, dim_, heads_, kv_heads_, kv_dim_;
  double dropout_;
  float proj_std_;
  bool causal_;
  std::optional<KeyPadding> padding_;
  std::optional<kernels::RotaryTable> rotary_;  // the angles' cos and sin, when enabled
  std::span<float> qkv_weight_, qkv_bias_, proj_weight_, proj_bias_;
  std::span<float> qkv_weight_grad_, qkv_bias_grad_, proj_weight_grad_, proj_bias_grad_;
};

}  // namespace mpipe::nn
