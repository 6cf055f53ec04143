// CrossAttention layer: the q and kv projections through the linear kernels, heads split and
// merged around the (non-causal, key-padded) attention kernel.
#include "nn/cross_attention.h"

#include <algorithm>
#include <utility>

#include "core/error.h"
#include "kernels/attention.h"
#include "kernels/matmul.h"
#include "nn/attention.h"
#include "nn/attention_heads.h"

namespace mpipe::nn {

CrossAttention::CrossAttention(int global_index, const Shape& input_shape, const Shape& memory,
                               int64_t heads, double dropout, float proj_std,
                               std::optional<KeyPadding> padding)
    : Layer(global_index),
      seq_(0),
      memory_seq_(0),
      dim_(0),
      heads_(heads),
      dropout_(dropout),
      proj_std_(proj_std),
      padding_(padding) {
  check_input(input_shape.rank() == 2 && input_shape[0] > 0 && input_shape[1] > 0,
              "cross_attention needs an input [T, d], got {}", input_shape);
  seq_ = input_shape[0];
  dim_ = input_shape[1];
  check_input(memory.rank() == 2 && memory[0] > 0 && memory[1] == dim_,
              "cross_attention needs a memory [S, {}] (the input's d), got {}", dim_, memory);
  memory_seq_ = memory[0];
  check_input(heads > 0 && dim_ % heads == 0, "cross_attention heads must divide d = {}, got {}",
              dim_, heads);
  check_input(dropout >= 0.0 && dropout < 1.0, "cross_attention dropout must be in [0, 1), got {}",
              dropout);
  check_input(!padding || padding->pad_id >= 0, "cross_attention pad_id must be >= 0, got {}",
              padding ? padding->pad_id : 0);
}

std::vector<ParamSpec> CrossAttention::param_specs() const {
  const int64_t d = dim_;
  return {{.name = "q.weight",
           .shape = {d, d},
           .init = Init::kNormal,
           .fan_in = d,
           .fan_out = d,
           .std = 0.02f},
          {.name = "q.bias", .shape = {d}, .init = Init::kZeros},
          {.name = "kv.weight",
           .shape = {2 * d, d},
           .init = Init::kNormal,
           .fan_in = d,
           .fan_out = 2 * d,
           .std = 0.02f},
          {.name = "kv.bias", .shape = {2 * d}, .init = Init::kZeros},
          {.name = "proj.weight",
           .shape = {d, d},
           .init = Init::kNormal,
           .fan_in = d,
           .fan_out = d,
           .std = proj_std_},
          {.name = "proj.bias", .shape = {d}, .init = Init::kZeros}};
}

void CrossAttention::bind(std::vector<std::span<float>> params, std::vector<std::span<float>> grads,
                          std::vector<std::span<float>> buffers) {
  check(params.size() == 6 && grads.size() == 6 && buffers.empty(),
        "CrossAttention::bind: expected 6 params");
  q_weight_ = params[0], q_bias_ = params[1], kv_weight_ = params[2], kv_bias_ = params[3];
  proj_weight_ = params[4], proj_bias_ = params[5];
  q_weight_grad_ = grads[0], q_bias_grad_ = grads[1], kv_weight_grad_ = grads[2];
  kv_bias_grad_ = grads[3], proj_weight_grad_ = grads[4], proj_bias_grad_ = grads[5];
}

Tensor CrossAttention::dropout_mask(int64_t batch, const LayerContext& ctx) const {
  if (!ctx.training || dropout_ == 0.0) return {};
  Tensor mask = Tensor::uninitialized(Shape{batch, heads_, seq_, memory_seq_});
  fill_dropout_mask(ctx, global_index(), DropoutSite::kAttentionProbs, dropout_, batch,
                    heads_ * seq_ * memory_seq_, mask.data());
  return mask;
}

Forward CrossAttention::forward_reading(const Tensor& x, std::span<const Tensor* const> reads,
                                        const LayerContext& ctx) {
  check(std::ssize(reads) == num_reads(), "layer {} (cross_attention): {} reads, expected {}",
        global_index(), reads.size(), num_reads());
  const Tensor& memory = *reads[0];
  check(x.shape().rank() == 3 && x.dim(1) == seq_ && x.dim(2) == dim_,
        "CrossAttention: input {} is not [batch, {}, {}]", x.shape(), seq_, dim_);
  check(memory.shape() == Shape{x.dim(0), memory_seq_, dim_},
        "CrossAttention: memory {} is not [{}, {}, {}]", memory.shape(), x.dim(0), memory_seq_,
        dim_);
  check(!q_weight_.empty(), "CrossAttention: forward before bind");
  const int64_t batch = x.dim(0);
  const HeadLayout queries{.batch = batch, .seq = seq_, .dim = dim_, .heads = heads_};
  const HeadLayout keys{.batch = batch, .seq = memory_seq_, .dim = dim_, .heads = heads_};
  // q = x · q.weight^T + q.bias: [batch * T, d]; kv = memory · kv.weight^T + kv.bias:
  // [batch * S, 2d]; each split into heads.
  Tensor q = Tensor::uninitialized(Shape{batch, heads_, seq_, queries.head_dim()});
  Tensor k = Tensor::uninitialized(Shape{batch, heads_, memory_seq_, keys.head_dim()});
  Tensor v = Tensor::uninitialized(k.shape());
  {
    Tensor rows = Tensor::uninitialized(x.shape());
    kernels::linear_forward(ctx.kernels, x.data(), q_weight_.data(), q_bias_.data(), rows.data(),
                            queries.rows(), dim_, dim_);
    to_heads(queries, rows.data(), dim_, 0, q.data());
  }
  {
    Tensor rows = Tensor::uninitialized(Shape{keys.rows(), 2 * dim_});
    kernels::linear_forward(ctx.kernels, memory.data(), kv_weight_.data(), kv_bias_.data(),
                            rows.data(), keys.rows(), dim_, 2 * dim_);
    to_heads(keys, rows.data(), 2 * dim_, 0, k.data());
    to_heads(keys, rows.data(), 2 * dim_, dim_, v.data());
  }
  std::vector<uint8_t> keep;
  if (padding_) keep = key_keep(*reads[1], memory_seq_, *padding_);
  Tensor probs = Tensor::uninitialized(Shape{batch, heads_, seq_, memory_seq_});
  Tensor heads_out = Tensor::uninitialized(q.shape());
  Tensor mask = dropout_mask(batch, ctx);
  kernels::attention_forward(ctx.kernels,
                             {.batch = batch,
                              .heads = heads_,
                              .q_len = seq_,
                              .kv_len = memory_seq_,
                              .head_dim = queries.head_dim()},
                             {.causal = false, .key_keep = padding_ ? keep.data() : nullptr},
                             q.data(), k.data(), v.data(), mask.empty() ? nullptr : mask.data(),
                             probs.data(), heads_out.data());
  mask = Tensor();  // each temporary is freed as soon as it is used up
  // merged: [batch * T, d] (heads side by side); y = merged · proj.weight^T + proj.bias.
  Tensor merged = Tensor::uninitialized(x.shape());
  from_heads(queries, heads_out.data(), dim_, 0, merged.data());
  heads_out = Tensor();
  Forward result{.output = Tensor::uninitialized(x.shape()), .saved = {}};
  kernels::linear_forward(ctx.kernels, merged.data(), proj_weight_.data(), proj_bias_.data(),
                          result.output.data(), queries.rows(), dim_, dim_);
  if (ctx.training) {
    std::vector<Tensor>& saved = result.saved.tensors;
    saved.reserve(kSavedTensors);
    saved.push_back(x);
    saved.push_back(memory);
    for (Tensor* t : {&q, &k, &v, &probs, &merged}) saved.push_back(std::move(*t));
  }
  return result;
}

std::vector<Tensor> CrossAttention::backward_reading(const Tensor& dy, const Saved& saved,
                                                     const LayerContext& ctx) {
  check(saved.tensors.size() == kSavedTensors, "CrossAttention::backward: nothing saved");
  const Tensor &x = saved.tensors[0], &memory = saved.tensors[1], &merged = saved.tensors[6];
  check(dy.shape() == x.shape(), "CrossAttention::backward: dy {} does not match x {}", dy.shape(),
        x.shape());
  const int64_t batch = x.dim(0), rows = batch * seq_, memory_rows = batch * memory_seq_;
  // Output projection: dproj.weight += dy^T · merged, dmerged = dy · proj.weight.
  Tensor dmerged = Tensor::uninitialized(x.shape());
  kernels::linear_backward(ctx.kernels, merged.data(), dy.data(), proj_weight_.data(),
                           dmerged.data(), proj_weight_grad_.data(), proj_bias_grad_.data(), rows,
                           dim_, dim_);
  auto [dq, dkv] = projection_grads(batch, std::move(dmerged), saved.tensors, ctx);
  // dq.weight += dq^T · x, dx = dq · q.weight; dkv.weight += dkv^T · memory, dmemory = dkv ·
  // kv.weight.
  std::vector<Tensor> grads;
  grads.push_back(ctx.need_input_grad ? Tensor::uninitialized(x.shape()) : Tensor());
  kernels::linear_backward(ctx.kernels, x.data(), dq.data(), q_weight_.data(),
                           grads[0].empty() ? nullptr : grads[0].data(), q_weight_grad_.data(),
                           q_bias_grad_.data(), rows, dim_, dim_);
  dq = Tensor();
  grads.push_back(Tensor::uninitialized(memory.shape()));
  kernels::linear_backward(ctx.kernels, memory.data(), dkv.data(), kv_weight_.data(),
                           grads[1].data(), kv_weight_grad_.data(), kv_bias_grad_.data(),
                           memory_rows, dim_, 2 * dim_);
  if (padding_) grads.emplace_back();  // token ids take no gradient
  return grads;
}

std::pair<Tensor, Tensor> CrossAttention::projection_grads(int64_t batch, Tensor dmerged,
                                                           std::span<const Tensor> saved,
                                                           const LayerContext& ctx) const {
  const Tensor &q = saved[2], &k = saved[3], &v = saved[4], &probs = saved[5];
  const HeadLayout queries{.batch = batch, .seq = seq_, .dim = dim_, .heads = heads_};
  const HeadLayout keys{.batch = batch, .seq = memory_seq_, .dim = dim_, .heads = heads_};
  Tensor dheads = Tensor::uninitialized(q.shape());
  to_heads(queries, dmerged.data(), dim_, 0, dheads.data());
  dmerged = Tensor();  // each temporary is freed as soon as it is used up

  Tensor mask = dropout_mask(batch, ctx);
  Tensor dq = Tensor::uninitialized(q.shape()), dk = Tensor::uninitialized(k.shape()),
         dv = Tensor::uninitialized(k.shape());
  kernels::attention_backward(ctx.kernels,
                              {.batch = batch,
                               .heads = heads_,
                               .q_len = seq_,
                               .kv_len = memory_seq_,
                               .head_dim = queries.head_dim()},
                              q.data(), k.data(), v.data(), probs.data(),
                              mask.empty() ? nullptr : mask.data(), dheads.data(), dq.data(),
                              dk.data(), dv.data());
  dheads = Tensor();
  mask = Tensor();
  // dq_rows: [batch, T, d]; dkv: [batch, S, 2d].
  Tensor dq_rows = Tensor::uninitialized(Shape{batch, seq_, dim_});
  from_heads(queries, dq.data(), dim_, 0, dq_rows.data());
  dq = Tensor();
  Tensor dkv = Tensor::uninitialized(Shape{batch, memory_seq_, 2 * dim_});
  from_heads(keys, dk.data(), 2 * dim_, 0, dkv.data());
  dk = Tensor();
  from_heads(keys, dv.data(), 2 * dim_, dim_, dkv.data());
  return {std::move(dq_rows), std::move(dkv)};
}

Forward CrossAttention::forward(const Tensor& x, const LayerContext& ctx) {
  (void)x, (void)ctx;
  throw Error(fmt::format("layer {} (cross_attention) reads {} values: forward_reading",
                          global_index(), num_reads()));
}

Tensor CrossAttention::backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) {
  (void)dy, (void)saved, (void)ctx;
  throw Error(fmt::format("layer {} (cross_attention) reads {} values: backward_reading",
                          global_index(), num_reads()));
}

double CrossAttention::forward_flops_per_example() const {
  const auto t = static_cast<double>(seq_), s = static_cast<double>(memory_seq_),
             d = static_cast<double>(dim_);
  // q projection 2·T·d·d, kv projection 2·S·d·2d, q·k^T and probs·v 2·T·S·d each, output
  // projection 2·T·d·d.
  return 4.0 * t * d * d + 4.0 * s * d * d + 4.0 * t * s * d;
}

LayerNeeds CrossAttention::needs() const {
  // Per example: a query activation a = T·d, a memory activation m = S·d, the probabilities
  // p = heads·T·S and their dropout mask r (p with dropout, else 0). Keeps x, the memory, q, k,
  // v, the probabilities and the merged heads.
  const double a = float_bytes(seq_ * dim_), m = float_bytes(memory_seq_ * dim_);
  const double p = float_bytes(heads_ * seq_ * memory_seq_), r = dropout_ > 0.0 ? p : 0.0;
  // Backward, beside dy and dx (the input gradient, counted whole from the start): the heads'
  // gradient, dq, dk, dv and the mask in the kernel (the merged heads' gradient freed before);
  // then dq's rows beside dk, dv and dkv [S, 2d] as they are moved into it; last dkv and dmemory
  // (the memory's gradient, which the stage takes after it). Forward, beyond its input, output
  // and what it keeps (4a + 3m + p in all once it returns): q, k, v and the kv projection's
  // output [S, 2d], or in the kernel q, k, v, the probabilities, the heads' output and the mask.
  const double kept_and_output = 4.0 * a + 3.0 * m + p;
  LayerNeeds needs{
      .kept_tensor_bytes = {a, m, a, m, m, p, a},
      .backward_temporary_bytes = std::max(a + 2.0 * m + r, 4.0 * m),
      .forward_temporary_bytes = std::max(
          {0.0, a + 4.0 * m - kept_and_output, 2.0 * a + 2.0 * m + p + r - kept_and_output}),
      .smallest_temporary_bytes = std::min({a, m, p}),
      // Both projections' data and weight gradients: twice the forward's products, less the
      // query projection's input gradient for the model's first layer.
      .backward_flops = 2.0 * forward_flops_per_example() -
                        (global_index() == 0 ? 2.0 * static_cast<double>(seq_ * dim_ * dim_) : 0.0),
  };
  // Evaluation, beyond x and the output (nothing kept, no mask): q, k, v and the kv projection's
  // output, or q, k, v, the probabilities, the heads' output and the merged heads.
  needs.evaluation_temporary_bytes = std::max(4.0 * m, 2.0 * a + 2.0 * m + p);
  return needs;
}

}  // namespace mpipe::nn
