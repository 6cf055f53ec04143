// Opening, header and token reads, change checks and vocabulary scans of a shard file.
#include "data/token_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "core/error.h"

namespace mpipe::data {
namespace {

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

}  // namespace

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

void check_ids_in_part(const std::vector<const TokenFile*>& files, int64_t vocab,
                       const std::string& vocab_key, int part, int parts) {
  check(parts >= 1 && part >= 0 && part < parts, "part {} of {}", part, parts);
  int64_t total = 0;
  for (const TokenFile* file : files) total += file->num_tokens();
  const int64_t begin = total * part / parts;
  const int64_t end = total * (part + 1) / parts;
  int64_t file_begin = 0;
  for (const TokenFile* file : files) {
    const int64_t first = std::max(begin, file_begin);
    const int64_t last = std::min(end, file_begin + file->num_tokens());
    if (first < last) file->check_ids_below(vocab, vocab_key, first - file_begin, last - first);
    file_begin += file->num_tokens();
  }
}

TokenFile::TokenFile(std::string path, std::string kind)
    : path_(std::move(path)), kind_(std::move(kind)) {
  static_assert(std::endian::native == std::endian::little, "shards are little-endian");
  fd_ = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  check_input(fd_ >= 0, "{}: cannot open: {}", path_, std::strerror(errno));
  struct stat info {};
  if (::fstat(fd_, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd_);
    throw InputError(fmt::format("{}: a {} must be a regular file", path_, kind_));
  }
  file_bytes_ = info.st_size;
  modified_at_ = info.st_mtim;
}

TokenFile::~TokenFile() { ::close(fd_); }

void TokenFile::read_exactly(void* out, size_t bytes, off_t offset) const {
  check_input(read_up_to(fd_, path_, out, bytes, offset) == bytes,
              "{}: the file shrank while it was read", path_);
}

void TokenFile::set_tokens(off_t tokens_at, size_t token_bytes, int64_t count) {
  check(token_bytes == sizeof(uint16_t) || token_bytes == sizeof(uint32_t),
        "{}: tokens of {} bytes", path_, token_bytes);
  tokens_at_ = tokens_at;
  token_bytes_ = token_bytes;
  num_tokens_ = count;
}

void TokenFile::check_unchanged() const {
  struct stat info {};
  check_input(::fstat(fd_, &info) == 0, "{}: cannot stat: {}", path_, std::strerror(errno));
  const bool resized = info.st_size != file_bytes_;
  if (!resized && info.st_mtim.tv_sec == modified_at_.tv_sec &&
      info.st_mtim.tv_nsec == modified_at_.tv_nsec) {
    return;
  }
  throw InputError(fmt::format(
      "{}: changed during the run ({}); a run's {}s must stay as they are until it ends", path_,
      resized ? fmt::format("{} bytes when the run opened it, {} now", file_bytes_, info.st_size)
              : std::string("modified after the run opened it"),
      kind_));
}

void TokenFile::read_as_floats(int64_t first, int64_t count, int64_t vocab, float* out) const {
  check(first >= 0 && count >= 0 && first + count <= num_tokens_,
        "{}: tokens [{}, {}) out of range [0, {})", path_, first, first + count, num_tokens_);
  // The tokens are read into the front of `out` (a token is at most as wide as a float) and
  // widened in place from the last one down, each float written over bytes already converted.
  auto* bytes = reinterpret_cast<std::byte*>(out);
  const size_t wanted = static_cast<size_t>(count) * token_bytes_;
  const size_t got =
      read_up_to(fd_, path_, bytes, wanted,
                 tokens_at_ + static_cast<off_t>(first) * static_cast<off_t>(token_bytes_));
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

void TokenFile::check_ids_below(int64_t vocab, const std::string& vocab_key, int64_t first,
                                int64_t count) const {
  check(first >= 0 && count >= 0 && first + count <= num_tokens_,
        "{}: tokens [{}, {}) out of range [0, {})", path_, first, first + count, num_tokens_);
  std::vector<std::byte> chunk(static_cast<size_t>(std::min(kScanChunkTokens, count)) *
                               token_bytes_);
  for (int64_t at = first; at < first + count; at += kScanChunkTokens) {
    const int64_t n = std::min(kScanChunkTokens, first + count - at);
    read_exactly(chunk.data(), static_cast<size_t>(n) * token_bytes_,
                 tokens_at_ + static_cast<off_t>(at) * static_cast<off_t>(token_bytes_));
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t id = token_at(chunk.data(), token_bytes_, i);
      check_input(static_cast<int64_t>(id) < vocab,
                  "{}: token {} is {}, not below the vocabulary of {} ({})", path_, at + i, id,
                  vocab, vocab_key);
    }
  }
}

}  // namespace mpipe::data
