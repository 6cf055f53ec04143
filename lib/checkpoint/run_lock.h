// RunLock: one job per run directory, held with flock on <run_dir>/.lock for the whole run.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/file_lock.h"

namespace mpipe::checkpoint {

// Takes an exclusive flock (LOCK_EX | LOCK_NB) on <run_dir>/.lock, creating the run directory
// if needed, and writes the holder into it: {"pid": 123, "host": "h", "since": "2026-...Z"}.
// The kernel releases the flock when the holder dies, however it dies, so a lock file whose
// flock is free is stale: it is taken over, with an info line naming its former holder.
// Released by the destructor, which removes the lock file, and the run directory (and its
// parents) if this lock created them and nothing else was written there. Works on local file
// systems and on NFS (where Linux maps flock to a byte-range lock on the server).
class RunLock {
 public:
  // Throws InputError if another process holds the lock:
  // "runs/x: in use by pid 123 on host h since 2026-11-23T20:00:00Z (lock runs/x/.lock); wait
  // for it or use another --run-dir"; Error on I/O failure.
  explicit RunLock(std::string run_dir);
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

  static std::string lock_path(const std::string& run_dir);

 private:
  void release() noexcept;

  std::string run_dir_;
  std::vector<std::string> created_dirs_;  // innermost first
  std::optional<FileLock> lock_;
};

}  // namespace mpipe::checkpoint
