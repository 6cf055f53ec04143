// GradientTree: sums each layer's per-micro-batch parameter gradients in a fixed pairwise tree
// over the micro-batches (pipeline weight_grads: tree), so that a replica's sum is a node of the
// tree over every replica's micro-batches and the weights do not depend on D.
#pragma once

#include <map>
#include <span>
#include <vector>

#include "core/tensor.h"

namespace mpipe::plan {

// Micro-batches arrive in ascending order for each layer. Before micro-batch j's gradients,
// open() moves the partial sum a layer's gradient holds aside and zeroes it; after them, close()
// adds the finished sibling subtrees back, as a binary counter does: after j + 1 micro-batches
// the gradient holds the sum of the last aligned block of 2^t (t the trailing zeros of j + 1),
// and the older blocks wait, at most floor(log2 M) of them. The last micro-batch folds what
// waits. With M a power of two the result is the complete binary tree over the micro-batches,
// and the two halves of a step summed apart (D = 2 replicas, then one addition) give its bits.
class GradientTree {
 public:
  explicit GradientTree(int num_micro_batches);

  // Before micro-batch `micro_batch`'s contributions to the gradients of layer `layer`.
  void open(int layer, int micro_batch, std::span<float> grads);
  // After them: the gradients hold the partial sum the tree has reached.
  void close(int layer, int micro_batch, std::span<float> grads);
  // Drops every partial sum (a step that ended early).
  void clear() { waiting_.clear(); }
  // Most partial sums one layer holds aside during a step: floor(log2 M).
  static int max_waiting(int num_micro_batches);

 private:
  int num_micro_batches_;
  std::map<int, std::vector<Tensor>> waiting_;  // per layer: older partial sums, oldest first
};

}  // namespace mpipe::plan
