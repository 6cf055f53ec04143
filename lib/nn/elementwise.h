// Element-wise tensor arithmetic the layers share (each element's result is independent of the
// thread count).
#pragma once

#include "core/tensor.h"

namespace mpipe::nn {

// y += x, element-wise; both of the same size.
void add_into(Tensor& y, const Tensor& x);

}  // namespace mpipe::nn
