// The weight-gradient groups of a step's micro-batches, and weight_group: auto.
#include "plan/weight_groups.h"

#include <algorithm>

#include "core/error.h"

namespace mpipe::plan {

int WeightGroups::last(int group) const { return std::min(micro_batches, (group + 1) * size) - 1; }

WeightGroups weight_groups(WeightGrads weight_grads, int micro_batches, int weight_group) {
  check(micro_batches >= 1, "weight_groups: {} micro-batches", micro_batches);
  switch (weight_grads) {
    case WeightGrads::kBatched:
      return {.micro_batches = micro_batches, .size = micro_batches};
    case WeightGrads::kGrouped:
      check(weight_group >= 1 && weight_group <= micro_batches,
            "weight_groups: a group of {} micro-batches of {} (weight_group: auto is resolved "
            "to 1..M)",
            weight_group, micro_batches);
      return {.micro_batches = micro_batches, .size = weight_group};
    case WeightGrads::kAccumulate:
    case WeightGrads::kTree:
      return {.micro_batches = micro_batches, .size = 1};
    case WeightGrads::kAuto:
      break;
  }
  throw Error("weight_groups: weight_grads: auto is not resolved");
}

int auto_weight_group(long product_rows, int micro_batches) {
  constexpr long kRows = 256;  // (weight_groups.h)
  check(product_rows >= 1 && micro_batches >= 1, "auto_weight_group: {} rows, {} micro-batches",
        product_rows, micro_batches);
  const long groups = (kRows + product_rows - 1) / product_rows;
  return static_cast<int>(std::min<long>(groups, micro_batches));
}

}  // namespace mpipe::plan
