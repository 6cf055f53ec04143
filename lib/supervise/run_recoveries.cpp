// The recoveries of one supervised run directory (see run_recoveries.h).
#include "supervise/run_recoveries.h"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "core/error.h"
#include "supervise/run_progress.h"

namespace mpipe::supervise {
namespace {

namespace fs = std::filesystem;

// When the run last logged a step (metrics.jsonl written: a step, or the record of the recovery
// before, when the relaunched job logged none), or `otherwise`.
RunRecoveries::Clock::time_point last_progress(const std::string& run_dir,
                                               RunRecoveries::Clock::time_point otherwise) {
  std::error_code error;
  const auto written = fs::last_write_time(fs::path(run_dir) / "metrics.jsonl", error);
  if (error) return otherwise;
  return std::chrono::file_clock::to_sys(written);
}

}  // namespace

void RunRecoveries::add(Recovery recovery, Clock::time_point failed_at) {
  // (Before the record below writes the file.)
  last_progress_before_failure_ = last_progress(run_dir_, failed_at);
  try {
    add_to_metrics(run_dir_, recovery);
  } catch (const Error& e) {
    spdlog::warn("supervise: {}; the recovery is in summary.json only", e.what());
  }
  recoveries_.push_back(std::move(recovery));
}

void RunRecoveries::watch() {
  if (recoveries_.empty()) return;
  Recovery& pending = recoveries_.back();
  if (pending.seconds_lost < 0 && last_logged_step(run_dir_) > pending.last_step) {
    pending.seconds_lost =
        std::chrono::duration<double>(Clock::now() - last_progress_before_failure_).count();
  }
}

void RunRecoveries::add_to_summary() const {
  nlohmann::ordered_json records = nlohmann::ordered_json::array();
  for (const Recovery& recovery : recoveries_) records.push_back(recovery_json(recovery));
  supervise::add_to_summary(run_dir_, records);
}

}  // namespace mpipe::supervise
