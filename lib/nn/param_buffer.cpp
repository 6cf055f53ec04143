// ParamBuffer layout, binding, initialization and per-layer gradient statistics.
#include "nn/param_buffer.h"

#include <algorithm>

#include "core/error.h"
#include "nn/init.h"

namespace mpipe::nn {
namespace {

// Every tensor starts on a 64-byte boundary, so kernels see the same alignment (and take the
// same code paths, with the same rounding) whichever other layers share the buffer.
constexpr int64_t kAlignFloats = 16;

int64_t aligned(int64_t offset) {
  return (offset + kAlignFloats - 1) / kAlignFloats * kAlignFloats;
}

}  // namespace

ParamBuffer::ParamBuffer(std::span<Layer* const> layers) : layers_(layers.begin(), layers.end()) {
  int64_t num_values = 0, num_buffers = 0;
  for (size_t l = 0; l < layers_.size(); ++l) {
    const Layer& layer = *layers_[l];
    check(l == 0 || layers_[l - 1]->global_index() < layer.global_index(),
          "ParamBuffer: layers must be in ascending global order ({} after {})",
          layer.global_index(), l == 0 ? -1 : layers_[l - 1]->global_index());
    // A layer's range (and its first norm block) begins at its first tensor: aligned.
    const int64_t begin = layer.param_specs().empty() ? num_values : aligned(num_values);
    for (const ParamSpec& spec : layer.param_specs()) {
      num_values = aligned(num_values);
      entries_.push_back({layer.global_index(), spec.name, spec.shape, num_values, true});
      num_values += spec.shape.numel();
    }
    for (const ParamSpec& spec : layer.buffer_specs()) {
      num_buffers = aligned(num_buffers);
      entries_.push_back({layer.global_index(), spec.name, spec.shape, num_buffers, false});
      num_buffers += spec.shape.numel();
    }
    ranges_.push_back({layer.global_index(), begin, num_values});
  }
  values_ = Tensor(Shape{num_values});
  grads_ = Tensor(Shape{num_values});
  buffers_ = Tensor(Shape{num_buffers});

  size_t e = 0;
  for (Layer* layer : layers_) {
    std::vector<std::span<float>> params, grads, buffers;
    for (; e < entries_.size() && entries_[e].global_layer == layer->global_index(); ++e) {
      const Entry& entry = entries_[e];
      const auto offset = static_cast<size_t>(entry.offset);
      const auto size = static_cast<size_t>(entry.shape.numel());
      if (entry.trainable) {
        params.push_back(values().subspan(offset, size));
        grads.push_back(this->grads().subspan(offset, size));
      } else {
        buffers.push_back(this->buffers().subspan(offset, size));
      }
    }
    layer->bind(std::move(params), std::move(grads), std::move(buffers));
  }
}

void ParamBuffer::initialize(uint64_t seed) {
  size_t e = 0;
  for (Layer* layer : layers_) {
    const std::vector<ParamSpec> params = layer->param_specs();
    const std::vector<ParamSpec> buffers = layer->buffer_specs();
    for (size_t p = 0; p < params.size(); ++p, ++e) {
      const Entry& entry = entries_[e];
      initialize_param(values().subspan(static_cast<size_t>(entry.offset),
                                        static_cast<size_t>(entry.shape.numel())),
                       params[p], seed, layer->global_index(), static_cast<int>(p));
    }
    for (size_t b = 0; b < buffers.size(); ++b, ++e) {
      const Entry& entry = entries_[e];
      initialize_param(this->buffers().subspan(static_cast<size_t>(entry.offset),
                                               static_cast<size_t>(entry.shape.numel())),
                       buffers[b], seed, layer->global_index(), -1 - static_cast<int>(b));
    }
  }
}

void ParamBuffer::zero_grads() {
  // Split over the threads: one thread alone does not reach the memory bandwidth.
  float* g = grads_.data();
  const int64_t n = grads_.numel();
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) g[i] = 0.0f;
}

void ParamBuffer::zero_grads_of(std::span<const int> global_layers) {
  float* g = grads_.data();
  for (const LayerRange& range : ranges_) {
    if (!std::binary_search(global_layers.begin(), global_layers.end(), range.global_layer)) {
      continue;
    }
#pragma omp parallel for simd schedule(static)
    for (int64_t i = range.begin; i < range.end; ++i) g[i] = 0.0f;
  }
}

std::span<float> ParamBuffer::grads_of(int global_layer) {
  for (const LayerRange& range : ranges_) {
    if (range.global_layer == global_layer) {
      return grads().subspan(static_cast<size_t>(range.begin),
                             static_cast<size_t>(range.end - range.begin));
    }
  }
  return {};
}

std::vector<std::pair<int, double>> ParamBuffer::grad_square_sums_per_layer(
    std::span<const Elements> uncounted) const {
  std::vector<std::pair<int, double>> sums;
  for (const LayerRange& range : ranges_) sums.emplace_back(range.global_layer, 0.0);
  size_t at = 0;  // blocks come in layer order
  for (const auto& [layer, block] : grad_square_block_sums(0, num_params(), uncounted)) {
    while (sums[at].first != layer) ++at;
    sums[at].second += block;
  }
  return sums;
}

std::vector<std::pair<int, double>> ParamBuffer::grad_square_block_sums(
    int64_t begin, int64_t end, std::span<const Elements> uncounted) const {
  const std::vector<int64_t> cuts = norm_block_begins();
  const auto is_cut = [&](int64_t at) {
    return at == num_params() || std::ranges::binary_search(cuts, at) ||
           std::ranges::none_of(ranges_,
                                [at](const LayerRange& r) { return r.begin < at && at < r.end; });
  };
  check(0 <= begin && begin <= end && end <= num_params() && is_cut(begin) && is_cut(end),
        "grad_square_block_sums: [{}, {}) cuts a norm block", begin, end);
  struct Block {
    int layer;
    int64_t begin, end;
  };
  std::vector<Block> blocks;
  for (const LayerRange& range : ranges_) {
    for (int64_t b = range.begin; b < range.end; b += kNormBlock) {
      if (begin <= b && b < end) {
        blocks.push_back({range.global_layer, b, std::min(range.end, b + kNormBlock)});
      }
    }
  }
  // Blocks summed in parallel, each in order: OpenMP's own reduction order is unspecified.
  std::vector<std::pair<int, double>> sums(blocks.size());
  const std::span<const float> g = grads();
  const auto num_blocks = static_cast<int64_t>(blocks.size());
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < num_blocks; ++i) {
    const Block& block = blocks[static_cast<size_t>(i)];
    double sum = 0.0;
    const auto add = [&sum, &g](int64_t from, int64_t to) {
      for (int64_t j = from; j < to; ++j) {
        const double v = g[static_cast<size_t>(j)];
        sum += v * v;
      }
    };
    int64_t at = block.begin;  // what is left of the block
    for (const Elements& out : uncounted) {
      if (out.end <= at || out.begin >= block.end) continue;
      add(at, out.begin);
      at = out.end;
    }
    add(at, block.end);
    sums[static_cast<size_t>(i)] = {block.layer, sum};
  }
  return sums;
}

std::vector<int64_t> ParamBuffer::norm_block_begins() const {
  std::vector<int64_t> begins;
  for (const LayerRange& range : ranges_) {
    for (int64_t b = range.begin; b < range.end; b += kNormBlock) begins.push_back(b);
  }
  return begins;
}

}  // namespace mpipe::nn
