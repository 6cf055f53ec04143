// Opening, checking, reading and scanning of one llm.c token shard.
#include "data/token_shard.h"

#include <fcntl.h>
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

// Reads up to `bytes` at `offset`, fewer only at the end of the file; throws naming `path` on a
// read error.
size_t read_up_to(int fd, const std::string& path, void* out, size_t bytes, off_t offset) {
  auto* dst = static_cast<char*>(out);
  size_t done = 0;
  while (done < bytes) {
    const ssize_t got = ::pread(fd, dst + done, bytes - done, offset + static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    check_input(got >= 0, "{}: read error: {}", path, std::strerror(errno));
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  return done;
}

// Reads exactly `bytes` at `offset`, or throws naming `path`.
void read_exactly(int fd, const std::string& path, void* out, size_t bytes, off_t offset) {
  check_input(read_up_to(fd, path, out, bytes, offset) == bytes,
              "{}: the file shrank while it was read", path);
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
    file_bytes_ = info.st_size;
    modified_at_ = info.st_mtim;
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

TokenShard::~TokenShard() { ::close(fd_); }

void TokenShard::check_unchanged() const {
  struct stat info {};
  check_input(::fstat(fd_, &info) == 0, "{}: cannot stat: {}", path_, std::strerror(errno));
  const bool resized = info.st_size != file_bytes_;
  if (!resized && info.st_mtim.tv_sec == modified_at_.tv_sec &&
      info.st_mtim.tv_nsec == modified_at_.tv_nsec) {
    return;
  }
  throw InputError(fmt::format(
      "{}: changed during the run ({}); a run's token shards must stay as they are until it ends",
      path_,
      resized ? fmt::format("{} bytes when the run opened it, {} now", file_bytes_, info.st_size)
              : std::string("modified after the run opened it")));
}

void TokenShard::read_as_floats(int64_t first, int64_t count, int64_t vocab, float* out) const {
  check(first >= 0 && count >= 0 && first + count <= num_tokens_,
        "{}: tokens [{}, {}) out of range [0, {})", path_, first, first + count, num_tokens_);
  // The tokens are read into the front of `out` (a token is at most as wide as a float) and
  // widened in place from the last one down, each float written over bytes already converted.
  auto* bytes = reinterpret_cast<std::byte*>(out);
  const size_t wanted = static_cast<size_t>(count) * token_bytes_;
  const size_t got = read_up_to(
      fd_, path_, bytes, wanted,
      static_cast<off_t>(format::kHeaderBytes + static_cast<size_t>(first) * token_bytes_));
  check_unchanged();
  check_input(got == wanted, "{}: the file shrank while it was read", path_);
  for (int64_t i = count - 1; i >= 0; --i) {
    const uint32_t id = token_at(bytes, token_bytes_, i);
    check_input(static_cast<int64_t>(id) < vocab,
                "{}: token {} is {}, not below the vocabulary of {} as at start-up: the shard "
                "changed during the run",
                path_, first + i, id, vocab);
    out[i] = static_cast<float>(id);
  }
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
