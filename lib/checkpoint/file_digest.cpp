// File digests with zlib's crc32.
#include "checkpoint/file_digest.h"

#include <zlib.h>

#include <algorithm>
#include <fstream>
#include <vector>

#include "core/error.h"

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
  std::ifstream in(path, std::ios::binary);
  check_input(in.is_open(), "{}: cannot open", path);
  DigestBuilder builder;
  std::vector<char> chunk(kChunkBytes);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    const auto n = static_cast<size_t>(in.gcount());
    builder.update(std::as_bytes(std::span<const char>(chunk.data(), n)));
  }
  check_input(in.eof(), "{}: read failed", path);
  return builder.digest();
}

std::string crc32_hex(uint32_t crc) { return fmt::format("{:08x}", crc); }

}  // namespace mpipe::checkpoint
