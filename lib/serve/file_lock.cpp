// FileLock: open + flock(LOCK_EX), released by close.
#include "serve/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/error.h"

namespace mpipe::serve {
namespace {

constexpr size_t kMaxContents = 4096;

std::string read_fd(int fd) {
  std::string text(kMaxContents, '\0');
  const ssize_t n = ::pread(fd, text.data(), text.size(), 0);
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return text;
}

}  // namespace

std::optional<FileLock> FileLock::lock(const std::string& path, bool wait) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    throw Error(fmt::format("{}: cannot open: {}", path, std::strerror(err)));
  }
  int result = 0;
  do {
    result = ::flock(fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB);
  } while (result != 0 && errno == EINTR);
  if (result != 0) {
    const int err = errno;
    ::close(fd);
    if (!wait && err == EWOULDBLOCK) return std::nullopt;
    throw Error(fmt::format("{}: cannot lock: {}", path, std::strerror(err)));
  }
  return FileLock(path, fd);
}

FileLock FileLock::wait(const std::string& path) { return *lock(path, true); }

std::optional<FileLock> FileLock::try_lock(const std::string& path) { return lock(path, false); }

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);
}

FileLock::FileLock(FileLock&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)) {}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

std::string FileLock::contents() const { return read_fd(fd_); }

void FileLock::write_contents(const std::string& text) const {
  const bool written = ::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, text.data(), text.size(), 0) ==
                                                       static_cast<ssize_t>(text.size());
  const int err = errno;
  check(written, "{}: cannot write: {}", path_, std::strerror(err));
  ::fsync(fd_);
}

std::string read_lock_contents(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string text = read_fd(fd);
  ::close(fd);
  return text;
}

}  // namespace mpipe::serve
