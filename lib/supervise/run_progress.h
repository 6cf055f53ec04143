// What a supervisor reads of a run directory: the last step logged in metrics.jsonl, the newest
// committed checkpoint, and the recoveries it adds to summary.json at the end.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace mpipe::supervise {

// The step of metrics.jsonl's last training record (one without "split"); 0 when there is none
// (no file yet, or no whole record).
int64_t last_logged_step(const std::string& run_dir);

// The newest committed checkpoint's step; 0 when there is none.
int64_t newest_checkpoint_step(const std::string& run_dir);

// Adds "recoveries": `recoveries` to RUN_DIR/summary.json (replaced atomically). Throws Error
// naming the file when it cannot be read or written.
void add_to_summary(const std::string& run_dir, const nlohmann::ordered_json& recoveries);

}  // namespace mpipe::supervise
