// Exporting a committed checkpoint: the weights file `mpipe train --export-weights` would have
// written at that step, made from the run directory alone (`mpipe export`).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/file_digest.h"
#include "checkpoint/resume_settings.h"
#include "checkpoint/safetensors.h"

namespace mpipe::checkpoint {

struct CheckpointExport {
  int64_t step = 0;         // the checkpoint exported
  int64_t num_tensors = 0;  // weights written
  FileDigest digest;        // of the file written
};

// A checkpoint as its manifest and its shards' headers describe it, for ModelCheck.
struct CheckpointTensors {
  const nlohmann::json& meta;  // meta.json, verified
  std::string meta_path;
  std::string step_dir;
  Settings settings;                // meta.json's "settings"
  std::vector<TensorInfo> tensors;  // every shard's, weights and optimizer state
};

// Checks that a checkpoint's tensors are those of the model its manifest records (names and
// shapes, as a resume checks them against its model: train/checkpoint_model.h); throws InputError.
using ModelCheck = std::function<void(const CheckpointTensors&)>;

// Writes the weights of the committed checkpoint `step` of `run_dir` (the newest when nullopt) to
// `out`, atomically, byte for byte what the end-of-run export writes: the same tensors in the
// same order, with the same metadata (the manifest's config, and the model and a tied matrix
// from its settings).
// The checkpoint is verified as a resume verifies it (meta.json's checksum, every shard's size,
// crc32 and metadata, every value finite, the optimizer state included) before the file appears,
// and its headers before the file is begun (no tensor in two shards, every optimizer state beside a
// weight of its shape, and `check_model`); one tensor at a time is held. `out` must be new or a
// regular file. Throws InputError with one line naming the run directory, the step or the file,
// e.g. "runs/x: no committed checkpoint at step 7 (committed: 10, 20)", and for a damaged
// checkpoint the newest intact one to export instead ("...; the newest intact checkpoint is step 10
// (DIR): export it with --step 10").
CheckpointExport export_checkpoint(const std::string& run_dir, std::optional<int64_t> step,
                                   const std::string& out, const ModelCheck& check_model);

}  // namespace mpipe::checkpoint
