// Tests for FileLock: one holder at a time, released by its destructor.
#include "serve/file_lock.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "support/temp_dir.h"

namespace mpipe::serve {
namespace {

TEST(FileLock, SecondHolderIsRefusedUntilTheFirstReleases) {
  testing::TempDir dir;
  const std::string path = dir.file(".lock");
  {
    std::optional<FileLock> first = FileLock::try_lock(path);
    ASSERT_TRUE(first);
    EXPECT_FALSE(FileLock::try_lock(path));
  }
  EXPECT_TRUE(FileLock::try_lock(path));
  EXPECT_TRUE(FileLock::try_lock(path));
}

TEST(FileLock, HolderDescriptionIsReadableWithoutTheLock) {
  testing::TempDir dir;
  const std::string path = dir.file(".lock");
  const FileLock lock = FileLock::wait(path);
  lock.write_contents("a long description first");
  lock.write_contents("pid 1");
  EXPECT_EQ(lock.contents(), "pid 1");
  EXPECT_EQ(read_lock_contents(path), "pid 1");
  EXPECT_EQ(read_lock_contents(dir.file("missing")), "");
}

TEST(FileLock, LockInAFolderThatDoesNotExistNamesThePath) {
  testing::TempDir dir;
  const std::string path = dir.file("missing/.lock");
  try {
    FileLock::wait(path);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path + ": cannot open: No such file or directory");
  }
}

}  // namespace
}  // namespace mpipe::serve
