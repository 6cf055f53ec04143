// What a supervisor reads of a run directory: the last step logged in metrics.jsonl, the newest
// committed checkpoint; and what it adds: each recovery and widening to metrics.jsonl when it
// relaunches, all of them to summary.json at the end.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "supervise/recovery.h"
#include "supervise/widening.h"

namespace mpipe::supervise {

// The step of metrics.jsonl's last training record (one without "split" or "event"); 0 when
// there is none (no file yet, or no whole record).
int64_t last_logged_step(const std::string& run_dir);

// Whether the file at `path` (metrics.jsonl, summary.json, a spool's status.json) exists and was
// last written at `since` or later.
bool written_since(const std::string& path, std::chrono::system_clock::time_point since);

// The newest committed checkpoint's step; 0 when there is none.
int64_t newest_checkpoint_step(const std::string& run_dir);

// Appends `recovery`'s record to RUN_DIR/metrics.jsonl (log::MetricsWriter::recovery: at its
// resumed step, without the seconds lost, which only the relaunched job's progress tells). Call
// between the failed job and the relaunch, when no rank writes the file. Throws Error naming the
// file when it cannot be written.
void add_to_metrics(const std::string& run_dir, const Recovery& recovery);
// The same for a widening (log::MetricsWriter::widening), between the stopped job and its wider
// relaunch.
void add_to_metrics(const std::string& run_dir, const Widening& widening);

// Sets each key of `records` ("recoveries", "widenings": their lists) in RUN_DIR/summary.json
// (replaced atomically). Throws Error naming the file when it cannot be read or written.
void add_to_summary(const std::string& run_dir, const nlohmann::ordered_json& records);

}  // namespace mpipe::supervise
