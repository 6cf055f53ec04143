// CheckpointStore: the checkpoints/ folder of a run directory (sharded by stage, committed by
// meta.json, verified by the checksums meta.json records and by meta.json's own checksum).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/file_digest.h"
#include "checkpoint/safetensors.h"

namespace mpipe::checkpoint {

// What meta.json records for one shard: the file stage_<stage>.safetensors of `step`, its size
// and crc32.
struct ShardRecord {
  int stage = 0;
  int64_t step = 0;
  FileDigest digest;
};

// What a checkpoint is read for: the error about a damaged one advises what to do with the newest
// intact one accordingly (remove the newer folders to resume from it, or export it by its step).
enum class CheckpointUse { kResume, kExport };

// The meta.json key holding the crc32 of the rest of meta.json.
inline constexpr const char* kManifestChecksumKey = "manifest_crc32";

// The manifest checksum of `meta`: zlib's crc32, as 8 hex digits, of its compact JSON without
// manifest_crc32 (`meta.dump()`: keys sorted, no spaces; Python's json.dumps(meta,
// sort_keys=True, separators=(",", ":"), ensure_ascii=False) writes the same text).
std::string manifest_checksum(const nlohmann::json& meta);

// meta[key]; throws InputError "<path>: missing key '<key>'" if meta.json has no such key.
const nlohmann::json& required_key(const nlohmann::json& meta, const std::string& path,
                                   const std::string& key);

// Layout: <run_dir>/checkpoints/step_<NNNNNNNN>/stage_<s>.safetensors, one per pipeline
// stage, written by that stage's rank, plus meta.json written last by one rank once every
// rank has reported its shard written (see train::RunCheckpoints). A step folder without
// meta.json is incomplete and is ignored. meta.json lists every shard with its size, crc32 and
// step, and carries a checksum over itself (manifest_crc32); reading verifies all of them, and
// cross-checks meta.json against each shard's own metadata. Tensor names are global
// (`layers.<global layer>.<param or buffer>`, `optim.<slot>.layers.<global layer>.<param>`), so a
// run with another number of stages can pick out its own.
class CheckpointStore {
 public:
  // keep: how many committed checkpoints commit() leaves in place (>= 1).
  CheckpointStore(std::string run_dir, int keep);

  const std::string& run_dir() const { return run_dir_; }
  std::string checkpoints_dir() const;
  std::string step_dir(int64_t step) const;
  std::string shard_path(int64_t step, int stage) const;
  std::string meta_path(int64_t step) const;

  // Writes this stage's shard durably (temporary file, fsync, rename, fsync of the folders),
  // creating folders as needed, and returns what meta.json must record for it. The tensors are
  // views, streamed one at a time: the write copies no tensor. Rewriting a
  // step first removes its meta.json, so a half-rewritten checkpoint is never seen as
  // committed. `metadata` is stored in the shard; the keys "step" and "stage" are added. Every
  // key of it must be in meta.json with the same value when the step is read (e.g.
  // "optimizer_steps"), so the manifest cannot be changed apart from its shards.
  // Throws Error when the run directory this store has seen (at construction, or made by its
  // first write) was removed or replaced since: its earlier checkpoints on this disk are gone,
  // so the run must not go on as if they were there (e.g. a node's scratch wiped mid-run):
  // "runs/x: the run directory was removed or replaced during the run, and the checkpoints it
  // held on this disk with it".
  ShardRecord write_shard(int64_t step, int stage, const std::vector<TensorView>& tensors,
                          const std::map<std::string, std::string>& metadata = {});
  // The same with the tensors of `layout` given one at a time: `values(i)` is tensor i's values
  // (read before the next call), asked once per tensor in layout order, so a caller that makes a
  // tensor's values (gathers them) holds one at a time.
  ShardRecord write_shard(int64_t step, int stage, std::vector<TensorInfo> layout,
                          const std::function<std::span<const float>(size_t)>& values,
                          const std::map<std::string, std::string>& metadata = {});
  // Before a file of `step` is written on this disk (a shard, or the copy of one another rank
  // sends): the run-directory check above, the step's folder made, and its meta.json removed (a
  // step being rewritten is no longer committed).
  void prepare_step(int64_t step);
  // Removes this stage's shard of an uncommitted step (after a failed commit); best effort.
  void discard_shard(int64_t step, int stage) const;

  // Commits `step` once every shard is written: write_commit, then prune.
  void commit(int64_t step, const nlohmann::json& meta, const std::vector<ShardRecord>& shards);
  // Writes the commit of `step`: `shards` holds one record per stage 0..K-1, as the writing ranks
  // reported them (this rank need not see the files). `meta` must hold "num_stages" (K); "step",
  // "shards", "time" (UTC ISO 8601, if absent) and, last, manifest_crc32 are set. Writes meta.json
  // atomically.
  void write_commit(int64_t step, const nlohmann::json& meta,
                    const std::vector<ShardRecord>& shards);
  // After the commit of `committed_step`: deletes all but the `keep` newest committed checkpoints
  // and every incomplete step folder older than it; a failure is a warning (the commit stands).
  void prune(int64_t committed_step) const;
  // Removes the meta.json of `step` (a commit written here that another host failed to write, so
  // the step is not committed); best effort.
  void uncommit(int64_t step) const;

  // The stages whose shard this disk holds intact for committed step `step`, whose meta.json
  // (read_meta's) is `meta`: the file is there, with the size and crc32 meta.json records.
  // Ascending.
  std::vector<int> intact_shards(int64_t step, const nlohmann::json& meta) const;

  // Committed steps (those with a meta.json), ascending.
  std::vector<int64_t> committed_steps() const;
  std::optional<int64_t> latest_committed() const;

  // meta.json of a committed step, checked: its keys (manifest_crc32, num_stages, step, shards,
  // time), its manifest checksum, and the form of each. Throws InputError naming the file (and
  // the key) if it is missing, corrupt or edited, followed by which earlier committed checkpoint
  // is intact (as read_all), e.g. ".../meta.json: missing key 'shards'; the newest intact ..." or
  // ".../meta.json: manifest checksum mismatch (crc32 1a2b3c4d, manifest_crc32 says 5e6f7a8b);
  // ...".
  nlohmann::json read_meta(int64_t step, CheckpointUse use = CheckpointUse::kResume) const;

  // Every shard's tensors merged (in stage order), each shard verified against meta.json
  // (size, crc32, and the step, stage and every other key in its own metadata) and each tensor
  // checked to be finite. Throws InputError with one line naming the file on a missing, corrupt
  // or foreign shard, a non-finite value, or a tensor name present in two shards,
  // followed by which earlier committed checkpoint is intact, e.g.
  // ".../step_00000020/stage_1.safetensors: checksum mismatch (crc32 1a2b3c4d, meta.json says
  // 5e6f7a8b); the newest intact checkpoint is step 10 (.../step_00000010): remove
  // step_00000020 to resume from it".
  std::vector<NamedTensor> read_all(int64_t step) const;
  // Like read_all, without holding the tensors: every shard is verified first, then each tensor's
  // values are read straight into the span `destination` gives for it (or skipped), so a rank
  // reads only its own stage's tensors and holds no copy of them (a resume on any K).
  void read_into(int64_t step, const TensorDestination& destination,
                 CheckpointUse use = CheckpointUse::kResume) const;

  // Throws InputError (as read_all, without the hint) unless every shard of `step` is intact
  // and finite; holds one tensor at a time.
  void verify(int64_t step) const;
  // What to do about the damaged checkpoint `broken_step`, for what follows an error about it:
  // "the newest intact checkpoint is step 10 (DIR): remove step_00000020 to resume from it" (or,
  // for kExport, ": export it with --step 10"), or "no earlier committed checkpoint is intact".
  std::string intact_hint(int64_t broken_step, CheckpointUse use) const;

 private:
  // Step folders found on disk (committed or not), ascending.
  std::vector<int64_t> step_folders() const;
  // read_meta without the hint.
  nlohmann::json read_checked_meta(int64_t step) const;
  void remove_old(int64_t committed_step) const;
  // Verifies one shard against its record and the rest of meta.json `meta`.
  void check_shard(const ShardRecord& expected, const nlohmann::json& meta) const;
  void read_verified(int64_t step, const TensorDestination& destination) const;

  // The run directory's device and inode, once seen (a directory removed and made again, or
  // replaced, has another).
  struct DirectoryIdentity {
    uint64_t device = 0;
    uint64_t inode = 0;
    bool operator==(const DirectoryIdentity&) const = default;
  };
  std::optional<DirectoryIdentity> run_dir_identity() const;

  std::string run_dir_;
  int keep_;
  std::optional<DirectoryIdentity> seen_run_dir_;
};

}  // namespace mpipe::checkpoint
