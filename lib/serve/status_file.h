// The spool's status.json: every experiment's state (queued, running with its progress, done,
// failed with its error line, cancelled, interrupted) and the daemon's, as written by the
// daemon's rank 0 (atomically) and read by `mpipe status`.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace mpipe::serve {

class Spool;
struct FailureNote;

// How many times a daemon resumes an experiment that ended the job by losing a peer (a node that
// died or hung: the resumed run may get healthy ones) before it records the experiment as failed.
inline constexpr int64_t kLostPeerResumes = 1;

enum class ExperimentState {
  kQueued,       // waiting in queue/
  kRunning,      // the daemon runs it
  kInterrupted,  // stopped by a signal with a checkpoint: the next daemon resumes it first
  kDone,
  kFailed,     // `error` says why
  kCancelled,  // by `mpipe cancel` (a running one stopped with a checkpoint)
};

// "queued", "running", "interrupted", "done", "failed", "cancelled".
std::string state_name(ExperimentState state);
// The inverse; throws InputError "state 'x': unknown".
ExperimentState parse_state(const std::string& name);
// Done, failed or cancelled: nothing more happens to it.
bool has_ended(ExperimentState state);

struct ExperimentStatus {
  std::string name;
  int64_t seq = 0;
  ExperimentState state = ExperimentState::kQueued;
  std::string config;  // the submitted file
  std::string run_dir;
  // The layout it runs with (0 until it starts): stages x data-parallel replicas, and each
  // replica's micro-batches per step.
  int stages = 0;
  int replicas = 0;
  int micro_batches = 0;
  int64_t step = 0;                     // steps done
  int64_t steps = 0;                    // train.steps
  std::optional<double> loss;           // the last logged training loss (window mean)
  std::optional<double> samples_per_s;  // of the last logged window
  std::optional<double> eta_s;          // while running
  std::optional<double> eval_loss;      // done: the final evaluation
  std::optional<double> eval_accuracy;
  std::string error;  // failed: the one-line error (interrupted: why, if it ended the job)
  int64_t lost_peer_resumes = 0;          // times a daemon resumed it after it lost a peer
  std::string submitted, started, ended;  // UTC times ("" = not yet)
};

struct DaemonStatus {
  std::string state;   // "serving" or "stopped"
  std::string reason;  // why it stopped: "signal", "idle"
  int pid = 0;
  std::string host;
  int ranks = 0;
  std::string since;    // UTC start time
  std::string updated;  // UTC time of the last write
};

struct SpoolStatus {
  std::optional<DaemonStatus> daemon;
  std::vector<ExperimentStatus> experiments;  // in submission order

  ExperimentStatus* find(const std::string& name);
  const ExperimentStatus* find(const std::string& name) const;
  // The experiment named `name`, added (in submission order, by `seq`) if it is not there.
  ExperimentStatus& upsert(const std::string& name, int64_t seq);
};

nlohmann::json to_json(const SpoolStatus& status);
// Throws InputError "`where`: not a status file: <reason>".
SpoolStatus status_from_json(const nlohmann::json& json, const std::string& where);

// The file's status; empty when it does not exist yet. Throws InputError for a damaged file
// (one that is not a regular file too: a FIFO is refused, not waited on).
SpoolStatus read_status_file(const std::string& path);
// Replaces the file atomically (readers see the old or the new one, whole).
void write_status_file(const std::string& path, const SpoolStatus& status);

// Adds what the spool's folders know and the file may not yet (no daemon running, or it has not
// looked yet): queued experiments, and cancel requests of experiments that never started.
void merge_spool(SpoolStatus& status, const Spool& spool);

// A daemon recorded as serving on this host whose process no longer exists (killed without a
// chance to record its stop) becomes "gone". Daemons on other hosts are left as recorded.
void note_dead_daemon(SpoolStatus& status);

// What a failure note (the experiment ended the whole job) makes of the experiment's status:
// failed with the note's error for a memory limit (it would fail the same way again) and for a
// peer lost after kLostPeerResumes resumes, unless `supervised` (the daemon runs under mpipe
// supervise, which relaunches it on the hosts that answer: its --max-restarts bounds the resumes);
// else interrupted with the error (the next daemon resumes it). Does not count the resume (the
// daemon does, when it resumes it).
void apply_failure_note(ExperimentStatus& experiment, const FailureNote& note,
                        bool supervised = false);

// Applies the failure note of the spool's active experiment, if its folder holds one: the job
// that ran it ended, and its daemon could not record how (a rank other than 0 failed).
void note_job_failure(SpoolStatus& status, const Spool& spool);

// Records each damaged entry of the spool (Spool::damaged_entries) as failed with its error,
// named by its file name (the daemon moves it to quarantine/ and records it the same way).
void note_damaged_entries(SpoolStatus& status, const Spool& spool);

// What `mpipe status` shows: status.json merged with what the spool's folders know (merge_spool,
// note_damaged_entries, note_job_failure, note_dead_daemon). A damaged status.json or failure
// note is left out, its one-line error added to `problems`: status is shown whatever the spool
// holds.
SpoolStatus spool_status_for_display(const Spool& spool, std::vector<std::string>& problems);

// The table `mpipe status` prints: a line about the daemon, then one line per experiment
// (name, state, layout "stages x replicas", step/steps, loss, samples/s, and the ETA, or the
// error of a failed or interrupted one).
std::string format_status_table(const SpoolStatus& status);

}  // namespace mpipe::serve
