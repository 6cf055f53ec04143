// What a supervisor reads of a run directory: the last step logged in metrics.jsonl, the newest
// committed checkpoint; and what it adds: each recovery to metrics.jsonl when it relaunches, all
// of them to summary.json at the end.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "supervise/recovery.h"

namespace mpipe::supervise {

// The step of metrics.jsonl's last training record (one without "split" or "event"); 0 when
// there is none (no file yet, or no whole record).
int64_t last_logged_step(const std::string& run_dir);

// The newest committed checkpoint's step; 0 when there is none.
int64_t newest_checkpoint_step(const std::string& run_dir);

// Appends `recovery`'s record to RUN_DIR/metrics.jsonl (log::MetricsWriter::recovery: at its
// resumed step, without the seconds lost, which only the relaunched job's progress tells). Call
// between the failed job and the relaunch, when no rank writes the file. Throws Error naming the
// file when it cannot be written.
void add_to_metrics(const std::string& run_dir, const Recovery& recovery);

// Adds "recoveries": `recoveries` to RUN_DIR/summary.json (replaced atomically). Throws Error
// naming the file when it cannot be read or written.
void add_to_summary(const std::string& run_dir, const nlohmann::ordered_json& recoveries);

}  // namespace mpipe::supervise
