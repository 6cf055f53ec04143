// FileLock: an exclusive flock on a file, held until destroyed (or until the process dies, however
// it dies: the kernel releases it then).
#pragma once

#include <optional>
#include <string>

namespace mpipe::serve {

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

  // The file's contents (at most 4 KiB): what its holder wrote about itself.
  std::string contents() const;
  // Replaces the file's contents. Throws Error on failure.
  void write_contents(const std::string& text) const;

 private:
  FileLock(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  static std::optional<FileLock> lock(const std::string& path, bool wait);

  std::string path_;
  int fd_ = -1;
};

// The contents of the file at `path` (at most 4 KiB), without locking it; empty if unreadable.
std::string read_lock_contents(const std::string& path);

}  // namespace mpipe::serve
