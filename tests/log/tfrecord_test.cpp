// Tests for TFRecord framing: the CRC-32C check value, its mask, and a record's layout.
#include "log/tfrecord.h"

#include <gtest/gtest.h>

#include <string>

namespace mpipe::log {
namespace {

TEST(TfRecord, MaskedCrc32cOfTheCheckStringIsTheStandardValueMasked) {
  // CRC-32C("123456789") = 0xE3069283 (the catalogue's check value); masked: rotated right by 15
  // bits, plus 0xa282ead8.
  EXPECT_EQ(masked_crc32c("123456789"), 0xc78ab0e5u);
}

TEST(TfRecord, RecordIsLengthItsCrcTheDataAndItsCrc) {
  const std::string record = tfrecord("abc");
  ASSERT_EQ(record.size(), 8u + 4 + 3 + 4);
  EXPECT_EQ(record.substr(0, 8), std::string("\x03\0\0\0\0\0\0\0", 8));
  const uint32_t length_crc = masked_crc32c(record.substr(0, 8));
  EXPECT_EQ(record.substr(8, 4), std::string({static_cast<char>(length_crc & 0xff),
                                              static_cast<char>((length_crc >> 8) & 0xff),
                                              static_cast<char>((length_crc >> 16) & 0xff),
                                              static_cast<char>(length_crc >> 24)}));
  EXPECT_EQ(record.substr(12, 3), "abc");
  const uint32_t data_crc = masked_crc32c("abc");
  EXPECT_EQ(
      record.substr(15, 4),
      std::string({static_cast<char>(data_crc & 0xff), static_cast<char>((data_crc >> 8) & 0xff),
                   static_cast<char>((data_crc >> 16) & 0xff), static_cast<char>(data_crc >> 24)}));
}

}  // namespace
}  // namespace mpipe::log
