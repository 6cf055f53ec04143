// The train and test splits of a dataset stored as one array of rows, the train rows first.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "data/dataset.h"

namespace mpipe::data {

struct SplitRows {
  int64_t num_train = 0;
  int64_t num_test = 0;

  int64_t size(Split split) const { return split == Split::kTrain ? num_train : num_test; }
  // Row of example `index` of `split` in the stored array; `dataset` names it in the error.
  int64_t row(Split split, int64_t index, std::string_view dataset) const {
    check(index >= 0 && index < size(split), "{} example {} out of range [0, {})", dataset, index,
          size(split));
    return split == Split::kTrain ? index : num_train + index;
  }
};

}  // namespace mpipe::data
