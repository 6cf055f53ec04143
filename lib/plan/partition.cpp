// Uniform and manual partitions of the layer list into stages.
#include "plan/partition.h"

#include <fmt/ranges.h>

#include <numeric>

#include "core/counted.h"
#include "core/error.h"

namespace mpipe::plan {

std::vector<LayerRange> partition_layers(int num_layers, int num_stages,
                                         const std::vector<int>& layers_per_stage,
                                         const std::string& where) {
  check(num_stages >= 1, "partition into {} stages", num_stages);
  std::vector<int> counts = layers_per_stage;
  if (counts.empty()) {
    check_input(num_layers >= num_stages, "{}: the model has {}, fewer than the {} pipeline stages",
                where, counted(num_layers, "layer"), num_stages);
    for (int s = 0; s < num_stages; ++s) {
      counts.push_back(num_layers / num_stages + (s < num_layers % num_stages ? 1 : 0));
    }
  }
  check_input(static_cast<int>(counts.size()) == num_stages,
              "{}: {} entries for {} pipeline stages", where, counts.size(), num_stages);
  for (int count : counts) {
    check_input(count >= 1, "{}: every stage needs at least one layer, got [{}]", where,
                fmt::join(counts, ", "));
  }
  const int total = std::accumulate(counts.begin(), counts.end(), 0);
  check_input(total == num_layers, "{}: [{}] sums to {} layers, but the model has {}", where,
              fmt::join(counts, ", "), total, num_layers);
  std::vector<LayerRange> ranges;
  int begin = 0;
  for (int count : counts) {
    ranges.push_back({begin, begin + count});
    begin += count;
  }
  return ranges;
}

}  // namespace mpipe::plan
