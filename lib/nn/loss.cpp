// Losses: fused softmax cross-entropy over the last axis and the sum of squared errors (mse).
#include "nn/loss.h"

#include <fmt/format.h>

#include "core/error.h"

namespace mpipe::nn {
namespace {

class CrossEntropyLoss : public Loss {
 public:
  explicit CrossEntropyLoss(const kernels::CrossEntropyOptions& options) : options_(options) {}
  std::string_view kind() const override { return "cross_entropy"; }
  bool classifies() const override { return true; }

  // output: [batch, ..., classes]; targets: [batch, ...] class indices.
  LossOutput compute(kernels::KernelContext& kernels, const Tensor& output, const Tensor& targets,
                     float grad_scale, bool want_grad) const override {
    const Shape& shape = output.shape();
    check_input(shape.rank() >= 2, "cross_entropy needs an output of [batch, ..., classes], got {}",
                shape);
    const int64_t classes = shape[shape.rank() - 1];
    const std::vector<int64_t> rows_dims(shape.dims().begin(), shape.dims().end() - 1);
    check_input(targets.shape() == Shape(rows_dims),
                "cross_entropy: targets {} do not match the output {} (expected {})",
                targets.shape(), shape, Shape(rows_dims));
    LossOutput result;
    if (want_grad) result.grad = Tensor(shape);
    const auto sums = kernels::softmax_cross_entropy(
        kernels, output.data(), targets.data(), targets.numel(), classes, grad_scale,
        want_grad ? result.grad.data() : nullptr, options_);
    result.sum = sums.loss_sum;
    result.rows = sums.counted;
    result.correct = sums.correct;
    return result;
  }

  // The gradient (the output's shape) and the class indices (one float per row; compute refuses
  // an output without a class axis).
  std::vector<double> training_tensor_bytes(const Shape& output) const override {
    const auto numel = static_cast<double>(output.numel());
    const auto classes = static_cast<double>(output.rank() > 0 ? output[output.rank() - 1] : 1);
    return {numel * sizeof(float), numel / classes * sizeof(float)};
  }

 private:
  kernels::CrossEntropyOptions options_;
};

class MseLoss : public Loss {
 public:
  std::string_view kind() const override { return "mse"; }
  bool classifies() const override { return false; }

  // output, targets: [batch, ...] with the same number of elements; sum over everything of
  // (y - t)^2, rows = batch.
  LossOutput compute(kernels::KernelContext& kernels, const Tensor& output, const Tensor& targets,
                     float grad_scale, bool want_grad) const override {
    (void)kernels;
    // Targets may drop a trailing axis of size 1 ([batch] for an output of [batch, 1]).
    check_input(output.shape().rank() >= 1 && targets.shape().rank() >= 1 &&
                    targets.numel() == output.numel() && targets.dim(0) == output.dim(0),
                "mse: targets {} do not match the output {}", targets.shape(), output.shape());
    LossOutput result;
    result.rows = output.dim(0);
    if (want_grad) result.grad = Tensor(output.shape());
    for (int64_t i = 0; i < output.numel(); ++i) {
      const double diff = static_cast<double>(output[i]) - targets[i];
      result.sum += diff * diff;
      if (want_grad) result.grad[i] = static_cast<float>(2.0 * grad_scale * diff);
    }
    return result;
  }

  // The gradient and the targets, each as many floats as the output.
  std::vector<double> training_tensor_bytes(const Shape& output) const override {
    const double bytes = static_cast<double>(output.numel()) * sizeof(float);
    return {bytes, bytes};
  }
};

}  // namespace

std::unique_ptr<Loss> make_loss(std::string_view kind,
                                const kernels::CrossEntropyOptions& options) {
  if (kind == "cross_entropy") return std::make_unique<CrossEntropyLoss>(options);
  if (kind == "mse") return std::make_unique<MseLoss>();
  throw InputError(fmt::format("unknown loss '{}' (expected cross_entropy or mse)", kind));
}

}  // namespace mpipe::nn
