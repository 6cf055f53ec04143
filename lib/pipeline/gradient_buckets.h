// The data-parallel buckets of a rank's gradient buffers, and which bucket each layer starts.
#pragma once

#include <cstddef>
#include <map>
#include <span>
#include <vector>

#include "nn/param_buffer.h"

namespace mpipe::pipeline {

// The largest data-parallel bucket, in floats (1 MiB): on both transports the measured transfer
// rate peaks at about this size (bench_comm), and smaller buckets start and finish sooner.
constexpr size_t kMaxBucketFloats = size_t{1} << 18;

// Where each layer with trainable parameters begins in a stage's gradient buffer (global
// layer → offset; the first one at 0).
std::map<int, size_t> layer_gradient_begins(const nn::ParamBuffer& params);

// The data-parallel buckets of a stage's gradient buffer (ascending begins): each layer with
// trainable parameters, from its first parameter to the next such layer, cut into pieces of
// kMaxBucketFloats counted from the layer's own beginning. Each bucket's sum over the replicas
// thus depends on that layer alone, never on which other layers share its stage (so not on K).
std::vector<size_t> gradient_buckets(const nn::ParamBuffer& params);

// A rank's buckets over its chunks' gradient buffers (`chunks[c]`: chunk c's), chunk 0's first,
// each chunk's as gradient_buckets cuts it; and the index there of each layer's first bucket
// (global layer → index). Buckets are started from the last (comm::BucketedAllreduce), so a
// later chunk's before an earlier one's: the order in which every schedule's last backwards
// leave a rank's chunks (its later stages' first).
struct RankBuckets {
  std::vector<std::span<float>> buckets;
  std::map<int, size_t> first_of_layer;
};
RankBuckets rank_gradient_buckets(const std::vector<nn::ParamBuffer*>& chunks);

}  // namespace mpipe::pipeline
