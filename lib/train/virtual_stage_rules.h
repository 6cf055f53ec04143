// The rules of pipeline.virtual_stages that need the resolved world: the interleaved schedule's
// shape for this K, and what is not run with several chunks per rank yet.
#pragma once

#include "config/experiment.h"

namespace mpipe::train {

// Throws InputError naming the key, one line:
// - the schedule's shape on K = `num_stages` ranks (pipeline::schedule_shape_problem, the
//   rule `mpipe schedule` applies): "exp.yaml:4: pipeline.micro_batches: interleaved needs a
//   multiple of the stages (2), got 3", "exp.yaml: pipeline.virtual_stages: interleaved needs 2
//   or more chunks per rank, got 1; ...", "...: 2 chunks per rank need the interleaved schedule,
//   got 1f1b";
// - with v > 1, pipeline.balance: measured, which is run with one chunk per rank only:
//   "exp.yaml:5: pipeline.virtual_stages: 2 chunks per rank are not run with pipeline.balance:
//   measured yet".
void check_virtual_stages(const config::Experiment& experiment, int num_stages);

}  // namespace mpipe::train
