// The message tags of an experiment: one comm::TagSpace for its pipeline messages and its weight
// export, sized by the experiment and checked against MPI_TAG_UB at preflight.
#pragma once

#include "comm/tag_space.h"
#include "config/experiment.h"
#include "model/model_builder.h"

namespace mpipe::train {

// What the experiment's messages must tell apart: pipeline::Link's directions, micro-batches and
// chunks per rank, the weight tensors a rank exports one by one (at most the model's), and with
// optimizer.shard_across_replicas a tied matrix's uses (TiedCopies' exchange on shards).
comm::TagSpace message_tags(const config::Experiment& experiment, const model::ModelInputs& inputs);

// Throws InputError naming pipeline.micro_batches when the tags do not all fit under `tag_ub`:
// "exp.yaml:9: pipeline.micro_batches: 4096 micro-batches: message tags need 23 bits (...), but
// this MPI library's MPI_TAG_UB is 32767 (15 bits)".
void check_message_tags(const config::Experiment& experiment, const comm::TagSpace& tags,
                        int tag_ub);

}  // namespace mpipe::train
