// File digests with zlib's crc32.
#include "checkpoint/file_digest.h"

#include <zlib.h>

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "core/regular_file.h"

namespace mpipe::checkpoint {
namespace {

constexpr size_t kChunkBytes = size_t{1} << 20;

}  // namespace

void DigestBuilder::update(std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    const size_t n = std::min(bytes.size(), kChunkBytes);  // zlib lengths are 32-bit
    digest_.crc32 = static_cast<uint32_t>(
        ::crc32(digest_.crc32, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(n)));
    digest_.size += n;
    bytes = bytes.subspan(n);
  }
}

FileDigest digest_file(const std::string& path) {
  RegularFile file(path, "not a regular file");
  DigestBuilder builder;
  std::vector<std::byte> chunk(kChunkBytes);
  while (const size_t n = file.read(chunk)) builder.update(std::span(chunk).first(n));
  return builder.digest();
}

std::string crc32_hex(uint32_t crc) { return fmt::format("{:08x}", crc); }

}  // namespace mpipe::checkpoint
