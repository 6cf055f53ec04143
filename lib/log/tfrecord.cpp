// TFRecord framing: Boost.CRC's CRC-32C, masked, around each record's length and data.
#include "log/tfrecord.h"

#include <boost/crc.hpp>

namespace mpipe::log {
namespace {

// CRC-32C: the Castagnoli polynomial, reflected, initial and final XOR all ones.
using Crc32c = boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true>;

constexpr uint32_t kMaskDelta = 0xa282ead8u;

// `value`'s `bytes` lowest bytes, least significant first.
void append_little_endian(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

}  // namespace

uint32_t masked_crc32c(std::string_view bytes) {
  Crc32c crc;
  crc.process_bytes(bytes.data(), bytes.size());
  const uint32_t value = crc.checksum();
  return ((value >> 15) | (value << 17)) + kMaskDelta;
}

std::string tfrecord(std::string_view data) {
  std::string record;
  record.reserve(data.size() + 16);
  append_little_endian(record, data.size(), 8);
  append_little_endian(record, masked_crc32c(record), 4);
  record.append(data);
  append_little_endian(record, masked_crc32c(data), 4);
  return record;
}

}  // namespace mpipe::log
