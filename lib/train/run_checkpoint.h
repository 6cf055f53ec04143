// Run checkpoints: every stage's shard written and committed by agreement among the ranks, and
// resuming from the newest committed step after checking it and the experiment's settings.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint_store.h"
#include "checkpoint/resume_settings.h"
#include "checkpoint/shard_copies.h"
#include "comm/communicator.h"
#include "config/experiment.h"
#include "train/background_copy.h"
#include "train/trainer.h"
#include "train/training_run.h"

namespace mpipe::train {

// Where a run starts.
struct ResumePoint {
  int64_t step = 0;       // steps already done: 0 for a new run
  bool finished = false;  // the checkpoint has train.steps steps (or more): not loaded
};

// The settings a run's checkpoint was saved with (meta.json's "settings").
struct StoredSettings {
  int64_t step = 0;  // the checkpoint's
  checkpoint::Settings settings;
};

// The settings of the newest committed checkpoint in `run_dir`, read and checked as a resume
// reads meta.json; nullopt when there is none. Throws InputError naming meta.json (and the newest
// intact checkpoint) when it is damaged or has no settings.
std::optional<StoredSettings> newest_stored_settings(const std::string& run_dir);

// `option` (--resume, or eval's --checkpoint) needs a committed checkpoint in `run_dir`. Throws
// InputError saying what was found: "runs/typo: --resume: no committed checkpoint (the directory
// does not exist)", "(it has no checkpoints/ folder)" or "(checkpoints/ holds no committed step)".
void require_committed_checkpoint(const std::string& run_dir,
                                  const std::string& option = "--resume");

// The checkpoints of one run. Every method is collective over `world`; failures are agreed
// (comm::agree), so every rank throws the same AgreedError and none is left waiting.
class RunCheckpoints {
 public:
  RunCheckpoints(Trainer& trainer, const config::Experiment& experiment, const RunOptions& options,
                 const comm::Communicator& world);

  // What options.resume asks for. kNever: a new run. Otherwise rank 0 picks the newest
  // committed step (none: an error for kRequired, an info line for kIfPresent), every rank
  // checks the settings it was saved with against this run's (refusing changes the training
  // depends on), and unless it already has train.steps steps, loads it, verified (meta.json's
  // keys and checksum, each shard against it, every value finite), and drops metrics.jsonl's
  // records after it. A finished one is not loaded (load does that on demand). With
  // checkpoint.peer_copy, the step is the newest any rank has committed, and before it is
  // checked every rank receives the files of it that its disk lacks (meta.json, then the shards)
  // from the lowest rank that holds each; a shard no rank holds ends every rank with one line
  // naming it and the hosts asked.
  ResumePoint resume();

  // Loads committed step `step` into the stage and optimizer, verified (`mpipe eval
  // --checkpoint`); with checkpoint.peer_copy, its files gathered first as resume() gathers them.
  void load(int64_t step);

  // Saves the state after `steps_done` steps, once the copies of the checkpoint before are done and
  // committed (wait_for_copies). Nothing is written if any stage holds a non-finite value. Each
  // stage of replica 0 writes its shard durably (with the optimizer's step count in its metadata,
  // which a resume checks against meta.json's) and reports its size and crc32 through an
  // allgather; rank 0 writes meta.json with them (this commits the step) and only then prunes old
  // checkpoints. With checkpoint.peer_copy, each writer sends its shards to its peer rank on
  // another host (checkpoint::peer_rank), which writes and verifies them, and the commit is
  // written by one rank on every host that holds a shard or a copy. With `overlap` (a checkpoint
  // that training goes on after) and MPI_THREAD_MULTIPLE, the copies travel in a background
  // thread on a communicator of their own and the step is committed at a later step boundary
  // (poll_copies); otherwise between the steps, before this returns. Any rank's failure fails
  // every rank, and the uncommitted shards, copies and commits are removed.
  void save(int64_t steps_done, bool overlap = false);

  // Collective, at every step boundary (no MPI call when no copies are pending, which every rank
  // knows alike): while a checkpoint's copies travel, a one-value allreduce says whether every
  // rank's are done; when they are, the step is committed as save() commits it (a failed copy:
  // its step discarded on every rank and AgreedError thrown, as a synchronous copy fails).
  void poll_copies();
  // Collective: the pending copies (if any) waited for, then committed or discarded as above.
  void wait_for_copies();

  // A copy thread still running is cancelled and joined (bounded by its deadline).
  ~RunCheckpoints();
  RunCheckpoints(const RunCheckpoints&) = delete;
  RunCheckpoints& operator=(const RunCheckpoints&) = delete;

 private:
  checkpoint::Settings settings() const;
  void check_settings(const nlohmann::json& meta, int64_t step) const;
  // Rank 0, resuming at `step` with train.steps or the schedule's length changed: one line on
  // how the learning-rate schedule goes on (its length kept, or stretched: the rate's jump).
  void describe_schedule(const checkpoint::Settings& saved, int64_t step) const;
  void load(int64_t step, const nlohmann::json& meta);
  // Collective: meta.json of committed `step`, read and checked on every rank (and, `resuming`,
  // the settings it records against this run's); with checkpoint.peer_copy, first meta.json and
  // then every shard it lists gathered onto the ranks whose disk lacks them (gather).
  nlohmann::json gathered_meta(int64_t step, bool resuming);
  // A shard record with the world rank that wrote it.
  struct ReportedShard {
    int rank = 0;
    checkpoint::ShardRecord record;
  };
  // Every rank's shard records (a rank writes one per chunk; other replicas none) on every rank.
  std::vector<ReportedShard> gather_shard_records(const std::vector<checkpoint::ShardRecord>& mine,
                                                  int64_t step) const;
  // A step written but not yet committed: what its commit needs.
  struct PendingCommit {
    int64_t step = 0;
    std::vector<ReportedShard> reported;
    std::vector<checkpoint::ShardRecord> shards;
    // The stages whose files this rank wrote for it (its shards, then the copies it receives),
    // removed again if the step is not committed.
    std::vector<int> held;
    bool committer = false;  // this rank writes meta.json
    std::string meta;        // the manifest (rank 0's; with peer copies, every rank's)
    std::unique_ptr<BackgroundCopy> copy;  // the copies in flight (overlapped ones)
  };
  // checkpoint.peer_copy: `copies` of the shards of `pending` made over `comm` (the world, or the
  // copy thread's own), each written by its receiver and checked against its record; the stages
  // this rank receives are added to pending.held before each is written (so a failure leaves
  // them listed for removal). Throws the first failure after every transfer is done.
  void copy_shards(const comm::Communicator& comm, PendingCommit& pending,
                   const std::vector<checkpoint::FileTransfer>& copies, const TransferWait& wait);
  // Collective: meta.json written on every committing rank, then old checkpoints pruned; a
  // failure on any rank removes the commits and files of the step everywhere and is thrown.
  void commit(PendingCommit& pending);
  // Collective: agrees on the finished copies of pending_ and commits its step.
  void commit_pending();
  // Whether copies may be overlapped (MPI_THREAD_MULTIPLE; rank 0 says once when not).
  bool can_overlap();
  // checkpoint.peer_copy, resuming `step`: every rank receives the files of it that it lacks,
  // numbered 0..num_files-1 (`mine`: those this rank's disk holds; `path(f)` names file f), from
  // the lowest rank that holds each (agreed with an allgather). One that no rank holds fails
  // every rank with one line naming it and the hosts of this job.
  void gather(int64_t step, const std::vector<int>& mine, int num_files,
              const std::function<std::string(int)>& path);
  // The host of every world rank (exchanged on the first call: collective then).
  const std::vector<std::string>& hosts() const;
  void drop_metrics_after(int64_t step) const;

  Trainer& trainer_;
  const config::Experiment& experiment_;
  const RunOptions& options_;
  const comm::Communicator& world_;
  checkpoint::CheckpointStore store_;
  // Steps this process committed, oldest first, with the stages whose shards or copies it
  // wrote: a rank other than rank 0 prunes its own files by them, since its folder may be a
  // node-local disk that rank 0's pruning never sees.
  std::deque<std::pair<int64_t, std::vector<int>>> committed_;
  mutable std::vector<std::string> hosts_;
  std::optional<bool> can_overlap_;  // decided at the first overlapped checkpoint
  // The copy thread's duplicate of the world, without a watchdog; before pending_, which uses it.
  std::optional<comm::Communicator> copy_comm_;
  std::unique_ptr<PendingCommit> pending_;  // the checkpoint whose copies are in flight
};

}  // namespace mpipe::train
