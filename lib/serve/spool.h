// Spool: the folder a daemon serves and the queue operations on it. Layout of DIR:
//   queue/<seq>-<name>.json   submitted experiments waiting to run, lowest sequence number first
//   active/<seq>-<name>.json  the experiment the daemon runs (or ran when it was stopped: a new
//                             daemon resumes it first)
//   cancel/<name>             cancel requests: the experiment's queue entry (kept, so a name
//                             once used stays taken)
//   runs/<name>/              each experiment's run directory, laid out like a `train` run, with
//                             the experiment file it ran (experiment.yaml), its log
//                             (experiment.log), and failure.json if the experiment ended the whole
//                             job (FailureNote)
//   quarantine/               what the daemon could not read, moved aside (DamagedEntry)
//   status.json               the daemon's record of every experiment (rank 0 its only writer)
//   .lock                     held by the daemon's rank 0 for its whole life: one daemon a spool
//   .queue.lock               held for each change of queue/ and active/ (submit, take, cancel)
//   .sequence                 the last sequence number given out
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mpipe::serve {

// One submitted experiment.
struct QueueEntry {
  int64_t seq = 0;                     // submission order, from 1
  std::string name;                    // unique in the spool
  std::string config;                  // the submitted file (absolute path), for display
  std::string yaml;                    // its text when submitted: what runs
  std::vector<std::string> overrides;  // --set key=value, applied to `yaml`
  int64_t steps = 0;                   // train.steps after the overrides
  std::string submitted;               // UTC time
};

// Names are file names: a letter or digit first, then letters, digits, '.', '_', '-'; at most
// 100 characters.
bool is_experiment_name(const std::string& name);
// Throws InputError "--name 'a/b': must ..." unless is_experiment_name(name).
void check_experiment_name(const std::string& name);

// A file (or folder) in queue/ or active/ that is not an entry (hidden files and temporary ones
// aside): not a regular file, not JSON, a key missing, a name that is no experiment name, or a
// name and sequence number other than its file name (<seq>-<name>.json) says.
struct DamagedEntry {
  std::string path;
  int64_t seq = 0;    // the number its file name starts with (0: none)
  std::string error;  // one line: "DIR/queue/000003-x.json: not a queue entry: <reason>"
};

// A damaged entry the daemon moved to quarantine/ (recorded in status.json as failed).
struct QuarantinedEntry {
  std::string name;  // its file name in quarantine/, which names it in status.json
  int64_t seq = 0;   // from its file name
  std::string
      error;  // the DamagedEntry's error and where it went: "...; moved to DIR/quarantine/x"
};

// Why an experiment ended the whole job from one rank (errors no agreement covers).
enum class JobFailure {
  kMemoryLimit,  // the rank passed pipeline.memory_limit mid-step (MemoryLimitExceeded, exit 4)
  kLostPeer,     // the rank's watchdog gave up on a peer (WatchdogTimeout, exit 3)
};

// "memory_limit", "lost_peer".
std::string job_failure_name(JobFailure failure);
// The inverse; throws InputError "failure 'x': unknown".
JobFailure parse_job_failure(const std::string& name);

// What the failing rank writes to runs/<name>/failure.json (atomically) just before the job
// ends; the next daemon on the spool reads it to record how the experiment ended.
struct FailureNote {
  std::string name;  // the experiment
  JobFailure failure = JobFailure::kMemoryLimit;
  std::string error;  // the one-line message the job ended with
  int rank = 0;       // the rank that wrote it
  std::string time;   // UTC
};

// failure.json's text for `note`, and the note of such a text (throws nlohmann::json::exception
// or InputError when it is not one).
std::string failure_note_text(const FailureNote& note);
FailureNote parse_failure_note(const std::string& text);

enum class CancelResult {
  kRemovedFromQueue,  // it was waiting: it will never run
  kStopRequested,     // it is the active one: the daemon stops it at its next step
};

class Spool {
 public:
  explicit Spool(std::string dir);

  const std::string& dir() const { return dir_; }
  std::string status_path() const;
  std::string lock_path() const;
  std::string run_dir(const std::string& name) const;
  // runs/<name>/experiment.yaml: the experiment file the daemon runs.
  std::string experiment_file(const std::string& name) const;
  // runs/<name>/experiment.log: rank 0's log and progress lines of each time it ran.
  std::string experiment_log(const std::string& name) const;

  // Creates the folders (those that exist are kept). Throws Error naming the folder.
  void create() const;
  // Whether DIR holds a spool (its queue/ folder exists).
  bool exists() const;

  // Adds `entry` at the end of the queue and returns it with its sequence number and name (an
  // empty name becomes "<stem>-<n>" with the smallest free n). Throws InputError if the name is
  // invalid or already used by an experiment of this spool (queued, active, run or cancelled).
  QueueEntry submit(QueueEntry entry, const std::string& stem) const;
  // The waiting experiments, in submission order (damaged entries left out).
  std::vector<QueueEntry> queued() const;
  // The experiment the daemon runs (or ran when it stopped).
  std::optional<QueueEntry> active() const;
  // The damaged entries of queue/ and active/, in file name order.
  std::vector<DamagedEntry> damaged_entries() const;
  // Moves every damaged entry to quarantine/ (under .queue.lock) and returns what it moved.
  std::vector<QuarantinedEntry> quarantine_damaged_entries() const;
  // Moves `path` (a file or folder of the spool) to quarantine/ under its own file name, or that
  // name and a number when it is taken, and returns where it went. Throws Error naming it.
  std::string quarantine(const std::string& path) const;
  // The active experiment if there is one, else the oldest queued one, which becomes active.
  std::optional<QueueEntry> take_next() const;
  // Removes the active experiment (it has ended).
  void finish_active() const;
  // Cancels `name`: removes it from the queue, or asks the daemon to stop it if it is active.
  // Throws InputError "DIR: no experiment named 'x'" or "DIR: 'x' is neither queued nor
  // running (it has ended)".
  CancelResult cancel(const std::string& name) const;
  // Whether `name` has a cancel request.
  bool cancel_requested(const std::string& name) const;
  // The experiments with a cancel request (those whose request cannot be read left out: the
  // request itself still counts).
  std::vector<QueueEntry> cancelled() const;
  // What the experiment runs: runs/<name>/experiment.yaml if it exists (a resumed experiment
  // keeps the file it started with), else the submitted text.
  std::string experiment_text(const QueueEntry& entry) const;
  // runs/<name>/failure.json.
  std::string failure_note_path(const std::string& name) const;
  // Writes `note` to failure_note_path(note.name) atomically (creating the run directory).
  // Throws Error naming the file.
  void write_failure_note(const FailureNote& note) const;
  // The note of `name`, if this rank's spool holds one. Throws InputError
  // "DIR/runs/x/failure.json: not a failure note: <reason>" for a damaged one.
  std::optional<FailureNote> read_failure_note(const std::string& name) const;
  // Removes the note of `name` (none is fine). Throws Error naming the file.
  void remove_failure_note(const std::string& name) const;
  // Makes runs/<name>/experiment.yaml hold `yaml` (written only if it does not already) and
  // returns its path.
  std::string write_experiment_file(const std::string& name, const std::string& yaml) const;

 private:
  std::string folder(const char* name) const;
  // The readable entries of `folder`, in submission order; damaged ones go to `damaged`.
  std::vector<QueueEntry> entries_in(const std::string& folder,
                                     std::vector<DamagedEntry>* damaged = nullptr) const;
  bool name_taken(const std::string& name) const;
  std::string unique_name(const std::string& stem) const;
  // One more than the highest sequence number .sequence, the entries and status.json know.
  int64_t next_sequence_number() const;

  std::string dir_;
};

}  // namespace mpipe::serve
