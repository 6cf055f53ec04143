// TransformerBlock layer: LayerNorm and CausalSelfAttention sub-layers, the MLP through the
// linear and GELU kernels, residual additions and per-site dropout.
#include "nn/transformer_block.h"

#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/eltwise.h"
#include "kernels/matmul.h"
#include "nn/composite.h"

namespace mpipe::nn {
namespace {

// The input shape, checked before any sub-layer sees it.
const Shape& checked_input(const Shape& input_shape) {
  check_input(input_shape.rank() == 2 && input_shape[0] > 0 && input_shape[1] > 0,
              "transformer_block needs an input [T, d], got {}", input_shape);
  return input_shape;
}

// y += x, element-wise; both of the same shape.
void add_into(Tensor& y, const Tensor& x) {
  float* out = y.data();
  const float* in = x.data();
  const int64_t n = y.numel();
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) out[i] += in[i];
}

constexpr size_t kLn1Params = 2, kAttnParams = 4, kLn2Params = 2, kMlpParams = 4;

}  // namespace

TransformerBlock::TransformerBlock(int global_index, const Shape& input_shape, int64_t heads,
                                   int64_t mlp_ratio, double dropout)
    : Layer(global_index),
      seq_(checked_input(input_shape)[0]),
      dim_(input_shape[1]),
      hidden_(mlp_ratio * input_shape[1]),
      dropout_(dropout),
      ln1_(global_index, input_shape),
      ln2_(global_index, input_shape),
      attn_(global_index, input_shape, heads, dropout) {
  check_input(mlp_ratio > 0, "transformer_block mlp_ratio must be >= 1, got {}", mlp_ratio);
}

std::vector<ParamSpec> TransformerBlock::param_specs() const {
  std::vector<ParamSpec> specs;
  append_prefixed(specs, ln1_.param_specs(), "ln1.");
  append_prefixed(specs, attn_.param_specs(), "attn.");
  append_prefixed(specs, ln2_.param_specs(), "ln2.");
  const int64_t d = dim_, h = hidden_;
  specs.push_back({.name = "mlp.fc1.weight",
                   .shape = {h, d},
                   .init = Init::kNormal,
                   .fan_in = d,
                   .fan_out = h,
                   .std = 0.02f});
  specs.push_back({.name = "mlp.fc1.bias", .shape = {h}, .init = Init::kZeros});
  specs.push_back({.name = "mlp.fc2.weight",
                   .shape = {d, h},
                   .init = Init::kNormal,
                   .fan_in = h,
                   .fan_out = d,
                   .std = 0.02f});
  specs.push_back({.name = "mlp.fc2.bias", .shape = {d}, .init = Init::kZeros});
  return specs;
}

void TransformerBlock::bind(std::vector<std::span<float>> params,
                            std::vector<std::span<float>> grads,
                            std::vector<std::span<float>> buffers) {
  constexpr size_t total = kLn1Params + kAttnParams + kLn2Params + kMlpParams;
  check(params.size() == total && grads.size() == total && buffers.empty(),
        "TransformerBlock::bind: expected {} params", total);
  size_t at = 0;
  ln1_.bind(views(params, at, kLn1Params), views(grads, at, kLn1Params), {});
  at += kLn1Params;
  attn_.bind(views(params, at, kAttnParams), views(grads, at, kAttnParams), {});
  at += kAttnParams;
  ln2_.bind(views(params, at, kLn2Params), views(grads, at, kLn2Params), {});
  at += kLn2Params;
  fc1_weight_ = params[at], fc1_bias_ = params[at + 1];
  fc2_weight_ = params[at + 2], fc2_bias_ = params[at + 3];
  fc1_weight_grad_ = grads[at], fc1_bias_grad_ = grads[at + 1];
  fc2_weight_grad_ = grads[at + 2], fc2_bias_grad_ = grads[at + 3];
}

void TransformerBlock::apply_dropout(Tensor& branch, DropoutSite site,
                                     const LayerContext& ctx) const {
  if (!ctx.training || dropout_ == 0.0) return;
  Tensor mask = Tensor::uninitialized(branch.shape());
  fill_dropout_mask(ctx, global_index(), site, dropout_, branch.dim(0), seq_ * dim_, mask.data());
  float* out = branch.data();
  const float* m = mask.data();
  const int64_t n = branch.numel();
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) out[i] *= m[i];
}

Forward TransformerBlock::forward(const Tensor& x, const LayerContext& ctx) {
  check(x.shape().rank() == 3 && x.dim(1) == seq_ && x.dim(2) == dim_,
        "TransformerBlock: input {} is not [batch, {}, {}]", x.shape(), seq_, dim_);
  check(!fc1_weight_.empty(), "TransformerBlock: forward before bind");
  const int64_t rows = x.dim(0) * seq_;
  // x1 = x + Dropout(Attn(LN1(x))): [batch, T, d].
  Forward ln1 = ln1_.forward(x, ctx);
  Forward attn = attn_.forward_consuming(std::move(ln1.output), ctx);
  apply_dropout(attn.output, DropoutSite::kAttentionOutput, ctx);
  Tensor x1 = std::move(attn.output);
  add_into(x1, x);
  // y = x1 + Dropout(fc2(GELU(fc1(LN2(x1))))); hidden: [rows, r·d]. In training LN2 keeps x1
  // itself, and the residual sum reads it there.
  Forward ln2 = ctx.training ? ln2_.forward_consuming(std::move(x1), ctx) : ln2_.forward(x1, ctx);
  Tensor hidden = Tensor::uninitialized(Shape{x.dim(0), seq_, hidden_});
  Tensor activated = Tensor::uninitialized(hidden.shape());
  kernels::linear_forward(ctx.kernels, ln2.output.data(), fc1_weight_.data(), fc1_bias_.data(),
                          hidden.data(), rows, dim_, hidden_);
  kernels::eltwise_forward(ctx.kernels, kernels::EltwiseKind::kGelu, hidden.data(),
                           activated.data(), hidden.numel());
  Tensor y = Tensor::uninitialized(x.shape());
  kernels::linear_forward(ctx.kernels, activated.data(), fc2_weight_.data(), fc2_bias_.data(),
                          y.data(), rows, hidden_, dim_);
  apply_dropout(y, DropoutSite::kMlpOutput, ctx);
  add_into(y, ctx.training ? ln2.saved.tensors[0] : x1);

  Forward result{.output = std::move(y), .saved = {}};
  if (ctx.training) {
    auto& saved = result.saved.tensors;
    saved.reserve(kSavedTensors);
    for (auto* part : {&ln1.saved, &attn.saved, &ln2.saved}) {
      for (Tensor& t : part->tensors) saved.push_back(std::move(t));
    }
    saved.push_back(std::move(ln2.output));
    saved.push_back(std::move(hidden));
    saved.push_back(std::move(activated));
  }
  return result;
}

Tensor TransformerBlock::backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) {
  check(saved.tensors.size() == kSavedTensors, "TransformerBlock::backward: nothing saved");
  check(dy.shape().rank() == 3 && dy.dim(1) == seq_ && dy.dim(2) == dim_,
        "TransformerBlock::backward: dy {} is not [batch, {}, {}]", dy.shape(), seq_, dim_);
  const std::span<const Tensor> all(saved.tensors);
  const auto ln1_saved = all.subspan(0, LayerNorm::kSavedTensors);
  const auto attn_saved = all.subspan(LayerNorm::kSavedTensors, CausalSelfAttention::kSavedTensors);
  const auto ln2_saved = all.subspan(LayerNorm::kSavedTensors + CausalSelfAttention::kSavedTensors,
                                     LayerNorm::kSavedTensors);
  const Tensor &normed2 = all[kSavedTensors - 3], &hidden = all[kSavedTensors - 2];
  const Tensor& activated = all[kSavedTensors - 1];
  const int64_t rows = dy.dim(0) * seq_;
  LayerContext inner = ctx;
  inner.need_input_grad = true;

  // MLP branch: dbranch = dy masked; back through fc2, GELU, fc1 and LN2. Each gradient is freed
  // once used up.
  Tensor dbranch = dy;
  apply_dropout(dbranch, DropoutSite::kMlpOutput, ctx);
  Tensor dhidden = Tensor::uninitialized(hidden.shape());
  kernels::linear_backward(ctx.kernels, activated.data(), dbranch.data(), fc2_weight_.data(),
                           dhidden.data(), fc2_weight_grad_.data(), fc2_bias_grad_.data(), rows,
                           hidden_, dim_);
  dbranch = Tensor();
  kernels::eltwise_backward(ctx.kernels, kernels::EltwiseKind::kGelu, hidden.data(), dhidden.data(),
                            dhidden.data(), dhidden.numel());
  Tensor dnormed2 = Tensor::uninitialized(dy.shape());
  kernels::linear_backward(ctx.kernels, normed2.data(), dhidden.data(), fc1_weight_.data(),
                           dnormed2.data(), fc1_weight_grad_.data(), fc1_bias_grad_.data(), rows,
                           dim_, hidden_);
  dhidden = Tensor();
  Tensor dx1 = ln2_.backward_from(dnormed2, ln2_saved, inner);
  dnormed2 = Tensor();
  add_into(dx1, dy);

  // Attention branch: back through the dropout, attention and LN1.
  dbranch = dx1;
  apply_dropout(dbranch, DropoutSite::kAttentionOutput, ctx);
  const Tensor dnormed1 = attn_.backward_from(dbranch, attn_saved, inner);
  dbranch = Tensor();
  Tensor dx = ln1_.backward_from(dnormed1, ln1_saved, ctx);
  if (!ctx.need_input_grad) return {};
  add_into(dx, dx1);
  return dx;
}

double TransformerBlock::forward_flops_per_example() const {
  const auto t = static_cast<double>(seq_), d = static_cast<double>(dim_);
  const auto h = static_cast<double>(hidden_);
  return attn_.forward_flops_per_example() + 2.0 * (2.0 * t * d * h);
}

}  // namespace mpipe::nn
