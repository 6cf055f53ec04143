// The shape of a batch of examples: the batch size prepended to one example's shape.
#pragma once

#include <cstdint>
#include <vector>

#include "core/shape.h"

namespace mpipe::data {

// [batch, ...example]; for a scalar example ([]) this is [batch].
inline Shape batch_shape(int64_t batch, const Shape& example) {
  std::vector<int64_t> dims{batch};
  dims.insert(dims.end(), example.dims().begin(), example.dims().end());
  return Shape(std::move(dims));
}

}  // namespace mpipe::data
