// Tests for AtomicFile: the target is either untouched or wholly replaced, never partial.
#include "checkpoint/atomic_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.h"
#include "support/temp_dir.h"

namespace mpipe::checkpoint {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

size_t num_files(const std::filesystem::path& dir) {
  return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(dir), {}));
}

TEST(AtomicFile, UncommittedWriteLeavesTheOldFileAndNoTemporary) {
  testing::TempDir dir;
  const std::string path = dir.file("meta.json");
  write_file_atomically(path, "old");
  {
    AtomicFile file(path);
    file.write("new but abandoned");
  }
  EXPECT_EQ(read_text(path), "old");
  EXPECT_EQ(num_files(dir.path()), 1u);
}

TEST(AtomicFile, CommitReplacesTheFileWhole) {
  testing::TempDir dir;
  const std::string path = dir.file("meta.json");
  write_file_atomically(path, "a much longer old content");
  AtomicFile file(path);
  file.write("ne");
  file.write("w");
  file.commit();
  EXPECT_EQ(read_text(path), "new");
  EXPECT_EQ(num_files(dir.path()), 1u);
  EXPECT_THROW(file.write("more"), Error);
}

TEST(AtomicFile, MissingDirectoryThrowsNamingThePath) {
  testing::TempDir dir;
  const std::string path = dir.file("missing/meta.json");
  try {
    write_file_atomically(path, "x");
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path + ": cannot create: No such file or directory");
  }
}

TEST(AtomicFile, FailedRenameNamesTheReasonOfTheRenameItself) {
  testing::TempDir dir;
  const std::string path = dir.file("stage_1.safetensors");
  std::filesystem::create_directories(path + "/in_the_way");
  try {
    write_file_atomically(path, "x");
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path + ": cannot rename into place: Is a directory");
  }
  EXPECT_EQ(num_files(dir.path()), 1u);
}

TEST(AtomicFile, DigestCoversEveryByteWritten) {
  testing::TempDir dir;
  AtomicFile file(dir.file("x"));
  file.write("1234");
  file.write("56789");
  file.commit();
  EXPECT_EQ(file.digest(), (FileDigest{.size = 9, .crc32 = 0xcbf43926u}));
  EXPECT_EQ(digest_file(dir.file("x")), file.digest());
}

}  // namespace
}  // namespace mpipe::checkpoint
