// Fused softmax + cross-entropy over the last axis: loss, accuracy count and logits gradient.
#pragma once

#include <cstdint>

#include "kernels/context.h"

namespace mpipe::kernels {

struct SoftmaxCrossEntropyResult {
  double loss_sum = 0.0;  // sum over rows of -log softmax(logits)[target]
  int64_t correct = 0;    // rows whose argmax (first maximum) equals the target
};

// logits: [rows, classes]; targets: [rows] (class indices stored as floats; anything that is not
// an integer in [0, classes) throws InputError); grad: [rows, classes] or nullptr, receives
// grad_scale * (softmax(logits) - onehot(target)). Log-sum-exp stable.
SoftmaxCrossEntropyResult softmax_cross_entropy(KernelContext& ctx, const float* logits,
                                                const float* targets, int64_t rows, int64_t classes,
                                                float grad_scale, float* grad);

}  // namespace mpipe::kernels
