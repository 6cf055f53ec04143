// Spool: queue entries as JSON files, moved between queue/ and active/ under .queue.lock.
#include "serve/spool.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <utility>

#include "checkpoint/atomic_file.h"
#include "core/error.h"
#include "core/file_lock.h"
#include "core/host_clock.h"
#include "core/regular_file.h"
#include "serve/status_file.h"

namespace mpipe::serve {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxNameLength = 100;

// "000042-name.json": the sequence number, then the name.
std::string entry_file_name(const QueueEntry& entry) {
  return fmt::format("{:06d}-{}.json", entry.seq, entry.name);
}

// A file being written (AtomicFile's "<path>.tmp-<pid>") or hidden (an editor's, NFS's): not
// the spool's to read.
bool is_foreign_file_name(const std::string& file_name) {
  return file_name.starts_with('.') || file_name.find(".tmp-") != std::string::npos;
}

// A spool file's text; a FIFO or a device in its place is refused (InputError), never waited on.
std::string read_text(const fs::path& path) {
  return read_regular_file(path.string(), "not a regular file");
}

nlohmann::json to_json(const QueueEntry& entry) {
  return {{"seq", entry.seq},
          {"name", entry.name},
          {"config", entry.config},
          {"yaml", entry.yaml},
          {"overrides", entry.overrides},
          {"steps", entry.steps},
          {"submitted", entry.submitted}};
}

// The sequence number a file name starts with ("000042-name.json": 42); 0 when it has none.
int64_t sequence_of_file_name(const std::string& file_name) {
  int64_t seq = 0;
  const auto [end, error] =
      std::from_chars(file_name.data(), file_name.data() + file_name.size(), seq);
  return error == std::errc() && end != file_name.data() ? seq : 0;
}

// The entry `path` holds. Throws InputError "PATH: not a queue entry: <reason>" when it holds
// none, or one whose name is not an experiment name.
QueueEntry entry_from_file(const fs::path& path) {
  const auto damaged = [&](const std::string& reason) {
    return InputError(fmt::format("{}: not a queue entry: {}", path.string(), reason));
  };
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw damaged("not a regular file");
  QueueEntry entry;
  try {
    const nlohmann::json json = nlohmann::json::parse(read_text(path));
    entry = {.seq = json.at("seq").get<int64_t>(),
             .name = json.at("name").get<std::string>(),
             .config = json.at("config").get<std::string>(),
             .yaml = json.at("yaml").get<std::string>(),
             .overrides = json.at("overrides").get<std::vector<std::string>>(),
             .steps = json.at("steps").get<int64_t>(),
             .submitted = json.at("submitted").get<std::string>()};
  } catch (const nlohmann::json::exception& e) {
    throw damaged(e.what());
  }
  if (!is_experiment_name(entry.name)) {
    throw damaged(fmt::format("its name '{}' is not an experiment name", entry.name));
  }
  if (entry.seq < 1) throw damaged(fmt::format("its sequence number {} is not >= 1", entry.seq));
  return entry;
}

// The stem as a name: characters a name may not hold become '_'; "exp" if nothing is left.
std::string name_from_stem(const std::string& stem) {
  std::string name;
  for (const char c : stem) {
    const bool allowed =
        std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    name += allowed ? c : '_';
  }
  while (!name.empty() && !std::isalnum(static_cast<unsigned char>(name.front()))) {
    name.erase(0, 1);
  }
  name = name.substr(0, kMaxNameLength - 8);
  return name.empty() ? "exp" : name;
}

constexpr std::pair<JobFailure, const char*> kFailureNames[] = {
    {JobFailure::kMemoryLimit, "memory_limit"}, {JobFailure::kLostPeer, "lost_peer"}};

}  // namespace

std::string job_failure_name(JobFailure failure) {
  for (const auto& [value, name] : kFailureNames) {
    if (value == failure) return name;
  }
  return "unknown";
}

JobFailure parse_job_failure(const std::string& name) {
  for (const auto& [value, text] : kFailureNames) {
    if (name == text) return value;
  }
  throw InputError(fmt::format("failure '{}': unknown", name));
}

bool is_experiment_name(const std::string& name) {
  static const std::regex pattern(R"([A-Za-z0-9][A-Za-z0-9._-]*)");
  return std::regex_match(name, pattern) && name.size() <= kMaxNameLength;
}

void check_experiment_name(const std::string& name) {
  check_input(is_experiment_name(name),
              "--name '{}': must start with a letter or digit and hold only letters, digits, "
              "'.', '_' and '-' (at most {} characters)",
              name, kMaxNameLength);
}

Spool::Spool(std::string dir) : dir_(std::move(dir)) {}

std::string Spool::folder(const char* name) const { return (fs::path(dir_) / name).string(); }

std::string Spool::status_path() const { return folder("status.json"); }

std::string Spool::lock_path() const { return folder(".lock"); }

std::string Spool::run_dir(const std::string& name) const {
  return (fs::path(dir_) / "runs" / name).string();
}

std::string Spool::experiment_file(const std::string& name) const {
  return (fs::path(run_dir(name)) / "experiment.yaml").string();
}

std::string Spool::experiment_log(const std::string& name) const {
  return (fs::path(run_dir(name)) / "experiment.log").string();
}

void Spool::create() const {
  for (const char* name : {"queue", "active", "cancel", "runs", "quarantine"}) {
    std::error_code ec;
    fs::create_directories(folder(name), ec);
    if (ec) throw Error(fmt::format("{}: cannot create: {}", folder(name), ec.message()));
  }
}

bool Spool::exists() const {
  std::error_code ec;
  return fs::is_directory(folder("queue"), ec);
}

std::vector<QueueEntry> Spool::entries_in(const std::string& folder,
                                          std::vector<DamagedEntry>* damaged) const {
  std::vector<QueueEntry> entries;
  std::error_code ec;
  for (const auto& file : fs::directory_iterator(folder, ec)) {
    const std::string file_name = file.path().filename().string();
    if (is_foreign_file_name(file_name)) continue;
    try {
      QueueEntry entry = entry_from_file(file.path());
      check_input(entry_file_name(entry) == file_name,
                  "{}: not a queue entry: it holds #{} '{}', whose file name is {}",
                  file.path().string(), entry.seq, entry.name, entry_file_name(entry));
      entries.push_back(std::move(entry));
    } catch (const Error& e) {  // InputError, or a file that cannot be read
      if (damaged) {
        damaged->push_back({.path = file.path().string(),
                            .seq = sequence_of_file_name(file_name),
                            .error = e.what()});
      }
    }
  }
  check(!ec, "{}: cannot list: {}", folder, ec.message());
  std::sort(entries.begin(), entries.end(),
            [](const QueueEntry& a, const QueueEntry& b) { return a.seq < b.seq; });
  return entries;
}

std::vector<QueueEntry> Spool::queued() const { return entries_in(folder("queue")); }

std::optional<QueueEntry> Spool::active() const {
  const std::vector<QueueEntry> entries = entries_in(folder("active"));
  if (entries.empty()) return std::nullopt;
  return entries.front();
}

std::vector<DamagedEntry> Spool::damaged_entries() const {
  std::vector<DamagedEntry> damaged;
  entries_in(folder("queue"), &damaged);
  entries_in(folder("active"), &damaged);
  std::sort(damaged.begin(), damaged.end(), [](const DamagedEntry& a, const DamagedEntry& b) {
    return fs::path(a.path).filename() < fs::path(b.path).filename();
  });
  return damaged;
}

std::vector<QuarantinedEntry> Spool::quarantine_damaged_entries() const {
  const FileLock lock = FileLock::wait(folder(".queue.lock"));
  std::vector<QuarantinedEntry> moved;
  for (const DamagedEntry& entry : damaged_entries()) {
    const std::string to = quarantine(entry.path);
    moved.push_back({.name = fs::path(to).filename().string(),
                     .seq = entry.seq,
                     .error = fmt::format("{}; moved to {}", entry.error, to)});
  }
  return moved;
}

std::string Spool::quarantine(const std::string& path) const {
  const fs::path quarantine_dir = folder("quarantine");
  std::error_code ec;
  fs::create_directories(quarantine_dir, ec);
  check(!ec, "{}: cannot create: {}", quarantine_dir.string(), ec.message());
  const std::string file_name = fs::path(path).filename().string();
  fs::path to = quarantine_dir / file_name;
  for (int n = 2; fs::exists(to, ec) || fs::is_symlink(to, ec); ++n) {
    to = quarantine_dir / fmt::format("{}.{}", file_name, n);
  }
  fs::rename(path, to, ec);
  check(!ec, "{}: cannot move to {}: {}", path, to.string(), ec.message());
  return to.string();
}

bool Spool::name_taken(const std::string& name) const {
  std::error_code ec;
  const auto named = [&](const QueueEntry& entry) { return entry.name == name; };
  return fs::exists(run_dir(name), ec) || fs::exists(fs::path(folder("cancel")) / name, ec) ||
         std::ranges::any_of(queued(), named) ||
         std::ranges::any_of(entries_in(folder("active")), named);
}

std::string Spool::unique_name(const std::string& stem) const {
  const std::string base = name_from_stem(stem);
  for (int n = 1;; ++n) {
    std::string name = fmt::format("{}-{}", base, n);
    if (!name_taken(name)) return name;
  }
}

int64_t Spool::next_sequence_number() const {
  int64_t last = 0;
  const fs::path counter = fs::path(dir_) / ".sequence";
  std::error_code ec;
  if (fs::exists(counter, ec)) {
    try {
      const std::string text = read_text(counter);
      const std::string number = text.substr(0, text.find_last_not_of(" \n") + 1);
      const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), last);
      if (error != std::errc() || end != number.data() + number.size() || last < 0) {
        last = 0;
        spdlog::warn("{}: not a sequence number: '{}'; going on from the entries the spool holds",
                     counter.string(), number.substr(0, std::min<size_t>(number.find('\n'), 40)));
      }
    } catch (const InputError& e) {  // a FIFO, say: replaced below
      last = 0;
      spdlog::warn("{}; going on from the entries the spool holds", e.what());
    }
  }
  // An unreadable or outdated .sequence never gives out a number again: the highest one any
  // entry, quarantined file or status.json holds counts too.
  for (const auto& entry : queued()) last = std::max(last, entry.seq);
  for (const auto& entry : entries_in(folder("active"))) last = std::max(last, entry.seq);
  for (const auto& entry : cancelled()) last = std::max(last, entry.seq);
  for (const auto& file : fs::directory_iterator(folder("quarantine"), ec)) {
    last = std::max(last, sequence_of_file_name(file.path().filename().string()));
  }
  try {
    for (const auto& e : read_status_file(status_path()).experiments) last = std::max(last, e.seq);
  } catch (const InputError&) {  // a damaged status.json: the daemon quarantines it
  }
  checkpoint::write_file_atomically(counter.string(), std::to_string(last + 1) + "\n");
  return last + 1;
}

QueueEntry Spool::submit(QueueEntry entry, const std::string& stem) const {
  create();
  const FileLock lock = FileLock::wait(folder(".queue.lock"));
  if (entry.name.empty()) {
    entry.name = unique_name(stem);
  } else {
    check_experiment_name(entry.name);
    check_input(!name_taken(entry.name),
                "{}: an experiment named '{}' exists already (pick another --name)", dir_,
                entry.name);
  }
  entry.seq = next_sequence_number();
  entry.submitted = utc_now();
  checkpoint::write_file_atomically((fs::path(folder("queue")) / entry_file_name(entry)).string(),
                                    to_json(entry).dump(2) + "\n");
  return entry;
}

std::optional<QueueEntry> Spool::take_next() const {
  const FileLock lock = FileLock::wait(folder(".queue.lock"));
  if (auto running = active()) return running;
  const std::vector<QueueEntry> waiting = queued();
  if (waiting.empty()) return std::nullopt;
  const QueueEntry& next = waiting.front();
  const fs::path from = fs::path(folder("queue")) / entry_file_name(next);
  const fs::path to = fs::path(folder("active")) / entry_file_name(next);
  std::error_code ec;
  fs::rename(from, to, ec);
  check(!ec, "{}: cannot move to {}: {}", from.string(), to.string(), ec.message());
  return next;
}

void Spool::finish_active() const {
  const FileLock lock = FileLock::wait(folder(".queue.lock"));
  if (auto running = active()) {
    const fs::path path = fs::path(folder("active")) / entry_file_name(*running);
    std::error_code ec;
    fs::remove(path, ec);
    check(!ec, "{}: cannot remove: {}", path.string(), ec.message());
  }
}

CancelResult Spool::cancel(const std::string& name) const {
  check_input(exists(), "{}: not a spool (no queue/ folder)", dir_);
  const FileLock lock = FileLock::wait(folder(".queue.lock"));
  const std::string marker = (fs::path(folder("cancel")) / name).string();
  const auto named = [&](const QueueEntry& entry) { return entry.name == name; };
  const std::vector<QueueEntry> waiting = queued();
  if (const auto found = std::ranges::find_if(waiting, named); found != waiting.end()) {
    checkpoint::write_file_atomically(marker, to_json(*found).dump(2) + "\n");
    const fs::path path = fs::path(folder("queue")) / entry_file_name(*found);
    std::error_code ec;
    fs::remove(path, ec);
    check(!ec, "{}: cannot remove: {}", path.string(), ec.message());
    return CancelResult::kRemovedFromQueue;
  }
  if (const auto running = active(); running && running->name == name) {
    checkpoint::write_file_atomically(marker, to_json(*running).dump(2) + "\n");
    return CancelResult::kStopRequested;
  }
  check_input(!name_taken(name), "{}: '{}' is neither queued nor running (it has ended)", dir_,
              name);
  throw InputError(fmt::format("{}: no experiment named '{}'", dir_, name));
}

bool Spool::cancel_requested(const std::string& name) const {
  std::error_code ec;
  return fs::exists(fs::path(folder("cancel")) / name, ec);
}

std::vector<QueueEntry> Spool::cancelled() const {
  std::vector<QueueEntry> entries;
  std::error_code ec;
  for (const auto& file : fs::directory_iterator(folder("cancel"), ec)) {
    const std::string file_name = file.path().filename().string();
    if (is_foreign_file_name(file_name)) continue;
    try {
      QueueEntry entry = entry_from_file(file.path());
      if (entry.name == file_name) entries.push_back(std::move(entry));
    } catch (const Error&) {  // only its name counts (cancel_requested)
    }
  }
  std::sort(entries.begin(), entries.end(),
            [](const QueueEntry& a, const QueueEntry& b) { return a.seq < b.seq; });
  return entries;
}

std::string Spool::experiment_text(const QueueEntry& entry) const {
  const std::string path = experiment_file(entry.name);
  std::error_code ec;
  return fs::exists(path, ec) ? read_text(path) : entry.yaml;
}

std::string Spool::failure_note_path(const std::string& name) const {
  return (fs::path(run_dir(name)) / "failure.json").string();
}

std::string failure_note_text(const FailureNote& note) {
  const nlohmann::json json = {{"name", note.name},
                               {"failure", job_failure_name(note.failure)},
                               {"error", note.error},
                               {"rank", note.rank},
                               {"time", note.time}};
  return json.dump(2) + "\n";
}

FailureNote parse_failure_note(const std::string& text) {
  const nlohmann::json json = nlohmann::json::parse(text);
  return {.name = json.at("name").get<std::string>(),
          .failure = parse_job_failure(json.at("failure").get<std::string>()),
          .error = json.at("error").get<std::string>(),
          .rank = json.at("rank").get<int>(),
          .time = json.at("time").get<std::string>()};
}

void Spool::write_failure_note(const FailureNote& note) const {
  std::error_code ec;
  fs::create_directories(run_dir(note.name), ec);
  check(!ec, "{}: cannot create: {}", run_dir(note.name), ec.message());
  checkpoint::write_file_atomically(failure_note_path(note.name), failure_note_text(note));
}

std::optional<FailureNote> Spool::read_failure_note(const std::string& name) const {
  const std::string path = failure_note_path(name);
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  try {
    FailureNote note = parse_failure_note(read_text(path));
    check_input(note.name == name, "it is about '{}'", note.name);
    return note;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: not a failure note: {}", path, e.what()));
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: not a failure note: {}", path, e.what()));
  }
}

void Spool::remove_failure_note(const std::string& name) const {
  const std::string path = failure_note_path(name);
  std::error_code ec;
  fs::remove(path, ec);
  check(!ec, "{}: cannot remove: {}", path, ec.message());
}

std::string Spool::write_experiment_file(const std::string& name, const std::string& yaml) const {
  const std::string path = experiment_file(name);
  std::error_code ec;
  if (fs::exists(path, ec) && read_text(path) == yaml) return path;
  fs::create_directories(run_dir(name), ec);
  check(!ec, "{}: cannot create: {}", run_dir(name), ec.message());
  checkpoint::write_file_atomically(path, yaml);
  return path;
}

}  // namespace mpipe::serve
