// BatchNorm2d layer: shape checks, parameters, running statistics and the oneDNN kernels.
#include "nn/batch_norm2d.h"

#include "core/error.h"
#include "kernels/batch_norm.h"

namespace mpipe::nn {
namespace {

kernels::BatchNormShape kernel_shape(const Tensor& x, float eps) {
  return {
      .batch = x.dim(0), .channels = x.dim(1), .height = x.dim(2), .width = x.dim(3), .eps = eps};
}

}  // namespace

BatchNorm2d::BatchNorm2d(int global_index, const Shape& input_shape, double momentum, double eps)
    : InputSavingLayer(global_index),
      input_shape_(input_shape),
      channels_(0),
      momentum_(static_cast<float>(momentum)),
      eps_(static_cast<float>(eps)) {
  check_input(input_shape.rank() == 3 && input_shape.numel() > 0,
              "batch_norm2d needs an input [channels, height, width], got {}", input_shape);
  check_input(momentum >= 0.0 && momentum <= 1.0,
              "batch_norm2d: momentum must be in [0, 1], got {}", momentum);
  check_input(eps > 0.0, "batch_norm2d: eps must be > 0, got {}", eps);
  channels_ = input_shape[0];
}

std::vector<ParamSpec> BatchNorm2d::param_specs() const {
  return {{.name = "weight", .shape = {channels_}, .init = Init::kOnes},
          {.name = "bias", .shape = {channels_}, .init = Init::kZeros}};
}

std::vector<ParamSpec> BatchNorm2d::buffer_specs() const {
  return {{.name = "running_mean", .shape = {channels_}, .init = Init::kZeros},
          {.name = "running_var", .shape = {channels_}, .init = Init::kOnes}};
}

void BatchNorm2d::bind(std::vector<std::span<float>> params, std::vector<std::span<float>> grads,
                       std::vector<std::span<float>> buffers) {
  check(params.size() == 2 && grads.size() == 2 && buffers.size() == 2,
        "BatchNorm2d::bind: expected 2 params and 2 buffers");
  weight_ = params[0], bias_ = params[1];
  weight_grad_ = grads[0], bias_grad_ = grads[1];
  running_mean_ = buffers[0], running_var_ = buffers[1];
}

Forward BatchNorm2d::forward_without_input(const Tensor& x, const LayerContext& ctx) const {
  check(x.shape().rank() == 4 && x.shape().per_example() == input_shape_,
        "BatchNorm2d: input {} does not match the layer's input shape {}", x.shape(), input_shape_);
  check(!weight_.empty(), "BatchNorm2d: forward before bind");
  const kernels::BatchNormShape shape = kernel_shape(x, eps_);
  Forward result{.output = Tensor(x.shape()), .saved = {}};
  if (!ctx.training) {
    kernels::batch_norm_forward_inference(ctx.kernels, shape, x.data(), weight_.data(),
                                          bias_.data(), running_mean_.data(), running_var_.data(),
                                          result.output.data());
    return result;
  }
  check(shape.per_channel() > 1,
        "BatchNorm2d: training needs more than one value per channel, got input {}", x.shape());
  Tensor mean(Shape{channels_}), variance(Shape{channels_});
  // x, y: [batch, C, H, W]; weight, bias, mean, variance: [C]
  kernels::batch_norm_forward_training(ctx.kernels, shape, x.data(), weight_.data(), bias_.data(),
                                       result.output.data(), mean.data(), variance.data());
  // A re-materialization repeats a forward already counted: it records nothing.
  if (!ctx.recompute) {
    result.buffer_update = make_buffer_update(mean, variance, shape.per_channel());
  }
  // Moved in (an initializer list would copy every tensor), with room for x.
  result.saved.tensors.reserve(kSavedTensors);
  result.saved.tensors.push_back(std::move(mean));
  result.saved.tensors.push_back(std::move(variance));
  return result;
}

std::vector<float> BatchNorm2d::make_buffer_update(const Tensor& mean, const Tensor& variance,
                                                   int64_t count) const {
  std::vector<float> update(mean.span().begin(), mean.span().end());
  update.insert(update.end(), variance.span().begin(), variance.span().end());
  update.push_back(static_cast<float>(count) / static_cast<float>(count - 1));
  return update;
}

void BatchNorm2d::apply_buffer_update(std::span<const float> update) {
  check(update.size() == static_cast<size_t>(buffer_update_size()),
        "BatchNorm2d: a buffer update of {} floats, expected {}", update.size(),
        buffer_update_size());
  check(!running_mean_.empty(), "BatchNorm2d: buffer update before bind");
  const auto channels = static_cast<size_t>(channels_);
  const std::span<const float> mean = update.first(channels);
  const std::span<const float> variance = update.subspan(channels, channels);
  const float unbias = update.back();
  for (size_t c = 0; c < channels; ++c) {
    running_mean_[c] = (1.0f - momentum_) * running_mean_[c] + momentum_ * mean[c];
    running_var_[c] = (1.0f - momentum_) * running_var_[c] + momentum_ * variance[c] * unbias;
  }
}

Tensor BatchNorm2d::backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) {
  return backward_from(dy, saved.tensors, ctx);
}

Tensor BatchNorm2d::backward_from(const Tensor& dy, std::span<const Tensor> saved,
                                  const LayerContext& ctx) const {
  check(saved.size() == kSavedTensors,
        "BatchNorm2d::backward: nothing saved (forward not in training?)");
  const Tensor &x = saved[0], &mean = saved[1], &variance = saved[2];
  check(dy.shape() == x.shape(), "BatchNorm2d::backward: dy {} does not match x {}", dy.shape(),
        x.shape());
  Tensor dx(x.shape());
  // x, dy, dx: [batch, C, H, W]; dweight, dbias: [C] accumulated.
  kernels::batch_norm_backward(ctx.kernels, kernel_shape(x, eps_), /*batch_statistics=*/true,
                               x.data(), dy.data(), weight_.data(), mean.data(), variance.data(),
                               dx.data(), weight_grad_.data(), bias_grad_.data());
  if (!ctx.need_input_grad) return {};
  return dx;
}

Tensor BatchNorm2d::backward_input_from(const Tensor& dy, std::span<const Tensor> saved,
                                        const LayerContext& ctx, std::vector<Tensor>& kept) const {
  check(saved.size() == kSavedTensors,
        "BatchNorm2d::backward: nothing saved (forward not in training?)");
  const Tensor &x = saved[0], &mean = saved[1], &variance = saved[2];
  check(dy.shape() == x.shape(), "BatchNorm2d::backward: dy {} does not match x {}", dy.shape(),
        x.shape());
  Tensor dx(x.shape());
  Tensor dweight(Shape{channels_}), dbias(Shape{channels_});
  // x, dy, dx: [batch, C, H, W]; dweight, dbias: [C], this micro-batch's (backward adds the same).
  kernels::batch_norm_backward_parts(ctx.kernels, kernel_shape(x, eps_), /*batch_statistics=*/true,
                                     x.data(), dy.data(), weight_.data(), mean.data(),
                                     variance.data(), dx.data(), dweight.data(), dbias.data());
  kept.push_back(std::move(dweight));
  kept.push_back(std::move(dbias));
  if (!ctx.need_input_grad) return {};
  return dx;
}

void BatchNorm2d::backward_weight_from(std::span<const Tensor> kept) const {
  check(kept.size() == kWeightKeptTensors, "BatchNorm2d::backward_weight: no gradient parts kept");
  const float *dweight = kept[0].data(), *dbias = kept[1].data();
  for (int64_t c = 0; c < channels_; ++c) {
    weight_grad_[static_cast<size_t>(c)] += dweight[c];
    bias_grad_[static_cast<size_t>(c)] += dbias[c];
  }
}

Tensor BatchNorm2d::backward_input(const Tensor& dy, Saved& saved, const LayerContext& ctx) {
  std::vector<Tensor> kept;
  Tensor dx = backward_input_from(dy, saved.tensors, ctx, kept);
  saved.tensors = std::move(kept);
  return dx;
}

void BatchNorm2d::backward_weight(const Tensor& dy, const Saved& saved, const LayerContext& ctx) {
  (void)dy, (void)ctx;
  backward_weight_from(saved.tensors);
}

double BatchNorm2d::forward_flops_per_example() const {
  // Mean, variance, normalize, scale and shift: about 8 operations per element.
  return 8.0 * static_cast<double>(input_shape_.numel());
}

LayerNeeds BatchNorm2d::needs() const {
  // Keeps x and the batch's mean and variance per channel; backward sums the weight and bias
  // gradients per channel in two [C] tensors (kernels::batch_norm_backward).
  const double channel_bytes = float_bytes(channels_);
  return {.kept_tensor_bytes = {float_bytes(input_shape_.numel())},
          .kept_fixed_tensor_bytes = {channel_bytes, channel_bytes},
          .smallest_temporary_bytes = float_bytes(input_shape_.numel()),
          .backward_fixed_tensor_bytes = {channel_bytes, channel_bytes},
          .keeps_consumed_input = true,
          .backward_flops = forward_flops_per_example(),
          .splits_backward = true,
          // Split: backward_input keeps the parameter gradients of the micro-batch.
          .weight_work_fixed_tensor_bytes = {channel_bytes, channel_bytes}};
}

}  // namespace mpipe::nn
