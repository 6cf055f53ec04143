// RmsNorm layer: shape checks, its parameter and the RMS-norm kernels.
#include "nn/rms_norm.h"

#include "core/error.h"
#include "kernels/rms_norm.h"

namespace mpipe::nn {

RmsNorm::RmsNorm(int global_index, const Shape& input_shape, double eps)
    : RowNorm(global_index), input_shape_(input_shape), dim_(0), eps_(static_cast<float>(eps)) {
  check_input(input_shape.rank() >= 1 && input_shape[input_shape.rank() - 1] > 0,
              "rms_norm needs a non-empty last input axis, got {}", input_shape);
  check_input(eps > 0.0, "rms_norm eps must be > 0, got {}", eps);
  dim_ = input_shape[input_shape.rank() - 1];
}

std::vector<ParamSpec> RmsNorm::param_specs() const {
  return {{.name = "weight", .shape = {dim_}, .init = Init::kOnes}};
}

void RmsNorm::bind(std::vector<std::span<float>> params, std::vector<std::span<float>> grads,
                   std::vector<std::span<float>> buffers) {
  check(params.size() == 1 && grads.size() == 1 && buffers.empty(),
        "RmsNorm::bind: expected 1 param");
  weight_ = params[0];
  weight_grad_ = grads[0];
}

Forward RmsNorm::forward_without_input(const Tensor& x, const LayerContext& ctx) const {
  check(x.shape().rank() >= 1 && x.shape().per_example() == input_shape_,
        "RmsNorm: input {} does not match the layer's input shape {}", x.shape(), input_shape_);
  check(!weight_.empty(), "RmsNorm: forward before bind");
  const int64_t rows = x.numel() / dim_;
  Tensor y = Tensor::uninitialized(x.shape()), rstd = Tensor::uninitialized(Shape{rows});
  // x, y: [rows, dim]; rstd: [rows]
  kernels::rms_norm_forward(x.data(), weight_.data(), y.data(), rstd.data(), rows, dim_, eps_);
  Forward result{.output = std::move(y), .saved = {}};
  if (ctx.training) {
    result.saved.tensors.reserve(kSavedTensors);  // with room for x
    result.saved.tensors.push_back(std::move(rstd));
  }
  return result;
}

Tensor RmsNorm::backward_from(const Tensor& dy, std::span<const Tensor> saved,
                              const LayerContext& ctx) const {
  check(saved.size() == kSavedTensors, "RmsNorm::backward: nothing saved (not training?)");
  const Tensor &x = saved[0], &rstd = saved[1];
  check(dy.shape() == x.shape(), "RmsNorm::backward: dy {} does not match x {}", dy.shape(),
        x.shape());
  Tensor dx = Tensor::uninitialized(x.shape());
  // x, dy, dx: [rows, dim]; dweight: [dim] accumulated.
  kernels::rms_norm_backward(x.data(), dy.data(), weight_.data(), rstd.data(), dx.data(),
                             weight_grad_.data(), rstd.numel(), dim_);
  if (!ctx.need_input_grad) return {};
  return dx;
}

Tensor RmsNorm::backward_input(const Tensor& dy, Saved& saved, const LayerContext& ctx) {
  check(saved.tensors.size() == kSavedTensors, "RmsNorm::backward: nothing saved (not training?)");
  const Tensor &x = saved.tensors[0], &rstd = saved.tensors[1];
  check(dy.shape() == x.shape(), "RmsNorm::backward: dy {} does not match x {}", dy.shape(),
        x.shape());
  if (!ctx.need_input_grad) return {};
  Tensor dx = Tensor::uninitialized(x.shape());
  // x, dy, dx: [rows, dim]
  kernels::rms_norm_backward_data(x.data(), dy.data(), weight_.data(), rstd.data(), dx.data(),
                                  rstd.numel(), dim_);
  return dx;
}

void RmsNorm::backward_weight_from(const Tensor& dy, std::span<const Tensor> kept,
                                   const LayerContext& ctx) const {
  (void)ctx;
  check(kept.size() == kSavedTensors, "RmsNorm::backward: nothing saved (not training?)");
  const Tensor &x = kept[0], &rstd = kept[1];
  check(dy.shape() == x.shape(), "RmsNorm::backward: dy {} does not match x {}", dy.shape(),
        x.shape());
  // dweight: [dim] accumulated.
  kernels::rms_norm_backward_weights(x.data(), dy.data(), rstd.data(), weight_grad_.data(),
                                     rstd.numel(), dim_);
}

double RmsNorm::forward_flops_per_example() const {
  // Square and sum, scale twice: about 4 operations per element.
  return 4.0 * static_cast<double>(input_shape_.numel());
}

LayerNeeds RmsNorm::needs() const {
  // Keeps x and the reciprocal RMS of each row.
  return {.kept_tensor_bytes = {float_bytes(input_shape_.numel()),
                                float_bytes(input_shape_.numel() / dim_)},
          .smallest_temporary_bytes = float_bytes(input_shape_.numel()),
          .keeps_consumed_input = true,
          .backward_flops = forward_flops_per_example(),
          .splits_backward = true,
          // dweight: a multiply-add of dy, x and the reciprocal RMS per element.
          .weight_grad_flops = 3.0 * static_cast<double>(input_shape_.numel()),
          .weight_work_tensor_bytes = {float_bytes(input_shape_.numel()),
                                       float_bytes(input_shape_.numel() / dim_)},
          // Evaluation: the reciprocal RMS, which training keeps.
          .evaluation_temporary_bytes = float_bytes(input_shape_.numel() / dim_)};
}

}  // namespace mpipe::nn
