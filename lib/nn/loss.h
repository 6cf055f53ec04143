// Loss: turns the last stage's output and the targets into a loss value and its gradient.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "core/tensor.h"
#include "kernels/context.h"
#include "kernels/softmax_cross_entropy.h"

namespace mpipe::nn {

struct LossOutput {
  double sum = 0.0;     // loss summed over all rows (examples, or tokens for sequences)
  int64_t rows = 0;     // number of rows summed (padded target positions are not rows)
  int64_t correct = 0;  // rows whose argmax equals the target (classification only)
  Tensor grad;          // d(grad_scale * sum) / d(output); empty if not requested
};

class Loss {
 public:
  virtual ~Loss() = default;
  virtual std::string_view kind() const = 0;
  // Whether the loss classifies: LossOutput::correct counts, so an accuracy means something.
  virtual bool classifies() const = 0;
  // output: [batch, ..., classes]; targets: [batch, ...] (class indices stored as floats for
  // classification, values for regression). The gradient is scaled by grad_scale, so with
  // grad_scale = 1 / rows of the whole mini-batch, gradients summed over micro-batches equal
  // the gradient of the mini-batch mean loss.
  virtual LossOutput compute(kernels::KernelContext& kernels, const Tensor& output,
                             const Tensor& targets, float grad_scale, bool want_grad) const = 0;
  // What a training compute (want_grad) holds beside the output, tensor by tensor in bytes per
  // example of an output whose example has shape `output`: the gradient and the targets handed
  // in (the memory model's account of the last stage's loss, model/memory_model).
  virtual std::vector<double> training_tensor_bytes(const Shape& output) const = 0;
};

// "cross_entropy" (fused softmax + cross-entropy over the last axis, with `options`) or "mse"
// (which takes no options).
std::unique_ptr<Loss> make_loss(std::string_view kind,
                                const kernels::CrossEntropyOptions& options = {});

}  // namespace mpipe::nn
