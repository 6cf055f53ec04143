// The data-parallel buckets of a rank's gradient buffers: per layer, at most 1 MiB each.
#include "pipeline/gradient_buckets.h"

#include <algorithm>
#include <iterator>

#include "comm/bucketed_allreduce.h"

namespace mpipe::pipeline {

std::map<int, size_t> layer_gradient_begins(const nn::ParamBuffer& params) {
  std::map<int, size_t> begins;
  for (const nn::ParamBuffer::Entry& entry : params.entries()) {
    // The first layer's bucket also takes any padding in front of it.
    if (entry.trainable && !begins.contains(entry.global_layer)) {
      begins[entry.global_layer] = begins.empty() ? 0 : static_cast<size_t>(entry.offset);
    }
  }
  return begins;
}

std::vector<size_t> gradient_buckets(const nn::ParamBuffer& params) {
  const std::map<int, size_t> layers = layer_gradient_begins(params);
  const size_t size = params.grads().size();
  std::vector<size_t> begins;
  for (auto it = layers.begin(); it != layers.end(); ++it) {
    const size_t end = std::next(it) != layers.end() ? std::next(it)->second : size;
    for (size_t begin = it->second; begin < end; begin += kMaxBucketFloats) begins.push_back(begin);
  }
  return begins;
}

RankBuckets rank_gradient_buckets(const std::vector<nn::ParamBuffer*>& chunks) {
  RankBuckets out;
  for (nn::ParamBuffer* params : chunks) {
    const std::vector<size_t> begins = gradient_buckets(*params);
    const size_t base = out.buckets.size();
    for (const auto& [layer, begin] : layer_gradient_begins(*params)) {
      const auto at = std::ranges::lower_bound(begins, begin);
      out.first_of_layer[layer] = base + static_cast<size_t>(at - begins.begin());
    }
    const std::vector<std::span<float>> mine = comm::cut_into_buckets(params->grads(), begins);
    out.buckets.insert(out.buckets.end(), mine.begin(), mine.end());
  }
  return out;
}

}  // namespace mpipe::pipeline
