// TFRecord framing, the container of TensorBoard's event files: each record is its length
// (uint64, little-endian), the masked CRC-32C of those 8 bytes, the data, and the data's masked
// CRC-32C (uint32, little-endian).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mpipe::log {

// CRC-32C (Castagnoli) of `bytes` (Boost.CRC), masked as TFRecord stores it: rotated right by
// 15 bits plus 0xa282ead8, so that a CRC of data holding CRCs is not trivially related to them.
uint32_t masked_crc32c(std::string_view bytes);

// `data` framed as one record.
std::string tfrecord(std::string_view data);

}  // namespace mpipe::log
