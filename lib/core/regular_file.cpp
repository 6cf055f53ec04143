// Reading a whole regular file with open(O_NONBLOCK), fstat and read.
#include "core/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace mpipe {

std::string read_regular_file(const std::string& path, std::string_view not_regular) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  check_input(fd >= 0, "{}: cannot open: {}", path, std::strerror(errno));
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat info {};
  check_input(::fstat(fd, &info) == 0 && S_ISREG(info.st_mode), "{}: {}", path, not_regular);
  std::string contents(static_cast<size_t>(info.st_size), '\0');
  size_t filled = 0;
  while (filled < contents.size()) {
    const ssize_t got = ::read(fd, contents.data() + filled, contents.size() - filled);
    if (got < 0 && errno == EINTR) continue;
    check_input(got >= 0, "{}: read error: {}", path, std::strerror(errno));
    if (got == 0) break;  // the file shrank since fstat
    filled += static_cast<size_t>(got);
  }
  contents.resize(filled);
  return contents;
}

}  // namespace mpipe
