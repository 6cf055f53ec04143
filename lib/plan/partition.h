// Partition: which contiguous range of layers each pipeline stage owns.
#pragma once

#include <string>
#include <vector>

namespace mpipe::plan {

struct LayerRange {
  int begin = 0;  // first global layer index
  int end = 0;    // one past the last
  int size() const { return end - begin; }
  friend bool operator==(const LayerRange&, const LayerRange&) = default;
};

// `layers_per_stage` empty: uniform (counts differ by at most one, earlier stages get the
// extra layers). Otherwise the given counts, which must be >= 1 each and sum to num_layers.
// `where` prefixes error messages ("exp.yaml:20: pipeline.partition").
// The seam for automatic balancing: a cost-based variant returns the same type.
std::vector<LayerRange> partition_layers(int num_layers, int num_stages,
                                         const std::vector<int>& layers_per_stage,
                                         const std::string& where);

}  // namespace mpipe::plan
