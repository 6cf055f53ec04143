// RegularFile: open(O_NONBLOCK), fstat and read/pread.
#include "core/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace mpipe {

RegularFile::RegularFile(std::string path, std::string_view not_regular) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  check_input(fd_ >= 0, "{}: cannot open: {}", path_, std::strerror(errno));
  struct stat info {};
  if (::fstat(fd_, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd_);
    throw InputError(fmt::format("{}: {}", path_, not_regular));
  }
  size_ = static_cast<uint64_t>(info.st_size);
}

RegularFile::~RegularFile() { ::close(fd_); }

size_t RegularFile::read(std::span<std::byte> out) {
  size_t filled = 0;
  while (filled < out.size()) {
    const ssize_t got = ::read(fd_, out.data() + filled, out.size() - filled);
    if (got < 0 && errno == EINTR) continue;
    check_input(got >= 0, "{}: read error: {}", path_, std::strerror(errno));
    if (got == 0) break;
    filled += static_cast<size_t>(got);
  }
  return filled;
}

size_t RegularFile::read_at(uint64_t offset, std::span<std::byte> out) const {
  size_t filled = 0;
  while (filled < out.size()) {
    const ssize_t got =
        ::pread(fd_, out.data() + filled, out.size() - filled, static_cast<off_t>(offset + filled));
    if (got < 0 && errno == EINTR) continue;
    check_input(got >= 0, "{}: read error: {}", path_, std::strerror(errno));
    if (got == 0) break;
    filled += static_cast<size_t>(got);
  }
  return filled;
}

std::string read_regular_file(const std::string& path, std::string_view not_regular) {
  RegularFile file(path, not_regular);
  std::string contents(static_cast<size_t>(file.size()), '\0');
  contents.resize(file.read(std::as_writable_bytes(std::span(contents))));  // it may have shrunk
  return contents;
}

}  // namespace mpipe
