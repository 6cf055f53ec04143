// The recoveries and widenings of one supervised run directory (see run_recoveries.h).
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

// Adds `record` to the run's metrics.jsonl; a failure is a warning (it is in summary.json only).
template <typename Record>
void record_in_metrics(const std::string& run_dir, const Record& record, const char* what) {
  try {
    add_to_metrics(run_dir, record);
  } catch (const Error& e) {
    spdlog::warn("supervise: {}; the {} is in summary.json only", e.what(), what);
  }
}

}  // namespace

void RunRecoveries::add(Recovery recovery, Clock::time_point failed_at) {
  // (Before the record below writes the file.)
  pending_since_ = last_progress(run_dir_, failed_at);
  pending_ = Pending::kRecovery;
  record_in_metrics(run_dir_, recovery, "recovery");
  recoveries_.push_back(std::move(recovery));
}

void RunRecoveries::add(Widening widening, Clock::time_point stopped_at) {
  pending_since_ = stopped_at;
  pending_ = Pending::kWidening;
  record_in_metrics(run_dir_, widening, "widening");
  widenings_.push_back(std::move(widening));
}

void RunRecoveries::watch() {
  if (pending_ == Pending::kNone) return;
  LayoutChange& change =
      pending_ == Pending::kRecovery ? recoveries_.back().change : widenings_.back().change;
  if (last_logged_step(run_dir_) <= change.last_step) return;
  change.seconds = std::chrono::duration<double>(Clock::now() - pending_since_).count();
  pending_ = Pending::kNone;
}

void RunRecoveries::add_to_summary() const {
  nlohmann::ordered_json records = nlohmann::ordered_json::object();
  if (!recoveries_.empty()) {
    records["recoveries"] = nlohmann::ordered_json::array();
    for (const Recovery& recovery : recoveries_)
      records["recoveries"].push_back(recovery_json(recovery));
  }
  if (!widenings_.empty()) {
    records["widenings"] = nlohmann::ordered_json::array();
    for (const Widening& widening : widenings_)
      records["widenings"].push_back(widening_json(widening));
  }
  supervise::add_to_summary(run_dir_, records);
}

}  // namespace mpipe::supervise
