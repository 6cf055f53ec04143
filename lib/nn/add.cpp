// Add layer: the sum of the main input and the read values.
#include "nn/add.h"

#include "core/error.h"
#include "nn/elementwise.h"

namespace mpipe::nn {

Add::Add(int global_index, const Shape& input_shape, const std::vector<Shape>& reads)
    : Layer(global_index), shape_(input_shape), num_reads_(static_cast<int>(reads.size())) {
  check_input(!reads.empty(), "add needs at least one value to read (read: [NAME])");
  for (size_t i = 0; i < reads.size(); ++i) {
    check_input(reads[i] == input_shape, "read {} has shape {}, but the main input has {}", i,
                reads[i], input_shape);
  }
}

Forward Add::forward_reading(const Tensor& x, std::span<const Tensor* const> reads,
                             const LayerContext& ctx) {
  (void)ctx;
  check(std::ssize(reads) == num_reads_, "add: {} reads, expected {}", reads.size(), num_reads_);
  Tensor y(x);
  for (const Tensor* read : reads) {
    check(read->shape() == x.shape(), "add: read {} does not match the input {}", read->shape(),
          x.shape());
    add_into(y, *read);
  }
  return {.output = std::move(y), .saved = {}};
}

std::vector<Tensor> Add::backward_reading(const Tensor& dy, const Saved& saved,
                                          const LayerContext& ctx) {
  (void)saved;
  std::vector<Tensor> grads;
  grads.push_back(ctx.need_input_grad ? Tensor(dy) : Tensor());
  for (int i = 0; i < num_reads_; ++i) grads.push_back(Tensor(dy));
  return grads;
}

Forward Add::forward(const Tensor& x, const LayerContext& ctx) {
  (void)x, (void)ctx;
  throw Error(
      fmt::format("layer {} (add) reads {} values: forward_reading", global_index(), num_reads_));
}

Tensor Add::backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) {
  (void)dy, (void)saved, (void)ctx;
  throw Error(
      fmt::format("layer {} (add) reads {} values: backward_reading", global_index(), num_reads_));
}

LayerNeeds Add::needs() const {
  // Keeps nothing; its backward copies the output gradient once per input.
  const double bytes = float_bytes(shape_.numel());
  return {.backward_temporary_bytes = bytes * num_reads_, .smallest_temporary_bytes = bytes};
}

double Add::forward_flops_per_example() const {
  return static_cast<double>(shape_.numel()) * num_reads_;
}

}  // namespace mpipe::nn
