// The rules of the step's shape that need the resolved world and M: the chunked schedule's shape
// for this K, and the weight-gradient group within M.
#pragma once

#include "config/experiment.h"

namespace mpipe::train {

// Throws InputError naming the key, in one line, when the schedule's shape does not suit K =
// `num_ranks` ranks (plan::schedule_shape_problem, the rule `mpipe schedule` applies):
// "exp.yaml:4: pipeline.micro_batches: interleaved needs a multiple of the pipeline ranks (2), got
// 3", "exp.yaml: pipeline.virtual_stages: interleaved needs 2 or more chunks per rank, got 1; ...",
// "...: 2 chunks per rank need the interleaved schedule, got 1f1b"; or a weight_group over M under
// weight_grads: grouped: "exp.yaml:6: pipeline.weight_group: must be at most
// pipeline.micro_batches = 4, got 5".
void check_virtual_stages(const config::Experiment& experiment, int num_ranks);

}  // namespace mpipe::train
