// The input placed first among a forward's saved tensors, for every layer that keeps its input.
#include "nn/input_saving_layer.h"

#include <utility>

namespace mpipe::nn {

Forward InputSavingLayer::forward(const Tensor& x, const LayerContext& ctx) {
  Forward result = forward_without_input(x, ctx);
  if (ctx.training) result.saved.tensors.insert(result.saved.tensors.begin(), x);
  return result;
}

Forward InputSavingLayer::forward_consuming(Tensor x, const LayerContext& ctx) {
  Forward result = forward_without_input(x, ctx);
  if (ctx.training) result.saved.tensors.insert(result.saved.tensors.begin(), std::move(x));
  return result;
}

}  // namespace mpipe::nn
