// Tests for the gzipped IDX reader: valid files and each kind of malformed file.
#include "data/idx_reader.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"
#include "test_files.h"

namespace mpipe::data {
namespace {

using testing::idx_bytes;
using testing::TempDir;
using testing::write_gz;

// The message of the InputError `read_idx(path)` throws, or "" if it does not throw one.
std::string read_error(const std::string& path) {
  try {
    read_idx(path);
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

TEST(IdxReader, ReadsImagesWithTheirDimensionsAndBytes) {
  TempDir dir;
  const std::vector<uint8_t> payload{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 255};
  write_gz(dir.file("images.gz"), idx_bytes(0x08, {2, 3, 2}, payload));
  const IdxArray array = read_idx(dir.file("images.gz"));
  EXPECT_EQ(array.dims, (std::vector<int64_t>{2, 3, 2}));
  EXPECT_EQ(array.bytes, payload);
}

TEST(IdxReader, ReadsLabels) {
  TempDir dir;
  write_gz(dir.file("labels.gz"), idx_bytes(0x08, {4}, {3, 1, 4, 1}));
  const IdxArray array = read_idx(dir.file("labels.gz"));
  EXPECT_EQ(array.dims, (std::vector<int64_t>{4}));
  EXPECT_EQ(array.bytes, (std::vector<uint8_t>{3, 1, 4, 1}));
}

TEST(IdxReader, TruncatedPayloadNamesFileAndSizes) {
  TempDir dir;
  const std::string path = dir.file("short.gz");
  write_gz(path, idx_bytes(0x08, {2, 2, 3}, {1, 2, 3, 4, 5}));
  EXPECT_EQ(read_error(path), path + ": truncated IDX data: expected 12 bytes of images, got 5");
}

TEST(IdxReader, TrailingDataIsAnError) {
  TempDir dir;
  const std::string path = dir.file("long.gz");
  write_gz(path, idx_bytes(0x08, {3}, {1, 2, 3, 4}));
  EXPECT_EQ(read_error(path), path + ": trailing data after 3 bytes of labels");
}

TEST(IdxReader, WrongMagicIsAnError) {
  TempDir dir;
  const std::string path = dir.file("magic.gz");
  std::vector<uint8_t> bytes = idx_bytes(0x08, {1}, {7});
  bytes[0] = 0x1F;
  write_gz(path, bytes);
  EXPECT_EQ(read_error(path), path + ": bad IDX magic 0x1F000801");
}

TEST(IdxReader, ElementTypeOtherThanUnsignedByteIsAnError) {
  TempDir dir;
  const std::string path = dir.file("floats.gz");
  write_gz(path, idx_bytes(0x0D, {1}, {0, 0, 0, 0}));
  EXPECT_EQ(read_error(path).rfind(path + ": unsupported IDX element type 0x0D", 0), 0u)
      << read_error(path);
}

TEST(IdxReader, TruncatedHeaderIsAnError) {
  TempDir dir;
  const std::string path = dir.file("header.gz");
  write_gz(path, {0, 0, 8, 3, 0, 0});
  EXPECT_EQ(read_error(path), path + ": truncated IDX header");
}

TEST(IdxReader, MissingFileIsAnError) {
  TempDir dir;
  const std::string path = dir.file("absent.gz");
  EXPECT_EQ(read_error(path), path + ": cannot open");
}

TEST(IdxReader, CutGzipStreamIsAnError) {
  TempDir dir;
  const std::string path = dir.file("cut.gz");
  std::vector<uint8_t> payload(5000);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<uint8_t>(i * 7919 % 251);
  write_gz(path, idx_bytes(0x08, {5000}, payload));
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 6);
  EXPECT_EQ(read_error(path).rfind(path + ": ", 0), 0u) << read_error(path);
}

TEST(IdxReader, ReadsUncompressedFileToo) {
  TempDir dir;
  const std::vector<uint8_t> bytes = idx_bytes(0x08, {2}, {9, 8});
  testing::write_plain(dir.file("plain"), std::string(bytes.begin(), bytes.end()));
  EXPECT_EQ(read_idx(dir.file("plain")).bytes, (std::vector<uint8_t>{9, 8}));
}

}  // namespace
}  // namespace mpipe::data
