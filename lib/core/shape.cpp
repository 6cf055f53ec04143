// Shape arithmetic and printing.
#include "core/shape.h"

#include <fmt/ranges.h>

#include "core/error.h"

namespace mpipe {

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int64_t d : dims_) n = checked_mul(n, d, "element count");
  return n;
}

Shape Shape::with_batch(int64_t batch) const {
  check(!dims_.empty(), "with_batch on a scalar shape");
  Shape out = *this;
  out.dims_[0] = batch;
  return out;
}

Shape Shape::batched(int64_t batch) const {
  std::vector<int64_t> dims{batch};
  dims.insert(dims.end(), dims_.begin(), dims_.end());
  return Shape(std::move(dims));
}

Shape Shape::per_example() const {
  check(!dims_.empty(), "per_example on a scalar shape");
  return Shape(std::vector<int64_t>(dims_.begin() + 1, dims_.end()));
}

std::string Shape::str() const { return fmt::format("[{}]", fmt::join(dims_, ", ")); }

}  // namespace mpipe
