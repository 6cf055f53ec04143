// Run checkpoints: every stage's shard written, then the step committed; resume from the newest.
#include "train/run_checkpoint.h"

#include <optional>

#include "comm/watchdog.h"
#include "train/stage_tensors.h"

namespace mpipe::train {

void save_checkpoint(Trainer& trainer, checkpoint::CheckpointStore& store,
                     const config::Experiment& experiment, const comm::Communicator& world,
                     int64_t steps_done) {
  const comm::WatchScope watch(world, "checkpoint", comm::WaitPhase::kLong);
  if (trainer.topology().replica == 0) {
    store.write_shard(steps_done, trainer.topology().stage,
                      stage_state(trainer.stage(), trainer.optimizer()));
  }
  world.barrier();
  if (world.rank() == 0) {
    store.commit(steps_done, {{"num_stages", trainer.topology().num_stages},
                              {"optimizer_steps", trainer.optimizer().steps_taken()},
                              {"seed", experiment.train.seed},
                              {"config", experiment.source}});
  }
  world.barrier();
}

int64_t resume_from(Trainer& trainer, checkpoint::CheckpointStore& store) {
  std::optional<int64_t> latest = store.latest_committed();
  if (!latest) return 0;
  load_stage_state(trainer.stage(), trainer.optimizer(), store.read_all(*latest),
                   store.step_dir(*latest));
  trainer.optimizer().set_steps_taken(
      store.read_meta(*latest).at("optimizer_steps").get<int64_t>());
  return *latest;
}

}  // namespace mpipe::train
