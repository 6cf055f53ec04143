// Communication settings (the `comm:` section of an experiment): the watchdog's deadlines of waits
// on peers, and the opt-in MPI progress thread.
#pragma once

namespace mpipe::comm {

struct CommConfig {
  // Deadline of each wait during a training step; 0 = auto: max(5 min, 20 x the slowest step
  // measured after the warm-up steps).
  double timeout_s = 0.0;
  // Deadline of each wait at start-up, in the warm-up steps, evaluations, checkpoints and at the
  // end of the run.
  double startup_timeout_s = 600.0;
  // After a stop is requested (SIGTERM/SIGUSR1), how long a wait in a training step may still
  // take before the job ends without a checkpoint; 0 = auto: max(10 s, 2 x the slowest step),
  // after the warm-up steps only.
  double stop_grace_s = 0.0;
  // Not a setting: how long a rank whose wait expired leaves the job's one line to another rank
  // whose wait expired too (which ends the job) before it reports itself (tests shorten it).
  double report_deferral_s = 60.0;
  // Run a comm::ProgressThread during training (needs MPI_THREAD_MULTIPLE and, to pay off, a
  // spare core per rank).
  bool progress_thread = false;
};

}  // namespace mpipe::comm
