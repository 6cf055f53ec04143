// AtomicFile: write a file under a temporary name, then fsync and rename it into place.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "checkpoint/file_digest.h"

namespace mpipe::checkpoint {

// Writes `<path>.tmp-<pid>`; commit() fsyncs it, renames it to `path` and fsyncs the
// directory. A writer destroyed before commit() (an error, an exception) removes the
// temporary file, so `path` is never left partially written. Failures throw mpipe::Error.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::span<const std::byte> bytes);
  void write(std::string_view text);
  void commit();

  const std::string& path() const { return path_; }
  // Size and crc32 of everything written so far.
  FileDigest digest() const { return digest_.digest(); }

 private:
  void discard() noexcept;

  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
  bool committed_ = false;
  DigestBuilder digest_;
};

// Replaces the file at `path` with `contents` atomically.
void write_file_atomically(const std::string& path, std::string_view contents);

// fsyncs the directory `dir`, so entries just created or renamed in it survive a crash
// (best effort: a directory that cannot be opened is skipped).
void sync_directory(const std::string& dir);

}  // namespace mpipe::checkpoint
