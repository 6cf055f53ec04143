// Fused softmax + cross-entropy over the last axis: loss, accuracy count and logits gradient.
#pragma once

#include <cstdint>
#include <optional>

#include "kernels/context.h"

namespace mpipe::kernels {

struct SoftmaxCrossEntropyResult {
  double loss_sum = 0.0;  // sum over the counted rows of each one's loss
  int64_t counted = 0;    // rows whose target is not the ignored one
  int64_t correct = 0;    // counted rows whose argmax (first maximum) equals the target
};

// What the loss compares the probabilities with, beyond the target's class.
struct CrossEntropyOptions {
  // ε in [0, 1): the target distribution is (1 - ε)·onehot(target) + ε/classes, so a row's loss is
  // -(1 - ε)·log p[target] - ε/classes · Σ_c log p[c].
  double label_smoothing = 0.0;
  // Rows with this target (padding) add nothing to the loss, the counts or the gradient.
  std::optional<int64_t> ignore_target = std::nullopt;
};

// logits: [rows, classes]; targets: [rows] (class indices stored as floats; anything that is not
// an integer in [0, classes) or the ignored target throws InputError); grad: [rows, classes] or
// nullptr, receives grad_scale * (softmax(logits) - the target distribution), zeros for an ignored
// row. Log-sum-exp stable.
SoftmaxCrossEntropyResult softmax_cross_entropy(KernelContext& ctx, const float* logits,
                                                const float* targets, int64_t rows, int64_t classes,
                                                float grad_scale, float* grad,
                                                const CrossEntropyOptions& options = {});

}  // namespace mpipe::kernels
