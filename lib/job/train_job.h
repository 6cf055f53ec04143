// One training run the way `mpipe train` runs it: preflight on every rank, logging at the
// experiment's level, the run directory's lock, then the run. `mpipe train` runs one; the daemon
// runs one per experiment.
#pragma once

#include "comm/communicator.h"
#include "config/experiment.h"
#include "job/preflight.h"
#include "train/training_run.h"

namespace mpipe::job {

struct TrainOutcome {
  config::Experiment experiment;
  train::RunResult result;
};

// Collective over `world`. `options.run_dir`, `options.export_weights` and `options.init_weights`
// are taken from `inputs`, `options.settings` from the resolved experiment. With
// `inputs.stored_settings` and a committed checkpoint in the run directory, the experiment is the
// file with the settings that checkpoint was saved with (config::resume_overrides) and then
// `inputs.overrides`; rank 0 logs the settings restored where the file differs. Rank 0 holds the
// run directory's lock (checkpoint::RunLock) for the whole run. Throws AgreedError on every rank
// for bad input, a run directory another job holds, and a run that fails (a non-finite loss, a
// damaged checkpoint, a full disk).
TrainOutcome run_train_job(TrainInputs inputs, train::RunOptions options,
                           const comm::Communicator& world);

// Gives `world`'s watchdog the deadlines of the experiment at `config_path` before anything is
// agreed: the start-up handshake and preflight wait on peers too. Each rank reads its own file
// (the comm: section may differ between ranks); one it cannot read keeps the defaults, and
// preflight reports the problem.
void use_experiment_deadlines(const std::string& config_path,
                              const std::vector<std::string>& overrides,
                              const comm::Communicator& world);

}  // namespace mpipe::job
