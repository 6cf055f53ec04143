// The parts' shares of a mix, positions dealt down them, and each part's keyed draws.
#include "data/mixed_order.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/error.h"
#include "data/keyed_permutation.h"

namespace mpipe::data {
namespace {

// Part l's keyed order is stream 2 + l (the plain training order is stream kKeyedOrderStream).
constexpr uint32_t kFirstPartStream = 2;

// floor(n · q / r) for n in [0, 2^62], 1 <= q <= r < 2^31, without overflow.
int64_t scaled(int64_t n, int64_t q, int64_t r) { return n / r * q + n % r * q / r; }

}  // namespace

MixedOrder::MixedOrder(uint64_t seed, std::vector<MixPart> parts)
    : seed_(seed), parts_(std::move(parts)), example_starts_{0} {
  check(!parts_.empty(), "MixedOrder: no parts");
  double total_weight = 0;
  for (const MixPart& part : parts_) {
    check(part.size >= 1 && part.weight > 0 && std::isfinite(part.weight),
          "MixedOrder: bad part size {} or weight {}", part.size, part.weight);
    total_weight += part.weight;
  }
  for (const MixPart& part : parts_) {
    shares_.push_back(std::max<int64_t>(
        1, std::llround(static_cast<double>(kMixResolution) * part.weight / total_weight)));
    example_starts_.push_back(example_starts_.back() + part.size);
  }
  rest_.resize(shares_.size());
  int64_t rest = 0;
  for (size_t part = shares_.size(); part-- > 0;) rest_[part] = rest += shares_[part];
}

int64_t MixedOrder::operator()(int64_t position) const {
  check(position >= 0, "MixedOrder: position {} is negative", position);
  int64_t n = position;  // its number among the positions that reach `part`
  size_t part = 0;
  for (; part + 1 < parts_.size(); ++part) {
    const int64_t kept = scaled(n, shares_[part], rest_[part]);  // before it
    if (scaled(n + 1, shares_[part], rest_[part]) > kept) {
      n = kept;
      break;
    }
    n -= kept;
  }
  const int64_t size = parts_[part].size;
  const auto stream = kFirstPartStream + static_cast<uint32_t>(part);
  return example_starts_[part] + KeyedPermutation(seed_, n / size, size, stream)(n % size);
}

}  // namespace mpipe::data
