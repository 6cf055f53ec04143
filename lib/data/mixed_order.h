// MixedOrder: the training order of a weighted mix of lists, one position at a time.
#pragma once

#include <cstdint>
#include <vector>

#include "data/dataset.h"

namespace mpipe::data {

// The weights of a mix are rounded to shares of this (docs/design/data.md, "Data mixing").
inline constexpr int64_t kMixResolution = int64_t{1} << 20;

// position -> example of a mix of `parts` (examples [0, Σ size), part l's after the earlier
// parts'), a pure function of (seed, parts, position), no state.
// Part l's share is q_l = max(1, round(kMixResolution · w_l / Σ w)). Positions are dealt down
// the parts: of the n-th position to reach part l (n from 0), with c(n) = floor(n · q_l / R_l)
// and R_l = q_l + q_{l+1} + ..., part l keeps it when c(n + 1) > c(n), as its draw c(n), and
// passes it on to part l + 1 as the (n - c(n))-th otherwise; the last part keeps all that reach
// it. So of the first P positions part l holds P · q_l / Σ q within l + 1, and of any P
// consecutive ones within 2(l + 1). Part l's d-th draw is its example
// KeyedPermutation(seed, d / size_l, size_l, stream 2 + l)(d mod size_l): its draws go through
// its examples epoch by epoch, each once per epoch, whatever the other parts.
class MixedOrder {
 public:
  MixedOrder(uint64_t seed, std::vector<MixPart> parts);

  int64_t operator()(int64_t position) const;
  // q_l, part l's share of every Σ q positions.
  int64_t share(size_t part) const { return shares_[part]; }

 private:
  uint64_t seed_;
  std::vector<MixPart> parts_;
  std::vector<int64_t> shares_;          // q_l
  std::vector<int64_t> rest_;            // R_l = q_l + q_{l+1} + ...
  std::vector<int64_t> example_starts_;  // part l's first example
};

}  // namespace mpipe::data
