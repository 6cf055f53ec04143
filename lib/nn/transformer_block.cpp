// TransformerBlock layer: row-norm and SelfAttention sub-layers, the MLP through the
// linear and GELU or SwiGLU kernels, residual additions and per-site dropout.
#include "nn/transformer_block.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/eltwise.h"
#include "kernels/matmul.h"
#include "kernels/swiglu.h"
#include "nn/composite.h"
#include "nn/elementwise.h"

namespace mpipe::nn {
namespace {

// The input shape, checked before any sub-layer sees it.
const Shape& checked_input(const Shape& input_shape) {
  check_input(input_shape.rank() == 2 && input_shape[0] > 0 && input_shape[1] > 0,
              "transformer_block needs an input [T, d], got {}", input_shape);
  return input_shape;
}

constexpr size_t kMlpParams = 4;

}  // namespace

TransformerBlock::TransformerBlock(int global_index, const Shape& input_shape, int64_t heads,
                                   int64_t mlp_ratio, double dropout,
                                   TransformerBlockVariant variant)
    : Layer(global_index),
      seq_(checked_input(input_shape)[0]),
      dim_(input_shape[1]),
      hidden_(mlp_ratio * input_shape[1]),
      dropout_(dropout),
      variant_(variant),
      ln1_(make_row_norm(variant.norm, global_index, input_shape)),
      ln2_(make_row_norm(variant.norm, global_index, input_shape)),
      attn_(global_index, input_shape, heads, dropout, variant.rotary, variant.residual_std,
            /*causal=*/true, /*padding=*/std::nullopt, variant.kv_heads) {
  check_input(mlp_ratio > 0, "transformer_block mlp_ratio must be >= 1, got {}", mlp_ratio);
}

int64_t TransformerBlock::fc1_width() const {
  return variant_.mlp == MlpKind::kSwiglu ? 2 * hidden_ : hidden_;
}

size_t TransformerBlock::num_saved() const {
  return ln1_->saved_tensors() + SelfAttention::kSavedTensors + ln2_->saved_tensors() +
         kMlpSavedTensors;
}

size_t TransformerBlock::num_weight_kept() const {
  // The sub-layers' kept tensors; the output gradients of LN1 (RMS norm only), attention and LN2
  // (RMS norm only); LN2's output, fc1's output gradient, the activation's output; the MLP's
  // masked output gradient (with dropout).
  return ln1_->weight_kept_tensors() + SelfAttention::kWeightKeptTensors +
         ln2_->weight_kept_tensors() + (ln1_->weight_reads_output_grad() ? 1 : 0) + 1 +
         (ln2_->weight_reads_output_grad() ? 1 : 0) + 3 + (dropout_ > 0.0 ? 1 : 0);
}

std::vector<ParamSpec> TransformerBlock::param_specs() const {
  std::vector<ParamSpec> specs;
  append_prefixed(specs, ln1_->param_specs(), "ln1.");
  append_prefixed(specs, attn_.param_specs(), "attn.");
  append_prefixed(specs, ln2_->param_specs(), "ln2.");
  const int64_t d = dim_, h = hidden_, w = fc1_width();
  specs.push_back({.name = "mlp.fc1.weight",
                   .shape = {w, d},
                   .init = Init::kNormal,
                   .fan_in = d,
                   .fan_out = w,
                   .std = 0.02f});
  specs.push_back({.name = "mlp.fc1.bias", .shape = {w}, .init = Init::kZeros});
  specs.push_back({.name = "mlp.fc2.weight",
                   .shape = {d, h},
                   .init = Init::kNormal,
                   .fan_in = h,
                   .fan_out = d,
                   .std = variant_.residual_std});
  specs.push_back({.name = "mlp.fc2.bias", .shape = {d}, .init = Init::kZeros});
  return specs;
}

void TransformerBlock::bind(std::vector<std::span<float>> params,
                            std::vector<std::span<float>> grads,
                            std::vector<std::span<float>> buffers) {
  const size_t ln1_params = ln1_->param_specs().size(), ln2_params = ln2_->param_specs().size();
  const size_t attn_params = attn_.param_specs().size();
  const size_t total = ln1_params + attn_params + ln2_params + kMlpParams;
  check(params.size() == total && grads.size() == total && buffers.empty(),
        "TransformerBlock::bind: expected {} params", total);
  size_t at = 0;
  ln1_->bind(views(params, at, ln1_params), views(grads, at, ln1_params), {});
  at += ln1_params;
  attn_.bind(views(params, at, attn_params), views(grads, at, attn_params), {});
  at += attn_params;
  ln2_->bind(views(params, at, ln2_params), views(grads, at, ln2_params), {});
  at += ln2_params;
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

Tensor TransformerBlock::activate(const Tensor& hidden, const LayerContext& ctx) const {
  Tensor activated = Tensor::uninitialized(Shape{hidden.dim(0), seq_, hidden_});
  if (variant_.mlp == MlpKind::kSwiglu) {
    kernels::swiglu_forward(hidden.data(), activated.data(), hidden.dim(0) * seq_, hidden_);
  } else {
    kernels::eltwise_forward(ctx.kernels, kernels::EltwiseKind::kGelu, hidden.data(),
                             activated.data(), hidden.numel());
  }
  return activated;
}

Tensor TransformerBlock::activation_backward(const Tensor& hidden, Tensor dactivated,
                                             const LayerContext& ctx) const {
  if (variant_.mlp == MlpKind::kSwiglu) {
    Tensor dhidden = Tensor::uninitialized(hidden.shape());
    kernels::swiglu_backward(hidden.data(), dactivated.data(), dhidden.data(), hidden.dim(0) * seq_,
                             hidden_);
    return dhidden;  // dactivated freed here
  }
  kernels::eltwise_backward(ctx.kernels, kernels::EltwiseKind::kGelu, hidden.data(),
                            dactivated.data(), dactivated.data(), dactivated.numel());
  return dactivated;  // in place
}

Forward TransformerBlock::forward(const Tensor& x, const LayerContext& ctx) {
  check(x.shape().rank() == 3 && x.dim(1) == seq_ && x.dim(2) == dim_,
        "TransformerBlock: input {} is not [batch, {}, {}]", x.shape(), seq_, dim_);
  check(!fc1_weight_.empty(), "TransformerBlock: forward before bind");
  const int64_t rows = x.dim(0) * seq_;
  // x1 = x + Dropout(Attn(LN1(x))): [batch, T, d].
  Forward ln1 = ln1_->forward(x, ctx);
  Forward attn = attn_.forward_consuming(std::move(ln1.output), ctx);
  apply_dropout(attn.output, DropoutSite::kAttentionOutput, ctx);
  Tensor x1 = std::move(attn.output);
  add_into(x1, x);
  // y = x1 + Dropout(fc2(act(fc1(LN2(x1))))); hidden: [rows, h or 2h], activated: [rows, h].
  // In training LN2 keeps x1 itself, and the residual sum reads it there.
  Forward ln2 = ctx.training ? ln2_->forward_consuming(std::move(x1), ctx) : ln2_->forward(x1, ctx);
  Tensor hidden = Tensor::uninitialized(Shape{x.dim(0), seq_, fc1_width()});
  kernels::linear_forward(ctx.kernels, ln2.output.data(), fc1_weight_.data(), fc1_bias_.data(),
                          hidden.data(), rows, dim_, fc1_width());
  Tensor activated = activate(hidden, ctx);
  Tensor y = Tensor::uninitialized(x.shape());
  kernels::linear_forward(ctx.kernels, activated.data(), fc2_weight_.data(), fc2_bias_.data(),
                          y.data(), rows, hidden_, dim_);
  apply_dropout(y, DropoutSite::kMlpOutput, ctx);
  add_into(y, ctx.training ? ln2.saved.tensors[0] : x1);

  Forward result{.output = std::move(y), .saved = {}};
  if (ctx.training) {
    auto& saved = result.saved.tensors;
    saved.reserve(num_saved());
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
  check(saved.tensors.size() == num_saved(), "TransformerBlock::backward: nothing saved");
  check(dy.shape().rank() == 3 && dy.dim(1) == seq_ && dy.dim(2) == dim_,
        "TransformerBlock::backward: dy {} is not [batch, {}, {}]", dy.shape(), seq_, dim_);
  const std::span<const Tensor> all(saved.tensors);
  const size_t ln1_count = ln1_->saved_tensors(), attn_count = SelfAttention::kSavedTensors;
  const auto ln1_saved = all.subspan(0, ln1_count);
  const auto attn_saved = all.subspan(ln1_count, attn_count);
  const auto ln2_saved = all.subspan(ln1_count + attn_count, ln2_->saved_tensors());
  const size_t n = all.size();
  const Tensor &normed2 = all[n - 3], &hidden = all[n - 2], &activated = all[n - 1];
  const int64_t rows = dy.dim(0) * seq_;
  LayerContext inner = ctx;
  inner.need_input_grad = true;

  // MLP branch: dbranch = dy masked; back through fc2, the activation, fc1 and LN2. Each
  // gradient is freed once used up.
  Tensor dbranch = dy;
  apply_dropout(dbranch, DropoutSite::kMlpOutput, ctx);
  Tensor dactivated = Tensor::uninitialized(activated.shape());
  kernels::linear_backward(ctx.kernels, activated.data(), dbranch.data(), fc2_weight_.data(),
                           dactivated.data(), fc2_weight_grad_.data(), fc2_bias_grad_.data(), rows,
                           hidden_, dim_);
  dbranch = Tensor();
  Tensor dhidden = activation_backward(hidden, std::move(dactivated), ctx);
  Tensor dnormed2 = Tensor::uninitialized(dy.shape());
  kernels::linear_backward(ctx.kernels, normed2.data(), dhidden.data(), fc1_weight_.data(),
                           dnormed2.data(), fc1_weight_grad_.data(), fc1_bias_grad_.data(), rows,
                           dim_, fc1_width());
  dhidden = Tensor();
  Tensor dx1 = ln2_->backward_from(dnormed2, ln2_saved, inner);
  dnormed2 = Tensor();
  add_into(dx1, dy);

  // Attention branch: back through the dropout, attention and LN1.
  dbranch = dx1;
  apply_dropout(dbranch, DropoutSite::kAttentionOutput, ctx);
  const Tensor dnormed1 = attn_.backward_from(dbranch, attn_saved, inner);
  dbranch = Tensor();
  Tensor dx = ln1_->backward_from(dnormed1, ln1_saved, ctx);
  if (!ctx.need_input_grad) return {};
  add_into(dx, dx1);
  return dx;
}

Tensor TransformerBlock::backward_input(const Tensor& dy, Saved& saved, const LayerContext& ctx) {
  check(saved.tensors.size() == num_saved(), "TransformerBlock::backward: nothing saved");
  check(dy.shape().rank() == 3 && dy.dim(1) == seq_ && dy.dim(2) == dim_,
        "TransformerBlock::backward: dy {} is not [batch, {}, {}]", dy.shape(), seq_, dim_);
  // The sub-layers' saved tensors, each moved into a Saved of its own for its backward_input.
  std::vector<Tensor>& all = saved.tensors;
  auto take = [&all](size_t from, size_t count) {
    Saved part;
    for (size_t i = from; i < from + count; ++i) part.tensors.push_back(std::move(all[i]));
    return part;
  };
  const size_t ln1_count = ln1_->saved_tensors(), attn_count = SelfAttention::kSavedTensors;
  Saved ln1_saved = take(0, ln1_count);
  Saved attn_saved = take(ln1_count, attn_count);
  Saved ln2_saved = take(ln1_count + attn_count, ln2_->saved_tensors());
  const size_t n = all.size();
  Tensor normed2 = std::move(all[n - 3]), hidden = std::move(all[n - 2]);
  Tensor activated = std::move(all[n - 1]);
  all.clear();
  const int64_t rows = dy.dim(0) * seq_;
  LayerContext inner = ctx;
  inner.need_input_grad = true;

  // MLP branch, as in backward without the parameter gradients: dactivated = dmlp · fc2,
  // dnormed2 = dhidden · fc1.
  Tensor dmlp = dy;
  apply_dropout(dmlp, DropoutSite::kMlpOutput, ctx);
  Tensor dactivated = Tensor::uninitialized(activated.shape());
  kernels::linear_backward_data(ctx.kernels, dmlp.data(), fc2_weight_.data(), dactivated.data(),
                                rows, hidden_, dim_);
  if (dropout_ == 0.0) dmlp = Tensor();  // W reads dy itself
  Tensor dhidden = activation_backward(hidden, std::move(dactivated), ctx);
  hidden = Tensor();
  Tensor dnormed2 = Tensor::uninitialized(dy.shape());
  kernels::linear_backward_data(ctx.kernels, dhidden.data(), fc1_weight_.data(), dnormed2.data(),
                                rows, dim_, fc1_width());
  Tensor dx1 = ln2_->backward_input(dnormed2, ln2_saved, inner);
  if (!ln2_->weight_reads_output_grad()) dnormed2 = Tensor();
  add_into(dx1, dy);

  // Attention branch: back through the dropout, attention and LN1.
  Tensor dattn = dx1;
  apply_dropout(dattn, DropoutSite::kAttentionOutput, ctx);
  Tensor dnormed1 = attn_.backward_input(dattn, attn_saved, inner);
  Tensor dx = ln1_->backward_input(dnormed1, ln1_saved, ctx);
  if (!ln1_->weight_reads_output_grad()) dnormed1 = Tensor();

  // What backward_weight reads, in the order num_weight_kept() counts it.
  all.reserve(num_weight_kept());
  for (Saved* part : {&ln1_saved, &attn_saved, &ln2_saved}) {
    for (Tensor& t : part->tensors) all.push_back(std::move(t));
  }
  if (ln1_->weight_reads_output_grad()) all.push_back(std::move(dnormed1));
  all.push_back(std::move(dattn));
  if (ln2_->weight_reads_output_grad()) all.push_back(std::move(dnormed2));
  all.push_back(std::move(normed2));
  all.push_back(std::move(dhidden));
  all.push_back(std::move(activated));
  if (dropout_ > 0.0) all.push_back(std::move(dmlp));
  if (!ctx.need_input_grad) return {};
  add_into(dx, dx1);
  return dx;
}

void TransformerBlock::backward_weight(const Tensor& dy, const Saved& saved,
                                       const LayerContext& ctx) {
  check(saved.tensors.size() == num_weight_kept(),
        "TransformerBlock::backward_weight: nothing kept");
  const std::span<const Tensor> all(saved.tensors);
  size_t at = 0;
  auto next = [&all, &at](size_t count) {
    const auto part = all.subspan(at, count);
    at += count;
    return part;
  };
  const auto ln1_kept = next(ln1_->weight_kept_tensors());
  const auto attn_kept = next(SelfAttention::kWeightKeptTensors);
  const auto ln2_kept = next(ln2_->weight_kept_tensors());
  const Tensor none;
  const Tensor& dnormed1 = ln1_->weight_reads_output_grad() ? all[at++] : none;
  const Tensor& dattn = all[at++];
  const Tensor& dnormed2 = ln2_->weight_reads_output_grad() ? all[at++] : none;
  const Tensor &normed2 = all[at], &dhidden = all[at + 1], &activated = all[at + 2];
  const Tensor& dmlp = dropout_ > 0.0 ? all[at + 3] : dy;
  const int64_t rows = dy.dim(0) * seq_;
  // What backward adds, sub-layer by sub-layer: fc2 and fc1 (dW += dy^T · x, db += column sums
  // of dy), LN2, attention, LN1.
  kernels::linear_backward_weights(ctx.kernels, activated.data(), dmlp.data(),
                                   fc2_weight_grad_.data(), fc2_bias_grad_.data(), rows, hidden_,
                                   dim_);
  kernels::linear_backward_weights(ctx.kernels, normed2.data(), dhidden.data(),
                                   fc1_weight_grad_.data(), fc1_bias_grad_.data(), rows, dim_,
                                   fc1_width());
  ln2_->backward_weight_from(dnormed2, ln2_kept, ctx);
  attn_.backward_weight_from(dattn, attn_kept, ctx);
  ln1_->backward_weight_from(dnormed1, ln1_kept, ctx);
}

double TransformerBlock::forward_flops_per_example() const {
  const auto t = static_cast<double>(seq_), d = static_cast<double>(dim_);
  const auto h = static_cast<double>(hidden_), w = static_cast<double>(fc1_width());
  // fc1 2·T·d·w and fc2 2·T·h·d.
  return attn_.forward_flops_per_example() + 2.0 * t * d * w + 2.0 * t * h * d;
}

LayerNeeds TransformerBlock::needs() const {
  // Keeps LN1's, attention's and LN2's tensors, then the LN2 output (a = T·d), fc1's output
  // (h = T·hidden, 2h with SwiGLU) and the activation's (h).
  const double a = float_bytes(seq_ * dim_), h = float_bytes(seq_ * hidden_);
  const double fc1_out = float_bytes(seq_ * fc1_width());
  LayerNeeds needs;
  needs.keep_all_of(ln1_->needs());
  const LayerNeeds attention = attn_.needs();
  needs.keep_all_of(attention);
  needs.keep_all_of(ln2_->needs());
  needs.kept_tensor_bytes.insert(needs.kept_tensor_bytes.end(), {a, fc1_out, h});
  // Backward beside dy: the MLP's masked dy and dactivated in fc2's backward (GELU's backward
  // then runs in place; SwiGLU's holds dactivated beside fc1's output gradient, 3h beside dy,
  // where the input gradient's a counts as one of them), or the residual stream's gradient dx1
  // beside attention's backward (its dy a masked copy of dx1). Forward: the MLP output's
  // dropout mask beside everything else.
  const double mlp = variant_.mlp == MlpKind::kSwiglu ? std::max(h, h + fc1_out - a) : h;
  needs.backward_temporary_bytes = std::max(mlp, 2.0 * a + attention.backward_temporary_bytes);
  // I: the same, but with dropout the MLP's masked output gradient stays (W reads it) beside the
  // MLP's backward.
  needs.backward_input_temporary_bytes =
      std::max(mlp + (dropout_ > 0.0 ? a : 0.0), 2.0 * a + attention.backward_temporary_bytes);
  needs.forward_temporary_bytes = dropout_ > 0.0 ? a : 0.0;
  // Evaluation, beyond x and y (nothing kept, no masks): LN1's output beside LN1's or attention's
  // temporaries, then x1 and LN2's output beside fc1's output and the activation's.
  const auto evaluating = [](const LayerNeeds& part) {
    return part.evaluation_temporary_bytes.value_or(part.forward_temporary_bytes);
  };
  needs.evaluation_temporary_bytes =
      std::max({a + evaluating(ln1_->needs()), a + evaluating(attention), 2.0 * a + fc1_out + h});
  needs.smallest_temporary_bytes = a;
  needs.backward_flops = matrix_product_backward_flops(forward_flops_per_example(), global_index());
  // Split (num_weight_kept's order): the sub-layers' own, the output gradients of LN1 (RMS norm),
  // attention and LN2 (RMS norm), LN2's output, fc1's output gradient, the activation's output
  // and, with dropout, the MLP's masked output gradient. W runs fc1's and fc2's weight products
  // (2·T·d·w and 2·T·h·d) besides the sub-layers'.
  needs.splits_backward = true;
  needs.keep_weight_work_of(ln1_->needs());
  needs.keep_weight_work_of(attention);
  needs.keep_weight_work_of(ln2_->needs());
  auto& work = needs.weight_work_tensor_bytes;
  if (ln1_->weight_reads_output_grad()) work.push_back(a);
  work.push_back(a);
  if (ln2_->weight_reads_output_grad()) work.push_back(a);
  work.insert(work.end(), {a, fc1_out, h});
  if (dropout_ > 0.0) work.push_back(a);
  const auto t = static_cast<double>(seq_), d = static_cast<double>(dim_);
  needs.weight_grad_flops +=
      2.0 * t * d * static_cast<double>(fc1_width()) + 2.0 * t * static_cast<double>(hidden_) * d;
  return needs;
}

}  // namespace mpipe::nn
