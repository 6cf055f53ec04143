// Exporting a committed checkpoint: the weights file `mpipe train --export-weights` would have
// written at that step, made from the run directory alone (`mpipe export`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "checkpoint/file_digest.h"

namespace mpipe::checkpoint {

struct CheckpointExport {
  int64_t step = 0;         // the checkpoint exported
  int64_t num_tensors = 0;  // weights written
  FileDigest digest;        // of the file written
};

// Writes the weights of the committed checkpoint `step` of `run_dir` (the newest when nullopt) to
// `out`, atomically, byte for byte what the end-of-run export writes: the same tensors in the
// same order, with the same metadata (the manifest's config, and a tied matrix from its settings).
// The checkpoint is verified as a resume verifies it (meta.json's checksum, every shard's size,
// crc32 and metadata, every value finite, the optimizer state included) before the file appears,
// and its headers before the file is begun (no tensor in two shards, every optimizer state beside a
// weight of its shape); one tensor at a time is held. `out` must be new or a regular file. Throws
// InputError with one line naming the run directory, the step or the file, e.g. "runs/x: no
// committed checkpoint at step 7 (committed: 10, 20)", and for a damaged checkpoint the newest
// intact one to export instead ("...; the newest intact checkpoint is step 10 (DIR): export it
// with --step 10").
CheckpointExport export_checkpoint(const std::string& run_dir, std::optional<int64_t> step,
                                   const std::string& out);

}  // namespace mpipe::checkpoint
