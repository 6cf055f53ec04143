// status.json: JSON (de)serialization, atomic writes, the merge with the spool's folders and the
// table of `mpipe status`.
#include "serve/status_file.h"

#include <signal.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <functional>
#include <utility>

#include "checkpoint/atomic_file.h"
#include "core/error.h"
#include "core/host_clock.h"
#include "core/regular_file.h"
#include "log/progress.h"
#include "serve/spool.h"

namespace mpipe::serve {
namespace {

constexpr std::array<std::pair<ExperimentState, const char*>, 6> kStateNames = {{
    {ExperimentState::kQueued, "queued"},
    {ExperimentState::kRunning, "running"},
    {ExperimentState::kInterrupted, "interrupted"},
    {ExperimentState::kDone, "done"},
    {ExperimentState::kFailed, "failed"},
    {ExperimentState::kCancelled, "cancelled"},
}};

// A number, or null when absent or not finite (JSON has no NaN).
nlohmann::json optional_number(const std::optional<double>& value) {
  if (!value || !std::isfinite(*value)) return nullptr;
  return *value;
}

std::optional<double> read_optional_number(const nlohmann::json& json, const char* key) {
  if (!json.contains(key) || json.at(key).is_null()) return std::nullopt;
  return json.at(key).get<double>();
}

std::string read_string(const nlohmann::json& json, const char* key) {
  return json.contains(key) ? json.at(key).get<std::string>() : std::string();
}

nlohmann::json to_json(const ExperimentStatus& e) {
  return {{"name", e.name},
          {"seq", e.seq},
          {"state", state_name(e.state)},
          {"config", e.config},
          {"run_dir", e.run_dir},
          {"stages", e.stages},
          {"replicas", e.replicas},
          {"micro_batches", e.micro_batches},
          {"step", e.step},
          {"steps", e.steps},
          {"loss", optional_number(e.loss)},
          {"samples_per_s", optional_number(e.samples_per_s)},
          {"eta_s", optional_number(e.eta_s)},
          {"eval_loss", optional_number(e.eval_loss)},
          {"eval_accuracy", optional_number(e.eval_accuracy)},
          {"error", e.error},
          {"lost_peer_resumes", e.lost_peer_resumes},
          {"submitted", e.submitted},
          {"started", e.started},
          {"ended", e.ended}};
}

ExperimentStatus experiment_from_json(const nlohmann::json& json) {
  return {.name = json.at("name").get<std::string>(),
          .seq = json.at("seq").get<int64_t>(),
          .state = parse_state(json.at("state").get<std::string>()),
          .config = read_string(json, "config"),
          .run_dir = read_string(json, "run_dir"),
          .stages = json.value("stages", 0),
          .replicas = json.value("replicas", 0),
          .micro_batches = json.value("micro_batches", 0),
          .step = json.value("step", int64_t{0}),
          .steps = json.value("steps", int64_t{0}),
          .loss = read_optional_number(json, "loss"),
          .samples_per_s = read_optional_number(json, "samples_per_s"),
          .eta_s = read_optional_number(json, "eta_s"),
          .eval_loss = read_optional_number(json, "eval_loss"),
          .eval_accuracy = read_optional_number(json, "eval_accuracy"),
          .error = read_string(json, "error"),
          .lost_peer_resumes = json.value("lost_peer_resumes", int64_t{0}),
          .submitted = read_string(json, "submitted"),
          .started = read_string(json, "started"),
          .ended = read_string(json, "ended")};
}

nlohmann::json to_json(const DaemonStatus& d) {
  return {{"state", d.state}, {"reason", d.reason}, {"pid", d.pid},        {"host", d.host},
          {"ranks", d.ranks}, {"since", d.since},   {"updated", d.updated}};
}

DaemonStatus daemon_from_json(const nlohmann::json& json) {
  return {.state = json.at("state").get<std::string>(),
          .reason = read_string(json, "reason"),
          .pid = json.value("pid", 0),
          .host = read_string(json, "host"),
          .ranks = json.value("ranks", 0),
          .since = read_string(json, "since"),
          .updated = read_string(json, "updated")};
}

ExperimentStatus& add_entry(SpoolStatus& status, const QueueEntry& entry, const Spool& spool) {
  ExperimentStatus& e = status.upsert(entry.name, entry.seq);
  e.config = entry.config;
  e.steps = entry.steps;
  e.submitted = entry.submitted;
  e.run_dir = spool.run_dir(entry.name);
  return e;
}

// `format(value)`, or "-" when the value is unknown or not finite.
std::string format_number(const std::optional<double>& value,
                          const std::function<std::string(double)>& format) {
  if (!value || !std::isfinite(*value)) return "-";
  return format(*value);
}

std::string format_daemon(const std::optional<DaemonStatus>& daemon) {
  if (!daemon) return "daemon: none has served this spool yet";
  if (daemon->state == "serving") {
    return fmt::format("daemon: serving on {} ranks, pid {} on host {}, since {} (updated {})",
                       daemon->ranks, daemon->pid, daemon->host, daemon->since, daemon->updated);
  }
  if (daemon->state == "gone") {
    return fmt::format(
        "daemon: gone (pid {} on host {} ended without stopping; last update {}): start it again "
        "to resume",
        daemon->pid, daemon->host, daemon->updated);
  }
  return fmt::format("daemon: {}{} at {} (pid {} on host {})", daemon->state,
                     daemon->reason.empty() ? "" : " (" + daemon->reason + ")", daemon->updated,
                     daemon->pid, daemon->host);
}

}  // namespace

std::string state_name(ExperimentState state) {
  for (const auto& [value, name] : kStateNames) {
    if (value == state) return name;
  }
  return "unknown";
}

ExperimentState parse_state(const std::string& name) {
  for (const auto& [value, text] : kStateNames) {
    if (name == text) return value;
  }
  throw InputError(fmt::format("state '{}': unknown", name));
}

bool has_ended(ExperimentState state) {
  return state == ExperimentState::kDone || state == ExperimentState::kFailed ||
         state == ExperimentState::kCancelled;
}

ExperimentStatus* SpoolStatus::find(const std::string& name) {
  const auto found = std::ranges::find(experiments, name, &ExperimentStatus::name);
  return found != experiments.end() ? &*found : nullptr;
}

const ExperimentStatus* SpoolStatus::find(const std::string& name) const {
  const auto found = std::ranges::find(experiments, name, &ExperimentStatus::name);
  return found != experiments.end() ? &*found : nullptr;
}

ExperimentStatus& SpoolStatus::upsert(const std::string& name, int64_t seq) {
  if (ExperimentStatus* existing = find(name)) return *existing;
  const auto after = std::ranges::upper_bound(experiments, seq, {}, &ExperimentStatus::seq);
  ExperimentStatus added;
  added.name = name;
  added.seq = seq;
  return *experiments.insert(after, std::move(added));
}

nlohmann::json to_json(const SpoolStatus& status) {
  nlohmann::json experiments = nlohmann::json::array();
  for (const auto& e : status.experiments) experiments.push_back(to_json(e));
  return {{"daemon", status.daemon ? to_json(*status.daemon) : nlohmann::json(nullptr)},
          {"experiments", experiments}};
}

SpoolStatus status_from_json(const nlohmann::json& json, const std::string& where) {
  try {
    SpoolStatus status;
    if (json.contains("daemon") && !json.at("daemon").is_null()) {
      status.daemon = daemon_from_json(json.at("daemon"));
    }
    for (const auto& e : json.at("experiments")) {
      status.experiments.push_back(experiment_from_json(e));
    }
    return status;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: not a status file: {}", where, e.what()));
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: not a status file: {}", where, e.what()));
  }
}

SpoolStatus read_status_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {};
  const nlohmann::json json = nlohmann::json::parse(
      read_regular_file(path, "not a status file: not a regular file"), nullptr, false);
  check_input(!json.is_discarded(), "{}: not a status file: not valid JSON", path);
  return status_from_json(json, path);
}

void write_status_file(const std::string& path, const SpoolStatus& status) {
  checkpoint::write_file_atomically(path, to_json(status).dump(2) + "\n");
}

void merge_spool(SpoolStatus& status, const Spool& spool) {
  for (const QueueEntry& entry : spool.queued()) {
    if (!status.find(entry.name)) add_entry(status, entry, spool);
  }
  if (const auto active = spool.active(); active && !status.find(active->name)) {
    add_entry(status, *active, spool);
  }
  for (const QueueEntry& entry : spool.cancelled()) {
    const ExperimentStatus* known = status.find(entry.name);
    if (known && known->state != ExperimentState::kQueued) continue;  // the daemon records it
    ExperimentStatus& e = add_entry(status, entry, spool);
    e.state = ExperimentState::kCancelled;
  }
}

void note_damaged_entries(SpoolStatus& status, const Spool& spool) {
  for (const DamagedEntry& damaged : spool.damaged_entries()) {
    const std::string file_name = std::filesystem::path(damaged.path).filename().string();
    ExperimentStatus& e = status.upsert(file_name, damaged.seq);
    e.state = ExperimentState::kFailed;
    e.error = damaged.error;
  }
}

SpoolStatus spool_status_for_display(const Spool& spool, std::vector<std::string>& problems) {
  SpoolStatus status;
  try {
    status = read_status_file(spool.status_path());
  } catch (const InputError& e) {
    problems.push_back(fmt::format("{}; showing what the spool's folders hold", e.what()));
  }
  merge_spool(status, spool);
  note_damaged_entries(status, spool);
  try {
    note_job_failure(status, spool);
  } catch (const InputError& e) {
    problems.push_back(e.what());
  }
  note_dead_daemon(status);
  return status;
}

void note_dead_daemon(SpoolStatus& status) {
  if (!status.daemon || status.daemon->state != "serving" || status.daemon->host != this_host() ||
      status.daemon->pid <= 0) {
    return;
  }
  if (::kill(status.daemon->pid, 0) != 0 && errno == ESRCH) status.daemon->state = "gone";
}

void apply_failure_note(ExperimentStatus& experiment, const FailureNote& note, bool supervised) {
  const bool resumable = note.failure == JobFailure::kLostPeer &&
                         (supervised || experiment.lost_peer_resumes < kLostPeerResumes);
  experiment.state = resumable ? ExperimentState::kInterrupted : ExperimentState::kFailed;
  experiment.error = note.error;
  experiment.eta_s.reset();
  if (!resumable && experiment.ended.empty()) experiment.ended = note.time;
}

void note_job_failure(SpoolStatus& status, const Spool& spool) {
  const std::optional<QueueEntry> active = spool.active();
  if (!active) return;
  const std::optional<FailureNote> note = spool.read_failure_note(active->name);
  if (!note) return;
  apply_failure_note(add_entry(status, *active, spool), *note);
}

std::string format_status_table(const SpoolStatus& status) {
  struct Row {
    std::string name, state, layout, step, loss, speed, last;
  };
  std::vector<Row> rows = {{"NAME", "STATE", "LAYOUT", "STEP", "LOSS", "SAMPLES/S", "ETA / ERROR"}};
  for (const auto& e : status.experiments) {
    std::string last = "-";
    if (e.state == ExperimentState::kFailed ||
        (e.state == ExperimentState::kInterrupted && !e.error.empty())) {
      last = e.error;
    } else if (e.state == ExperimentState::kRunning && e.eta_s) {
      last = log::format_duration(*e.eta_s);
    }
    const std::string layout =
        e.stages > 0 ? fmt::format("{}x{}", e.stages, e.replicas) : std::string("-");
    rows.push_back({e.name, state_name(e.state), layout, fmt::format("{}/{}", e.step, e.steps),
                    format_number(e.loss, [](double loss) { return fmt::format("{:.4f}", loss); }),
                    format_number(e.samples_per_s, log::format_rate), last});
  }
  const auto widest = [](size_t n, const std::string& text) { return std::max(n, text.size()); };
  std::array<size_t, 6> widths{};
  for (const Row& row : rows) {
    widths = {widest(widths[0], row.name),   widest(widths[1], row.state),
              widest(widths[2], row.layout), widest(widths[3], row.step),
              widest(widths[4], row.loss),   widest(widths[5], row.speed)};
  }
  std::string table = format_daemon(status.daemon) + "\n";
  for (const Row& row : rows) {
    table += fmt::format("{:<{}}  {:<{}}  {:>{}}  {:>{}}  {:>{}}  {:>{}}  {}\n", row.name,
                         widths[0], row.state, widths[1], row.layout, widths[2], row.step,
                         widths[3], row.loss, widths[4], row.speed, widths[5], row.last);
  }
  return table;
}

}  // namespace mpipe::serve
