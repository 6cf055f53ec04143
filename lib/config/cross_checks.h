// Cross-section checks: rules that tie keys of different sections together.
#pragma once

#include "config/experiment.h"
#include "config/field.h"

namespace mpipe::config {

// train.batch_size must split evenly into micro-batches on every data-parallel replica
// (plan::batch_split_problem; by micro_batches alone while data_parallel is auto). `root` is
// the whole experiment tree, for the error's position. The last of log.trace_steps must be at
// most train.steps. Under the wsd learning-rate schedule, warmup_steps plus the decay's steps
// must be at most train.steps.
void check_cross_sections(const Field& root, const Experiment& experiment);

}  // namespace mpipe::config
