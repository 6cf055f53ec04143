// What a supervisor reads of a run directory (see run_progress.h).
#include "supervise/run_progress.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "checkpoint/atomic_file.h"
#include "checkpoint/checkpoint_store.h"
#include "core/error.h"
#include "log/metrics_writer.h"

namespace mpipe::supervise {

namespace fs = std::filesystem;

int64_t last_logged_step(const std::string& run_dir) {
  std::ifstream in(fs::path(run_dir) / "metrics.jsonl");
  int64_t step = 0;
  std::string line;
  while (std::getline(in, line)) {
    const auto record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!log::is_train_record(record)) continue;
    const auto found = record.find("step");
    if (found != record.end() && found->is_number_integer()) step = found->get<int64_t>();
  }
  return step;
}

bool written_since(const std::string& path, std::chrono::system_clock::time_point since) {
  std::error_code error;
  const auto written = fs::last_write_time(path, error);
  return !error && std::chrono::file_clock::to_sys(written) >= since;
}

int64_t newest_checkpoint_step(const std::string& run_dir) {
  return checkpoint::CheckpointStore(run_dir, 1).latest_committed().value_or(0);
}

void add_to_metrics(const std::string& run_dir, const Recovery& recovery) {
  log::MetricsWriter(run_dir).recovery(recovery.change.resumed_from, recovery_json(recovery));
}

void add_to_metrics(const std::string& run_dir, const Widening& widening) {
  log::MetricsWriter(run_dir).widening(widening.change.resumed_from, widening_json(widening));
}

void add_to_summary(const std::string& run_dir, const nlohmann::ordered_json& records) {
  const std::string path = (fs::path(run_dir) / "summary.json").string();
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("{}: cannot read it to add the supervisor's records", path));
  std::stringstream text;
  text << in.rdbuf();
  auto summary = nlohmann::ordered_json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (!summary.is_object()) throw Error(fmt::format("{}: not a JSON object", path));
  for (const auto& [key, value] : records.items()) summary[key] = value;
  checkpoint::write_file_atomically(path, summary.dump(2) + "\n");
}

}  // namespace mpipe::supervise
