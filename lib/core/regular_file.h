// Reading a regular file without ever blocking on a FIFO or a device put in its place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace mpipe {

// The regular file `path`, open for reading. It is opened without blocking (a FIFO is refused,
// not waited on) and confirmed regular on the open descriptor, so a file swapped for something
// else after a check is refused too, and a device such as /dev/zero is never read. Throws
// InputError: "PATH: cannot open: REASON", "PATH: NOT_REGULAR" (e.g. "a SentencePiece model must
// be a regular file"); its reads throw "PATH: read error: REASON".
class RegularFile {
 public:
  RegularFile(std::string path, std::string_view not_regular);
  ~RegularFile();
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;

  // The size fstat reported when the file was opened, in bytes.
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Reads on from where the last read ended into `out`; returns the bytes read, fewer than asked
  // only at the end of the file (0 there).
  size_t read(std::span<std::byte> out);
  // Reads into `out` from byte `offset`; returns the bytes read, fewer than asked only where the
  // file ends.
  size_t read_at(uint64_t offset, std::span<std::byte> out) const;

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// The bytes of the regular file `path` (RegularFile), at most the size fstat reported when it
// was opened.
std::string read_regular_file(const std::string& path, std::string_view not_regular);

}  // namespace mpipe
