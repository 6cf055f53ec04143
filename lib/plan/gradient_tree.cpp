// GradientTree: the pairwise sum of a layer's per-micro-batch gradients.
#include "plan/gradient_tree.h"

#include <algorithm>
#include <bit>

#include "core/error.h"

namespace mpipe::plan {

GradientTree::GradientTree(int num_micro_batches) : num_micro_batches_(num_micro_batches) {
  check(num_micro_batches >= 1, "GradientTree: {} micro-batches", num_micro_batches);
}

int GradientTree::max_waiting(int num_micro_batches) {
  return std::bit_width(static_cast<unsigned>(num_micro_batches)) - 1;
}

void GradientTree::open(int layer, int micro_batch, std::span<float> grads) {
  check(0 <= micro_batch && micro_batch < num_micro_batches_, "GradientTree: micro-batch {} of {}",
        micro_batch, num_micro_batches_);
  if (grads.empty()) return;
  if (micro_batch > 0) {
    Tensor partial = Tensor::uninitialized(Shape{static_cast<int64_t>(grads.size())});
    std::copy(grads.begin(), grads.end(), partial.data());
    waiting_[layer].push_back(std::move(partial));
  }
  std::fill(grads.begin(), grads.end(), 0.0f);
}

void GradientTree::close(int layer, int micro_batch, std::span<float> grads) {
  if (grads.empty()) return;
  std::vector<Tensor>& waiting = waiting_[layer];
  // One addition per element and pair (IEEE addition commutes, so the order of the operands
  // does not matter); the older block is the left operand.
  auto add_older = [&] {
    const float* older = waiting.back().data();
    float* g = grads.data();
    const auto n = static_cast<int64_t>(grads.size());
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) g[i] = older[i] + g[i];
    waiting.pop_back();
  };
  for (unsigned done = static_cast<unsigned>(micro_batch) + 1; done % 2 == 0; done /= 2) {
    check(!waiting.empty(), "GradientTree: layer {} has no partial sum for micro-batch {}", layer,
          micro_batch);
    add_older();
  }
  if (micro_batch == num_micro_batches_ - 1) {
    while (!waiting.empty()) add_older();
    waiting_.erase(layer);
  }
}

}  // namespace mpipe::plan
