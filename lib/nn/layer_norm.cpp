// LayerNorm layer: shape checks, parameters and the oneDNN layer-norm kernels.
#include "nn/layer_norm.h"

#include "core/error.h"
#include "kernels/layer_norm.h"

namespace mpipe::nn {

LayerNorm::LayerNorm(int global_index, const Shape& input_shape, double eps)
    : RowNorm(global_index), input_shape_(input_shape), dim_(0), eps_(static_cast<float>(eps)) {
  check_input(input_shape.rank() >= 1 && input_shape[input_shape.rank() - 1] > 0,
              "layer_norm needs a non-empty last input axis, got {}", input_shape);
  check_input(eps > 0.0, "layer_norm eps must be > 0, got {}", eps);
  dim_ = input_shape[input_shape.rank() - 1];
}

std::vector<ParamSpec> LayerNorm::param_specs() const {
  return {{.name = "weight", .shape = {dim_}, .init = Init::kOnes},
          {.name = "bias", .shape = {dim_}, .init = Init::kZeros}};
}

void LayerNorm::bind(std::vector<std::span<float>> params, std::vector<std::span<float>> grads,
                     std::vector<std::span<float>> buffers) {
  check(params.size() == 2 && grads.size() == 2 && buffers.empty(),
        "LayerNorm::bind: expected 2 params");
  weight_ = params[0], bias_ = params[1];
  weight_grad_ = grads[0], bias_grad_ = grads[1];
}

Forward LayerNorm::forward_without_input(const Tensor& x, const LayerContext& ctx) const {
  check(x.shape().rank() >= 1 && x.shape().per_example() == input_shape_,
        "LayerNorm: input {} does not match the layer's input shape {}", x.shape(), input_shape_);
  check(!weight_.empty(), "LayerNorm: forward before bind");
  const int64_t rows = x.numel() / dim_;
  Tensor y = Tensor::uninitialized(x.shape()), mean = Tensor::uninitialized(Shape{rows}),
         variance = Tensor::uninitialized(Shape{rows});
  // x, y: [rows, dim]; mean, variance: [rows]
  kernels::layer_norm_forward(ctx.kernels, x.data(), weight_.data(), bias_.data(), y.data(),
                              mean.data(), variance.data(), rows, dim_, eps_);
  Forward result{.output = std::move(y), .saved = {}};
  if (ctx.training) {
    // Moved in (an initializer list would copy every tensor), with room for x.
    result.saved.tensors.reserve(kSavedTensors);
    result.saved.tensors.push_back(std::move(mean));
    result.saved.tensors.push_back(std::move(variance));
  }
  return result;
}

Tensor LayerNorm::backward_from(const Tensor& dy, std::span<const Tensor> saved,
                                const LayerContext& ctx) const {
  check(saved.size() == kSavedTensors, "LayerNorm::backward: nothing saved (not training?)");
  const Tensor &x = saved[0], &mean = saved[1], &variance = saved[2];
  check(dy.shape() == x.shape(), "LayerNorm::backward: dy {} does not match x {}", dy.shape(),
        x.shape());
  Tensor dx = Tensor::uninitialized(x.shape());
  // x, dy, dx: [rows, dim]; dweight, dbias: [dim] accumulated.
  kernels::layer_norm_backward(ctx.kernels, x.data(), dy.data(), weight_.data(), mean.data(),
                               variance.data(), dx.data(), weight_grad_.data(), bias_grad_.data(),
                               mean.numel(), dim_, eps_);
  if (!ctx.need_input_grad) return {};
  return dx;
}

Tensor LayerNorm::backward_input(const Tensor& dy, Saved& saved, const LayerContext& ctx) {
  check(saved.tensors.size() == kSavedTensors,
        "LayerNorm::backward: nothing saved (not training?)");
  const Tensor &x = saved.tensors[0], &mean = saved.tensors[1], &variance = saved.tensors[2];
  check(dy.shape() == x.shape(), "LayerNorm::backward: dy {} does not match x {}", dy.shape(),
        x.shape());
  Tensor dx = Tensor::uninitialized(x.shape());
  Tensor dweight = Tensor::uninitialized(Shape{dim_}), dbias = Tensor::uninitialized(Shape{dim_});
  // x, dy, dx: [rows, dim]; dweight, dbias: [dim], this micro-batch's (backward adds the same).
  kernels::layer_norm_backward_parts(ctx.kernels, x.data(), dy.data(), weight_.data(), mean.data(),
                                     variance.data(), dx.data(), dweight.data(), dbias.data(),
                                     mean.numel(), dim_, eps_);
  saved.tensors.clear();
  saved.tensors.push_back(std::move(dweight));
  saved.tensors.push_back(std::move(dbias));
  if (!ctx.need_input_grad) return {};
  return dx;
}

void LayerNorm::backward_weight_from(const Tensor& dy, std::span<const Tensor> kept,
                                     const LayerContext& ctx) const {
  (void)dy, (void)ctx;
  check(kept.size() == weight_kept_tensors(), "LayerNorm::backward_weight: no gradient parts kept");
  const float *dweight = kept[0].data(), *dbias = kept[1].data();
  for (int64_t j = 0; j < dim_; ++j) {
    weight_grad_[static_cast<size_t>(j)] += dweight[j];
    bias_grad_[static_cast<size_t>(j)] += dbias[j];
  }
}

double LayerNorm::forward_flops_per_example() const {
  // Mean, variance, normalize, scale and shift: about 8 operations per element.
  return 8.0 * static_cast<double>(input_shape_.numel());
}

LayerNeeds LayerNorm::needs() const {
  // Keeps x and the mean and variance of each row.
  const int64_t rows = input_shape_.numel() / dim_;
  return {.kept_tensor_bytes = {float_bytes(input_shape_.numel()), float_bytes(rows),
                                float_bytes(rows)},
          .smallest_temporary_bytes = float_bytes(input_shape_.numel()),
          .keeps_consumed_input = true,
          .backward_flops = forward_flops_per_example(),
          .splits_backward = true,
          // backward_input computes the parameter gradients with dx (one oneDNN call) and keeps
          // them; backward_weight adds them.
          .weight_work_fixed_tensor_bytes = {float_bytes(dim_), float_bytes(dim_)},
          // (which backward_input allocates: backward adds into the gradients directly)
          .backward_input_fixed_tensor_bytes = std::vector{float_bytes(dim_), float_bytes(dim_)},
          // Evaluation: the mean and variance, which training keeps.
          .evaluation_temporary_bytes = 2.0 * float_bytes(rows)};
}

}  // namespace mpipe::nn
