// RunLock: a FileLock on <run_dir>/.lock, stale-lock takeover, and cleanup of what the lock
// created.
#include "checkpoint/run_lock.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>

#include "core/error.h"

namespace mpipe::checkpoint {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxAttempts = 100;  // the lock file replaced under us this often: give up

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
  try {
    for (int attempt = 0; attempt < kMaxAttempts && !lock_; ++attempt) {
      lock_ = FileLock::try_lock(path);
      if (!lock_) {
        const std::string holder = describe_lock_holder(read_lock_contents(path));
        throw InputError(
            fmt::format("{}: in use by {} (lock {}); wait for it or use another --run-dir",
                        run_dir_, holder.empty() ? "another job" : holder, path));
      }
      if (!lock_->still_at_path()) lock_.reset();  // released and removed meanwhile: retry
    }
    check(lock_.has_value(), "{}: cannot lock: the file keeps being replaced", path);
    const std::string stale = lock_->contents();
    if (!stale.empty()) {
      const std::string holder = describe_lock_holder(stale);
      spdlog::info("{}: taking over the lock of {}, which is no longer running ({})", run_dir_,
                   holder.empty() ? "an earlier job" : holder, path);
    }
    lock_->write_holder();
  } catch (...) {
    release();
    throw;
  }
}

RunLock::~RunLock() { release(); }

void RunLock::release() noexcept {
  if (lock_) {
    ::unlink(lock_->path().c_str());  // while still holding it: see FileLock::still_at_path
    lock_.reset();
  }
  for (const std::string& dir : created_dirs_) {
    if (::rmdir(dir.c_str()) != 0) break;  // not empty: the run wrote something
  }
  created_dirs_.clear();
}

}  // namespace mpipe::checkpoint
