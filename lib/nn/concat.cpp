// Concat layer: copies each example's inputs side by side along its first axis, and back.
#include "nn/concat.h"

#include <algorithm>

#include "core/error.h"

namespace mpipe::nn {

Concat::Concat(int global_index, const Shape& input_shape, const std::vector<Shape>& reads)
    : Layer(global_index), reads_(reads) {
  check_input(!reads.empty(), "concat needs at least one value to read (read: [NAME])");
  check_input(input_shape.rank() >= 1 && input_shape.numel() > 0,
              "concat needs an input with a first axis to join along, got {}", input_shape);
  parts_.push_back(input_shape);
  parts_.insert(parts_.end(), reads.begin(), reads.end());
  std::vector<int64_t> dims = input_shape.dims();
  const std::vector<int64_t> rest(dims.begin() + 1, dims.end());
  for (size_t i = 0; i < reads.size(); ++i) {
    const std::vector<int64_t>& read = reads[i].dims();
    check_input(!read.empty() && std::equal(read.begin() + 1, read.end(), rest.begin(), rest.end()),
                "read {} has shape {}, which does not match the main input {} past the first axis",
                i, reads[i], input_shape);
    dims[0] = checked_add(dims[0], read[0], "concatenated first axis");
  }
  output_shape_ = Shape(std::move(dims));
  for (const Shape& part : parts_) part_sizes_.push_back(part.numel());
}

Forward Concat::forward_reading(const Tensor& x, std::span<const Tensor* const> reads,
                                const LayerContext& ctx) {
  (void)ctx;
  check(reads.size() == reads_.size(), "concat: {} reads, expected {}", reads.size(),
        reads_.size());
  const int64_t batch = x.dim(0);
  std::vector<const Tensor*> inputs = {&x};
  inputs.insert(inputs.end(), reads.begin(), reads.end());
  for (size_t i = 0; i < inputs.size(); ++i) {
    check(inputs[i]->shape() == parts_[i].batched(batch), "concat: input {} is {}, expected {}", i,
          inputs[i]->shape(), parts_[i].batched(batch));
  }
  Tensor y(output_shape_.batched(batch));
  float* out = y.data();
  for (int64_t row = 0; row < batch; ++row) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      out = std::copy_n(inputs[i]->data() + row * part_sizes_[i], part_sizes_[i], out);
    }
  }
  return {.output = std::move(y), .saved = {}};
}

std::vector<Tensor> Concat::backward_reading(const Tensor& dy, const Saved& saved,
                                             const LayerContext& ctx) {
  (void)saved;
  const int64_t batch = dy.dim(0);
  check(dy.shape() == output_shape_.batched(batch), "concat::backward: dy {} is not {}", dy.shape(),
        output_shape_.batched(batch));
  std::vector<Tensor> grads;
  for (size_t i = 0; i < parts_.size(); ++i) {
    grads.push_back(i == 0 && !ctx.need_input_grad ? Tensor() : Tensor(parts_[i].batched(batch)));
  }
  const float* in = dy.data();
  for (int64_t row = 0; row < batch; ++row) {
    for (size_t i = 0; i < parts_.size(); ++i) {
      if (!grads[i].empty()) {
        std::copy_n(in, part_sizes_[i], grads[i].data() + row * part_sizes_[i]);
      }
      in += part_sizes_[i];
    }
  }
  return grads;
}

Forward Concat::forward(const Tensor& x, const LayerContext& ctx) {
  (void)x, (void)ctx;
  throw Error(fmt::format("layer {} (concat) reads {} values: forward_reading", global_index(),
                          reads_.size()));
}

Tensor Concat::backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) {
  (void)dy, (void)saved, (void)ctx;
  throw Error(fmt::format("layer {} (concat) reads {} values: backward_reading", global_index(),
                          reads_.size()));
}

LayerNeeds Concat::needs() const {
  // Keeps nothing; its backward's temporaries are the reads' gradients.
  double read_bytes = 0.0;
  double smallest = float_bytes(part_sizes_[1]);
  for (size_t i = 1; i < part_sizes_.size(); ++i) {
    read_bytes += float_bytes(part_sizes_[i]);
    smallest = std::min(smallest, float_bytes(part_sizes_[i]));
  }
  return {.backward_temporary_bytes = read_bytes, .smallest_temporary_bytes = smallest};
}

}  // namespace mpipe::nn
