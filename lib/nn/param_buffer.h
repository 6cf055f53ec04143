// ParamBuffer: all parameters of a list of layers in one contiguous buffer, gradients in a
// second buffer of the same layout, non-trainable buffers (running statistics) in a third.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/shape.h"
#include "core/tensor.h"
#include "nn/layer.h"

namespace mpipe::nn {

class ParamBuffer {
 public:
  // A layer's gradient sum of squares is the in-order sum of blocks of this many floats counted
  // from the layer's start (the last one shorter), each summed alone: its bits depend on neither
  // the partition, the thread count nor a cut at a block boundary (optimizer shards).
  static constexpr int64_t kNormBlock = int64_t{1} << 12;

  // Elements [begin, end) of values()/grads().
  struct Elements {
    int64_t begin = 0, end = 0;
  };

  struct Entry {
    int global_layer;
    std::string name;
    Shape shape;
    int64_t offset;  // into values()/grads() when trainable, into buffers() otherwise
    bool trainable;
  };

  // Lays out the layers' params and buffers in layer order, each tensor starting on a 64-byte
  // boundary (zero padding between them), so a layer's kernels see the same alignment in every
  // partition. The layers must be in strictly ascending global index. Binds each layer's views.
  // Values and grads are zero until initialize(). The layers keep views into this object: it must
  // outlive them.
  explicit ParamBuffer(std::span<Layer* const> layers);
  ParamBuffer(const ParamBuffer&) = delete;
  ParamBuffer& operator=(const ParamBuffer&) = delete;

  // Params and buffers per their ParamSpec, from (seed, global layer, index): see init.h.
  void initialize(uint64_t seed);

  std::span<float> values() { return values_.span(); }
  std::span<const float> values() const { return values_.span(); }
  std::span<float> grads() { return grads_.span(); }
  std::span<const float> grads() const { return grads_.span(); }
  std::span<float> buffers() { return buffers_.span(); }
  std::span<const float> buffers() const { return buffers_.span(); }
  void zero_grads();
  // Zeroes the gradients of the layers with these global indices (ascending) only.
  void zero_grads_of(std::span<const int> global_layers);
  // The gradients of one layer's parameters, alignment padding between them included (empty for
  // a layer without parameters).
  std::span<float> grads_of(int global_layer);

  // Per layer: its params (trainable, in param_specs() order), then its buffers.
  const std::vector<Entry>& entries() const { return entries_; }
  // (global layer, sum of squares of its grads in double), one pair per layer, ascending: each
  // the sum of its grad_square_block_sums in order.
  std::vector<std::pair<int, double>> grad_square_sums_per_layer(
      std::span<const Elements> uncounted = {}) const;
  // (global layer, sum of squares of one norm block's grads in double) for every block inside
  // [begin, end) of grads(), in buffer order, the elements in `uncounted` (ascending, disjoint)
  // left out: the same bits as if they were 0. [begin, end) must not cut a block: its ends in
  // norm_block_begins() or num_params(); else throws mpipe::Error.
  std::vector<std::pair<int, double>> grad_square_block_sums(
      int64_t begin, int64_t end, std::span<const Elements> uncounted = {}) const;
  // Where every layer's norm blocks begin in grads(), ascending: the places the buffer can be cut
  // without changing any layer's sum of squares.
  std::vector<int64_t> norm_block_begins() const;
  int64_t num_params() const { return values_.numel(); }  // including alignment padding
  int64_t num_buffer_values() const { return buffers_.numel(); }

 private:
  struct LayerRange {
    int global_layer;
    int64_t begin, end;  // [begin, end) in values()/grads()
  };

  std::vector<Layer*> layers_;
  std::vector<Entry> entries_;
  std::vector<LayerRange> ranges_;
  Tensor values_, grads_, buffers_;
};

}  // namespace mpipe::nn
