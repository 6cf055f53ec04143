// MetricsWriter: lazily opened JSON-lines metrics log, atomically replaced summary and trace.
#include "log/metrics_writer.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.h"

namespace mpipe::log {
namespace {

namespace fs = std::filesystem;

// Replaces the file at `path` with `contents`: written to a temporary file, then renamed. Throws
// mpipe::Error with the reason.
void replace_file(const std::string& path, const std::string& contents) {
  const std::string temp = path + ".tmp-" + std::to_string(::getpid());
  const auto fail = [&](const char* what, int error) {
    std::remove(temp.c_str());
    return Error(fmt::format("{}: {}: {}", path, what, std::strerror(error)));
  };
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw fail("cannot create", errno);
  for (size_t written = 0; written < contents.size();) {
    const ssize_t n = ::write(fd, contents.data() + written, contents.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : ENOSPC;  // 0 bytes written: no room
      ::close(fd);
      throw fail("write failed", error);
    }
    written += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) throw fail("write failed", errno);
  if (::rename(temp.c_str(), path.c_str()) != 0) throw fail("cannot rename into place", errno);
}

// Whether `line` is a metrics record of a step <= `step`.
bool is_record_through(const std::string& line, int64_t step) {
  const nlohmann::json record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!record.is_object()) return false;
  const auto found = record.find("step");
  return found != record.end() && found->is_number_integer() && found->get<int64_t>() <= step;
}

// add_deprecated_stage_keys for either kind of JSON object: every "_per_rank" list also under
// "_per_stage", after the record's keys.
template <typename Json>
void add_old_names(Json& record) {
  constexpr std::string_view kNew = "_per_rank";
  std::vector<std::pair<std::string, Json>> old;
  for (const auto& [key, values] : record.items()) {
    if (key.ends_with(kNew)) {
      old.emplace_back(key.substr(0, key.size() - kNew.size()) + "_per_stage", values);
    }
  }
  for (auto& [key, values] : old) record[key] = std::move(values);
}

}  // namespace

bool is_train_record(const nlohmann::json& record) {
  return record.is_object() && !record.contains("split") && !record.contains("event");
}

MetricsWriter::MetricsWriter(const std::string& run_dir, bool tensorboard) : run_dir_(run_dir) {
  if (tensorboard) tensorboard_.emplace(run_dir);
}

std::string MetricsWriter::tensorboard_path() const {
  return tensorboard_ ? tensorboard_->path() : std::string();
}

std::string MetricsWriter::metrics_path() const {
  return (fs::path(run_dir_) / "metrics.jsonl").string();
}

std::string MetricsWriter::summary_path() const {
  return (fs::path(run_dir_) / "summary.json").string();
}

std::string MetricsWriter::trace_path() const {
  return (fs::path(run_dir_) / "trace.json").string();
}

void MetricsWriter::create_run_dir() const {
  std::error_code ec;
  fs::create_directories(run_dir_, ec);
  check(!ec, "{}: cannot create run directory: {}", run_dir_, ec.message());
}

void MetricsWriter::append_line(const nlohmann::ordered_json& record) {
  if (!metrics_) {
    create_run_dir();
    metrics_.emplace(metrics_path());
  }
  metrics_->append(record.dump() + '\n');
}

void MetricsWriter::append(const nlohmann::ordered_json& record, const std::string& tag_prefix) {
  append_line(record);
  if (!writes_tensorboard()) return;
  try {
    tensorboard_->write(record, tag_prefix);
  } catch (const Error& e) {
    tensorboard_failed_ = true;
    spdlog::warn("{}; no more TensorBoard events in this run (metrics.jsonl goes on)", e.what());
  }
}

void RankTimes::write_into(nlohmann::ordered_json& record) const {
  if (bubble.empty()) return;
  record["compute_ms_per_rank"] = compute_ms;
  record["waiting_ms_per_rank"] = waiting_ms;
  record["bubble_per_rank"] = bubble;
  double sum = 0.0;
  for (double share : bubble) sum += share;
  record["bubble"] = sum / static_cast<double>(bubble.size());
  if (!peak_tensor_bytes.empty()) record["peak_tensor_bytes_per_rank"] = peak_tensor_bytes;
  if (!sent_bytes.empty()) record["sent_bytes_per_step_per_rank"] = sent_bytes;
}

void add_deprecated_stage_keys(nlohmann::json& record) { add_old_names(record); }

void add_deprecated_stage_keys(nlohmann::ordered_json& record) { add_old_names(record); }

void FlopUtilization::write_into(nlohmann::ordered_json& record) const {
  if (std::isfinite(mfu)) record["mfu"] = mfu;
  if (std::isfinite(hfu)) record["hfu"] = hfu;
}

void MetricsWriter::train(int64_t step, double loss, double lr, double samples_per_s,
                          int64_t skipped_steps, const RankTimes& ranks,
                          const FlopUtilization& utilization) {
  nlohmann::ordered_json record = {
      {"step", step}, {"loss", loss}, {"lr", lr}, {"samples_per_s", samples_per_s}};
  if (skipped_steps > 0) record["skipped_steps"] = skipped_steps;
  ranks.write_into(record);
  utilization.write_into(record);
  add_deprecated_stage_keys(record);
  append(record, "train/");
}

void MetricsWriter::eval(int64_t step, const std::string& split, double loss,
                         std::optional<double> accuracy, std::optional<double> bits_per_char,
                         std::optional<double> bits_per_byte, std::optional<double> perplexity,
                         std::optional<double> bleu, std::optional<double> chrf) {
  nlohmann::ordered_json record = {{"step", step}, {"split", split}, {"loss", loss}};
  if (accuracy) record["accuracy"] = *accuracy;
  if (bits_per_char) record["bits_per_char"] = *bits_per_char;
  if (bits_per_byte) record["bits_per_byte"] = *bits_per_byte;
  if (perplexity) record["perplexity"] = *perplexity;
  if (bleu) record["bleu"] = *bleu;
  if (chrf) record["chrf"] = *chrf;
  append(record, "eval/" + split + "/");
}

void MetricsWriter::recovery(int64_t resumed_from, const nlohmann::ordered_json& details) {
  event(resumed_from, "recovery", details);
}

void MetricsWriter::widening(int64_t resumed_from, const nlohmann::ordered_json& details) {
  event(resumed_from, "widening", details);
}

void MetricsWriter::event(int64_t step, const char* name, const nlohmann::ordered_json& details) {
  nlohmann::ordered_json record = {{"step", step}, {"event", name}};
  if (!details.is_null()) record.update(details);
  append_line(record);  // (metrics.jsonl only: not a scalar to plot)
}

void MetricsWriter::write_summary(const nlohmann::json& summary) {
  create_run_dir();
  replace_file(summary_path(), summary.dump(2) + "\n");
}

bool MetricsWriter::write_trace(const nlohmann::json& trace) {
  try {
    create_run_dir();
    replace_file(trace_path(), trace.dump() + "\n");
    return true;
  } catch (const Error& e) {
    spdlog::warn("{}; the run goes on without its trace", e.what());
    return false;
  }
}

double MetricsWriter::last_train_loss() const {
  double loss = std::numeric_limits<double>::quiet_NaN();
  std::ifstream in(metrics_path());
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!is_train_record(record)) continue;
    const auto found = record.find("loss");
    if (found == record.end()) continue;
    loss = found->is_number() ? found->get<double>() : std::numeric_limits<double>::quiet_NaN();
  }
  return loss;
}

int64_t MetricsWriter::recoveries() const { return events("recovery"); }

int64_t MetricsWriter::widenings() const { return events("widening"); }

int64_t MetricsWriter::events(const char* name) const {
  int64_t count = 0;
  std::ifstream in(metrics_path());
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (record.is_object() && record.value("event", "") == name) ++count;
  }
  return count;
}

int64_t MetricsWriter::keep_records_through(int64_t step) {
  metrics_.reset();
  const std::string path = metrics_path();
  std::ifstream in(path);
  if (!in.is_open()) return 0;
  std::string kept;
  int64_t dropped = 0;
  for (std::string line; std::getline(in, line);) {
    if (is_record_through(line, step)) {
      kept += line + '\n';
    } else {
      ++dropped;
    }
  }
  check(in.eof(), "{}: read failed", path);
  if (dropped > 0) replace_file(path, kept);
  return dropped;
}

}  // namespace mpipe::log
