// Tests for file digests: zlib's crc32 values, chunked files, and the hex spelling.
#include "checkpoint/file_digest.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "support/input_error_of.h"
#include "support/temp_dir.h"

namespace mpipe::checkpoint {
namespace {

std::span<const std::byte> bytes_of(const std::string& text) {
  return std::as_bytes(std::span<const char>(text.data(), text.size()));
}

TEST(FileDigest, Crc32OfTheStandardCheckStringIsCbf43926) {
  DigestBuilder builder;
  builder.update(bytes_of("123456789"));
  EXPECT_EQ(builder.digest(), (FileDigest{.size = 9, .crc32 = 0xcbf43926u}));
}

TEST(FileDigest, PiecesGiveTheSameDigestAsTheWhole) {
  DigestBuilder whole;
  whole.update(bytes_of("123456789"));
  DigestBuilder pieces;
  pieces.update(bytes_of("1234"));
  pieces.update(bytes_of(""));
  pieces.update(bytes_of("56789"));
  EXPECT_EQ(pieces.digest(), whole.digest());
}

TEST(FileDigest, FileLargerThanOneChunkIsDigestedWhole) {
  testing::TempDir dir;
  std::string text(3 * (1 << 20) + 5, 'x');
  text[1 << 20] = 'y';
  std::ofstream(dir.file("big")) << text;
  DigestBuilder expected;
  expected.update(bytes_of(text));
  EXPECT_EQ(digest_file(dir.file("big")), expected.digest());
  EXPECT_EQ(digest_file(dir.file("big")).size, text.size());
}

TEST(FileDigest, EmptyFileHasSizeZeroAndCrcZero) {
  testing::TempDir dir;
  std::ofstream(dir.file("empty")).close();
  EXPECT_EQ(digest_file(dir.file("empty")), (FileDigest{.size = 0, .crc32 = 0}));
}

TEST(FileDigest, MissingFileIsAnInputErrorNamingIt) {
  testing::TempDir dir;
  try {
    digest_file(dir.file("nope"));
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), dir.file("nope") + ": cannot open: No such file or directory");
  }
}

TEST(FileDigest, FifoIsRefusedWithoutWaitingForAWriter) {
  // A checkpoint shard replaced by a FIFO: old code blocked in open() (until ctest's timeout).
  testing::TempDir dir;
  const std::string fifo = dir.file("stage_0.safetensors");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(testing::input_error_of([&] { digest_file(fifo); }), fifo + ": not a regular file");
}

TEST(FileDigest, SymlinkToACharacterDeviceIsRefusedBeforeItIsRead) {
  // A shard linked to /dev/zero: old code computed the crc32 of it forever.
  testing::TempDir dir;
  const std::string link = dir.file("stage_0.safetensors");
  std::filesystem::create_symlink("/dev/zero", link);
  EXPECT_EQ(testing::input_error_of([&] { digest_file(link); }), link + ": not a regular file");
}

TEST(FileDigest, HexIsEightLowercaseDigits) {
  EXPECT_EQ(crc32_hex(0xcbf43926u), "cbf43926");
  EXPECT_EQ(crc32_hex(0x1au), "0000001a");
}

}  // namespace
}  // namespace mpipe::checkpoint
