// AppendFile: a log file that records are appended to whole, or not at all.
#pragma once

#include <string>
#include <string_view>

namespace mpipe::log {

// A regular file opened for appending (created if missing). Throws mpipe::Error with the reason:
// "PATH: cannot open for appending: REASON" (a FIFO or a device in its place too, never waited
// on), "PATH: write failed: REASON".
class AppendFile {
 public:
  explicit AppendFile(std::string path);
  ~AppendFile();
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;

  // Appends `record` with write(2) (no buffer: once it returns, a killed process leaves it whole).
  // A write that fails part-way (a full disk) cuts the part written off again, so the file ends
  // with the last whole record.
  void append(std::string_view record);

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace mpipe::log
