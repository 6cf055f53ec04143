// File digests: the size and zlib crc32 of a whole file, as a checkpoint's meta.json records them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace mpipe::checkpoint {

struct FileDigest {
  uint64_t size = 0;   // bytes
  uint32_t crc32 = 0;  // zlib's crc32 of all of them
  bool operator==(const FileDigest&) const = default;
};

// A running digest of bytes fed in order (zlib's crc32, chunked for its 32-bit lengths).
class DigestBuilder {
 public:
  void update(std::span<const std::byte> bytes);
  FileDigest digest() const { return digest_; }

 private:
  FileDigest digest_;
};

// The digest of the regular file at `path`, read in chunks. Throws InputError naming the file if
// it cannot be read or is not a regular file (a FIFO is refused, not waited on; a device such as
// /dev/zero is never read): "PATH: not a regular file".
FileDigest digest_file(const std::string& path);

// A crc32 as 8 lowercase hex digits ("1a2b3c4d"), the way meta.json and messages write it.
std::string crc32_hex(uint32_t crc);

}  // namespace mpipe::checkpoint
