// Dropout: the keep mask of element j of global example e is
// CounterRng(seed, kDropout, layer, (step << 32) | e).uniform(j) >= rate.
#include "nn/dropout.h"

#include <vector>

#include "core/error.h"
#include "core/rng.h"

namespace mpipe::nn {

Dropout::Dropout(int global_index, const Shape& input_shape, double rate)
    : Layer(global_index), input_shape_(input_shape), rate_(rate) {
  check_input(rate >= 0.0 && rate < 1.0, "dropout rate must be in [0, 1), got {}", rate);
  check_input(input_shape.numel() > 0, "dropout needs a non-empty input, got {}", input_shape);
}

void Dropout::apply_mask(const Tensor& in, Tensor& out, const LayerContext& ctx) const {
  const int64_t batch = in.dim(0);
  const int64_t per_example = input_shape_.numel();
  const auto rate = static_cast<float>(rate_);
  const auto scale = static_cast<float>(1.0 / (1.0 - rate_));
  std::vector<float> draws(static_cast<size_t>(per_example));
  for (int64_t e = 0; e < batch; ++e) {
    const uint64_t example = static_cast<uint64_t>(ctx.first_example + e);
    const CounterRng rng(ctx.seed, RngPurpose::kDropout, static_cast<uint32_t>(global_index()),
                         (static_cast<uint64_t>(ctx.step) << 32) | example);
    rng.fill_uniform(draws);
    const float* src = in.data() + e * per_example;
    float* dst = out.data() + e * per_example;
    for (int64_t j = 0; j < per_example; ++j) {
      dst[j] = draws[static_cast<size_t>(j)] >= rate ? src[j] * scale : 0.0f;
    }
  }
}

Forward Dropout::forward(const Tensor& x, const LayerContext& ctx) {
  check(x.shape().rank() >= 1 && x.shape().per_example() == input_shape_,
        "dropout: input {} does not match the layer's input shape {}", x.shape(), input_shape_);
  if (!ctx.training || rate_ == 0.0) return {.output = x, .saved = {}};
  Forward result{.output = Tensor(x.shape()), .saved = {}};
  apply_mask(x, result.output, ctx);
  return result;
}

Tensor Dropout::backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) {
  (void)saved;
  check(dy.shape().rank() >= 1 && dy.shape().per_example() == input_shape_,
        "dropout::backward: dy {} does not match the layer's shape {}", dy.shape(), input_shape_);
  if (!ctx.need_input_grad) return {};
  if (!ctx.training || rate_ == 0.0) return dy;
  Tensor dx(dy.shape());
  apply_mask(dy, dx, ctx);
  return dx;
}

double Dropout::forward_flops_per_example() const {
  return static_cast<double>(input_shape_.numel());
}

LayerNeeds Dropout::needs() const {
  // Keeps nothing: backward regenerates the mask from the counters.
  return {.smallest_temporary_bytes = float_bytes(input_shape_.numel()),
          .backward_flops = forward_flops_per_example()};
}

}  // namespace mpipe::nn
