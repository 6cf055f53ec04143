// AppendFile: open(O_APPEND), write(2) until the record is out, ftruncate back on a failure.
#include "log/append_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace mpipe::log {

AppendFile::AppendFile(std::string path) : path_(std::move(path)) {
  // O_NONBLOCK: a FIFO without a reader fails the open rather than blocking it.
  fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644);
  check(fd_ >= 0, "{}: cannot open for appending: {}", path_, std::strerror(errno));
  struct stat info {};
  if (::fstat(fd_, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd_);
    throw Error(fmt::format("{}: cannot open for appending: not a regular file", path_));
  }
}

AppendFile::~AppendFile() { ::close(fd_); }

void AppendFile::append(std::string_view record) {
  struct stat before {};
  const bool sized = ::fstat(fd_, &before) == 0;
  size_t written = 0;
  while (written < record.size()) {
    const ssize_t n = ::write(fd_, record.data() + written, record.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : ENOSPC;  // 0 bytes written: no room
      if (sized && written > 0) {
        [[maybe_unused]] const int cut = ::ftruncate(fd_, before.st_size);  // best effort
      }
      throw Error(fmt::format("{}: write failed: {}", path_, std::strerror(error)));
    }
    written += static_cast<size_t>(n);
  }
}

}  // namespace mpipe::log
