// SelfAttention layer: projections through the linear kernels, heads split and merged around the
// attention kernel; dropout masks from the counter RNG.
#include "nn/attention.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "kernels/attention.h"
#include "kernels/matmul.h"
#include "nn/attention_heads.h"

namespace mpipe::nn {

void fill_dropout_mask(const LayerContext& ctx, int global_index, DropoutSite site, double rate,
                       int64_t batch, int64_t per_example, float* mask) {
  check(rate >= 0.0 && rate < 1.0, "dropout rate must be in [0, 1), got {}", rate);
  const uint64_t first_draw = static_cast<uint64_t>(site) << 58;
  const auto threshold = static_cast<float>(rate);
  const auto scale = static_cast<float>(1.0 / (1.0 - rate));
  // Each example's mask comes from its own counter stream: the same values on any thread count.
#pragma omp parallel for schedule(static)
  for (int64_t e = 0; e < batch; ++e) {
    const uint64_t example = static_cast<uint64_t>(ctx.first_example + e);
    const CounterRng rng(ctx.seed, RngPurpose::kDropout, static_cast<uint32_t>(global_index),
                         (static_cast<uint64_t>(ctx.step) << 32) | example);
    std::span<float> out(mask + e * per_example, static_cast<size_t>(per_example));
    rng.fill_uniform(out, first_draw);
    for (float& m : out) m = m >= threshold ? scale : 0.0f;
  }
}

namespace {

// q's layout and k's (or v's).
kernels::AttentionShape attention_shape(const HeadLayout& q, const HeadLayout& kv) {
  return {.batch = q.batch,
          .heads = q.heads,
          .q_len = q.seq,
          .kv_len = kv.seq,
          .head_dim = q.head_dim(),
          .kv_heads = kv.heads};
}

}  // namespace

SelfAttention::SelfAttention(int global_index, const Shape& input_shape, int64_t heads,
                             double dropout, RotaryOptions rotary, float proj_std, bool causal,
                             std::optional<KeyPadding> padding, int64_t kv_heads)
    : InputSavingLayer(global_index),
      seq_(0),
      dim_(0),
      heads_(heads),
      kv_heads_(kv_heads == 0 ? heads : kv_heads),
      kv_dim_(0),
      dropout_(dropout),
      proj_std_(proj_std),
      causal_(causal),
      padding_(padding) {
  check_input(input_shape.rank() == 2 && input_shape[0] > 0 && input_shape[1] > 0,
              "attention needs an input [T, d], got {}", input_shape);
  seq_ = input_shape[0];
  dim_ = input_shape[1];
  check_input(heads > 0 && dim_ % heads == 0, "attention heads must divide d = {}, got {}", dim_,
              heads);
  check_input(kv_heads_ > 0 && heads % kv_heads_ == 0,
              "attention kv_heads must divide heads = {}, got {}", heads, kv_heads_);
  kv_dim_ = dim_ / heads * kv_heads_;
  check_input(dropout >= 0.0 && dropout < 1.0, "attention dropout must be in [0, 1), got {}",
              dropout);
  check_input(!padding || padding->pad_id >= 0, "attention pad_id must be >= 0, got {}",
              padding ? padding->pad_id : 0);
  if (rotary.enabled) {
    const int64_t head_dim = dim_ / heads;
    check_input(head_dim % 2 == 0,
                "rotary position embeddings need an even head width d / heads, got {}", head_dim);
    check_input(rotary.base > 0.0, "rotary_base must be > 0, got {}", rotary.base);
    rotary_ = kernels::rotary_table(seq_, head_dim, rotary.base);
  }
}

HeadLayout SelfAttention::query_layout(int64_t batch) const {
  return {.batch = batch, .seq = seq_, .dim = dim_, .heads = heads_};
}

HeadLayout SelfAttention::key_value_layout(int64_t batch) const {
  return {.batch = batch, .seq = seq_, .dim = kv_dim_, .heads = kv_heads_};
}

std::vector<ParamSpec> SelfAttention::param_specs() const {
  const int64_t d = dim_, w = qkv_width();
  return {{.name = "qkv.weight",
           .shape = {w, d},
           .init = Init::kNormal,
           .fan_in = d,
           .fan_out = w,
           .std = 0.02f},
          {.name = "qkv.bias", .shape = {w}, .init = Init::kZeros},
          {.name = "proj.weight",
           .shape = {d, d},
           .init = Init::kNormal,
           .fan_in = d,
           .fan_out = d,
           .std = proj_std_},
          {.name = "proj.bias", .shape = {d}, .init = Init::kZeros}};
}

void SelfAttention::bind(std::vector<std::span<float>> params, std::vector<std::span<float>> grads,
                         std::vector<std::span<float>> buffers) {
  check(params.size() == 4 && grads.size() == 4 && buffers.empty(),
        "SelfAttention::bind: expected 4 params");
  qkv_weight_ = params[0], qkv_bias_ = params[1], proj_weight_ = params[2], proj_bias_ = params[3];
  qkv_weight_grad_ = grads[0], qkv_bias_grad_ = grads[1];
  proj_weight_grad_ = grads[2], proj_bias_grad_ = grads[3];
}

Forward SelfAttention::forward_without_input(const Tensor& x, const LayerContext& ctx) const {
  check(!padding_, "layer {} (attention) reads token ids: forward_reading", global_index());
  return attend(x, nullptr, ctx);
}

Forward SelfAttention::forward_reading(const Tensor& x, std::span<const Tensor* const> reads,
                                       const LayerContext& ctx) {
  check(padding_ && reads.size() == 1, "layer {} (attention): {} reads, expected {}",
        global_index(), reads.size(), num_reads());
  const std::vector<uint8_t> keep = key_keep(*reads[0], seq_, *padding_);
  Forward result = attend(x, keep.data(), ctx);
  if (ctx.training) result.saved.tensors.insert(result.saved.tensors.begin(), x);
  return result;
}

std::vector<Tensor> SelfAttention::backward_reading(const Tensor& dy, const Saved& saved,
                                                    const LayerContext& ctx) {
  std::vector<Tensor> grads;
  grads.push_back(backward_from(dy, saved.tensors, ctx));
  grads.emplace_back();  // token ids take no gradient
  return grads;
}

Forward SelfAttention::attend(const Tensor& x, const uint8_t* key_keep,
                              const LayerContext& ctx) const {
  check(x.shape().rank() == 3 && x.dim(1) == seq_ && x.dim(2) == dim_,
        "SelfAttention: input {} is not [batch, {}, {}]", x.shape(), seq_, dim_);
  check(!qkv_weight_.empty(), "SelfAttention: forward before bind");
  const HeadLayout s = query_layout(x.dim(0)), kv = key_value_layout(x.dim(0));
  const Shape head_shape{s.batch, s.heads, s.seq, s.head_dim()};
  const Shape kv_shape{kv.batch, kv.heads, kv.seq, kv.head_dim()};
  const int64_t w = qkv_width();
  // qkv: [rows, d + 2c] = x · qkv.weight^T + qkv.bias, then split into q, k, v per head.
  Tensor qkv = Tensor::uninitialized(Shape{s.rows(), w});
  kernels::linear_forward(ctx.kernels, x.data(), qkv_weight_.data(), qkv_bias_.data(), qkv.data(),
                          s.rows(), dim_, w);
  Tensor q = Tensor::uninitialized(head_shape), k = Tensor::uninitialized(kv_shape),
         v = Tensor::uninitialized(kv_shape);
  to_heads(s, qkv.data(), w, 0, q.data());
  to_heads(kv, qkv.data(), w, dim_, k.data());
  to_heads(kv, qkv.data(), w, dim_ + kv_dim_, v.data());
  qkv = Tensor();
  if (rotary_) {
    kernels::rotary_apply(*rotary_, q.data(), s.batch * s.heads, /*inverse=*/false);
    kernels::rotary_apply(*rotary_, k.data(), kv.batch * kv.heads, /*inverse=*/false);
  }

  Tensor probs = Tensor::uninitialized(Shape{s.batch, s.heads, s.seq, s.seq});
  Tensor heads_out = Tensor::uninitialized(head_shape), mask;
  if (ctx.training && dropout_ > 0.0) {
    mask = Tensor::uninitialized(probs.shape());
    fill_dropout_mask(ctx, global_index(), DropoutSite::kAttentionProbs, dropout_, s.batch,
                      s.heads * s.seq * s.seq, mask.data());
  }
  kernels::attention_forward(
      ctx.kernels, attention_shape(s, kv), {.causal = causal_, .key_keep = key_keep}, q.data(),
      k.data(), v.data(), mask.empty() ? nullptr : mask.data(), probs.data(), heads_out.data());
  mask = Tensor();  // each temporary is freed as soon as it is used up
  // merged: [rows, d] (heads side by side); y = merged · proj.weight^T + proj.bias.
  Tensor merged = Tensor::uninitialized(x.shape());
  from_heads(s, heads_out.data(), dim_, 0, merged.data());
  heads_out = Tensor();
  Forward result{.output = Tensor::uninitialized(x.shape()), .saved = {}};
  kernels::linear_forward(ctx.kernels, merged.data(), proj_weight_.data(), proj_bias_.data(),
                          result.output.data(), s.rows(), dim_, dim_);
  if (ctx.training) {
    // Moved in one by one (an initializer list would copy every tensor), with room for x.
    std::vector<Tensor>& saved = result.saved.tensors;
    saved.reserve(kSavedTensors);
    for (Tensor* t : {&q, &k, &v, &probs, &merged}) saved.push_back(std::move(*t));
  }
  return result;
}

Tensor SelfAttention::backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) {
  return backward_from(dy, saved.tensors, ctx);
}

Tensor SelfAttention::backward_from(const Tensor& dy, std::span<const Tensor> saved,
                                    const LayerContext& ctx) const {
  check(saved.size() == kSavedTensors, "SelfAttention::backward: nothing saved");
  const Tensor &x = saved[0], &merged = saved[5];
  check(dy.shape() == x.shape(), "SelfAttention::backward: dy {} does not match x {}", dy.shape(),
        x.shape());
  const int64_t rows = x.dim(0) * seq_;
  // Output projection: dproj.weight += dy^T · merged, dmerged = dy · proj.weight.
  Tensor dmerged = Tensor::uninitialized(x.shape());
  kernels::linear_backward(ctx.kernels, merged.data(), dy.data(), proj_weight_.data(),
                           dmerged.data(), proj_weight_grad_.data(), proj_bias_grad_.data(), rows,
                           dim_, dim_);
  const Tensor dqkv = qkv_grad(x.dim(0), std::move(dmerged), saved, ctx);
  // dqkv.weight += dqkv^T · x, dx = dqkv · qkv.weight.
  Tensor dx;
  if (ctx.need_input_grad) dx = Tensor::uninitialized(x.shape());
  kernels::linear_backward(ctx.kernels, x.data(), dqkv.data(), qkv_weight_.data(),
                           dx.empty() ? nullptr : dx.data(), qkv_weight_grad_.data(),
                           qkv_bias_grad_.data(), rows, dim_, qkv_width());
  return dx;
}

Tensor SelfAttention::backward_input(const Tensor& dy, Saved& saved, const LayerContext& ctx) {
  check(saved.tensors.size() == kSavedTensors, "SelfAttention::backward: nothing saved");
  const Tensor& x = saved.tensors[0];
  check(dy.shape() == x.shape(), "SelfAttention::backward: dy {} does not match x {}", dy.shape(),
        x.shape());
  const int64_t rows = x.dim(0) * seq_;
  // dmerged = dy · proj.weight, then dx = dqkv · qkv.weight (the weight gradients wait for W).
  Tensor dmerged = Tensor::uninitialized(x.shape());
  kernels::linear_backward_data(ctx.kernels, dy.data(), proj_weight_.data(), dmerged.data(), rows,
                                dim_, dim_);
  Tensor dqkv = qkv_grad(x.dim(0), std::move(dmerged), saved.tensors, ctx);
  Tensor dx;
  if (ctx.need_input_grad) {
    dx = Tensor::uninitialized(x.shape());
    kernels::linear_backward_data(ctx.kernels, dqkv.data(), qkv_weight_.data(), dx.data(), rows,
                                  dim_, qkv_width());
  }
  // W needs x, the merged heads and dqkv: q, k, v and the probabilities go.
  std::vector<Tensor> kept;
  kept.reserve(kWeightKeptTensors);
  kept.push_back(std::move(saved.tensors[0]));
  kept.push_back(std::move(saved.tensors[5]));
  kept.push_back(std::move(dqkv));
  saved.tensors = std::move(kept);
  return dx;
}

void SelfAttention::backward_weight(const Tensor& dy, const Saved& saved, const LayerContext& ctx) {
  backward_weight_from(dy, saved.tensors, ctx);
}

void SelfAttention::backward_weight_from(const Tensor& dy, std::span<const Tensor> kept,
                                         const LayerContext& ctx) const {
  check(kept.size() == kWeightKeptTensors, "SelfAttention::backward_weight: nothing kept");
  const Tensor &x = kept[0], &merged = kept[1], &dqkv = kept[2];
  check(dy.shape() == x.shape(), "SelfAttention::backward: dy {} does not match x {}", dy.shape(),
        x.shape());
  const int64_t rows = x.dim(0) * seq_;
  // dproj.weight += dy^T · merged, dqkv.weight += dqkv^T · x (and the biases).
  kernels::linear_backward_weights(ctx.kernels, merged.data(), dy.data(), proj_weight_grad_.data(),
                                   proj_bias_grad_.data(), rows, dim_, dim_);
  kernels::linear_backward_weights(ctx.kernels, x.data(), dqkv.data(), qkv_weight_grad_.data(),
                                   qkv_bias_grad_.data(), rows, dim_, qkv_width());
}

Tensor SelfAttention::qkv_grad(int64_t batch, Tensor dmerged, std::span<const Tensor> saved,
                               const LayerContext& ctx) const {
  const Tensor &q = saved[1], &k = saved[2], &v = saved[3], &probs = saved[4];
  const HeadLayout s = query_layout(batch), kv = key_value_layout(batch);
  Tensor dheads = Tensor::uninitialized(q.shape());
  to_heads(s, dmerged.data(), dim_, 0, dheads.data());
  dmerged = Tensor();  // each temporary is freed as soon as it is used up

  Tensor mask;
  if (ctx.training && dropout_ > 0.0) {
    mask = Tensor::uninitialized(probs.shape());
    fill_dropout_mask(ctx, global_index(), DropoutSite::kAttentionProbs, dropout_, s.batch,
                      s.heads * s.seq * s.seq, mask.data());
  }
  Tensor dq = Tensor::uninitialized(q.shape()), dk = Tensor::uninitialized(k.shape()),
         dv = Tensor::uninitialized(v.shape());
  kernels::attention_backward(ctx.kernels, attention_shape(s, kv), q.data(), k.data(), v.data(),
                              probs.data(), mask.empty() ? nullptr : mask.data(), dheads.data(),
                              dq.data(), dk.data(), dv.data());
  dheads = Tensor();
  mask = Tensor();
  if (rotary_) {  // from the rotated q and k back to the projections' q and k
    kernels::rotary_apply(*rotary_, dq.data(), s.batch * s.heads, /*inverse=*/true);
    kernels::rotary_apply(*rotary_, dk.data(), kv.batch * kv.heads, /*inverse=*/true);
  }
  // dqkv: [rows, d + 2c].
  const int64_t w = qkv_width();
  Tensor dqkv = Tensor::uninitialized(Shape{batch, seq_, w});
  from_heads(s, dq.data(), w, 0, dqkv.data());
  dq = Tensor();
  from_heads(kv, dk.data(), w, dim_, dqkv.data());
  dk = Tensor();
  from_heads(kv, dv.data(), w, dim_ + kv_dim_, dqkv.data());
  return dqkv;
}

double SelfAttention::forward_flops_per_example() const {
  const auto t = static_cast<double>(seq_), d = static_cast<double>(dim_);
  const auto c = static_cast<double>(kv_dim_);
  // q/k/v projection 2·T·d·(d + 2c), q·k^T and probs·v 2·T·T·d each, output projection 2·T·d·d;
  // the rotation of q (T·d elements) and k (T·c) 3 operations per element each.
  const double rotation = rotary_ ? 3.0 * t * (d + c) : 0.0;
  return 2.0 * t * d * (d + 2.0 * c) + 4.0 * t * t * d + 2.0 * t * d * d + rotation;
}

LayerNeeds SelfAttention::needs() const {
  // Per example: an activation a = T·d, k's (and v's) kv = T·c, q/k/v's w = a + 2kv, the
  // probabilities p = heads·T² and their dropout mask m (p with dropout, else 0). Keeps x, q, k,
  // v, the merged heads and the probabilities.
  const double a = float_bytes(seq_ * dim_), kv = float_bytes(seq_ * kv_dim_), w = a + 2.0 * kv;
  const double p = float_bytes(heads_ * seq_ * seq_);
  const double m = dropout_ > 0.0 ? p : 0.0;
  // Backward beside dy: dq, dk, dv (w) and dqkv (w) while dqkv is filled, or the heads'
  // gradient (a), dq, dk, dv and the mask in the kernel, each less the a of dx, which the model
  // counts as the input gradient. Its forward peaks in the kernel with q, k, v, the
  // probabilities, the heads' output and the mask, beyond its input, output and what it keeps
  // when the mask is over 2a.
  LayerNeeds needs{
      .kept_tensor_bytes = {a, a, kv, kv, a, p},
      .backward_temporary_bytes = std::max(2.0 * w - a, w + m),
      .forward_temporary_bytes = std::max(0.0, m - 2.0 * a),
      .smallest_temporary_bytes = a,
      // A reading layer's forward_reading copies its input (a stage never hands it over).
      .keeps_consumed_input = !padding_,
      .backward_flops = matrix_product_backward_flops(forward_flops_per_example(), global_index())};
  // Evaluation, beyond x and the output (nothing kept, no mask): the projection's output beside
  // q, k and v, then q, k, v and the probabilities beside the heads' output and the merged heads.
  needs.evaluation_temporary_bytes = std::max(2.0 * w - a, w + p + a);
  if (splits_backward()) {
    needs.splits_backward = true;
    // The projections' weight gradients: 2·T·d·(d + 2c) and 2·T·d·d. Kept from I to W: x, the
    // merged heads and dqkv (w).
    const auto t = static_cast<double>(seq_), d = static_cast<double>(dim_);
    needs.weight_grad_flops =
        2.0 * t * d * (d + 2.0 * static_cast<double>(kv_dim_)) + 2.0 * t * d * d;
    needs.weight_work_tensor_bytes = {a, a, w};
  }
  return needs;
}

}  // namespace mpipe::nn
