// CheckpointStore: the checkpoints/ folder of a run directory (sharded by stage, committed by
// meta.json).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/safetensors.h"

namespace mpipe::checkpoint {

// Layout: <run_dir>/checkpoints/step_<NNNNNNNN>/stage_<s>.safetensors, one per pipeline
// stage, written by that stage's rank, plus meta.json written last by one rank after every
// shard is complete. A step folder without meta.json is incomplete and is ignored.
// Tensor names are global (`layers.<global layer>.<param>`, `buffers.<global layer>.<name>`,
// `optim.<slot>.layers.<global layer>.<param>`), so a run with another number of stages can
// pick out its own.
class CheckpointStore {
 public:
  // keep: how many committed checkpoints commit() leaves in place (>= 1).
  CheckpointStore(std::string run_dir, int keep);

  std::string step_dir(int64_t step) const;
  std::string shard_path(int64_t step, int stage) const;
  std::string meta_path(int64_t step) const;

  // Writes this stage's shard atomically (creating folders as needed). Rewriting a step
  // first removes its meta.json, so a half-rewritten checkpoint is never seen as committed.
  // `metadata` is stored in the shard; the keys "step" and "stage" are added.
  void write_shard(int64_t step, int stage, const std::vector<NamedTensor>& tensors,
                   const std::map<std::string, std::string>& metadata = {});

  // Call once every shard of `step` is written. `meta` must hold "num_stages"; "step" is
  // set (and "time", UTC ISO 8601, if absent). Checks that every shard exists, writes
  // meta.json atomically, then deletes all but the `keep` newest committed checkpoints and
  // every incomplete step folder older than `step`.
  void commit(int64_t step, const nlohmann::json& meta);

  // Committed steps, ascending.
  std::vector<int64_t> committed_steps() const;
  std::optional<int64_t> latest_committed() const;

  // meta.json of a committed step. Throws InputError naming the file if missing or corrupt.
  nlohmann::json read_meta(int64_t step) const;

  // Every shard's tensors merged (in stage order). Throws InputError naming the file on a
  // missing or corrupt shard, or a tensor name present in two shards.
  std::vector<NamedTensor> read_all(int64_t step) const;

 private:
  std::string checkpoints_dir() const;
  // Step folders found on disk (committed or not), ascending.
  std::vector<int64_t> step_folders() const;
  void prune(int64_t committed_step) const;

  std::string run_dir_;
  int keep_;
};

}  // namespace mpipe::checkpoint
