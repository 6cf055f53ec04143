// Opening, checking, mapping and scanning of one llm.c token shard.
#include "data/token_shard.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "core/error.h"
#include "data/token_shard_format.h"

namespace mpipe::data {
namespace {

namespace format = token_shard;

// Tokens per pread of the vocabulary scan: 4 MiB of uint32.
constexpr int64_t kScanChunkTokens = int64_t{1} << 20;
// The largest page-cache folio a fault may map at once (a PMD: 2 MiB on x86-64).
constexpr size_t kLargestFolioBytes = size_t{2} << 20;

// Reads exactly `bytes` at `offset`, or throws naming `path`.
void read_exactly(int fd, const std::string& path, void* out, size_t bytes, off_t offset) {
  auto* dst = static_cast<char*>(out);
  size_t done = 0;
  while (done < bytes) {
    const ssize_t got = ::pread(fd, dst + done, bytes - done, offset + static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    check_input(got >= 0, "{}: read error: {}", path, std::strerror(errno));
    check_input(got > 0, "{}: the file shrank while it was read", path);
    done += static_cast<size_t>(got);
  }
}

// Token i of little-endian tokens of `width` bytes at `base` (this is a little-endian build).
uint32_t token_at(const std::byte* base, size_t width, int64_t i) {
  if (width == sizeof(uint16_t)) {
    uint16_t value;
    std::memcpy(&value, base + static_cast<size_t>(i) * width, sizeof value);
    return value;
  }
  uint32_t value;
  std::memcpy(&value, base + static_cast<size_t>(i) * width, sizeof value);
  return value;
}

}  // namespace

TokenShard::TokenShard(std::string path) : path_(std::move(path)) {
  static_assert(std::endian::native == std::endian::little, "shards are little-endian");
  fd_ = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  check_input(fd_ >= 0, "{}: cannot open: {}", path_, std::strerror(errno));
  struct stat info {};
  if (::fstat(fd_, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd_);
    throw InputError(fmt::format("{}: a token shard must be a regular file", path_));
  }
  try {
    const auto file_bytes = static_cast<size_t>(info.st_size);
    check_input(file_bytes >= format::kHeaderBytes,
                "{}: {} bytes, shorter than the {}-byte token shard header", path_, file_bytes,
                format::kHeaderBytes);
    std::array<int32_t, format::kHeaderInts> header{};
    read_exactly(fd_, path_, header.data(), format::kHeaderBytes, 0);
    const int32_t magic = header[format::kMagicAt];
    token_bytes_ = format::token_bytes(magic);
    check_input(token_bytes_ != 0,
                "{}: not a token shard: magic {}, expected {} (uint16 tokens) or {} (uint32 "
                "tokens)",
                path_, magic, format::kMagicU16, format::kMagicU32);
    check_input(header[format::kVersionAt] == format::kVersion,
                "{}: token shard version {}, expected {}", path_, header[format::kVersionAt],
                format::kVersion);
    const int32_t count = header[format::kCountAt];
    const size_t payload = file_bytes - format::kHeaderBytes;
    check_input(count >= 0 && static_cast<size_t>(count) * token_bytes_ == payload,
                "{}: token count {} in the header needs {} bytes after it, the file has {}", path_,
                count, static_cast<int64_t>(count) * static_cast<int64_t>(token_bytes_), payload);
    num_tokens_ = count;
    map_bytes_ = file_bytes;
    void* map = ::mmap(nullptr, map_bytes_, PROT_READ, MAP_SHARED, fd_, 0);
    check_input(map != MAP_FAILED, "{}: cannot map: {}", path_, std::strerror(errno));
    map_ = static_cast<const std::byte*>(map);
    // Windows are read at random places: no read-ahead around them.
    ::madvise(map, map_bytes_, MADV_RANDOM);
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

TokenShard::~TokenShard() {
  if (map_ != nullptr) ::munmap(const_cast<std::byte*>(map_), map_bytes_);
  ::close(fd_);
}

void TokenShard::read_as_floats(int64_t first, int64_t count, float* out) const {
  check(first >= 0 && count >= 0 && first + count <= num_tokens_,
        "{}: tokens [{}, {}) out of range [0, {})", path_, first, first + count, num_tokens_);
  const std::byte* tokens = map_ + format::kHeaderBytes;
  for (int64_t i = 0; i < count; ++i) {
    out[i] = static_cast<float>(token_at(tokens, token_bytes_, first + i));
  }
  // Unmap what was just read from this process (the pages stay in the page cache, and a later
  // read maps them again): a fault maps a whole large folio of the file, up to 2 MiB, so
  // otherwise every window read would add up to 2 MiB to the resident memory, towards the
  // whole corpus (measured: 20 MiB per step of 8 windows; scripts/bench/token_rss.sh).
  const size_t begin = format::kHeaderBytes + static_cast<size_t>(first) * token_bytes_;
  const size_t end = begin + static_cast<size_t>(count) * token_bytes_;
  const size_t release_begin = begin / kLargestFolioBytes * kLargestFolioBytes;
  const size_t release_end = std::min(
      (end + kLargestFolioBytes - 1) / kLargestFolioBytes * kLargestFolioBytes, map_bytes_);
  ::madvise(const_cast<std::byte*>(map_) + release_begin, release_end - release_begin,
            MADV_DONTNEED);
}

void TokenShard::check_ids_below(int64_t vocab, const std::string& vocab_key, int64_t first,
                                 int64_t count) const {
  check(first >= 0 && count >= 0 && first + count <= num_tokens_,
        "{}: tokens [{}, {}) out of range [0, {})", path_, first, first + count, num_tokens_);
  std::vector<std::byte> chunk(static_cast<size_t>(std::min(kScanChunkTokens, count)) *
                               token_bytes_);
  for (int64_t at = first; at < first + count; at += kScanChunkTokens) {
    const int64_t n = std::min(kScanChunkTokens, first + count - at);
    read_exactly(fd_, path_, chunk.data(), static_cast<size_t>(n) * token_bytes_,
                 static_cast<off_t>(format::kHeaderBytes + static_cast<size_t>(at) * token_bytes_));
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t id = token_at(chunk.data(), token_bytes_, i);
      check_input(static_cast<int64_t>(id) < vocab,
                  "{}: token {} is {}, not below the vocabulary of {} ({})", path_, at + i, id,
                  vocab, vocab_key);
    }
  }
}

}  // namespace mpipe::data
