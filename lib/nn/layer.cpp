// The Layer interface's defaults for layers that read no extra inputs.
#include "nn/layer.h"

#include "core/error.h"

namespace mpipe::nn {

Forward Layer::forward_reading(const Tensor& x, std::span<const Tensor* const> reads,
                               const LayerContext& ctx) {
  (void)x, (void)ctx;
  throw Error(fmt::format("layer {} ({}) reads no values, but was given {}", global_index_, kind(),
                          reads.size()));
}

std::vector<Tensor> Layer::backward_reading(const Tensor& dy, const Saved& saved,
                                            const LayerContext& ctx) {
  (void)dy, (void)saved, (void)ctx;
  throw Error(fmt::format("layer {} ({}) reads no values", global_index_, kind()));
}

}  // namespace mpipe::nn
