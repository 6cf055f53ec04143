// Batch split: the one rule for how train.batch_size divides into data-parallel replicas and
// micro-batches, with its one wording, for every place that checks it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace mpipe::plan {

// Why `batch_size` does not split into `micro_batches` equal micro-batches on each of `replicas`
// data-parallel replicas (0: not known yet, e.g. `auto` before the world size is; then
// micro_batches alone is checked), as the message that follows the key:
// "must be divisible by pipeline.micro_batches x data-parallel replicas = 4 x 2 = 8, got 100".
// nullopt when it splits.
std::optional<std::string> batch_split_problem(int64_t batch_size, int64_t micro_batches,
                                               int64_t replicas);

// Throws InputError "<where>: <batch_split_problem>" when the batch does not split; `where` names
// train.batch_size ("exp.yaml:9: train.batch_size").
void check_batch_split(int64_t batch_size, int64_t micro_batches, int64_t replicas,
                       const std::string& where);

}  // namespace mpipe::plan
