// Tests for FileLock: one holder at a time, released by its destructor; the holder description.
#include "core/file_lock.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/host_clock.h"
#include "support/temp_dir.h"

namespace mpipe {
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

TEST(FileLock, WrittenHolderDescribesThisProcess) {
  testing::TempDir dir;
  const FileLock lock = FileLock::wait(dir.file(".lock"));
  lock.write_holder();
  const std::string described = describe_lock_holder(read_lock_contents(lock.path()));
  EXPECT_TRUE(
      described.starts_with(fmt::format("pid {} on host {} since ", ::getpid(), this_host())))
      << described;
}

TEST(FileLock, ContentsThatAreNoHolderDescribeNothing) {
  EXPECT_EQ(describe_lock_holder(""), "");
  EXPECT_EQ(describe_lock_holder("pid 1"), "");
  EXPECT_EQ(describe_lock_holder(R"({"pid": 1, "host": "h"})"), "");
  EXPECT_EQ(describe_lock_holder(R"({"pid": "1", "host": "h", "since": "t"})"), "");
  EXPECT_EQ(describe_lock_holder(R"({"pid": 1, "host": "h", "since": "t"})"),
            "pid 1 on host h since t");
}

TEST(FileLock, LockOnAFileRemovedAndRecreatedIsNoLongerAtItsPath) {
  testing::TempDir dir;
  const std::string path = dir.file(".lock");
  const FileLock lock = FileLock::wait(path);
  EXPECT_TRUE(lock.still_at_path());
  std::filesystem::remove(path);
  EXPECT_FALSE(lock.still_at_path());
  std::ofstream(path).close();
  EXPECT_FALSE(lock.still_at_path());
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
}  // namespace mpipe
