// AtomicFile: temporary file + fsync + rename, so readers see the old file or the whole new one.
#include "checkpoint/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace mpipe::checkpoint {
namespace {

std::string errno_text() { return std::strerror(errno); }

// fsyncs the directory holding `path`, so the rename itself survives a crash.
void sync_parent_directory(const std::string& path) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (parent.empty()) parent = ".";
  sync_directory(parent.string());
}

}  // namespace

void sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // the data is in place; only durability of the entry is weaker
  ::fsync(fd);
  ::close(fd);
}

AtomicFile::AtomicFile(std::string path)
    : path_(std::move(path)), temp_path_(path_ + ".tmp-" + std::to_string(::getpid())) {
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  check(fd_ >= 0, "{}: cannot create: {}", path_, errno_text());
}

AtomicFile::~AtomicFile() {
  if (!committed_) discard();
}

void AtomicFile::write(std::span<const std::byte> bytes) {
  check(fd_ >= 0 && !committed_, "{}: write after commit", path_);
  digest_.update(bytes);
  const std::byte* data = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, data, left);
    if (n < 0 && errno == EINTR) continue;
    check(n > 0, "{}: write failed: {}", path_, errno_text());
    data += n;
    left -= static_cast<size_t>(n);
  }
}

void AtomicFile::write(std::string_view text) {
  write(std::as_bytes(std::span<const char>(text.data(), text.size())));
}

void AtomicFile::commit() {
  check(fd_ >= 0 && !committed_, "{}: commit twice", path_);
  // Each call before its check: errno must be read after the call, and the arguments of
  // check() are evaluated in no fixed order.
  const int synced = ::fsync(fd_);
  check(synced == 0, "{}: fsync failed: {}", path_, errno_text());
  const int closed = ::close(fd_);
  fd_ = -1;
  check(closed == 0, "{}: close failed: {}", path_, errno_text());
  const int renamed = ::rename(temp_path_.c_str(), path_.c_str());
  check(renamed == 0, "{}: cannot rename into place: {}", path_, errno_text());
  committed_ = true;
  sync_parent_directory(path_);
}

void AtomicFile::discard() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(temp_path_.c_str());
}

void write_file_atomically(const std::string& path, std::string_view contents) {
  AtomicFile file(path);
  file.write(contents);
  file.commit();
}

}  // namespace mpipe::checkpoint
