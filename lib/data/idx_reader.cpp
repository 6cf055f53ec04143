// IDX reading through zlib's gz* interface, with exact size validation.
#include "data/idx_reader.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <memory>

#include "core/error.h"

namespace mpipe::data {
namespace {

constexpr uint8_t kUnsignedByteType = 0x08;
constexpr int kMaxRank = 4;
constexpr int64_t kMaxBytes = int64_t{1} << 36;  // 64 GiB: anything larger is a corrupt header
constexpr unsigned kChunk = 1u << 30;

struct GzCloser {
  void operator()(gzFile_s* file) const { gzclose(file); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

// Reads up to `size` bytes; returns how many were read. Throws on a zlib error.
int64_t read_bytes(gzFile file, const std::string& path, uint8_t* out, int64_t size) {
  int64_t done = 0;
  while (done < size) {
    const unsigned want = static_cast<unsigned>(std::min<int64_t>(size - done, kChunk));
    const int got = gzread(file, out + done, want);
    if (got < 0) {
      int errnum = 0;
      const char* message = gzerror(file, &errnum);
      throw InputError(fmt::format("{}: corrupt gzip data: {}", path, message));
    }
    if (got == 0) break;
    done += got;
  }
  return done;
}

uint32_t big_endian(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

const char* payload_name(size_t rank) {
  if (rank == 3) return "images";
  if (rank == 1) return "labels";
  return "data";
}

}  // namespace

IdxArray read_idx(const std::string& path) {
  GzFile file(gzopen(path.c_str(), "rb"));
  check_input(file != nullptr, "{}: cannot open", path);
  gzbuffer(file.get(), 1u << 17);

  std::array<uint8_t, 4> magic{};
  check_input(read_bytes(file.get(), path, magic.data(), 4) == 4, "{}: truncated IDX header", path);
  const uint32_t magic_word = big_endian(magic.data());
  const int rank = magic[3];
  check_input(magic[0] == 0 && magic[1] == 0 && rank >= 1 && rank <= kMaxRank,
              "{}: bad IDX magic 0x{:08X}", path, magic_word);
  check_input(magic[2] == kUnsignedByteType,
              "{}: unsupported IDX element type 0x{:02X} in magic 0x{:08X} (only unsigned byte "
              "0x08 is supported)",
              path, magic[2], magic_word);

  std::array<uint8_t, 4 * kMaxRank> header{};
  check_input(read_bytes(file.get(), path, header.data(), 4 * rank) == 4 * rank,
              "{}: truncated IDX header", path);
  IdxArray array;
  int64_t total = 1;
  for (int axis = 0; axis < rank; ++axis) {
    const int64_t dim = big_endian(header.data() + 4 * axis);
    array.dims.push_back(dim);
    check_input(dim == 0 || total <= kMaxBytes / dim, "{}: IDX dimensions too large", path);
    total *= dim;
  }

  array.bytes.resize(static_cast<size_t>(total));
  const int64_t got = read_bytes(file.get(), path, array.bytes.data(), total);
  const char* what = payload_name(array.dims.size());
  check_input(got == total, "{}: truncated IDX data: expected {} bytes of {}, got {}", path, total,
              what, got);
  uint8_t extra = 0;
  check_input(read_bytes(file.get(), path, &extra, 1) == 0,
              "{}: trailing data after {} bytes of {}", path, total, what);
  int errnum = Z_OK;
  const char* message = gzerror(file.get(), &errnum);
  check_input(errnum == Z_OK, "{}: corrupt gzip data: {}", path, message);
  return array;
}

}  // namespace mpipe::data
