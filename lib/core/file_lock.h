// FileLock: an exclusive flock on a file, held until destroyed (or until the process dies, however
// it dies: the kernel releases it then), and the holder's description that locks write into it.
#pragma once

#include <optional>
#include <string>

namespace mpipe {

class FileLock {
 public:
  // Waits until the lock is free (for locks held only for a few file operations). Creates the
  // file if needed. Throws Error "path: cannot open: reason" / "cannot lock: reason".
  static FileLock wait(const std::string& path);
  // The lock, or nothing when another holder has it.
  static std::optional<FileLock> try_lock(const std::string& path);

  ~FileLock();
  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  const std::string& path() const { return path_; }
  // The file's contents (at most 4 KiB): what its holder wrote about itself.
  std::string contents() const;
  // Replaces the file's contents. Throws Error on failure.
  void write_contents(const std::string& text) const;
  // Writes this process as the holder: {"pid": 123, "host": "h", "since": "2026-...Z"}.
  void write_holder() const;
  // Whether the locked file is still the one at path() (a holder that removes the file on release
  // lets a later process create a new one: a lock on the removed file would guard nothing).
  bool still_at_path() const;

 private:
  FileLock(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  static std::optional<FileLock> lock(const std::string& path, bool wait);

  std::string path_;
  int fd_ = -1;
};

// The contents of the file at `path` (at most 4 KiB), without locking it; empty if unreadable.
std::string read_lock_contents(const std::string& path);
// "pid 123 on host h since 2026-11-23T20:00:00Z" from contents that write_holder() wrote; empty
// when they are not such a description (a holder that has not written itself yet).
std::string describe_lock_holder(const std::string& contents);

}  // namespace mpipe
