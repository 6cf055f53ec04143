// Run checkpoints: saving every stage's shard as one committed step, and resuming from the newest.
#pragma once

#include <cstdint>

#include "checkpoint/checkpoint_store.h"
#include "comm/communicator.h"
#include "config/experiment.h"
#include "train/trainer.h"

namespace mpipe::train {

// Collective over `world`: writes this rank's shard (first replica only), then rank 0 commits
// the step.
void save_checkpoint(Trainer& trainer, checkpoint::CheckpointStore& store,
                     const config::Experiment& experiment, const comm::Communicator& world,
                     int64_t steps_done);

// Loads the newest committed checkpoint into the trainer; returns the number of steps it had
// done (0 when there is none).
int64_t resume_from(Trainer& trainer, checkpoint::CheckpointStore& store);

}  // namespace mpipe::train
