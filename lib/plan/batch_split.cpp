// The batch-size divisibility rule and its message.
#include "plan/batch_split.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace mpipe::plan {

std::optional<std::string> batch_split_problem(int64_t batch_size, int64_t micro_batches,
                                               int64_t replicas) {
  const int64_t divisor = micro_batches * std::max<int64_t>(replicas, 1);
  if (batch_size >= divisor && batch_size % divisor == 0) return std::nullopt;
  if (replicas == 0) {
    return fmt::format(
        "must be divisible by pipeline.micro_batches x data-parallel replicas = {} x (auto), got "
        "{}",
        micro_batches, batch_size);
  }
  return fmt::format(
      "must be divisible by pipeline.micro_batches x data-parallel replicas = {} x {} = {}, got {}",
      micro_batches, replicas, divisor, batch_size);
}

void check_batch_split(int64_t batch_size, int64_t micro_batches, int64_t replicas,
                       const std::string& where) {
  if (auto problem = batch_split_problem(batch_size, micro_batches, replicas)) {
    throw InputError(fmt::format("{}: {}", where, *problem));
  }
}

}  // namespace mpipe::plan
