// RunLock: flock on <run_dir>/.lock, stale-lock takeover, and cleanup of what the lock created.
#include "checkpoint/run_lock.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/host_clock.h"

namespace mpipe::checkpoint {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxAttempts = 100;  // the lock file replaced under us this often: give up

std::string errno_text(int err) { return std::strerror(err); }

// The lock file's contents (at most 4 KiB).
std::string read_contents(int fd) {
  std::string text(4096, '\0');
  const ssize_t n = ::pread(fd, text.data(), text.size(), 0);
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return text;
}

// "pid 123 on host h since 2026-11-23T20:00:00Z" from a lock file's contents, or empty.
std::string describe_holder(const std::string& contents) {
  const nlohmann::json holder = nlohmann::json::parse(contents, nullptr, false);
  if (!holder.is_object() || !holder.contains("pid") || !holder["pid"].is_number_integer() ||
      !holder.contains("host") || !holder["host"].is_string() || !holder.contains("since") ||
      !holder["since"].is_string()) {
    return "";
  }
  return fmt::format("pid {} on host {} since {}", holder["pid"].get<int64_t>(),
                     holder["host"].get<std::string>(), holder["since"].get<std::string>());
}

// Whether `fd` is still the file at `path` (a releasing holder removes it, and a later job
// creates a new one: a lock on the removed file would guard nothing).
bool is_file_at(int fd, const std::string& path) {
  struct stat held {};
  struct stat current {};
  return ::fstat(fd, &held) == 0 && ::stat(path.c_str(), &current) == 0 &&
         held.st_dev == current.st_dev && held.st_ino == current.st_ino;
}

void write_holder(int fd, const std::string& path) {
  const std::string text =
      nlohmann::json{{"pid", ::getpid()}, {"host", this_host()}, {"since", utc_now()}}.dump() +
      "\n";
  const bool written = ::ftruncate(fd, 0) == 0 && ::pwrite(fd, text.data(), text.size(), 0) ==
                                                      static_cast<ssize_t>(text.size());
  const int err = errno;  // read before the check's arguments are evaluated
  check(written, "{}: cannot write: {}", path, errno_text(err));
  ::fsync(fd);
}

// The folders from `dir` up that do not exist yet, innermost first.
std::vector<std::string> missing_dirs(const std::string& dir) {
  std::vector<std::string> missing;
  fs::path path = fs::path(dir).lexically_normal();
  if (!path.has_filename()) path = path.parent_path();  // "runs/x/"
  std::error_code ec;
  for (; !path.empty() && !fs::exists(path, ec); path = path.parent_path()) {
    missing.push_back(path.string());
    if (path == path.parent_path()) break;
  }
  return missing;
}

}  // namespace

std::string RunLock::lock_path(const std::string& run_dir) {
  return (fs::path(run_dir) / ".lock").string();
}

RunLock::RunLock(std::string run_dir) : run_dir_(std::move(run_dir)) {
  created_dirs_ = missing_dirs(run_dir_);
  std::error_code ec;
  fs::create_directories(run_dir_, ec);
  if (ec) {
    release();
    throw Error(fmt::format("{}: cannot create run directory: {}", run_dir_, ec.message()));
  }
  const std::string path = lock_path(run_dir_);
  for (int attempt = 0; attempt < kMaxAttempts && fd_ < 0; ++attempt) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      const int err = errno;
      release();
      throw Error(fmt::format("{}: cannot open: {}", path, errno_text(err)));
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      const std::string holder = describe_holder(read_contents(fd));
      ::close(fd);
      release();
      if (err != EWOULDBLOCK)
        throw Error(fmt::format("{}: cannot lock: {}", path, errno_text(err)));
      throw InputError(
          fmt::format("{}: in use by {} (lock {}); wait for it or use another --run-dir", run_dir_,
                      holder.empty() ? "another job" : holder, path));
    }
    if (!is_file_at(fd, path)) {  // released and removed meanwhile: lock the new one
      ::close(fd);
      continue;
    }
    fd_ = fd;
  }
  try {
    check(fd_ >= 0, "{}: cannot lock: the file keeps being replaced", path);
    const std::string stale = read_contents(fd_);
    if (!stale.empty()) {
      const std::string holder = describe_holder(stale);
      spdlog::info("{}: taking over the lock of {}, which is no longer running ({})", run_dir_,
                   holder.empty() ? "an earlier job" : holder, path);
    }
    write_holder(fd_, path);
  } catch (...) {
    release();
    throw;
  }
}

RunLock::~RunLock() { release(); }

void RunLock::release() noexcept {
  if (fd_ >= 0) {
    ::unlink(lock_path(run_dir_).c_str());  // while still holding it: see is_file_at
    ::close(fd_);
    fd_ = -1;
  }
  for (const std::string& dir : created_dirs_) {
    if (::rmdir(dir.c_str()) != 0) break;  // not empty: the run wrote something
  }
  created_dirs_.clear();
}

}  // namespace mpipe::checkpoint
