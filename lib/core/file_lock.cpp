// FileLock: open + flock(LOCK_EX), released by close; the holder description in the file.
#include "core/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <utility>

#include "core/error.h"
#include "core/host_clock.h"

namespace mpipe {
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

void FileLock::write_holder() const {
  write_contents(
      nlohmann::json{{"pid", this_pid()}, {"host", this_host()}, {"since", utc_now()}}.dump() +
      "\n");
}

bool FileLock::still_at_path() const {
  struct stat held {};
  struct stat current {};
  return ::fstat(fd_, &held) == 0 && ::stat(path_.c_str(), &current) == 0 &&
         held.st_dev == current.st_dev && held.st_ino == current.st_ino;
}

std::string read_lock_contents(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string text = read_fd(fd);
  ::close(fd);
  return text;
}

std::string describe_lock_holder(const std::string& contents) {
  const nlohmann::json holder = nlohmann::json::parse(contents, nullptr, false);
  if (!holder.is_object() || !holder.value("pid", nlohmann::json()).is_number_integer() ||
      !holder.value("host", nlohmann::json()).is_string() ||
      !holder.value("since", nlohmann::json()).is_string()) {
    return "";
  }
  return fmt::format("pid {} on host {} since {}", holder["pid"].get<int64_t>(),
                     holder["host"].get<std::string>(), holder["since"].get<std::string>());
}

}  // namespace mpipe
